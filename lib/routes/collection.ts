// Collection routes (spec "Operations"): LIST, CREATE and QUERY CAPABILITIES on /{resources},
// and the nested collections /{parents}/{id}/{children} of one-to-many relations.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { RelationModel, ResourceModel } from '../registry/model.js'
import { attachRelated, itemPath, listBody, project, singleBody } from '../envelope/index.js'
import { countPastEnd, fetchRelated } from './related.js'
import { parseListQuery } from '../query/list-query.js'
import type { ListRequest, RawQuery } from '../query/list-query.js'
import type { FilterNode } from '../query/filter/ast.js'
import { evaluatePreconditions, formatETag, readPreconditions, unversioned, variantTag } from '../http/conditional.js'
import { NotFoundError } from '../errors.js'
import type { Fields, Store } from '../stores/store.js'
import type { RouteContext } from './context.js'
import { normalizeRecord, writeHeaders } from './shared.js'
import { formatVariant } from '../http/negotiation.js'

/** The handlers of a resource's collection: LIST and CREATE (routes/table.ts places them). */
export function collectionHandlers (model: ResourceModel, context: RouteContext) {
  const base = `${context.envelope.prefix}/${model.name}`
  const store = context.storeOf(model)
  return {
    list: async function listResources (request: FastifyRequest, reply: FastifyReply) {
      const parsed = parseListQuery(model, request.query as RawQuery, context.query, base)
      if (checkCollectionPreconditions(request, true) === 'not-modified') return reply.code(304).send()
      return listPage(context, store, model, base, parsed, null)
    },
    create: async function createResource (request: FastifyRequest, reply: FastifyReply) {
      checkCollectionPreconditions(request, false)
      const id = model.generateId()
      const record = await store.create(model, normalizeRecord(model, { ...(request.body as Fields), [model.idField]: id }))
      writeHeaders(reply, formatETag(record.version, variantTag(formatVariant(request, ''))), record.modifiedAt)
      reply.code(201).header('location', itemPath(context.envelope, model, id))
      return singleBody(context.envelope, model, record.data)
    }
  }
}

/** `/{parents}/{id}/{children}`: the children of one parent, with the same query language as `/{children}`. */
export function nestedListHandler (parent: ResourceModel, relation: RelationModel, context: RouteContext) {
  const child = relation.target
  const store = context.storeOf(parent)
  return async function listNested (request: FastifyRequest, reply: FastifyReply) {
    const { id } = request.params as { id: string }
    if (await store.get(parent, id) === null) throw new NotFoundError(`${parent.singular} ${id}`)
    const base = `${itemPath(context.envelope, parent, id)}/${relation.name}`
    const parsed = parseListQuery(child, request.query as RawQuery, context.query, base)
    if (checkCollectionPreconditions(request, true) === 'not-modified') return reply.code(304).send()
    const scope: FilterNode = { kind: 'compare', op: 'eq', left: { kind: 'field', path: [relation.field] }, right: { kind: 'literal', type: 'string', value: id } }
    return listPage(context, store, child, base, parsed, scope)
  }
}

/**
 * RFC 9110 §13.2.2 on a collection, which exists and sends no ETag or Last-Modified (README
 * "Conditional requests"): `If-Match: *` passes and a tag list fails; `If-None-Match: *` is 304
 * on GET/HEAD and 412 on POST; the date conditions have nothing to compare with (§13.1.3, §13.1.4).
 * Called after the checks that would fail the request anyway, which take precedence (§13.2.1).
 */
function checkCollectionPreconditions (request: FastifyRequest, safe: boolean) {
  return evaluatePreconditions(readPreconditions(request.headers), unversioned, safe)
}

async function listPage (context: RouteContext, store: Store, model: ResourceModel, base: string, parsed: ListRequest, scope: FilterNode | null) {
  const query = scope === null
    ? parsed.query
    : { ...parsed.query, filter: parsed.query.filter === null ? scope : { kind: 'and', left: scope, right: parsed.query.filter } as const }
  const page = await store.list(model, query)
  const projected = page.items.map(record => project(record.data, parsed.fields))
  const { items, links } = parsed.expand.length + parsed.include.length === 0
    ? { items: projected, links: [] }
    : attachRelated(context.envelope, model, projected, parsed.expand, parsed.include, await fetchRelated(store, model, projected, [...parsed.expand, ...parsed.include]))
  const count = page.total ?? await countPastEnd(store, model, parsed, page, query)
  return listBody(context.envelope, model, base, parsed, page, items, links, count)
}
