// The OpenAPI 3.1 definition and the reference page (spec "What the service does" 2, 3: every
// method and the hypermedia links documented): @fastify/swagger collects the complete route
// schemas of routes/route-schema.ts; `{prefix}/openapi.json` serves the document and
// `{prefix}/docs` renders it with Scalar, from the package's own bundle (no CDN), when Scalar is
// installed (an optional peer dependency) or asked for.
import { STATUS_CODES } from 'node:http'
import swagger from '@fastify/swagger'
import type { SwaggerTransform, SwaggerTransformObject } from '@fastify/swagger'
import type { FastifyApiReferenceOptions } from '@scalar/fastify-api-reference'
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, RouteHandlerMethod, RouteOptions } from 'fastify'
import { changeWebhook } from '../changes/schema.js'
import { findOptional, importOptional } from '../optional.js'
import { pageSpec, registerRoute } from '../routes/table.js'
import { routePrefix } from '../options.js'
import type { ResolvedOptions } from '../options.js'
import type { ResourceModel } from '../registry/model.js'
import { schemaNames } from '../registry/derive.js'
import type { JsonSchema } from '../registry/derive.js'
import { batchComponents, parameterComponent } from '../routes/route-schema.js'
import type { SchemaOptions } from '../routes/route-schema.js'
import { componentHint, componentNames, connectionStatuses, everyRouteProblems, limitFieldHeaders } from '../routes/http-prose.js'
import { problemNamespace } from '../formats/xml.js'
import { describeXml } from '../formats/xml-shape.js'
import type { RefResolver, XmlRoot } from '../formats/xml-shape.js'
import { securitySchemes } from './security-schemes.js'
import { openApiRouteSchema } from './docs-routes.js'
import { documentExamples } from './examples.js'
import { shareComponents } from './components.js'
import { compactResponses } from './compact.js'
import type { ModelRules } from '../rules/compile.js'

const navigationRels = ['self', 'first', 'prev', 'next', 'last']
const pageLinks = 'self and first always; next while more items follow; prev after the first page; last always in token paging, a backward read from the end, and in offset paging when the count is known: total=true, or the last page'

// The page runs Scalar's bundle and its inline start-up script, injects styles, and fetches the
// document from this origin; nothing else, and never framed.
const docsContentSecurityPolicy = "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/**
 * Registers @fastify/swagger (before any route, or routes go undocumented), the document's route
 * and the reference page, each with its route spec, so that other methods answer 405. The shared
 * schemas (`Book`, `BookList`, `Problem` …) become named components.
 */
export async function registerOpenApi (app: FastifyInstance, options: ResolvedOptions, models: readonly ResourceModel[], schemaOptions: SchemaOptions, rulesOf: (model: ResourceModel) => ModelRules | null) {
  if (options.errorFormat === 'envelope') {
    app.addSchema({ $id: componentNames.problemEnvelope, type: 'object', properties: { errors: { $ref: `${componentNames.problem}#` } }, required: ['errors'] })
  }
  const prefix = routePrefix(app)
  const schemes = securitySchemes(options)
  const info = options.openapi
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: info.title, version: info.version, description: info.description ?? describeApi(models), ...(info.license === undefined ? {} : { license: info.license }) },
      servers: [{ url: prefix === '' ? '/' : prefix }],
      tags: [
        ...models.map(model => ({ name: model.name, description: `The ${model.name} collection and its items.` })),
        ...(options.batch === null ? [] : [{ name: 'batch', description: 'Several writes in one request, all or nothing.' }]),
        ...(options.changes === null ? [] : [{ name: 'changes', description: 'Every committed write, in commit order, as the caller may see it.' }]),
        { name: 'documentation', description: 'This document and the problem type pages.' }
      ],
      components: { securitySchemes: schemes },
      // What a webhook subscription receives (OpenAPI 3.1's `webhooks`).
      ...(options.changes?.webhooks == null ? {} : { webhooks: { change: changeWebhook } }),
      // Any one of the configured methods is enough.
      security: Object.keys(schemes).map(name => ({ [name]: [] }))
    },
    exposeHeadRoutes: true,
    // Components named by their `$id` (every shared schema has one: addSchema demands it), not `def-0`.
    refResolver: { buildLocalReference: (json: { $id?: unknown }) => String(json.$id) },
    transform: documentRoute,
    transformObject: document => shareComponents(documentDetail(documentLimitFields(documentExamples(documentRules(documentExports(documentXml(documentLinks(document, models, options.links), models)), models, rulesOf), models, rulesOf), schemaOptions), info.detail, schemaOptions))
  })

  // Built once the routes are known: a schema the document cannot hold fails the boot, not a request.
  let document = ''
  app.addHook('onReady', function buildDocument (done) {
    document = JSON.stringify(app.swagger())
    done()
  })
  const json = ['application/json']
  registerRoute(app, pageSpec({
    path: '/openapi.json',
    allow: ['GET', 'HEAD'],
    operation: 'document',
    responseTypes: json,
    config: { constantBody: true },
    schema: openApiRouteSchema(schemaOptions),
    handler: function serveOpenApi (_request: FastifyRequest, reply: FastifyReply) {
      return reply.type('application/json; charset=utf-8').send(document)
    }
  }))
  const scalar = await docsRenderer(options.docsPage)
  if (scalar === null) app.log.info('api-conventions: no docs page, @scalar/fastify-api-reference is not installed')
  else if (scalar !== undefined) await app.register(docsPage, { scalar, url: `${prefix}/openapi.json`, title: info.title })
}

