// Collection routes (spec "Operations"): LIST, CREATE and QUERY CAPABILITIES on /{resources},
// and the nested collections /{parents}/{id}/{children} of one-to-many relations.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { RelationModel, ResourceModel } from '../registry/model.js'
import { capabilitiesRouteSchema, createRouteSchema, listRouteSchema, nestedListRouteSchema, schemaOptionsFor } from './route-schema.js'
import { attachRelated, countPastEnd, itemPath, listBody, project, singleBody } from '../envelope/index.js'
import { parseListQuery } from '../query/list-query.js'
import type { ListRequest, RawQuery } from '../query/list-query.js'
import type { FilterNode } from '../query/filter/ast.js'
import { evaluatePreconditions, formatETag, readPreconditions, unversioned, variantTag } from '../http/conditional.js'
import { NotFoundError } from '../errors.js'
import type { Fields } from '../stores/store.js'
import type { RouteContext } from './context.js'
import { bodyTypes, requireBodyType } from '../http/body-types.js'
import { capabilitiesHandler, normalizeRecord, writeHeaders } from './shared.js'
import { formatVariant } from '../http/negotiation.js'

export function registerCollectionRoutes (app: FastifyInstance, model: ResourceModel, context: RouteContext) {
  const schemaOptions = schemaOptionsFor(context, model)
  const path = `/${model.name}`
  const base = `${context.envelope.prefix}${path}`
  const methods: string[] = []

  if (model.operations.has('list')) {
    methods.push('GET', 'HEAD')
    app.get(path, {
      schema: listRouteSchema(model, schemaOptions)
    }, async function listResources (request: FastifyRequest, reply: FastifyReply) {
      const parsed = parseListQuery(model, request.query as RawQuery, context.query, base)
      if (checkCollectionPreconditions(request, true) === 'not-modified') return reply.code(304).send()
      return listPage(context, model, base, parsed, null)
    })
  }

  if (model.operations.has('create')) {
    methods.push('POST')
    app.post(path, {
      onRequest: requireBodyType(bodyTypes.create),
      schema: createRouteSchema(model, schemaOptions)
    }, async function createResource (request: FastifyRequest, reply: FastifyReply) {
      checkCollectionPreconditions(request, false)
      const id = model.generateId()
      const record = await model.store.create(model, normalizeRecord(model, { ...(request.body as Fields), [model.idField]: id }))
      writeHeaders(reply, formatETag(record.version, variantTag(formatVariant(request, ''))), record.modifiedAt)
      reply.code(201).header('location', itemPath(context.envelope, model, id))
      return singleBody(context.envelope, model, record.data)
    })
  }

  methods.push('OPTIONS')
  app.options(path, { schema: capabilitiesRouteSchema(model, [model.name], methods, schemaOptions) }, capabilitiesHandler(methods))
  context.allow(path, methods)

  for (const relation of model.relations.values()) {
    if (relation.kind === 'many' && relation.target.operations.has('list')) registerNestedList(app, model, relation, context)
  }
}

/** `/{parents}/{id}/{children}`: the children of one parent, with the same query language (issue 3, point 11). */
function registerNestedList (app: FastifyInstance, parent: ResourceModel, relation: RelationModel, context: RouteContext) {
  const child = relation.target
  const path = `/${parent.name}/:id/${relation.name}`
  const methods = ['GET', 'HEAD', 'OPTIONS']
  app.get(path, {
    schema: nestedListRouteSchema(parent, relation, schemaOptionsFor(context, child))
  }, async function listNested (request: FastifyRequest, reply: FastifyReply) {
    const { id } = request.params as { id: string }
    if (await parent.store.get(parent, id) === null) throw new NotFoundError(`${parent.singular} ${id}`)
    const base = `${itemPath(context.envelope, parent, id)}/${relation.name}`
    const parsed = parseListQuery(child, request.query as RawQuery, context.query, base)
    if (checkCollectionPreconditions(request, true) === 'not-modified') return reply.code(304).send()
    const scope: FilterNode = { kind: 'compare', op: 'eq', left: { kind: 'field', path: [relation.field] }, right: { kind: 'literal', type: 'string', value: id } }
    return listPage(context, child, base, parsed, scope)
  })
  app.options(path, { schema: capabilitiesRouteSchema(parent, [parent.singular, relation.name], methods, schemaOptionsFor(context, child)) }, capabilitiesHandler(methods, parent))
  context.allow(path, methods)
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

async function listPage (context: RouteContext, model: ResourceModel, base: string, parsed: ListRequest, scope: FilterNode | null) {
  const query = scope === null
    ? parsed.query
    : { ...parsed.query, filter: parsed.query.filter === null ? scope : { kind: 'and', left: scope, right: parsed.query.filter } as const }
  const page = await model.store.list(model, query)
  const projected = page.items.map(record => project(record.data, parsed.fields))
  const { items, links } = parsed.expand.length + parsed.include.length === 0
    ? { items: projected, links: [] }
    : await attachRelated(context.envelope, model, projected, parsed.expand, parsed.include)
  const count = page.total ?? await countPastEnd(model, parsed, page, query)
  return listBody(context.envelope, model, base, parsed, page, items, links, count)
}
