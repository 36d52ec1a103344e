// What every route module receives: resolved options and what was prepared from them at
// registration, so handlers only read.
import type { Ajv } from 'ajv'
import type { ResolvedOptions } from '../options.js'
import type { EnvelopeContext } from '../envelope/index.js'
import type { ListQueryContext } from '../query/list-query.js'
import type { StoreOf } from './stores.js'

export interface RouteContext {
  readonly options: ResolvedOptions
  readonly envelope: EnvelopeContext
  readonly query: ListQueryContext
  readonly ajv: Ajv
  readonly storeOf: StoreOf
}
