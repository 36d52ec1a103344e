// One store read of the record an item request names, shared by the authorization check (which
// reads it before the body, to decide) and RETRIEVE (which would otherwise read it again): on a
// database that is a round trip per GET saved.
import type { View } from './registry/model.js'
import type { Store, StoredRecord } from './stores/store.js'
import { kRecordRead } from './symbols.js'

interface Read { readonly model: View, readonly id: string, readonly record: Promise<StoredRecord | null> }

/**
 * The record `id` of `model` as first read during `request`; reads it if no one has yet (another record is read afresh).
 * The read is kept in a property of the request (declared with `decorateRequest` so every request
 * has the same shape), not a WeakMap keyed by request, since each WeakMap entry of a short-lived
 * object costs the garbage collector more than the read it saves (benchmarks/README.md).
 */
export function readRecordOnce (request: object, store: Store, model: View, id: string): Promise<StoredRecord | null> {
  const holder = request as { [kRecordRead]?: Read | null }
  const read = holder[kRecordRead]
  if (read != null && read.model === model && read.id === id) return read.record
  const record = store.get(model, id)
  holder[kRecordRead] = { model, id, record }
  return record
}
