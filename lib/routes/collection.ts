// Collection routes (spec "Operations"): LIST, CREATE and QUERY CAPABILITIES on /{resources},
// and the nested collections /{parents}/{id}/{children} of one-to-many relations.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { RelationModel, ResourceModel } from '../registry/model.js'
import { attachRelated, itemPath, listBody, project, singleBody } from '../envelope/index.js'
import { countPastEnd, fetchRelated } from './related.js'
import { listRequestFor, readableFields } from '../query/list-query.js'
import type { ListRequest, RawQuery } from '../query/list-query.js'
import type { FilterNode } from '../query/filter/ast.js'
import { evaluatePreconditions, formatETag, readPreconditions, unversioned, variantTag } from '../http/conditional.js'
import { NotFoundError } from '../errors.js'
import type { Fields, Store, StoredRecord } from '../stores/store.js'
import type { RouteContext } from './context.js'
import { normalizeRecord, wantsMinimal, writeHeaders } from './shared.js'
import { formatVariant } from '../http/negotiation.js'
import { checkWritableFields, withServerValues } from '../rules/write.js'
import { writeInputOf, writeSteps } from './write.js'
import type { WriteInput, WriteOutcome } from './write.js'
import { sendEmpty } from '../idempotency.js'
import { hiddenVariant } from './item.js'

/** The handlers of a resource's collection: LIST and CREATE (routes/table.ts places them). */
export function collectionHandlers (model: ResourceModel, context: RouteContext) {
  const base = `${context.envelope.prefix}/${model.name}`
  const store = context.storeOf(model)
  const steps = writeSteps(model, context)
  const { rules } = steps
  return {
    list: async function listResources (request: FastifyRequest, reply: FastifyReply) {
      const view = steps.view(request.principal)
      const parsed = listRequestFor(view, request.query as RawQuery, context.query, base)
      if (checkCollectionPreconditions(request, true) === 'not-modified') return reply.code(304).send()
      return listPage(context, store, view, base, parsed, null)
    },
    create: async function createResource (request: FastifyRequest, reply: FastifyReply) {
      const { record, view } = await createRecord(writeInputOf(request))
      const stored = record as StoredRecord
      writeHeaders(reply, formatETag(stored.version, variantTag(formatVariant(request, hiddenVariant(view)))), stored.modifiedAt)
      reply.code(201).header('location', itemPath(context.envelope, model, String(stored.data[model.idField])))
      if (wantsMinimal(reply)) return sendEmpty(reply)
      return singleBody(context.envelope, model, project(stored.data, readableFields(view)))
    },
    createRecord
  }

  /** CREATE, of an HTTP request or of a batch's operation: the record as stored. */
  async function createRecord (input: WriteInput): Promise<WriteOutcome> {
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
    return { record, view }
  }
}

/** `/{parents}/{id}/{children}`: the children of one parent, with the same query language as `/{children}`. */
export function nestedListHandler (parent: ResourceModel, relation: RelationModel, context: RouteContext) {
  const store = context.storeOf(parent)
  return async function listNested (request: FastifyRequest, reply: FastifyReply) {
    const { id } = request.params as { id: string }
    const views = context.views.forCaller(request.principal)
    const parentView = views(parent)
    if (await store.get(parentView, id) === null) throw new NotFoundError(`${parent.singular} ${id}`)
    const child = views(relation.target)
    const base = `${itemPath(context.envelope, parent, id)}/${relation.name}`
    const parsed = listRequestFor(child, request.query as RawQuery, context.query, base)
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
