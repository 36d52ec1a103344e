// The change record in the write's transaction (docs/changes.md): a store wrapped so that every
// record it creates, updates or removes (a route's write, a batch's, a hook's derived value) notes
// one change, and the transaction appends them to the store's change log as its last step, so they
// commit with the write or not at all. A write outside a transaction runs in one of its own.
import type { ResourceModel } from '../registry/model.js'
import { newUuidV7 } from '../registry/uuid.js'
import { VERSION_MISMATCH } from '../stores/store.js'
import type { ChangeNote, Fields, NewChange, Store, StoredRecord, WriteOptions } from '../stores/store.js'

export interface RecordingOptions {
  /** Whether a change of this model keeps the record before it (row rules: visibility may change). */
  readonly keepsPrevious: (model: ResourceModel) => boolean
  /** Called after a transaction that recorded changes has committed. */
  readonly committed: () => void
  /** Whether a model's writes are changes (not the webhook subscriptions': they hold secrets). Default: every model's. */
  readonly records?: ((model: ResourceModel) => boolean) | undefined
}

// Calls passed to the store as they are: reads, keys, the change log's reads, the store's life.
const passedCalls = ['list', 'exportList', 'aggregate', 'get', 'getMany', 'claimKey', 'keepResponse', 'purgeKeys', 'addJob', 'claimJobs', 'holdJob', 'finishJob', 'getJob', 'purgeJobs', 'readChanges', 'purgeChanges', 'prepare', 'poolStats', 'close'] as const

/** `store` with its writes recorded; its change log must be there (the plugin checks at boot). */
export function recordingStore (store: Store, options: RecordingOptions): Store {
  const { keepsPrevious, records = () => true } = options
  async function transaction<T> (work: (tx: Store) => Promise<T>): Promise<T> {
    let recorded = 0
    const result = await store.transaction(async tx => {
      // Per attempt: a transaction the store runs again records again.
      let written = 0
      const noted: Noted = { pending: [], wrote: () => { written++ } }
      const value = await work(inTransaction(tx, noted, options))
      if (noted.pending.length > 0) await (tx.appendChanges as NonNullable<Store['appendChanges']>)(noted.pending)
      recorded = noted.pending.length + written
      return value
    })
    if (recorded > 0) options.committed()
    return result
  }
  // Made once, not per write: its statement commits each write it makes, which then wakes the feed
  // at once; it never notes a change to append, since the store keeps each with its write.
  const directly = store.writesChanges === true ? inTransaction(store, { pending: [], wrote: options.committed }, options) : undefined
  /**
   * One write: on a store that writes the change in the write's statement, that statement alone
   * (it is atomic), unless the change must keep the record before an update, which is read and
   * locked first; otherwise in a transaction that appends the change.
   */
  async function write<T> (work: (on: Store) => Promise<T>, readsBefore = false): Promise<T> {
    if (directly === undefined || readsBefore) return await transaction(work)
    return await work(directly)
  }
  const wrapper = passThrough(store)
  return Object.assign(wrapper, {
    transaction,
    create: async (model: ResourceModel, fields: Fields) => await write(async on => await on.create(model, fields)),
    update: async (model: ResourceModel, id: string, fields: Fields, how?: WriteOptions) =>
      await write(async on => await on.update(model, id, fields, how), records(model) && keepsPrevious(model)),
    remove: async (model: ResourceModel, id: string, how?: WriteOptions) => await write(async on => await on.remove(model, id, how)),
    appendChanges: undefined,
    writesChanges: undefined
  }) as unknown as Store
}

/** The changes of one transaction (or of the writes outside one): noted to append at its end, or told as written with their writes. */
interface Noted { readonly pending: NewChange[], readonly wrote: () => void }

/** A store (a transaction's, or the one for the writes outside a transaction) whose writes record their changes in `noted`. */
function inTransaction (tx: Store, noted: Noted, { keepsPrevious, records = () => true }: RecordingOptions): Store {
  const note = (model: ResourceModel, operation: NewChange['operation'], id: string, record: StoredRecord | null, previous: StoredRecord | null, at: Date) => {
    noted.pending.push({
      id: newUuidV7(),
      resource: model.name,
      recordId: id,
      operation,
      version: record?.version ?? (previous as StoredRecord).version + 1,
      at,
      data: record?.data ?? null,
      previous: keepsPrevious(model) ? previous?.data ?? null : null
    })
  }
  /** The change a store that writes changes keeps with the write; counted once the write happened. */
  const change = (previous: ChangeNote['previous']): ChangeNote => ({ id: newUuidV7(), previous })
  const wrote = <T>(result: T, happened: boolean): T => {
    if (happened) noted.wrote()
    return result
  }
  /** The record before a write that needs it: locked, so that it is still the one written over. */
  const before = async (model: ResourceModel, id: string, needed: boolean) => needed ? await tx.get(model, id, { lock: true }) : null
  const direct = tx.writesChanges === true
  // No `transaction`: the plugin's writes join this one through the store it hands them, never by opening another.
  return Object.assign(passThrough(tx), {
    async create (model: ResourceModel, fields: Fields) {
      if (!records(model)) return await tx.create(model, fields)
      if (direct) return wrote(await tx.create(model, fields, { change: change(null) }), true)
      const created = await tx.create(model, fields)
      note(model, 'create', String(created.data[model.idField]), created, null, created.modifiedAt)
      return created
    },
    async update (model: ResourceModel, id: string, fields: Fields, how: WriteOptions = {}) {
      if (!records(model)) return await tx.update(model, id, fields, how)
      const previous = await before(model, id, keepsPrevious(model))
      if (direct) {
        const updated = await tx.update(model, id, fields, { ...how, change: change(previous?.data ?? null) })
        return wrote(updated, updated !== null && updated !== VERSION_MISMATCH)
      }
      const updated = await tx.update(model, id, fields, how)
      if (updated !== null && updated !== VERSION_MISMATCH) note(model, how.operation ?? 'modify', id, updated, previous, updated.modifiedAt)
      return updated
    },
    async remove (model: ResourceModel, id: string, how: WriteOptions = {}) {
      if (!records(model)) return await tx.remove(model, id, how)
      if (direct) {
        const removed = await tx.remove(model, id, { ...how, change: change(keepsPrevious(model)) })
        return wrote(removed, removed === true)
      }
      // The version a delete's change carries is the next one of the record removed.
      const previous = await before(model, id, true)
      if (previous === null) return await tx.remove(model, id, how)
      const removed = await tx.remove(model, id, { ...how, ifVersion: how.ifVersion ?? previous.version })
      if (removed === true) note(model, 'delete', id, null, previous, new Date())
      return removed
    }
  }) as unknown as Store
}

/** An object with the store's passed calls, each made on the store itself (which may keep private fields). */
function passThrough (store: Store): Record<string, unknown> {
  const wrapper: Record<string, unknown> = {}
  for (const name of passedCalls) wrapper[name] = store[name]?.bind(store)
  wrapper.routesReadsByCaller = store.routesReadsByCaller
  return wrapper
}
