// Item routes (spec "Operations"): RETRIEVE (HEAD comes from GET), REPLACE, MODIFY, DELETE and
// OPTIONS on /{resources}/{id}, with conditional requests (RFC 9110 §13) on each.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ResourceModel } from '../registry/model.js'
import { mergedSchema } from '../registry/derive.js'
import { attachRelated, project, singleBody } from '../envelope/index.js'
import { checkWritableFields, unwritableFields, withServerValues } from '../rules/write.js'
import { writeInputOf, writeSteps } from './write.js'
import type { WriteInput, WriteOutcome } from './write.js'
import { sendEmpty } from '../idempotency.js'
import type { Link } from '../envelope/index.js'
import { parseItemQuery, readableFields, representationVariant } from '../query/list-query.js'
import type { RawQuery } from '../query/list-query.js'
import { evaluatePreconditions, formatETag, hasPreconditions, heldETag, readPreconditions, variantTag } from '../http/conditional.js'
import { acceptedCodings } from '../http/compression.js'
import type { Preconditions } from '../http/conditional.js'
import {
  BodyInvalidError, ConflictError, IdMismatchError, NotFoundError, PreconditionFailedError,
  PreconditionRequiredError, withInvalidParams
} from '../errors.js'
import { VERSION_MISMATCH } from '../stores/store.js'
import type { Fields, Store, StoredRecord } from '../stores/store.js'
import { mergePatch } from '../merge-patch.js'
import { toInvalidParams } from '../validation.js'
import type { ErrorObject } from 'ajv'
import type { RouteContext } from './context.js'
import { normalizeRecord, wantsMinimal, writeHeaders } from './shared.js'
import { formatVariant } from '../http/negotiation.js'
import { readRecordOnce } from '../record-once.js'
import { fetchRelated } from './related.js'

/** A PATCH re-reads and re-merges when another write lands between its read and its write. */
const modifyAttempts = 5

