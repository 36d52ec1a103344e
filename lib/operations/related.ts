// The store reads around a page or an item (spec "Response envelope": expand and include): the
// related records of the items, one store call per relation (never one per item). The envelope
// shapes what these read.
import type { View, ViewRelation } from '../registry/model.js'
import type { Fields, Store, StoredRecord } from '../stores/store.js'
import { readableFields } from '../query/list-query.js'
import { project } from '../envelope/index.js'
import type { RelatedRecords } from '../envelope/index.js'
import { compareText } from '../query/filter/evaluate.js'

/** The related records of `items` for every relation expanded or included. */
export async function fetchRelated (store: Store, model: View, items: Fields[], relations: readonly ViewRelation[]): Promise<RelatedRecords> {
  const related = new Map<ViewRelation, (item: Fields) => Fields | Fields[] | null>()
  for (const relation of new Set(relations)) related.set(relation, await fetchRelation(store, model, relation, items))
  return related
}

async function fetchRelation (store: Store, model: View, relation: ViewRelation, items: Fields[]): Promise<(item: Fields) => Fields | Fields[] | null> {
  const target = relation.target
  // A caller's view of the target (rules/view.ts) leaves out the fields it may not read.
  const shown = readableFields(target)
  const dataOf = (record: StoredRecord) => project(record.data, shown)
  if (relation.kind === 'one') {
    const ids = [...new Set(items.map(item => item[relation.field]).filter(id => id !== null && id !== undefined))]
    const records = ids.length === 0 ? [] : await store.getMany(target, target.idField, ids)
    const byId = new Map(records.map(record => [record.data[target.idField], dataOf(record)]))
    return item => byId.get(item[relation.field]) ?? null
  }
  const ids = items.map(item => item[model.idField])
  const records = ids.length === 0 ? [] : await store.getMany(target, relation.field, ids)
  const byParent = new Map<unknown, Fields[]>()
  for (const record of [...records].sort((a, b) => compareIds(a.data[target.idField], b.data[target.idField]))) {
    const parent = record.data[relation.field]
    const children = byParent.get(parent)
    if (children === undefined) byParent.set(parent, [dataOf(record)])
    else children.push(dataOf(record))
  }
  return item => byParent.get(item[model.idField]) ?? []
}

// Children in id order, as the SQL store's ORDER BY id COLLATE "C" gives them.
const compareIds = (a: unknown, b: unknown) => compareText(String(a), String(b))
