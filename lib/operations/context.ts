// What every operation (and the route modules) receives: resolved options and what was prepared
// from them at registration, so operations only read. Made without Fastify: a test or a worker can
// build the operations of a set of options alone.
import type { Ajv } from 'ajv'
import { createAjv } from '../validation.js'
import { createCursorCodec } from '../paging/cursor.js'
import { compileRules } from '../rules/compile.js'
import { createViews } from '../rules/view.js'
import type { ResolvedOptions } from '../options.js'
import type { EnvelopeContext } from '../envelope/index.js'
import type { ListQueryContext } from '../query/list-query.js'
import type { ResourceModel } from '../registry/model.js'
import type { ModelRules } from '../rules/compile.js'
import type { Views } from '../rules/view.js'
import type { StoreOf } from './stores.js'

export interface OperationContext {
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

/** The context of `models` (built from `options.resources`, in order), served under `prefix`, kept where `storeOf` says. */
export function createOperationContext (options: ResolvedOptions, models: readonly ResourceModel[], storeOf: StoreOf, prefix: string): OperationContext {
  const rules = new Map(models.map((model, i) => [model, compileRules(model, options.resources[i])]))
  const rulesOf = (model: ResourceModel) => rules.get(model) ?? null
  // One codec seals the links' tokens and opens them: keys derived once, shared tokens kept once.
  const cursor = createCursorCodec({ secrets: options.cursorSecrets, ttlSeconds: options.cursorTtlSeconds })
  return {
    options,
    envelope: {
      prefix,
      singleResource: options.singleResource,
      links: options.links,
      totalAtRoot: options.totalAtRoot,
      lastLink: options.lastLink,
      cursor
    },
    query: { cursor, defaultPaging: options.paging },
    ajv: createAjv(),
    storeOf,
    models: new Map(models.map(model => [model.name, model])),
    rulesOf,
    views: createViews(models, rulesOf)
  }
}