/** The handlers of a resource's items: RETRIEVE, REPLACE, MODIFY and DELETE (routes/table.ts places them). */
export function itemHandlers (model: ResourceModel, context: RouteContext) {
  const store = context.storeOf(model)
  const steps = writeSteps(model, context)
  const { rules } = steps
  const notFound = (id: string) => new NotFoundError(`${model.singular} ${id}`)
  const requireIfMatch = model.requireIfMatch ?? context.options.requireIfMatch
  const offeredCodings = context.options.compression?.encodings ?? []
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

  /** Reads the record a write applies to, as the caller sees it, and checks the input's preconditions against it. */
  async function currentFor (input: WriteInput, tx: Store, view: ResourceModel): Promise<StoredRecord | null> {
    const { preconditions, id } = input
    if (requireIfMatch && preconditions.ifMatch === undefined) {
      throw new PreconditionRequiredError('This server requires If-Match on PUT, PATCH and DELETE: send the ETag of the version you read.')
    }
    const record = await (steps.lock ? tx.get(view, id, { lock: true }) : tx.get(view, id))
    if (record === null && preconditions.ifMatch === undefined) throw notFound(id)
    evaluatePreconditions(preconditions, record === null ? null : { etag: formatETag(record.version, ''), version: record.version, modifiedAt: record.modifiedAt }, false)
    return record
  }

  /** The answer to an HTTP REPLACE or MODIFY. */
  function respond (reply: FastifyReply, { record, view }: WriteOutcome) {
    const stored = record as StoredRecord
    // The ETag of the representation sent: JSON `"7"`, XML another variant of version 7.
    writeHeaders(reply, formatETag(stored.version, variantTag(formatVariant(reply.request, hiddenVariant(view)))), stored.modifiedAt)
    if (wantsMinimal(reply)) return sendEmpty(reply.code(204))
    return singleBody(context.envelope, model, project(stored.data, readableFields(view)))
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

  async function retrieveResource (request: FastifyRequest, reply: FastifyReply) {
    const { id } = request.params as { id: string }
    const view = steps.view(request.principal)
    const options = parseItemQuery(view, request.query as RawQuery)
    const preconditions = readPreconditions(request.headers)
    const record = await readRecordOnce(request, store, view, id)
    if (record === null) throw notFound(id)
    let resource = project(record.data, options.fields)
    let links: Link[] | undefined
    let variant = options.variant
    // The record's own write time, unless related records are part of the representation: their
    // changes, additions and removals do not move it, so it would answer If-Modified-Since wrongly.
    let modifiedAt: Date | null = record.modifiedAt
    if (options.expand.length + options.include.length > 0) {
      const relations = [...options.expand, ...options.include]
      const related = attachRelated(context.envelope, view, [resource], options.expand, options.include, await fetchRelated(store, view, [resource], relations))
      resource = related.items[0]
      links = related.links
      // The embedded records have versions of their own: the validator must change with them.
      variant += JSON.stringify(related)
      modifiedAt = null
    }
    const etag = heldETag(formatETag(record.version, variantTag(formatVariant(request, variant))), preconditions.ifNoneMatch, () => acceptedCodings(request, offeredCodings))
    writeHeaders(reply, etag, modifiedAt)
    if (hasPreconditions(preconditions) && evaluatePreconditions(preconditions, { etag, version: record.version, modifiedAt }, true) === 'not-modified') {
      return reply.code(304).send()
    }
    return singleBody(context.envelope, model, resource, links)
  }

  /**
   * REPLACE and MODIFY: the new record from the current one, compare-and-set against the version
   * it was made from, again when another write lands in between (unless If-Match named the
   * version), with the rules' checks and hooks around it in one transaction when they need one.
   */
  async function change (input: WriteInput, operation: 'replace' | 'modify', next: (current: StoredRecord) => Fields): Promise<WriteOutcome> {
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
        const result = await tx.update(model, id, data, { ifVersion: current.version })
        if (result !== VERSION_MISMATCH || preconditions.ifMatch !== undefined) {
          const stored = checkWritten(result, id, preconditions)
          await steps.requireWritable(tx, principal, id, outOfReach)
          return await steps.after(tx, principal, operation, stored, id, current) as StoredRecord
        }
      }
      throw new ConflictError(`The resource is being changed by others too often to apply this ${operation === 'modify' ? 'patch' : 'replacement'}; retry.`)
    })
    return { record, view }
  }

  const replaceRecord = async (input: WriteInput) =>
    await change(input, 'replace', current => ({ ...keptOf(current, input.principal), ...input.body as Fields, [model.idField]: input.id }))

  const validateMerged = context.ajv.compile(mergedSchema(model))
  const modifyRecord = async (input: WriteInput) => await change(input, 'modify', current => {
    const merged = mergePatch(current.data, input.body) as Fields
    if (!validateMerged(merged)) {
      // Ajv sets `errors` whenever validation fails.
      throw withInvalidParams(new BodyInvalidError(), toInvalidParams(validateMerged.errors as ErrorObject[]))
    }
    return merged
  })

  async function deleteRecord (input: WriteInput): Promise<WriteOutcome> {
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
    return { record: null, view }
  }

  return {
    retrieve: retrieveResource,
    replace: async (request: FastifyRequest, reply: FastifyReply) => respond(reply, await replaceRecord(writeInputOf(request))),
    modify: async (request: FastifyRequest, reply: FastifyReply) => respond(reply, await modifyRecord(writeInputOf(request))),
    delete: async function deleteResource (request: FastifyRequest, reply: FastifyReply) {
      await deleteRecord(writeInputOf(request))
      return reply.code(204).send()
    },
    /** The writes themselves, for a batch's operations (routes/batch.ts). */
    writes: { replace: replaceRecord, modify: modifyRecord, delete: deleteRecord }
  }
}
/** What sets apart the representations of callers who see different fields: part of the ETag, as RETRIEVE makes it. */
export function hiddenVariant (view: ResourceModel): string {
  return view.hidden === undefined ? '' : representationVariant(readableFields(view))
}

/** The id is the server's (spec "Shape of data"): a body may repeat it, never change it. */
function checkIdUnchanged (model: ResourceModel, body: Fields, id: string) {
  const given = body[model.idField]
  if (given !== undefined && given !== id) {
    throw withInvalidParams(new IdMismatchError(model.idField), [{ name: model.idField, reason: 'must equal the id in the path' }])
  }
}
