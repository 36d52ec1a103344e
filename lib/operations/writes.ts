// The writes (spec "Operations"): CREATE, REPLACE, MODIFY and DELETE of one resource, each a
// function of plain inputs to a plain outcome, with every rule applied: the caller's views, row and
// field rules, server-set values, hooks in the transaction, If-Match (RFC 9110 §13), Prefer return
// (RFC 7240). An Idempotency-Key's or a batch's transaction is joined through `input.joined`.
import type { ResourceModel, View } from '../registry/model.js'
import { mergedSchema } from '../registry/derive.js'
import { itemPath, project, singleBody } from '../envelope/index.js'
import { checkWritableFields, normalizeRecord, unwritableFields, withServerValues } from '../rules/write.js'
import { readableFields, representationVariant } from '../query/list-query.js'
import { evaluatePreconditions, formatETag, hasPreconditions, unversioned, variantTag } from '../http/conditional.js'
import type { Preconditions } from '../http/conditional.js'
import { formatHttpDate } from '../http/dates.js'
import type { Format } from '../http/negotiation.js'
import {
  BodyInvalidError, ConflictError, IdMismatchError, NotFoundError, PreconditionFailedError,
  PreconditionRequiredError, withInvalidParams
} from '../errors.js'
import { VERSION_MISMATCH } from '../stores/store.js'
import type { Fields, Store, StoredRecord } from '../stores/store.js'
import { mergePatch } from '../merge-patch.js'
import { toInvalidParams } from '../validation.js'
import type { ErrorObject } from 'ajv'
import type { OperationContext } from './context.js'
import type { OperationInput, Outcome, Perform } from './input.js'
import type { WriteOperation } from './table.js'
import { writeSteps } from './write-steps.js'

/** A PATCH re-reads and re-merges when another write lands between its read and its write. */
const modifyAttempts = 5

/** The representation variant of a record as a caller sees it: its hidden fields, and the format (RFC 9110 §8.8.3). */
export function recordVariant (view: View, format: Format): string {
  const hidden = view.hidden === undefined ? '' : representationVariant(readableFields(view))
  return format === 'xml' ? `${hidden}\u0000xml` : hidden
}

/** ETag, and Last-Modified unless the representation has no one modification time (null). */
export function validatorHeaders (etag: string, modifiedAt: Date | null): Record<string, string> {
  return modifiedAt === null ? { etag } : { etag, 'last-modified': formatHttpDate(modifiedAt) }
}

