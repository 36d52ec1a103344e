// The route table (spec "Operations"): one RouteSpec per route the plugin serves, derived once at
// registration. Every route is registered from its spec with the spec in `config.route`, and every
// part that needs to know a route (Allow and 405, CORS preflights, authorization, resource
// policies, the audit log, the route steps of the pipeline) reads that spec; none matches URLs or
// path strings. The OpenAPI document is built from the routes' schemas, which the specs hold.
import type { FastifyContextConfig, FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction, RouteHandlerMethod, RouteOptions } from 'fastify'
import FindMyWay from 'find-my-way'
import type { RelationModel, ResourceModel } from '../registry/model.js'
import type { AuthorizedOperation } from '../security/auth.js'
import { listProduced, produced } from '../http/negotiation.js'
import { bodyTypes } from '../http/body-types.js'
import { NotFoundError } from '../errors.js'
import type { OperationContext } from '../operations/context.js'
import type { RouteSpec } from '../route-spec.js'
import { apiRoute, routeSpecIn } from '../route-spec.js'
import { capabilities, nestedList } from '../operations/reads.js'
import type { Operations } from '../operations/index.js'
import type { Perform } from '../operations/input.js'
import { operationTable, resourceOperations } from '../operations/table.js'
import type { ResourceOperation, WriteOperation } from '../operations/table.js'
import { routeHandler } from './adapter.js'
import type { Coding } from '../http/compression.js'
import { idempotent } from '../idempotency.js'
import { batchHandler, batchStoreOf, createBatch } from './batch.js'
import { acceptedResponse, monitorRouteSpec } from '../work/async-writes.js'
import type { AsyncWrites } from '../work/async-writes.js'
import type { ResolvedBatch } from './batch.js'
import {
  batchRouteSchema, capabilitiesRouteSchema, createRouteSchema, deleteRouteSchema, listRouteSchema, modifyRouteSchema,
  nestedListRouteSchema, replaceRouteSchema, retrieveRouteSchema, schemaOptionsFor
} from './route-schema.js'

type Place = 'collection' | 'item' | 'nested'

/** What an operation is in one place: how a path of that place is served (operations/table.ts says the method). */
interface OperationRow {
  readonly operation: AuthorizedOperation
  readonly method: RouteSpec['method']
  readonly place: Place
  readonly item: boolean
  readonly bodyTypes: readonly string[]
}

const row = (operation: AuthorizedOperation, place: Place): OperationRow => {
  const entry = operationTable[operation]
  return { operation, method: entry.method, place, item: place === 'item' && operation !== 'capabilities', bodyTypes: entry.body === null ? [] : bodyTypes[entry.body] }
}

/**
 * Every operation at each place where it is served, in registration order (the OpenAPI document
 * lists paths in this order): a collection's, a nested collection's, an item's.
 */
const operations: readonly OperationRow[] = [
  row('list', 'collection'), row('create', 'collection'), row('capabilities', 'collection'),
  row('list', 'nested'), row('capabilities', 'nested'),
  row('retrieve', 'item'), row('replace', 'item'), row('modify', 'item'), row('delete', 'item'), row('capabilities', 'item')
]

/** One path of a resource: where it is, whose records it serves, and whose record its `:id` names. */
interface PathOf {
  readonly place: Place
  readonly path: string
  readonly resource: ResourceModel
  readonly owner: ResourceModel | null
  readonly relation: RelationModel | null
}

function pathsOf (model: ResourceModel): PathOf[] {
  const nested = [...model.relations.values()]
    // A nested collection lists the children: it exists when they can be listed.
    .filter(relation => relation.kind === 'many' && relation.target.operations.has('list'))
    .map(relation => ({ place: 'nested' as const, path: `/${model.name}/:id/${relation.name}`, resource: relation.target, owner: model, relation }))
  return [
    { place: 'collection', path: `/${model.name}`, resource: model, owner: null, relation: null },
    ...nested,
    { place: 'item', path: `/${model.name}/:id`, resource: model, owner: model, relation: null }
  ]
}

/** QUERY CAPABILITIES is served on every path; the others as the resource allows. */
const served = (row: OperationRow, at: PathOf) =>
  row.operation === 'capabilities' || at.place === 'nested' || at.resource.operations.has(row.operation)

