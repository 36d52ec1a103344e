// One store read of the record an item request names, shared by the authorization check (which
// reads it before the body, to decide) and RETRIEVE (which would otherwise read it again): on a
// database that is a round trip per GET saved.
import type { ResourceModel } from './registry/model.js'
import type { StoredRecord } from './stores/store.js'

interface Read { readonly model: ResourceModel, readonly id: string, readonly record: Promise<StoredRecord | null> }
const reads = new WeakMap<object, Read>()

/** The record `id` of `model` as first read during `request`; reads it if no one has yet (another record is read afresh). */
export function readRecordOnce (request: object, model: ResourceModel, id: string): Promise<StoredRecord | null> {
  const read = reads.get(request)
  if (read !== undefined && read.model === model && read.id === id) return read.record
  const record = model.store.get(model, id)
  reads.set(request, { model, id, record })
  return record
}
