// One store read of the record an item request names, shared by the authorization check (which
// reads it before the body, to decide) and RETRIEVE (which would otherwise read it again): on a
// database that is a round trip per GET saved.
import type { ResourceModel } from './registry/model.js'
import type { StoredRecord } from './stores/store.js'

const reads = new WeakMap<object, Promise<StoredRecord | null>>()

/** The record `id` of `model` as first read during `request`; reads it if no one has yet. */
export function readRecordOnce (request: object, model: ResourceModel, id: string): Promise<StoredRecord | null> {
  let read = reads.get(request)
  if (read === undefined) reads.set(request, read = model.store.get(model, id))
  return read
}
