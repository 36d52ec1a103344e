// Item routes (spec "Operations"): RETRIEVE (HEAD comes from GET), REPLACE, MODIFY, DELETE and
// OPTIONS on /{resources}/{id}, with conditional requests (RFC 9110 §13) on each.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ResourceModel } from '../registry/model.js'
import { mergedSchema } from '../registry/derive.js'
import { attachRelated, project, singleBody } from '../envelope/index.js'
import type { Link } from '../envelope/index.js'
import { parseItemQuery } from '../query/list-query.js'
import type { RawQuery } from '../query/list-query.js'
import { evaluatePreconditions, formatETag, hasPreconditions, readPreconditions, variantTag } from '../http/conditional.js'
import type { Preconditions } from '../http/conditional.js'
import {
  BodyInvalidError, ConflictError, IdMismatchError, NotFoundError, PreconditionFailedError,
  PreconditionRequiredError, withInvalidParams
} from '../errors.js'
import { VERSION_MISMATCH } from '../stores/store.js'
import type { Fields, StoredRecord } from '../stores/store.js'
import { mergePatch } from '../merge-patch.js'
import { toInvalidParams } from '../validation.js'
import type { ErrorObject } from 'ajv'
import type { RouteContext } from './context.js'
import { normalizeRecord, writeHeaders } from './shared.js'
import { formatVariant } from '../http/negotiation.js'
import { readRecordOnce } from '../record-once.js'
import { fetchRelated } from './related.js'

/** A PATCH re-reads and re-merges when another write lands between its read and its write. */
const modifyAttempts = 5

/** The handlers of a resource's items: RETRIEVE, REPLACE, MODIFY and DELETE (routes/table.ts places them). */
export function itemHandlers (model: ResourceModel, context: RouteContext) {
  const store = context.storeOf(model)
  const notFound = (id: string) => new NotFoundError(`${model.singular} ${id}`)
  const requireIfMatch = model.requireIfMatch ?? context.options.requireIfMatch
  // Read-only fields besides the id: set by the server (a store of the host's, say), never by a client.
  const serverOwned = [...model.fields.values()].filter(field => field.readOnly && field.name !== model.idField).map(field => field.name)
  /** The server-owned values a record holds, which a PUT keeps: the client could not have sent them. */
  const serverOwnedOf = (record: StoredRecord): Fields => {
    const kept: Fields = {}
    for (const name of serverOwned) if (record.data[name] !== undefined) kept[name] = record.data[name]
    return kept
  }

  /** Reads the record a write applies to and checks the client's preconditions against it. */
  async function currentFor (request: FastifyRequest, id: string): Promise<{ record: StoredRecord | null, preconditions: Preconditions }> {
    const preconditions = readPreconditions(request.headers)
    if (requireIfMatch && preconditions.ifMatch === undefined) {
      throw new PreconditionRequiredError('This server requires If-Match on PUT, PATCH and DELETE: send the ETag of the version you read.')
    }
    const record = await store.get(model, id)
    if (record === null && preconditions.ifMatch === undefined) throw notFound(id)
    evaluatePreconditions(preconditions, record === null ? null : { etag: formatETag(record.version, ''), version: record.version, modifiedAt: record.modifiedAt }, false)
    return { record, preconditions }
  }

  function respond (reply: FastifyReply, record: StoredRecord) {
    // The ETag of the representation sent: JSON `"7"`, XML another variant of version 7.
    writeHeaders(reply, formatETag(record.version, variantTag(formatVariant(reply.request, ''))), record.modifiedAt)
    return singleBody(context.envelope, model, record.data)
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
    const options = parseItemQuery(model, request.query as RawQuery)
    const preconditions = readPreconditions(request.headers)
    const record = await readRecordOnce(request, store, model, id)
    if (record === null) throw notFound(id)
    let resource = project(record.data, options.fields)
    let links: Link[] | undefined
    let variant = options.variant
    // The record's own write time, unless related records are part of the representation: their
    // changes, additions and removals do not move it, so it would answer If-Modified-Since wrongly.
    let modifiedAt: Date | null = record.modifiedAt
    if (options.expand.length + options.include.length > 0) {
      const relations = [...options.expand, ...options.include]
      const related = attachRelated(context.envelope, model, [resource], options.expand, options.include, await fetchRelated(store, model, [resource], relations))
      resource = related.items[0]
      links = related.links
      // The embedded records have versions of their own: the validator must change with them.
      variant += JSON.stringify(related)
      modifiedAt = null
    }
    const etag = formatETag(record.version, variantTag(formatVariant(request, variant)))
    writeHeaders(reply, etag, modifiedAt)
    if (hasPreconditions(preconditions) && evaluatePreconditions(preconditions, { etag, version: record.version, modifiedAt }, true) === 'not-modified') {
      return reply.code(304).send()
    }
    return singleBody(context.envelope, model, resource, links)
  }

  async function replaceResource (request: FastifyRequest, reply: FastifyReply) {
    const { id } = request.params as { id: string }
    const body = request.body as Fields
    checkIdUnchanged(model, body, id)
    const { record, preconditions } = await currentFor(request, id)
    const current = record as StoredRecord // currentFor throws 404 or 412 when there is none
    // Preconditions were checked against this version: write only if it is still the current one.
    const how = hasPreconditions(preconditions) ? { ifVersion: current.version } : {}
    const written = await store.update(model, id, normalizeRecord(model, { ...serverOwnedOf(current), ...body, [model.idField]: id }), how)
    return respond(reply, checkWritten(written, id, preconditions))
  }

  const validateMerged = context.ajv.compile(mergedSchema(model))
  async function modifyResource (request: FastifyRequest, reply: FastifyReply) {
    const { id } = request.params as { id: string }
    const patch = request.body as Fields
    checkIdUnchanged(model, patch, id)
    for (let attempt = 1; attempt <= modifyAttempts; attempt++) {
      const { record, preconditions } = await currentFor(request, id)
      const current = record as StoredRecord // currentFor throws 404 or 412 when there is none
      const merged = mergePatch(current.data, patch) as Fields
      if (!validateMerged(merged)) {
        // Ajv sets `errors` whenever validation fails.
        throw withInvalidParams(new BodyInvalidError(), toInvalidParams(validateMerged.errors as ErrorObject[]))
      }
      // Always compare-and-set: the merge was computed from this version.
      const written = await store.update(model, id, normalizeRecord(model, merged), { ifVersion: current.version })
      if (written !== VERSION_MISMATCH || preconditions.ifMatch !== undefined) return respond(reply, checkWritten(written, id, preconditions))
    }
    throw new ConflictError('The resource is being changed by others too often to apply this patch; retry.')
  }

  async function deleteResource (request: FastifyRequest, reply: FastifyReply) {
    const { id } = request.params as { id: string }
    const preconditions = readPreconditions(request.headers)
    let how = {}
    if (requireIfMatch || hasPreconditions(preconditions)) {
      const { record } = await currentFor(request, id)
      how = { ifVersion: record?.version }
    }
    checkWritten(await store.remove(model, id, how), id, preconditions)
    return reply.code(204).send()
  }

  return { retrieve: retrieveResource, replace: replaceResource, modify: modifyResource, delete: deleteResource }
}

/** The id is the server's (spec "Shape of data"): a body may repeat it, never change it. */
function checkIdUnchanged (model: ResourceModel, body: Fields, id: string) {
  const given = body[model.idField]
  if (given !== undefined && given !== id) {
    throw withInvalidParams(new IdMismatchError(model.idField), [{ name: model.idField, reason: 'must equal the id in the path' }])
  }
}
