// The steps every write of a resource shares (docs/rules.md): one transaction when its rules need
// one, the caller's views, the check that a record is the caller's to change, and the hooks.
import type { ResourceModel, View } from '../registry/model.js'
import type { Fields, Store, StoredRecord } from '../stores/store.js'
import { ForbiddenError } from '../errors.js'
import { missingRelatedError } from '../stores/referential.js'
import { transactionHandle, writeEvent } from '../rules/write.js'
import type { WriteOperation } from './table.js'
import type { OperationContext } from './context.js'
import type { OperationInput } from './input.js'

export function writeSteps (model: ResourceModel, context: OperationContext) {
  const store = context.storeOf(model)
  const rules = context.rulesOf(model)
  const transactional = rules?.transactional === true
  const { beforeWrite, afterWrite } = rules?.hooks ?? {}
  const checksResult = rules !== null && (rules.read !== null || rules.write !== null)

  const hook = async (which: typeof beforeWrite, tx: Store, principal: unknown, operation: WriteOperation, id: string, record: Fields | null, previous: StoredRecord | null) => {
    if (which === undefined) return
    const handle = transactionHandle(tx, store, context.models, context.storeOf, context.rulesOf, principal)
    await which(writeEvent(operation, principal, id, record, previous, handle))
  }

  return {
    rules,
    /** Reads of the record a write changes lock it until the transaction ends. */
    lock: transactional,
    /**
     * `work` in one transaction when rules or hooks take part in the write, else on the store; in
     * the transaction the input joins when it has one.
     */
    run: <T>(input: Pick<OperationInput, 'joined'>, work: (tx: Store) => Promise<T>): Promise<T> => {
      if (input.joined !== null) return work(input.joined)
      return transactional ? store.transaction(work) : work(store)
    },
    /** The resource as the caller sees it. */
    view: (principal: unknown): View => context.views.forCaller(principal)(model),
    /**
     * A related record the caller cannot see is, for it, one that does not exist: the same 422 as
     * for a made-up id (the store's own check knows no callers). Only where a view hides rows.
     */
    async requireVisibleReferences (tx: Store, principal: unknown, data: Fields): Promise<void> {
      const view = context.views.forCaller(principal)(model)
      for (const relation of view.relations.values()) {
        const value = data[relation.field]
        if (relation.kind !== 'one' || relation.target.visible === undefined || value === null || value === undefined) continue
        if (await tx.get(relation.target, String(value)) === null) throw missingRelatedError(relation, value)
      }
    },
    /** 403 unless record `id`, as it stands in `tx`, is among those the caller may change (rules.write). */
    async requireWritable (tx: Store, principal: unknown, id: string, refusal: string): Promise<void> {
      if (!checksResult) return
      if (await tx.get(context.views.writable(principal, model), id) === null) throw new ForbiddenError(refusal)
    },
    before: (tx: Store, principal: unknown, operation: WriteOperation, id: string, record: Fields | null, previous: StoredRecord | null) =>
      hook(beforeWrite, tx, principal, operation, id, record, previous),
    /** Runs afterWrite; returns the record as it stands once the hook is done (a hook may change it too). */
    async after (tx: Store, principal: unknown, operation: WriteOperation, written: StoredRecord | null, id: string, previous: StoredRecord | null): Promise<StoredRecord | null> {
      if (afterWrite === undefined) return written
      await hook(afterWrite, tx, principal, operation, id, written?.data ?? null, previous)
      return written === null ? null : await tx.get(model, id)
    }
  }
}
