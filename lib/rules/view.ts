// A caller's view of the resources (docs/rules.md, registry/model.ts View): each model with the
// records its read rule lets the caller see (`visible`, which stores AND into every read, through
// relations too) and without the fields it may not read. Everything downstream (query parsing,
// stores, the envelope) then sees only what the caller may, with no rule code of its own.
import type { FilterNode } from '../query/filter/ast.js'
import type { ResourceModel, View, ViewRelation } from '../registry/model.js'
import type { ModelRules } from './compile.js'
import { keepBounded } from '../bounded.js'

type Principal = unknown

/** A caller's view of each registered model. */
export type ViewOf = (model: ResourceModel) => View

/** Per caller: how a model reads for it, and its views; `key` says what makes two callers' views the same. */
interface Shape { readonly visible: FilterNode | undefined, readonly hidden: readonly string[], readonly key: string }

const viewSetLimit = 500

export interface Views {
  /** The views of one caller; the identity when no resource has rules. */
  readonly forCaller: (principal: Principal) => ViewOf
  /** The caller's view of `model` narrowed to the records it may also change (rules.write). */
  readonly writable: (principal: Principal, model: ResourceModel) => View
}

/** The views of a caller who may read everything: the registered models themselves. */
const identity: ViewOf = model => model

/**
 * Views are built once per distinct shape (bound rule texts and hidden fields of every model) and
 * kept (bounded), so the caches keyed by model downstream (parsed filters, store predicates) keep
 * working for callers who see the same thing.
 */
export function createViews (models: readonly ResourceModel[], rulesOf: (model: ResourceModel) => ModelRules | null): Views {
  // Only row and field rules make a caller's view differ (server values and hooks act on writes).
  const ruled = models.filter(model => {
    const rules = rulesOf(model)
    return rules !== null && (rules.read !== null || rules.fields.size > 0)
  })
  /** A caller's views, by principal object: the same object (a token's) reads the same views. */
  const byPrincipal = new WeakMap<object, ViewOf>()
  const sets = new Map<string, Map<ResourceModel, View>>()

  function shapeOf (rules: ModelRules, principal: Principal): Shape {
    const bound = rules.read?.(principal) ?? null
    const hidden = [...rules.fields].filter(([, rule]) => rule.read !== undefined && !rule.read(principal)).map(([name]) => name)
    return { visible: bound?.filter, hidden, key: JSON.stringify([bound?.text ?? null, hidden]) }
  }

  function forCaller (principal: Principal): ViewOf {
    if (typeof principal !== 'object' || principal === null) return viewsOf(principal)
    let views = byPrincipal.get(principal)
    if (views === undefined) byPrincipal.set(principal, views = viewsOf(principal))
    return views
  }

  function viewsOf (principal: Principal): ViewOf {
    const shapes = new Map(ruled.map(model => [model, shapeOf(rulesOf(model) as ModelRules, principal)]))
    if ([...shapes.values()].every(shape => shape.visible === undefined && shape.hidden.length === 0)) return identity
    const key = JSON.stringify(ruled.map(model => (shapes.get(model) as Shape).key))
    let set = sets.get(key)
    if (set === undefined) {
      set = keepBounded(sets, viewSetLimit, key, buildSet(models, model => shapes.get(model)))
    }
    const views = set
    return model => views.get(model) as View
  }

  function writable (principal: Principal, model: ResourceModel): View {
    const view = forCaller(principal)(model)
    const write = rulesOf(model)?.write?.(principal) ?? null
    if (write === null) return view
    const visible: FilterNode = view.visible === undefined ? write.filter : { kind: 'and', left: view.visible, right: write.filter }
    return Object.freeze({ ...view, visible })
  }

  return { forCaller: ruled.length === 0 ? () => identity : forCaller, writable }
}

/** Every model's view for one caller, relations pointing at the views of their targets. */
function buildSet (models: readonly ResourceModel[], shapeOf: (model: ResourceModel) => Shape | undefined): Map<ResourceModel, View> {
  const set = new Map<ResourceModel, View>()
  const relationSlots = new Map<ResourceModel, Map<string, ViewRelation>>()
  for (const model of models) {
    const shape = shapeOf(model)
    const hidden = new Set(shape?.hidden ?? [])
    const relations = new Map<string, ViewRelation>()
    relationSlots.set(model, relations)
    const { name, singular, idField, mandatory, defaultPageSize, maxPageSize } = model
    set.set(model, Object.freeze({
      model,
      name,
      singular,
      idField,
      fields: hidden.size === 0 ? model.fields : new Map([...model.fields].filter(([name]) => !hidden.has(name))),
      mandatory,
      relations,
      defaultPageSize,
      maxPageSize,
      visible: shape?.visible,
      hidden: hidden.size === 0 ? undefined : hidden
    }))
  }
  // A relation whose key field the caller cannot read is not there for it either.
  for (const model of models) {
    const view = set.get(model) as View
    for (const [name, relation] of model.relations) {
      const target = set.get(relation.target) as View
      const holder = relation.kind === 'one' ? view : target
      if (holder.fields.has(relation.field)) (relationSlots.get(model) as Map<string, ViewRelation>).set(name, Object.freeze({ ...relation, target }))
    }
  }
  return set
}