/** The writes a resource serves, by operation. */
export function writeOperations (model: ResourceModel, context: OperationContext): Readonly<Record<WriteOperation, Perform>> {
  const steps = writeSteps(model, context)
  const { rules } = steps
  const notFound = (id: string) => new NotFoundError(`${model.singular} ${id}`)
  const requireIfMatch = model.requireIfMatch ?? context.options.requireIfMatch
  // Read-only fields besides the id: set by the server (serverValues, hooks, a store of the host's), never by a client.
  const serverOwned = [...model.fields.values()].filter(field => field.readOnly && field.name !== model.idField).map(field => field.name)
  /** What a REPLACE keeps of the stored record: what the client could not have sent (server-owned, or not its to write). */
  const keptOf = (record: StoredRecord, principal: unknown): Fields => {
    const kept: Fields = {}
    for (const name of [...serverOwned, ...unwritableFields(rules, principal)]) if (record.data[name] !== undefined) kept[name] = record.data[name]
    return kept
  }
  const refusal = `You may not change this ${model.singular}.`
  const outOfReach = `This change would put the ${model.singular} out of your reach.`

  /** The fields a CREATE answer carries whatever `read` says (FieldRule.shownOnCreate). */
  const shownOnCreate = [...rules?.fields ?? []].filter(([, rule]) => rule.shownOnCreate === true).map(([name]) => name)

  /** The answer with the record as written: its validators, Preference-Applied, and the body unless `return=minimal`. */
  function written (input: OperationInput, record: StoredRecord, view: View, status: number, extra?: Record<string, string>): Outcome {
    const headers = { ...validatorHeaders(formatETag(record.version, variantTag(recordVariant(view, input.format))), record.modifiedAt), ...extra }
    const preferred = input.returnPreference
    if (preferred !== undefined) headers['preference-applied'] = `return=${preferred}`
    if (preferred === 'minimal') return { status: status === 201 ? 201 : 204, headers, body: null }
    let shown = project(record.data, readableFields(view))
    if (status === 201) for (const name of shownOnCreate) if (!(name in shown) && record.data[name] !== undefined) shown = { ...shown, [name]: record.data[name] }
    return { status, headers, body: singleBody(context.envelope, model, shown) }
  }

  /** Reads the record a write applies to, as the caller sees it, and checks the input's preconditions against it. */
  async function currentFor (input: OperationInput, tx: Store, view: View): Promise<StoredRecord | null> {
    const { preconditions, id } = input
    if (requireIfMatch && preconditions.ifMatch === undefined) {
      throw new PreconditionRequiredError('This server requires If-Match on PUT, PATCH and DELETE: send the ETag of the version you read.')
    }
    const record = await (steps.lock ? tx.get(view, id, { lock: true }) : tx.get(view, id))
    if (record === null && preconditions.ifMatch === undefined) throw notFound(id)
    evaluatePreconditions(preconditions, record === null ? null : { etag: formatETag(record.version, ''), version: record.version, modifiedAt: record.modifiedAt }, false)
    return record
  }

  /** A write's outcome. Under If-Match, a record deleted since the check fails the precondition too (RFC 9110 §13.1.1). */
  function checkWritten<T> (result: T | null | typeof VERSION_MISMATCH, id: string, preconditions: Preconditions): T {
    const gone = result === null || result === false
    if (result === VERSION_MISMATCH || (gone && preconditions.ifMatch !== undefined)) {
      throw new PreconditionFailedError('The resource changed since the version named in the request; fetch it again and retry.')
    }
    if (gone) throw notFound(id)
    return result
  }

  async function create (input: OperationInput): Promise<Outcome> {
    evaluatePreconditions(input.preconditions, unversioned, false)
    const { principal } = input
    const view = steps.view(principal)
    const body = input.body as Fields
    checkWritableFields(rules, principal, body)
    const id = model.generateId()
    const data = withServerValues(rules, normalizeRecord(model, { ...body, [model.idField]: id }), 'create', principal, null)
    const record = await steps.run(input, async tx => {
      await steps.requireVisibleReferences(tx, principal, data)
      await steps.before(tx, principal, 'create', id, data, null)
      const created = await tx.create(model, data)
      await steps.requireWritable(tx, principal, id, `You may not create this ${model.singular}.`)
      return await steps.after(tx, principal, 'create', created, id, null) as StoredRecord
    })
    const created = String(record.data[model.idField])
    return { ...written(input, record, view, 201, { location: itemPath(context.envelope, model, created) }), created }
  }

  /**
   * REPLACE and MODIFY: the new record from the current one, compare-and-set against the version
   * it was made from, again when another write lands in between (unless If-Match named the
   * version), with the rules' checks and hooks around it in one transaction when they need one.
   */
  async function change (input: OperationInput, operation: 'replace' | 'modify', next: (current: StoredRecord) => Fields): Promise<Outcome> {
    const { id, principal, preconditions } = input
    const body = input.body as Fields
    checkIdUnchanged(model, body, id)
    const view = steps.view(principal)
    checkWritableFields(rules, principal, body)
    const record = await steps.run(input, async tx => {
      for (let attempt = 1; attempt <= modifyAttempts; attempt++) {
        // currentFor throws 404 or 412 when there is none
        const current = await currentFor(input, tx, view) as StoredRecord
        await steps.requireWritable(tx, principal, id, refusal)
        const data = withServerValues(rules, normalizeRecord(model, next(current)), operation, principal, current.data)
        await steps.requireVisibleReferences(tx, principal, data)
        await steps.before(tx, principal, operation, id, data, current)
        const result = await tx.update(model, id, data, { ifVersion: current.version, operation })
        if (result !== VERSION_MISMATCH || preconditions.ifMatch !== undefined) {
          const stored = checkWritten(result, id, preconditions)
          await steps.requireWritable(tx, principal, id, outOfReach)
          return await steps.after(tx, principal, operation, stored, id, current) as StoredRecord
        }
      }
      throw new ConflictError(`The resource is being changed by others too often to apply this ${operation === 'modify' ? 'patch' : 'replacement'}; retry.`)
    })
    return written(input, record, view, 200)
  }

  const replace = async (input: OperationInput) =>
    await change(input, 'replace', current => ({ ...keptOf(current, input.principal), ...input.body as Fields, [model.idField]: input.id }))

  const validateMerged = context.ajv.compile(mergedSchema(model))
  const modify = async (input: OperationInput) => await change(input, 'modify', current => {
    const merged = mergePatch(current.data, input.body) as Fields
    if (!validateMerged(merged)) {
      // Ajv sets `errors` whenever validation fails.
      throw withInvalidParams(new BodyInvalidError(), toInvalidParams(validateMerged.errors as ErrorObject[]))
    }
    return merged
  })

  async function remove (input: OperationInput): Promise<Outcome> {
    const { id, principal, preconditions } = input
    const view = steps.view(principal)
    await steps.run(input, async tx => {
      let how = {}
      let previous: StoredRecord | null = null
      if (requireIfMatch || hasPreconditions(preconditions) || rules !== null) {
        previous = await currentFor(input, tx, view)
        how = { ifVersion: previous?.version }
        await steps.requireWritable(tx, principal, id, refusal)
      }
      await steps.before(tx, principal, 'delete', id, null, previous)
      checkWritten(await tx.remove(model, id, how), id, preconditions)
      await steps.after(tx, principal, 'delete', null, id, previous)
    })
    return { status: 204, headers: {}, body: null }
  }

  return { create, replace, modify, delete: remove }
}

/** The id is the server's (spec "Shape of data"): a body may repeat it, never change it. */
function checkIdUnchanged (model: ResourceModel, body: Fields, id: string) {
  const given = body[model.idField]
  if (given !== undefined && given !== id) {
    throw withInvalidParams(new IdMismatchError(model.idField), [{ name: model.idField, reason: 'must equal the id in the path' }])
  }
}