type ScalarPlugin = FastifyPluginAsync<FastifyApiReferenceOptions>
const scalarPackage = '@scalar/fastify-api-reference'

/** Scalar's plugin; undefined when the page is off, null when it is left to Scalar being installed and it is not. */
async function docsRenderer (docsPage: boolean | undefined): Promise<ScalarPlugin | null | undefined> {
  if (docsPage === false) return undefined
  const module = docsPage === true
    ? await importOptional<{ default: ScalarPlugin }>(scalarPackage, 'docsPage')
    : await findOptional<{ default: ScalarPlugin }>(scalarPackage)
  return module?.default ?? null
}

/** A request as seen at its path with a trailing slash (`/docs?x` → `/docs/?x`), the rest unchanged. */
function slashed (request: FastifyRequest): FastifyRequest {
  const [path, query] = request.url.split(/(?=\?)/)
  return path.endsWith('/') ? request : Object.create(request, { url: { value: `${path}/${query ?? ''}` } }) as FastifyRequest
}

/**
 * Scalar's routes (`/docs`, `/docs/` and its script), public and with the CSP the page needs, each
 * given a route spec as Scalar adds it. Scalar answers `/docs` with a 301 to `/docs/`, where its
 * page's relative URLs (script, document) resolve; here they are absolute, so the page is served
 * at both, by its own handler shown the slashed path.
 */
async function docsPage (app: FastifyInstance, { scalar, url, title }: { scalar: ScalarPlugin, url: string, title: string }) {
  const produces = ['text/html', 'application/javascript']
  const prefix = routePrefix(app)
  // The methods of each path, filled as Scalar adds its routes (GET, then Fastify's HEAD).
  const allowAt = new Map<string, string[]>()
  // Scalar adds the redirect before the page: the page's handler is looked up when asked.
  let renderPage: RouteHandlerMethod | undefined
  function serveDocsPage (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
    return (renderPage as RouteHandlerMethod).call(this, slashed(request), reply)
  }
  app.addHook('onRoute', function configureDocsRoute (route: RouteOptions) {
    const path = route.url.slice(prefix.length)
    if (path === '/docs/') renderPage ??= route.handler
    if (path === '/docs' || path === '/docs/') route.handler = serveDocsPage
    let allow = allowAt.get(path)
    if (allow === undefined) allowAt.set(path, allow = [])
    for (const method of [route.method].flat()) if (!allow.includes(method)) allow.push(method)
    const spec = pageSpec({
      path,
      allow,
      operation: 'docs',
      responseTypes: produces,
      config: { contentSecurityPolicy: docsContentSecurityPolicy, documentHeaders: true, constantBody: true },
      schema: { ...route.schema },
      handler: route.handler
    })
    route.config = { ...route.config, ...spec.config, route: spec }
  })
  await app.register(scalar, {
    routePrefix: '/docs',
    // Offline and self-contained: the bundled script (Scalar's default here), no web fonts, no
    // telemetry, none of the hosted services (AI agent, MCP, developer tools), no favicon request.
    configuration: {
      url,
      // Absolute, so the page works at `/docs` as at `/docs/` (Scalar's default is relative).
      cdn: `${prefix}/docs/js/scalar.js`,
      pageTitle: title,
      withDefaultFonts: false,
      telemetry: false,
      agent: { disabled: true },
      mcp: { disabled: true },
      showDeveloperTools: 'never',
      favicon: 'data:,'
    }
  })
}

