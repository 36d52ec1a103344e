// Small pieces the collection and item routes share.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ResourceModel } from '../registry/model.js'
import type { Fields, Store } from '../stores/store.js'
import { NotFoundError } from '../errors.js'
import { formatHttpDate } from '../http/dates.js'
import { returnPreference } from '../http/prefer.js'
import type { Views } from '../rules/view.js'
import { queryCapabilities } from '../query/capabilities.js'

/** Optional nullable fields left out are stored as null, so every store returns the same shape. */
export function normalizeRecord (model: ResourceModel, data: Fields): Fields {
  const record: Fields = { ...data }
  for (const field of model.fields.values()) {
    if (record[field.name] === undefined && field.nullable) record[field.name] = null
  }
  return record
}

/** ETag, and Last-Modified unless the representation has no one modification time (null). */
export function writeHeaders (reply: FastifyReply, etag: string, modifiedAt: Date | null) {
  reply.header('etag', etag)
  if (modifiedAt !== null) reply.header('last-modified', formatHttpDate(modifiedAt))
}

/**
 * Prefer `return` (RFC 7240) on a write that answers with the resource: echoes the preference it
 * applies in Preference-Applied; true when the client asked for no body (`return=minimal`).
 */
export function wantsMinimal (reply: FastifyReply): boolean {
  const preferred = returnPreference(reply.request.headers.prefer)
  if (preferred === undefined) return false
  reply.header('preference-applied', `return=${preferred}`)
  return preferred === 'minimal'
}

interface CapabilitiesOf {
  readonly views: Views
  /** On a collection's path (nested or not): its resource, whose query capabilities the body adds. */
  readonly collection?: ResourceModel
  /** On a path naming a record (an item's, a nested collection's): the record's resource and store. */
  readonly owner?: { readonly model: ResourceModel, readonly store: Store }
}

/**
 * QUERY CAPABILITIES: the allowed methods, in `Allow` and in the body; on a collection, beside them
 * what its query parameters accept as the caller sees the resource (query/capabilities.ts); on a
 * path naming a record, 404 when there is none.
 */
export function capabilitiesHandler (methods: readonly string[], { views, collection, owner }: CapabilitiesOf) {
  const allow = methods.join(', ')
  // One body per view: callers the rules treat alike share one (rules/view.ts keeps views).
  const bodies = new WeakMap<ResourceModel, { data: Record<string, unknown> }>()
  function bodyFor (request: FastifyRequest) {
    if (collection === undefined) return { data: { methods } }
    const model = views.forCaller(request.principal)(collection)
    let body = bodies.get(model)
    if (body === undefined) bodies.set(model, body = { data: { methods, ...queryCapabilities(model) } })
    return body
  }
  function queryCapabilitiesOf (request: FastifyRequest, reply: FastifyReply) {
    reply.header('allow', allow)
    return reply.send(bodyFor(request))
  }
  if (owner === undefined) return queryCapabilitiesOf
  // On an item's path (or a nested collection's), the record it names must exist, as for GET.
  return async function queryRecordCapabilities (request: FastifyRequest, reply: FastifyReply) {
    const { id } = request.params as { id: string }
    // As the caller sees it: a record hidden from it is not there (rules/view.ts).
    if (await owner.store.get(views.forCaller(request.principal)(owner.model), id) === null) throw new NotFoundError(`${owner.model.singular} ${id}`)
    return queryCapabilitiesOf(request, reply)
  }
}
