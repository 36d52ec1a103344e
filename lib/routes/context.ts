// What every route module receives: resolved options and what was prepared from them at
// registration, so handlers only read.
import type { Ajv } from 'ajv'
import type { ResolvedOptions } from '../options.js'
import type { EnvelopeContext } from '../envelope/index.js'
import type { ListQueryContext } from '../query/list-query.js'

export interface RouteContext {
  readonly options: ResolvedOptions
  readonly envelope: EnvelopeContext
  readonly query: ListQueryContext
  readonly ajv: Ajv
  /** Records the methods served at a path pattern, for 405 answers and OPTIONS. */
  readonly allow: (pattern: string, methods: readonly string[]) => void
}