type RouteSchema = Record<string, unknown> & { body?: JsonSchema & { $id?: string } }
interface MediaType { schema: JsonSchema }
interface Operation { parameters?: Array<{ description?: string, schema?: JsonSchema }>, responses: Record<string, { content?: Record<string, MediaType>, headers?: Record<string, unknown> }> }
interface OpenApiObject { components: { schemas: Record<string, JsonSchema> }, paths: Record<string, Record<string, Operation>> }
/** The OpenAPI object @fastify/swagger builds; this module only asks for `openapi`, never `swagger`. */
const openApiOf = (document: Parameters<SwaggerTransformObject>[0]) => (document as { openapiObject: unknown }).openapiObject as OpenApiObject

/** Per route, at document time: the schema as documented (route-schema.ts), its body as a named component. */
const documentRoute: SwaggerTransform = function documentRoute ({ schema, url, route, ...document }) {
  // Routes without an operationId are the hidden ones (this page's, CORS preflight).
  if ((schema as RouteSchema | undefined)?.operationId === undefined) return { schema, url }
  const documented = documentedRouteSchema(schema as RouteSchema, String(route.method)) as RouteSchema
  const body = documented.body
  if (body?.$id === undefined) return { schema: documented, url }
  const { $id, ...component } = body
  const schemas = openApiOf(document).components.schemas
  schemas[$id] = component
  // The batch's operations refer to one schema for a local id, an id and an ifMatch.
  if ($id === componentNames.batch) Object.assign(schemas, batchComponents)
  return { schema: { ...documented, body: { $ref: `#/components/schemas/${$id}` } }, url }
}

/**
 * A route's schema as the document shows it: the documented responses beside the serialized
 * ones, the documented body where the handler validates its own, and for HEAD (which Fastify
 * derives from each GET) the GET's without bodies: RETRIEVE HEADERS. The GET beside it says what
 * the operation and its bodies are; the HEAD says only what differs, so its successes share one
 * description (problems keep theirs: the statuses mean the same).
 */
function documentedRouteSchema (schema: Record<string, unknown>, method: string): Record<string, unknown> {
  const { documentedResponses, documentedBody, ...rest } = schema
  const response = { ...(rest.response as Record<string, JsonSchema>), ...(documentedResponses as Record<string, JsonSchema>) }
  // A body documented apart from the one validated: the batch's (its handler validates it) and the
  // writes' (as written for clients, registry/derive.ts documentedBodySchema).
  if (method !== 'HEAD') return { ...rest, ...(documentedBody === undefined ? {} : { body: documentedBody }), response }
  const bodiless: Record<string, JsonSchema> = {}
  for (const [status, { description, headers }] of Object.entries(response)) {
    bodiless[status] = { type: 'null', description: Number(status) < 300 ? `${STATUS_CODES[status] as string}: the headers of the GET's answer, without its body.` : description, headers }
  }
  // @fastify/swagger names the HEAD copy `{operationId}-head`.
  const { description: _, ...head } = rest
  const operationId = String(rest.operationId).replace(/-head$/, '')
  return { ...head, operationId: `${operationId}Headers`, summary: `${String(rest.summary)}: headers only`, response: bodiless }
}

/**
 * The link objects and their `rel` values, per envelope (spec "Page links", "Link object"): the
 * serializer's schemas (registry/derive.ts) accept any rel; the document names the ones sent.
 */
/**
 * Fields under a field rule carry `x-restricted` (`read`: only some callers see it, and may select,
 * filter or sort by it; `write`: only some may write it) and say so; server-set fields say when.
 */
function documentRules (openapi: ReturnType<typeof openApiOf>, models: readonly ResourceModel[], rulesOf: (model: ResourceModel) => ModelRules | null) {
  for (const model of models) {
    const rules = rulesOf(model)
    if (rules === null) continue
    const properties = openapi.components.schemas[schemaNames(model).resource].properties as Record<string, JsonSchema>
    const note = (name: string, text: string) => {
      const { description } = properties[name]
      // A schema whose own description already says it is left as it is.
      if (typeof description === 'string' && description.includes(text)) return
      properties[name] = { ...properties[name], description: description === undefined ? text : `${String(description)} ${text}` }
    }
    for (const [name, rule] of rules.fields) {
      const restricted = (['read', 'write'] as const).filter(access => rule[access] !== undefined)
      properties[name] = { ...properties[name], 'x-restricted': restricted }
      note(name, `Restricted: only some callers may ${restricted.join(' and ')} it; for the others it ${rule.read === undefined ? 'is read-only' : 'does not exist'}.`)
    }
    for (const [name, value] of rules.serverValues) note(name, value.on === 'create' ? 'Set by the server when the record is created.' : 'Set by the server on every write.')
  }
  documentRestrictedParameters(openapi, models, rulesOf)
  return openapi
}

