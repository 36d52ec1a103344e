// Which store keeps each resource's records: held here, beside the routes that use them, so that
// the registry and the envelope stay pure. Fails at boot when a definition's store cannot serve.
import { ResourceInvalidError } from '../errors.js'
import type { ResourceDefinition } from '../define.js'
import type { ResourceModel } from '../registry/model.js'
import type { Store } from '../stores/store.js'

export type StoreOf = (model: ResourceModel) => Store

/** The store of each model, from the definitions it was built from (by name). */
export function assignStores (definitions: readonly ResourceDefinition[], models: readonly ResourceModel[]): StoreOf {
  const byName = new Map<string, Store>()
  for (const definition of definitions) {
    if (typeof definition.store?.list !== 'function') throw new ResourceInvalidError(definition.name, 'store must implement the Store interface')
    byName.set(definition.name, definition.store)
  }
  const stores = new Map(models.map(model => [model, byName.get(model.name) as Store]))
  for (const model of models) {
    for (const relation of model.relations.values()) {
      // Related records are read and checked in one store (expand, referential rules).
      if (stores.get(relation.target) !== stores.get(model)) throw new ResourceInvalidError(`${model.name}.relations.${relation.name}`, `${model.name} and ${relation.target.name} must share one store`)
    }
  }
  return model => stores.get(model) as Store
}
