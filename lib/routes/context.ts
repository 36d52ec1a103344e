// What every route module receives: resolved options and what was prepared from them at
// registration, so handlers only read.
import type { Ajv } from 'ajv'
import type { ResolvedOptions } from '../options.js'
import type { EnvelopeContext } from '../envelope/index.js'
import type { ListQueryContext } from '../query/list-query.js'
import type { ResourceModel } from '../registry/model.js'
import type { ModelRules } from '../rules/compile.js'
import type { Views } from '../rules/view.js'
import type { StoreOf } from './stores.js'

export interface RouteContext {
  readonly options: ResolvedOptions
  readonly envelope: EnvelopeContext
  readonly query: ListQueryContext
  readonly ajv: Ajv
  readonly storeOf: StoreOf
  /** Registered models by name (what hooks name in their transaction). */
  readonly models: ReadonlyMap<string, ResourceModel>
  /** A resource's application rules (rules/compile.ts); null when it has none. */
  readonly rulesOf: (model: ResourceModel) => ModelRules | null
  readonly views: Views
}