/**
 * The query parameters that name a field only some callers may read (its simple filters, through
 * relations too; `fields` and `sort`): for the others the field does not exist, and naming it is
 * 400. Said on each, with `x-restricted`, found by the component name route-schema.ts gives it.
 */
function documentRestrictedParameters (openapi: OpenApiObject, models: readonly ResourceModel[], rulesOf: (model: ResourceModel) => ModelRules | null) {
  const notes = new Map<string, string>()
  const unknownToOthers = 'for the other callers it does not exist, and naming it is 400.'
  for (const model of models) {
    const hidden = [...rulesOf(model)?.fields ?? []].filter(([, rule]) => rule.read !== undefined).map(([name]) => name)
    for (const name of hidden) {
      notes.set(parameterComponent(model, name), `Restricted: only some callers may read ${name}; ${unknownToOthers}`)
      for (const owner of models) {
        for (const relation of owner.relations.values()) {
          if (relation.target === model) notes.set(parameterComponent(owner, `${relation.name}.${name}`), `Restricted: only some callers may read the ${model.singular}'s ${name}; ${unknownToOthers}`)
        }
      }
    }
    if (hidden.length > 0) {
      for (const list of ['fields', 'sort']) notes.set(parameterComponent(model, list), `Restricted: only some callers may name ${hidden.join(', ')}; ${unknownToOthers.replace('it does', 'they do').replace('naming it', 'naming one')}`)
    }
  }
  for (const item of Object.values(openapi.paths)) {
    for (const operation of Object.values(item)) {
      for (const parameter of operation.parameters ?? []) {
        const note = notes.get(String(parameter.schema?.[componentHint]))
        if (note !== undefined) Object.assign(parameter, { description: parameter.description === undefined ? note : `${parameter.description} ${note}`, 'x-restricted': ['read'] })
      }
    }
  }
}

function documentLinks (document: Parameters<SwaggerTransformObject>[0], models: readonly ResourceModel[], format: 'array' | 'object') {
  const openapi = openApiOf(document)
  const schemas = openapi.components.schemas
  for (const model of models) {
    const names = schemaNames(model)
    setLinks(schemas[names.list], model, navigationRels, format)
    setLinks(schemas[names.single], model, [], format)
  }
  return openapi
}

function setLinks (envelope: JsonSchema, model: ResourceModel, navigation: readonly string[], format: 'array' | 'object') {
  const related = [...model.relations.keys()]
  const link = (rel: JsonSchema, extra: Record<string, JsonSchema> = {}): JsonSchema => ({
    type: 'object',
    properties: { rel, href: { type: 'string', format: 'uri-reference', description: 'URL in the same versioned namespace.' }, ...extra },
    required: ['rel', 'href']
  })
  const owner = { [model.singular]: { type: 'string', description: `The ${model.idField} of the ${model.singular} this related resource belongs to.` } }
  const rels = [
    // When each navigation link is sent, said once per envelope rather than on every LIST's answer.
    ...(navigation.length === 0 ? [] : [`${navigation.join(', ')} (navigation: ${pageLinks})`]),
    ...related.map(rel => `${rel} (related, with include=${rel})`)
  ]
  const description = rels.length === 0 ? 'Links; none are sent for this resource.' : `Links, rel one of: ${rels.join(', ')}.`
  const properties = envelope.properties as Record<string, JsonSchema>
  if (format === 'array') {
    // An empty enum is no schema: a resource without relations has a RETRIEVE with no links.
    properties.links = rels.length === 0 ? { type: 'array', description, maxItems: 0, items: link({ type: 'string' }) } : { type: 'array', description, items: link({ type: 'string', enum: [...navigation, ...related] }, owner) }
    return
  }
  const keyed: Record<string, JsonSchema> = {}
  for (const rel of navigation) keyed[rel] = link({ type: 'string', enum: [rel] })
  for (const rel of related) keyed[rel] = { type: 'array', items: link({ type: 'string', enum: [rel] }, owner) }
  properties.links = { type: 'object', description: `${description} Keyed by rel: navigation rels hold one link, related ones an array.`, properties: keyed, additionalProperties: false }
}

/**
 * OpenAPI 3.1 XML Objects for the XML the server sends and reads (spec "Request headers":
 * Content-Type, Accept; the mapping docs/wire-formats.md describes): envelopes under <response>,
 * bodies under the resource's singular, problems as RFC 9457 Appendix B's <problem>, and inside
 * them the mapping of formats/xml-shape.ts (wrapped arrays, item names).
 */