/** The specs of every resource route, in registration order, and of the batch endpoint after them. */
export function buildRouteTable (models: readonly ResourceModel[], context: OperationContext, core: Operations, asyncWrites: AsyncWrites | null = null): RouteSpec[] {
  const table: RouteSpec[] = []
  const offered = offeredCodings(context)
  for (const model of models) {
    // A route exists only for an operation the model serves (`served` below).
    const handle = (operation: keyof Handlers) => routeHandler(core.of(model, operation) as Perform, offered)
    // POST and PATCH are not idempotent by themselves: a client's Idempotency-Key makes them so.
    const store = context.storeOf(model)
    // A write may be answered 202 (Prefer: respond-async): under its Idempotency-Key, so that a repeat answers the same 202.
    const accepting = (operation: keyof Handlers) => asyncWrites === null || operationTable[operation].kind !== 'write' ? handle(operation) : asyncWrites.accepting(model, operation as WriteOperation, handle(operation))
    const handlerOf = (operation: keyof Handlers) => operationTable[operation].keyed ? idempotent(accepting(operation), () => store, context.options.idempotency) : accepting(operation)
    const handlers = Object.fromEntries(resourceOperations.map(operation => [operation, handlerOf(operation)])) as Handlers
    for (const at of pathsOf(model)) {
      const rows = operations.filter(row => row.place === at.place && served(row, at))
      const allow = rows.flatMap(row => row.method === 'GET' ? ['GET', 'HEAD'] : [row.method])
      for (const row of rows) {
        const built = build(row, at, allow, context, handlers, offered)
        const { handler } = built
        const schema = asyncWrites !== null && at.place !== 'nested' && operationTable[row.operation].kind === 'write' ? withAccepted(built.schema) : built.schema
        table.push({
          method: row.method,
          path: at.path,
          allow,
          operation: row.operation,
          resource: at.resource,
          store: context.storeOf(at.resource),
          views: context.views,
          item: row.item,
          bodyTypes: row.bodyTypes,
          responseTypes: row.operation === 'list' ? listProduced : produced,
          schema,
          handler,
          // A LIST also answers as an export, streamed (operations/export.ts, http/compression.ts).
          ...(row.operation === 'list' ? { config: { exports: true, streams: true } } : {})
        })
      }
    }
  }
  if (context.options.batch !== null) table.push(batchSpec(models, context, context.options.batch, core, asyncWrites))
  if (asyncWrites !== null) table.push(monitorRouteSpec(asyncWrites, schemaOptionsFor(context)))
  return table
}

/** A write's schema with the 202 of `Prefer: respond-async` documented (work/async-writes.ts). */
function withAccepted<S extends { readonly documentedResponses: object }> (schema: S): S {
  return { ...schema, documentedResponses: { 202: acceptedResponse, ...schema.documentedResponses } }
}

/** `POST {prefix}/batch`, when the options serve it (routes/batch.ts). */
function batchSpec (models: readonly ResourceModel[], context: OperationContext, settings: ResolvedBatch, core: Operations, asyncWrites: AsyncWrites | null): RouteSpec {
  const json = ['application/json']
  const batch = createBatch(context, settings, core)
  // Prefer: respond-async: 202, under its Idempotency-Key as a write's is.
  const handler = asyncWrites === null ? batchHandler(batch) : asyncWrites.acceptingBatch(batch, batchHandler(batch))
  const schema = batchRouteSchema(models, (model, op) => model.operations.has(op), settings.maxOperations, schemaOptionsFor(context))
  // Its answers are JSON only (results of several resources have no one XML shape).
  return apiRoute({
    method: 'POST',
    path: '/batch',
    allow: ['POST'],
    operation: 'batch',
    bodyTypes: json,
    responseTypes: json,
    schema: asyncWrites === null ? schema : withAccepted(schema),
    handler: idempotent(handler, batchStoreOf(context), context.options.idempotency)
  })
}

/** The content codings responses are compressed in (http/compression.ts). */
const offeredCodings = (context: OperationContext) => context.options.compression?.encodings ?? []

type Handlers = Readonly<Record<ResourceOperation, RouteHandlerMethod>>