function documentXml (openapi: OpenApiObject, models: readonly ResourceModel[]) {
  const schemas = openapi.components.schemas
  const singulars = new Map(models.map(model => [schemaNames(model).resource, model.singular]))
  const nameOf = (ref: string) => ref.slice(ref.lastIndexOf('/') + 1)
  const refs: RefResolver = { schema: ref => schemas[nameOf(ref)], itemName: ref => singulars.get(nameOf(ref)) }
  const roots = new Map<string, XmlRoot>([[componentNames.problem, { name: 'problem', namespace: problemNamespace }]])
  for (const model of models) {
    const names = schemaNames(model)
    for (const envelope of [names.single, names.list]) roots.set(envelope, { name: 'response' })
    for (const body of [names.create, names.replace, names.modify]) roots.set(body, { name: model.singular })
  }
  // Each component is described from the undescribed others (its $refs resolve to them), then all are swapped in.
  const described = Object.fromEntries(Object.entries(schemas).map(([name, schema]) => [name, describeXml(schema, refs, roots.get(name))]))
  Object.assign(schemas, described)
  // Inline response bodies (QUERY CAPABILITIES) in their XML form only.
  for (const item of Object.values(openapi.paths)) {
    for (const operation of Object.values(item)) {
      for (const response of Object.values(operation.responses)) {
        const xml = response.content?.['application/xml']
        // A copy: the JSON media type may share the object.
        if (xml !== undefined && xml.schema.$ref === undefined) (response.content as Record<string, MediaType>)['application/xml'] = { ...xml, schema: describeXml(xml.schema, refs, { name: 'response' }) }
      }
    }
  }
  return openapi
}

/** What a LIST's export sends (operations/export.ts, docs/export.md), in place of the envelope the route's schema names for every type: one shared schema each. */
const exportBodies: Readonly<Record<string, readonly [string, JsonSchema]>> = {
  'application/x-ndjson': ['NdjsonExport', {
    type: 'string',
    description: 'Every matching record (filter, sort, fields and rules apply; paging parameters ignored; not with expand or include), streamed, one JSON object per line as the list shows it.'
  }],
  'text/csv': ['CsvExport', {
    type: 'string',
    description: 'Every matching record as RFC 4180 CSV with a header row of the field names, streamed: objects and arrays as JSON text, a text beginning with =, +, -, @, tab or CR prefixed with \'.'
  }]
}

/** The exports' media types of each LIST answer, with their own schemas. */
function documentExports (openapi: OpenApiObject) {
  for (const [name, schema] of Object.values(exportBodies)) openapi.components.schemas[name] = schema
  for (const item of Object.values(openapi.paths)) {
    for (const operation of Object.values(item)) {
      for (const response of Object.values(operation.responses)) {
        const content = response.content
        if (content === undefined) continue
        for (const type in exportBodies) {
          if (content[type] !== undefined) content[type] = { schema: { $ref: `#/components/schemas/${exportBodies[type][0]}` } }
        }
      }
    }
  }
  return openapi
}

/**
 * The fields that tell the rate limit (security/rate-limit.ts) go with every answer of a limited
 * API, not only its 429s; but for those answered at the connection, before any route (408, 431).
 */
function documentLimitFields (openapi: OpenApiObject, options: SchemaOptions) {
  if (options.rateLimit === null) return openapi
  const fields = limitFieldHeaders(options.rateLimit)
  for (const item of Object.values(openapi.paths)) {
    for (const operation of Object.values(item)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (!connectionStatuses.has(Number(status))) response.headers = { ...response.headers, ...fields }
      }
    }
  }
  return openapi
}

/** The problems every operation can answer, one response each (`full`), or one `default` (`compact`, openapi/compact.ts). */
function documentDetail (openapi: OpenApiObject, detail: ResolvedOptions['openapi']['detail'], options: SchemaOptions) {
  return detail === 'full' ? openapi : compactResponses(openapi, everyRouteProblems(options))
}

function describeApi (models: readonly ResourceModel[]): string {
  return [
    `Resources: ${models.map(model => model.name).join(', ')}. Each collection is /{resources}, each item /{resources}/{id}.`,
    'Errors are application/problem+json (RFC 9457) with invalidParams naming each offending parameter; the problem `type` URLs lead to a page per error code.',
    'A method a path does not list answers 405 with Allow; OPTIONS lists the allowed methods.',
    'Collections are paged (token paging by default, or offset/pageOffset), with navigation links in `links`.'
  ].join('\n\n')
}