/** The schema and handler of one operation at one path. */
function build (row: OperationRow, at: PathOf, allow: readonly string[], context: OperationContext, handlers: Handlers, offered: readonly Coding[]) {
  const model = at.resource
  const options = schemaOptionsFor(context, model)
  if (at.place === 'nested') {
    const parent = at.owner as ResourceModel
    const relation = at.relation as RelationModel
    return row.operation === 'list'
      ? { schema: nestedListRouteSchema(parent, relation, options), handler: routeHandler(nestedList(parent, relation, context), offered) }
      : {
          schema: capabilitiesRouteSchema(parent, [parent.singular, relation.name], allow, options, relation.target),
          handler: routeHandler(capabilities(allow, context, { collection: relation.target, owner: parent }), offered)
        }
  }
  switch (row.operation) {
    case 'list': return { schema: listRouteSchema(model, options), handler: handlers.list }
    case 'create': return { schema: createRouteSchema(model, options), handler: handlers.create }
    case 'retrieve': return { schema: retrieveRouteSchema(model, options), handler: handlers.retrieve }
    case 'replace': return { schema: replaceRouteSchema(model, options), handler: handlers.replace }
    case 'modify': return { schema: modifyRouteSchema(model, options), handler: handlers.modify }
    case 'delete': return { schema: deleteRouteSchema(model, options), handler: handlers.delete }
    case 'capabilities': return at.place === 'collection'
      ? { schema: capabilitiesRouteSchema(model, [model.name], allow, options, model), handler: routeHandler(capabilities(allow, context, { collection: model }), offered) }
      : { schema: capabilitiesRouteSchema(model, [model.singular], allow, options), handler: routeHandler(capabilities(allow, context, { owner: model }), offered) }
  }
}

/** Whether the route's path names a record (`/books/:id`, `/authors/:id/books`). */
export const namesRecord = (spec: RouteSpec | undefined) => spec?.path.includes('/:id') === true

/**
 * A route step of the paths that name a record: `/books/` (and `/authors//books`) reach the route
 * with an empty id, which names no record, so the path is not found, as an unknown path is (and as
 * the route index below says when it looks for a 405).
 */
export function refuseEmptyId (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) {
  if ((request.params as { id: string }).id === '') return done(new NotFoundError(request.url.split('?', 1)[0]))
  done()
}

/**
 * A spec for one of the plugin's own pages (the OpenAPI document, the docs page, the problem pages):
 * read-only, public, and answering only its own media types (the Accept check reads `produces`).
 */
export function pageSpec (page: Pick<RouteSpec, 'path' | 'allow' | 'operation' | 'schema' | 'handler' | 'responseTypes'> & { readonly config?: FastifyContextConfig }): RouteSpec {
  return { method: 'GET', resource: null, store: null, views: null, item: false, bodyTypes: [], ...page, config: { public: true, produces: page.responseTypes, ...page.config } }
}

/** Registers the route a spec describes, with the spec in its config. */
export function registerRoute (app: FastifyInstance, spec: RouteSpec) {
  app.route({ method: spec.method, url: spec.path, schema: spec.schema, handler: spec.handler, config: { ...spec.config, route: spec } })
}

/**
 * Which route spec each request path reaches, for the 405 of a request that reached none by its
 * method: Fastify's router library, with Fastify's router settings, over the plugin's routes as
 * they are added (Fastify's own `findRoute` cannot say which route it found). A route's spec is
 * read when asked: a plugin's own onRoute hook may give it one after this index saw the route.
 */
export function createRouteIndex (app: FastifyInstance) {
  const router = FindMyWay(routerSettings(app))
  return {
    add (route: RouteOptions) {
      // The handler is never called here: only the route, the store, is looked up.
      for (const method of [route.method].flat()) router.on(method as FindMyWay.HTTPMethod, route.url, route.handler as unknown as FindMyWay.Handler<FindMyWay.HTTPVersion.V1>, route)
    },
    /** The methods allowed at a path; undefined when no route of the plugin is there (404). */
    allowedAt (path: string): readonly string[] | undefined {
      for (const method of probeMethods) {
        const found = router.find(method, path)
        // An empty `:id` segment (`/books/`) names no record: such a path is not found.
        if (found === null || Object.values(found.params).includes('')) continue
        const spec = routeSpecIn(found.store as RouteOptions)
        if (spec !== undefined) return spec.allow
      }
      return undefined
    }
  }
}

const probeMethods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const

/** The settings of Fastify's router, which Fastify 5 takes at the top level (older spelling) or in routerOptions. */
export function routerSettings (app: FastifyInstance): FindMyWay.Config<FindMyWay.HTTPVersion.V1> {
  const config = app.initialConfig as FindMyWay.Config<FindMyWay.HTTPVersion.V1> & { routerOptions?: FindMyWay.Config<FindMyWay.HTTPVersion.V1> }
  const { caseSensitive, ignoreTrailingSlash, ignoreDuplicateSlashes, maxParamLength } = config
  return { caseSensitive, ignoreTrailingSlash, ignoreDuplicateSlashes, maxParamLength, ...config.routerOptions }
}
