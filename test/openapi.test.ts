// The OpenAPI 3.1 definition (spec "What the service does" 2, 3): the demo's document and
// a second app with other options each validate against OpenAPI 3.1, pass Spectral's spectral:oas
// with zero errors, describe every route the plugin registers, and are served without credentials.
// The demo's is compact (openapi.detail 'compact': the problems every operation can answer as one
// `default` each); the second app's, and the demo's in full, list each problem status.
import t from 'tap'
import type { Test } from 'tap'
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import { Validator } from '@seriousme/openapi-schema-validator'
import spectralCore from '@stoplight/spectral-core'
import { oas } from '@stoplight/spectral-rulesets'
import Parsers from '@stoplight/spectral-parsers'
import apiConventions, { defineResource, memoryStore } from '../lib/index.js'
import type { ApiConventionsOptions, Store } from '../lib/index.js'
import { buildDemoApp } from '../demo/app.js'
import { loadConfig } from '../demo/config.js'
import { demoResources } from '../demo/schemas/index.js'
import { demoInFull, inlined } from './helpers/openapi.js'

type Json = Record<string, any>
interface Operation { readonly path: string, readonly method: string, readonly operation: Json }

const methods = ['get', 'head', 'post', 'put', 'patch', 'delete', 'options']
const write = { authorization: 'Bearer dev-token' }

async function demoApp (t: Test, env: Record<string, string> = {}) {
  const app = await buildDemoApp(loadConfig({ STORE: 'memory', CURSOR_SECRET: 'a-test-secret-of-enough-length', ...env }))
  t.teardown(() => app.close())
  return app
}

/** A read-only resource beside the demo's, with the field types the demo lacks. */
function withEvents (store: Store) {
  const events = defineResource({
    name: 'events',
    singular: 'event',
    store,
    operations: ['list', 'retrieve'],
    maxPageSize: 50,
    schema: Type.Object({
      id: Type.Readonly(Type.String()),
      at: Type.String({ format: 'date-time' }),
      page: Type.Integer(),
      payload: Type.Optional(Type.Object({}, { additionalProperties: true }))
    }, { additionalProperties: false })
  })
  return [...demoResources(store), events]
}

const secondOptions = {
  singleResource: 'flat',
  errorFormat: 'envelope',
  links: 'object',
  requireIfMatch: true,
  auth: { bearer: (token: string) => token === 'second-token' ? { id: 'second' } : null, basic: () => null },
  resourcePolicies: { events: { deprecation: { date: '2024-01-01T00:00:00Z' } } },
  handlerTimeout: 30000,
  openapi: { title: 'Second API', version: '2.0.0', description: 'Events, authors and books.' }
} as const

interface Collected { readonly method: string, readonly url: string, readonly hidden: boolean }

/** The plugin on a bare app (no prefix), with every route it registers collected. */
async function secondApp (t: Test) {
  const app = Fastify()
  const routes: Collected[] = []
  app.addHook('onRoute', route => {
    for (const method of [route.method].flat()) routes.push({ method, url: route.url, hidden: (route.schema as Json | undefined)?.hide === true })
  })
  await app.register(apiConventions, { ...secondOptions, cursorSecret: 'a-test-secret-of-enough-length', resources: withEvents(memoryStore()) } as ApiConventionsOptions)
  await app.ready()
  t.teardown(() => app.close())
  return { app, routes }
}

/** The served document (`served`, for the validators) and its operations with their shared parts in place. */
async function documentOf (app: FastifyInstance, url: string): Promise<Json> {
  const res = await app.inject({ url })
  if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`)
  return withServed(res.json())
}

const withServed = (served: Json): Json => Object.defineProperty(inlined(served), 'served', { value: served })

function operationsOf (document: Json): Operation[] {
  return Object.entries(document.paths as Json).flatMap(([path, item]) =>
    methods.filter(method => item[method] !== undefined).map(method => ({ path, method, operation: item[method] })))
}

/** `/books/{id}` in the document, `/v1/books/:id` in Fastify. */
const fastifyPath = (server: string, path: string) => (server === '/' ? '' : server) + path.replace(/\{([^}]+)\}/g, ':$1')

async function checkValid (t: Test, document: Json) {
  const validator = new Validator()
  const result = await validator.validate(document)
  t.equal(validator.version, '3.1', 'an OpenAPI 3.1 document')
  t.same(result.errors ?? [], [], 'valid against the OpenAPI 3.1 schema')
  t.ok(result.valid)
}

async function checkSpectral (t: Test, document: Json) {
  const spectral = new spectralCore.Spectral()
  spectral.setRuleset(oas as never)
  const results = await spectral.run(new spectralCore.Document(JSON.stringify(document), Parsers.Json))
  const errors = results.filter(result => result.severity === 0).map(result => `${result.code} at ${result.path.join('.')}: ${result.message}`)
  t.same(errors, [], 'spectral:oas reports no errors')
}

const problemXmlRef = '#/components/schemas/Problem'
// The routes of one media type answer their problems in JSON only (http/negotiation.ts).
const jsonOnly = new Set(['/openapi.json', '/problems', '/problems/{slug}', '/batch', '/operations/{id}', '/changes', '/webhooks/{id}/deliveries', '/webhooks/{id}/deliveries/{deliveryId}/retry'])

/**
 * Invariants every document keeps, whatever the options: problem+json refers to the configured
 * problem form, problem+xml always to RFC 9457 Appendix B's bare <problem> (what is sent).
 */
function checkInvariants (t: Test, document: Json, problemRef: string) {
  const operations = operationsOf(document)
  const ids = operations.map(({ operation }) => operation.operationId)
  t.equal(new Set(ids).size, ids.length, 'operationIds are unique')
  for (const { path, method, operation } of operations) {
    const where = `${method.toUpperCase()} ${path}`
    t.ok(typeof operation.operationId === 'string' && typeof operation.summary === 'string' && operation.tags?.length === 1, `${where} has an operationId, a summary and a tag`)
    for (const [status, response] of Object.entries(operation.responses as Json)) {
      if (Number(status) < 400) continue
      if (method === 'head') {
        t.equal(response.content, undefined, `${where} ${status} has no body`)
        continue
      }
      const types = Object.keys(response.content)
      const xml = !jsonOnly.has(path) && status !== '408' && status !== '431'
      t.same(types, xml ? ['application/problem+json', 'application/problem+xml'] : ['application/problem+json'], `${where} ${status} problem types`)
      t.same(response.content['application/problem+json'].schema, { $ref: problemRef }, `${where} ${status} JSON refers to the configured problem form`)
      if (xml) t.same(response.content['application/problem+xml'].schema, { $ref: problemXmlRef }, `${where} ${status} XML refers to the bare problem`)
    }
    // 405 has a response of its own, or is one of the default's (openapi.detail 'compact').
    if (method !== 'head') t.ok((operation.responses['405'] ?? operation.responses.default)?.headers?.Allow, `${where} documents 405 with Allow`)
  }
  t.match(document.components.schemas.Problem.xml, { name: 'problem', namespace: 'urn:ietf:rfc:7807' }, 'the XML problem is <problem> in the RFC 7807 namespace')
}

/** Each documented path's methods are the ones the server allows there (its 405 and OPTIONS Allow). */
async function checkAllow (t: Test, app: FastifyInstance, document: Json, headers: Record<string, string>) {
  const server = document.servers[0].url
  for (const [path, item] of Object.entries(document.paths as Json)) {
    const url = fastifyPath(server, path).replace(/:[a-z]+/g, 'x')
    const res = await app.inject({ method: 'TRACE', url, headers })
    t.equal(res.statusCode, 405, `TRACE ${url} is 405`)
    const allowed = String(res.headers.allow).split(', ').map(method => method.toLowerCase()).sort()
    t.same(methods.filter(method => item[method] !== undefined).sort(), allowed, `${path} documents exactly ${res.headers.allow}`)
  }
}

/** The success responses of the demo's operations, their headers and bodies: the same in both forms of the document. */
function checkSuccesses (t: Test, document: Json) {
  const books = document.paths['/books']
  const book = document.paths['/books/{id}']
  const limit = ['RateLimit-Policy', 'RateLimit']
  t.same(Object.keys(books.post.responses['201'].headers), ['Location', 'ETag', 'Last-Modified', 'Preference-Applied', 'Idempotent-Replayed', 'Request-Id', ...limit])
  t.same(Object.keys(book.get.responses['200'].headers), ['ETag', 'Last-Modified', 'Request-Id', ...limit], 'the limit fields on every answer')
  t.same(Object.keys(book.get.responses['200'].content), ['application/json', 'application/xml'])
  t.equal(book.get.responses['304'].content, undefined)
  t.equal(book.delete.responses['204'].content, undefined)
  t.ok(books.options.responses['200'].headers.Allow)
}

/** The statuses and response headers of the demo's operations, in the full document: every problem a response of its own. */
function checkFullStatuses (t: Test, document: Json) {
  const books = document.paths['/books']
  const book = document.paths['/books/{id}']
  const limit = ['RateLimit-Policy', 'RateLimit']
  checkSuccesses(t, document)
  t.ok(book.get.responses['401'].headers['WWW-Authenticate'])
  t.ok(books.get.responses['429'].headers['Retry-After'])
  t.ok(books.get.responses['503'].headers['Retry-After'])
  const everywhere = ['400', '401', '403', '405', '406', '408', '414', '417', '429', '431', '500']
  const sorted = (statuses: string[]) => [...new Set(statuses)].sort()
  t.same(Object.keys(books.get.responses), sorted(['200', '304', ...everywhere, '412', '503']))
  // 202: every write with Prefer: respond-async (the demo has `async` on; docs/async.md).
  t.same(Object.keys(books.post.responses), sorted(['201', '202', ...everywhere, '409', '412', '413', '415', '422', '503']))
  // 204: MODIFY with Prefer: return=minimal (docs/demo-contract.md "Safe retries and atomic writes").
  t.same(Object.keys(book.patch.responses), sorted(['200', '202', '204', ...everywhere, '404', '409', '412', '413', '415', '422', '503']))
  t.same(Object.keys(book.delete.responses), sorted(['202', '204', ...everywhere, '404', '409', '412', '413', '415', '503']))
  t.same(Object.keys(books.options.responses), sorted(['200', '204', ...everywhere, '413', '415']), 'the demo allows an origin: preflights are 204')
  t.same(Object.keys(books.options.responses['204'].headers), ['Access-Control-Allow-Origin', 'Access-Control-Allow-Methods', 'Access-Control-Allow-Headers', 'Access-Control-Max-Age', ...limit])
  t.same(Object.keys(document.paths['/openapi.json'].get.responses), sorted(['200', ...everywhere.filter(status => status !== '401')]))
  t.same(Object.keys(books.get.responses['405'].headers), ['Request-Id', 'Allow', ...limit])
  t.same(Object.keys(books.get.responses['431'].headers), ['Request-Id'], 'not on the answers of the connection, before any route')
  t.ok(document.paths['/authors/{id}'].delete.responses['409'], 'an author with books cannot be deleted')
  t.match(book.delete.responses['409'].description, /still has reviews/, 'nor a book with reviews')
  t.equal(document.paths['/authors'].post.responses['422'].description, 'Unprocessable Entity: this Idempotency-Key was used with another body.', 'authors have no relation field to dangle')
  t.match(books.post.responses['422'].description, /Idempotency-Key was used with another body, or the body refers to a record that does not exist/)
  t.same(Object.keys(book.get.responses['403'].content), ['application/problem+json', 'application/problem+xml'])
  t.same(Object.keys(document.paths['/problems'].get.responses['200'].content), ['text/html'])
}

t.test('the demo document', async t => {
  const app = await demoApp(t)
  const res = await app.inject({ url: '/v1/openapi.json' })
  t.equal(res.statusCode, 200, 'served without credentials')
  t.match(res.headers['content-type'], /^application\/json/)
  const document = withServed(res.json())

  t.test('validates against OpenAPI 3.1', t => checkValid(t, document.served))
  t.test('passes spectral:oas with zero errors', t => checkSpectral(t, document.served))
  t.test('keeps the invariants', async t => checkInvariants(t, document, '#/components/schemas/Problem'))
  t.test('documents exactly the allowed methods of each path', t => checkAllow(t, app, document, write))

  t.test('names the operations as the conventions do', async t => {
    const byPath = Object.fromEntries(operationsOf(document).map(({ path, method, operation }) => [`${method} ${path}`, operation.operationId]))
    t.match(byPath, {
      'get /books': 'listBooks',
      'head /books': 'listBooksHeaders',
      'post /books': 'createBook',
      'options /books': 'booksCapabilities',
      'get /books/{id}': 'getBook',
      'head /books/{id}': 'getBookHeaders',
      'put /books/{id}': 'replaceBook',
      'patch /books/{id}': 'modifyBook',
      'delete /books/{id}': 'deleteBook',
      'options /books/{id}': 'bookCapabilities',
      'get /authors/{id}/books': 'listAuthorBooks',
      'options /authors/{id}/books': 'authorBooksCapabilities',
      'get /books/{id}/reviews': 'listBookReviews',
      'options /books/{id}/reviews': 'bookReviewsCapabilities',
      'post /reviews': 'createReview',
      'get /reviews/{id}': 'getReview',
      'patch /reviews/{id}': 'modifyReview',
      'delete /reviews/{id}': 'deleteReview',
      'post /webhooks': 'createWebhook',
      'get /webhooks/{id}/deliveries': 'listWebhookDeliveries',
      'post /webhooks/{id}/deliveries/{deliveryId}/retry': 'retryWebhookDelivery',
      'get /openapi.json': 'getOpenApiDocument',
      'get /problems': 'listProblemTypes',
      'get /problems/{slug}': 'getProblemType'
    })
    t.same(document.servers, [{ url: '/v1' }])
    t.same(document.tags.map((tag: Json) => tag.name), ['authors', 'books', 'reviews', 'webhooks', 'batch', 'changes', 'documentation'])
    t.same(Object.keys(document.paths).filter(path => path.includes('review')).sort(), ['/books/{id}/reviews', '/reviews', '/reviews/{id}'])
    const received = document.webhooks.change.post
    t.equal(received.operationId, 'receiveChange', 'the delivery a subscription receives, in the 3.1 webhooks object')
    t.same(received.parameters.map((header: Json) => header.name), ['webhook-id', 'webhook-timestamp', 'webhook-signature'])
    t.same(received.requestBody.content['application/json'].schema, document.paths['/changes'].get.responses['200'].content['application/json'].schema.properties.data.properties.changes.items, 'the body is an item of the feed')
  })

  t.test('shows the shared schemas as named components', async t => {
    const schemas = document.components.schemas
    for (const name of ['Problem', 'Book', 'BookItem', 'BookList', 'BookCreate', 'BookReplace', 'BookPatch', 'Author', 'AuthorItem', 'AuthorList',
      'Review', 'ReviewItem', 'ReviewList', 'ReviewCreate', 'ReviewReplace', 'ReviewPatch']) t.ok(schemas[name], name)
    t.same(Object.keys(schemas).filter(name => name.startsWith('def-')), [], 'no anonymous components')
    t.same(schemas.BookItem.properties.data.properties.book, { $ref: '#/components/schemas/Book' })
    t.same(schemas.BookList.properties.data.properties.books.items, { $ref: '#/components/schemas/Book', xml: { name: 'book' } })
    t.equal(schemas.Book.properties.id.readOnly, true, 'the id is read-only in responses')
    // Bodies as written for clients: server-set fields left out (additionalProperties: false refuses
    // them), the path's id allowed in PUT and PATCH, defaults kept optional, null only where it may go.
    t.equal(schemas.BookCreate.properties.id, undefined, 'the id is not a member of a create body')
    t.equal(schemas.BookCreate.additionalProperties, false)
    t.match(schemas.BookReplace.properties.id, { type: 'string', description: /repeat the id of the path/ })
    t.equal(schemas.BookReplace.properties.id.readOnly, undefined, 'so validators accept it')
    t.match(schemas.BookPatch.properties.id, { type: 'string' })
    t.same(schemas.BookCreate.required, ['title', 'authorId'])
    t.same(schemas.BookCreate.properties.available, { allOf: [{ type: 'boolean', default: true }] }, 'a default one level down: optional in generated types')
    t.same(schemas.BookPatch.properties.title, { type: 'string', minLength: 1, maxLength: 500 }, 'a required field cannot be removed with null')
    t.match(schemas.BookPatch.properties.available, { anyOf: [{ type: 'boolean' }, { type: 'null' }] }, 'an optional one can')
    // The books' derived values (docs/demo-contract.md "Application rules"): read-only, set by the server.
    t.match(schemas.Book.properties.reviewCount, { type: 'integer', minimum: 0, readOnly: true })
    t.match(schemas.Book.properties.averageRating, { type: ['number', 'null'], readOnly: true })
    for (const body of ['BookCreate', 'BookReplace', 'BookPatch']) {
      for (const field of ['reviewCount', 'averageRating']) t.equal(schemas[body].properties[field], undefined, `${body}.${field} is refused`)
    }
    // Reviews: server-set owner and times, the admin-only moderatorNote, the mandatory fields.
    t.same(schemas.Review.required, ['id', 'bookId', 'rating', 'ownerId'])
    t.same(schemas.ReviewCreate.required, ['bookId', 'rating'])
    t.match(schemas.Review.properties.rating, { type: 'integer', minimum: 1, maximum: 5 })
    for (const field of ['ownerId', 'createdAt', 'updatedAt']) {
      t.equal(schemas.Review.properties[field].readOnly, true, `${field} is read-only`)
      t.equal(schemas.ReviewCreate.properties[field], undefined, `${field} is refused in bodies`)
    }
    t.same(schemas.Review.properties.moderatorNote['x-restricted'], ['read', 'write'], 'moderatorNote is restricted')
    t.same(schemas.ReviewItem.properties.data.properties.review, { $ref: '#/components/schemas/Review' })
    t.same(schemas.Book.properties.reviews.items, { $ref: '#/components/schemas/Review', xml: { name: 'review' } }, 'expand=reviews embeds reviews')
    const create = document.paths['/books'].post.requestBody.content
    t.same(Object.keys(create), ['application/json', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data'])
    t.same(create['application/json'].schema, { $ref: '#/components/schemas/BookCreate' })
    t.same(document.paths['/books/{id}'].patch.requestBody.content['application/merge-patch+json'].schema, { $ref: '#/components/schemas/BookPatch' })
  })

  t.test('documents every query parameter with its type and limits', async t => {
    const parameters = Object.fromEntries(document.paths['/books'].get.parameters.map((parameter: Json) => [`${parameter.in} ${parameter.name}`, parameter]))
    t.match(parameters['query pageSize'].schema, { type: 'integer', minimum: 0, maximum: 100, default: 20 })
    t.match(parameters['query sort'], { style: 'form', explode: false, schema: { type: 'array', items: { enum: ['id', '-id', '+id', 'title', '-title', '+title', 'authorId', '-authorId', '+authorId', 'year', '-year', '+year', 'rating', '-rating', '+rating', 'available', '-available', '+available', 'reviewCount', '-reviewCount', '+reviewCount', 'averageRating', '-averageRating', '+averageRating'] } } })
    t.same(parameters['query fields'].schema.items.enum, ['id', 'title', 'authorId', 'year', 'rating', 'available', 'reviewCount', 'averageRating'])
    t.same(parameters['query expand'].schema.items.enum, ['author', 'reviews'])
    t.same(parameters['query include'].schema.items.enum, ['author', 'reviews'])
    t.match(parameters['query offset'].schema, { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER })
    t.match(parameters['query pageOffset'].schema, { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER })
    t.match(parameters['query page'].schema, { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER })
    t.same(parameters['query total'].schema, { anyOf: [{ type: 'boolean' }, { type: 'string', enum: ['estimated'] }], default: false })
    t.match(parameters['query token'].schema, { type: 'string' })
    t.match(parameters['query filter'].schema, { type: 'string' })
    // Each field at most once, in any direction, in draft-07 terms: no key twice, no two forms of a field together.
    t.equal(parameters['query sort'].schema.uniqueItems, true)
    t.same(parameters['query sort'].schema.not.anyOf.slice(0, 2), [
      { allOf: [{ contains: { enum: ['id'] } }, { contains: { enum: ['-id', '+id'] } }] },
      { allOf: [{ contains: { enum: ['-id'] } }, { contains: { enum: ['+id'] } }] }
    ], 'each field at most once, in any direction')
    t.notMatch(JSON.stringify(parameters['query sort'].schema), /minContains/, 'nothing a draft-07 validator would pass over')
    for (const name of ['fields', 'expand', 'include']) t.match(parameters[`query ${name}`], { style: 'form', explode: false }, `${name} comma-separated`)
    t.equal(parameters['query fields'].schema.uniqueItems, undefined, 'a field named twice counts once')
    // Simple filters: arrays, repeated to match any of several values.
    t.match(parameters['query year'], { schema: { type: 'array', items: { anyOf: [{ type: 'integer' }, { enum: ['null'] }] } } })
    t.equal(parameters['query year'].explode ?? true, true, 'repeated: a query parameter\'s default style, form with explode')
    t.match(parameters['query title'].schema, { type: 'array', items: { type: 'string' } })
    t.match(parameters['query available'].schema, { type: 'array', items: { type: 'boolean' } })
    t.same(parameters['query author.country'].schema.items, { type: 'string' }, 'dotted relation fields')
    t.match(parameters['query reviews.rating'].schema.items, { type: 'integer' }, 'through the reviews too')
    t.match(parameters['query author.born'].schema.items, { anyOf: [{ type: 'string', format: 'date' }, { enum: ['null'] }] })
    // A field only admins read does not exist for the others: a filter, sort or selection naming it is 400 for them.
    t.match(parameters['query reviews.moderatorNote'], { 'x-restricted': ['read'], description: /only some callers may read the review's moderatorNote; .* naming it is 400/ })
    t.equal(parameters['query reviews.rating']['x-restricted'], undefined)
    const reviews = Object.fromEntries(document.paths['/reviews'].get.parameters.map((parameter: Json) => [`${parameter.in} ${parameter.name}`, parameter]))
    for (const name of ['query moderatorNote', 'query sort', 'query fields']) t.match(reviews[name], { 'x-restricted': ['read'], description: /Restricted: only some callers may/ }, name)
    t.match(parameters['header X-Audit-Consent'].schema, { maxLength: 8192 }, 'audit headers with their 8 KB limit')
    t.ok(parameters['header X-Request-Id'] && parameters['header Date'] && parameters['header X-Authenticated_User'])
    const item = Object.fromEntries(document.paths['/books/{id}'].get.parameters.map((parameter: Json) => [`${parameter.in} ${parameter.name}`, parameter]))
    t.same(Object.keys(item).filter(key => key.startsWith('query')).sort(), ['query $expand', 'query $select', 'query expand', 'query fields', 'query include'], 'and the OData names of fields and expand')
    t.ok(item['header If-None-Match'] && item['path id'].required)
    const put = Object.fromEntries(document.paths['/books/{id}'].put.parameters.map((parameter: Json) => [`${parameter.in} ${parameter.name}`, parameter]))
    t.notOk(put['header If-Match'].required, 'If-Match optional unless REQUIRE_IF_MATCH')
  })

  t.test('documents the response headers and statuses of each operation, those every operation can answer as one default', async t => {
    const books = document.paths['/books']
    const book = document.paths['/books/{id}']
    const limit = ['RateLimit-Policy', 'RateLimit']
    checkSuccesses(t, document)
    t.ok(books.get.responses['503'].headers['Retry-After'], 'a store that is unavailable: not every operation answers 503')
    const shared = [401, 403, 405, 406, 408, 414, 417, 429, 431, 500]
    const fallback = book.get.responses.default
    t.same(fallback['x-statuses'], shared, 'the default lists the statuses it stands for')
    t.same(Object.keys(fallback.headers), ['Request-Id', 'WWW-Authenticate', ...limit, 'Allow', 'Retry-After'], 'and carries their headers')
    t.same(Object.keys(fallback.content), ['application/problem+json', 'application/problem+xml'])
    const sorted = (statuses: string[]) => [...new Set(statuses)].sort()
    t.same(Object.keys(books.get.responses), sorted(['200', '304', '400', '412', '503', 'default']))
    t.same(Object.keys(books.post.responses), sorted(['201', '202', '400', '409', '412', '413', '415', '422', '503', 'default']))
    t.same(Object.keys(book.patch.responses), sorted(['200', '202', '204', '400', '404', '409', '412', '413', '415', '422', '503', 'default']))
    t.same(Object.keys(book.delete.responses), sorted(['202', '204', '400', '404', '409', '412', '413', '415', '503', 'default']))
    t.same(Object.keys(books.options.responses), sorted(['200', '204', '400', '413', '415', 'default']), 'the demo allows an origin: preflights are 204')
    // A HEAD: its successes and the default, without bodies; its GET lists its other problems.
    t.same(Object.keys(book.head.responses), ['200', '304', 'default'])
    t.same(book.head.responses.default['x-statuses'], shared)
    t.equal(book.head.responses.default.content, undefined)
    t.same(book.head.parameters, book.get.parameters, 'the parameters of its GET')
    const publicDefault = document.paths['/openapi.json'].get.responses.default
    t.same(publicDefault['x-statuses'], shared.filter(status => status !== 401), 'the public routes answer no 401')
    t.same(Object.keys(publicDefault.content), ['application/problem+json'])
    t.ok(document.paths['/authors/{id}'].delete.responses['409'], 'an author with books cannot be deleted')
    t.match(book.delete.responses['409'].description, /still has reviews/, 'nor a book with reviews')
    t.equal(document.paths['/authors'].post.responses['422'].description, 'Unprocessable Entity: this Idempotency-Key was used with another body.', 'authors have no relation field to dangle')
    t.match(books.post.responses['422'].description, /Idempotency-Key was used with another body, or the body refers to a record that does not exist/)
    t.same(Object.keys(document.paths['/problems'].get.responses['200'].content), ['text/html'])
  })

  t.test('documents the link objects and their rel values', async t => {
    const list = document.components.schemas.BookList.properties.links
    t.equal(list.type, 'array')
    t.same(list.items.properties.rel.enum, ['self', 'first', 'prev', 'next', 'last', 'author', 'reviews'])
    t.ok(list.items.properties.book, 'related links name the item they belong to')
    t.same(document.components.schemas.BookItem.properties.links.items.properties.rel.enum, ['author', 'reviews'])
    t.same(document.components.schemas.ReviewList.properties.links.items.properties.rel.enum, ['self', 'first', 'prev', 'next', 'last', 'book'])
  })

  t.test('derives the security schemes from the authentication options', async t => {
    t.same(document.components.securitySchemes, {
      bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <token> (RFC 6750).' },
      apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'Legacy key; Authorization wins when both are sent.' }
    })
    t.same(document.security, [{ bearer: [] }, { apiKey: [] }])
    t.same(document.paths['/openapi.json'].get.security, [], 'the public routes need none')
    t.same(document.paths['/problems'].get.security, [])
    t.equal(document.paths['/books'].get.security, undefined, 'the others need one of them')
  })
})

t.test('the demo\'s document in full (openapi.detail \'full\', the plugin\'s default): every problem a response of its own', async t => {
  const app = await demoInFull(loadConfig({ STORE: 'memory', CURSOR_SECRET: 'a-test-secret-of-enough-length' }))
  t.teardown(() => app.close())
  const document = await documentOf(app, '/v1/openapi.json')
  checkInvariants(t, document, '#/components/schemas/Problem')
  checkFullStatuses(t, document)
  t.same(Object.keys(document.paths['/books/{id}'].head.responses), ['200', '304', '400', '401', '403', '404', '405', '406', '408', '412', '414', '417', '429', '431', '500', '503'], 'a HEAD lists its GET\'s problems')
})

t.test('compact with a handler time limit and a rate limit: 503 and 429 join the default, with Retry-After in either form', async t => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(apiConventions, {
    prefix: '/v1',
    resources: demoResources(memoryStore()),
    cursorSecret: 'a-test-secret-of-enough-length',
    auth: { bearer: (token: string) => token === 'second-token' ? { id: 'second' } : null },
    handlerTimeout: 30000,
    rateLimit: { max: 100, timeWindow: '1 minute' },
    openapi: { detail: 'compact' }
  })
  const document = await documentOf(app, '/v1/openapi.json')
  await checkValid(t, document.served)
  const list = document.paths['/books'].get.responses
  t.same(Object.keys(list), ['200', '304', '400', '412', 'default'], 'the store\'s 503 is the time limit\'s too: every operation answers it')
  t.same(list.default['x-statuses'], [401, 403, 405, 406, 408, 414, 417, 429, 431, 500, 503])
  t.match(list.default.description, /^- 503 Service Unavailable: the data store is unavailable, or the handler ran out of time; retry later\.$/m)
  t.match(list.default.description, /; Retry-After on 429 and 503\./)
  // A 429 says when as an HTTP date (rateLimit.retryAfter), a 503 in seconds.
  t.same(list.default.headers['Retry-After'], {
    description: 'On 429: When to retry, as an HTTP date. On 503: Seconds to wait before retrying.',
    schema: { anyOf: [{ type: 'string', examples: ['Wed, 21 Oct 2015 07:28:00 GMT'] }, { type: 'string' }] }
  })
})

t.test('the demo without legacy keys and with If-Match required documents both', async t => {
  const app = await demoApp(t, { API_KEYS: '', REQUIRE_IF_MATCH: 'true' })
  const document = await documentOf(app, '/v1/openapi.json')
  t.same(Object.keys(document.components.securitySchemes), ['bearer'])
  const put = document.paths['/books/{id}'].put
  t.equal(put.parameters.find((parameter: Json) => parameter.name === 'If-Match').required, true)
  t.ok(put.responses['428'])
  t.ok(document.paths['/books/{id}'].delete.responses['428'])
  t.notOk(document.paths['/books'].post.responses['428'], 'POST is never conditional')
})

t.test('a second app: flat data, envelope errors, link objects, a read-only resource, no prefix', async t => {
  const { app, routes } = await secondApp(t)
  const document = await documentOf(app, '/openapi.json')

  t.test('validates against OpenAPI 3.1', t => checkValid(t, document.served))
  t.test('passes spectral:oas with zero errors', t => checkSpectral(t, document.served))
  t.test('keeps the invariants, errors under `errors`', async t => {
    checkInvariants(t, document, '#/components/schemas/ProblemEnvelope')
    t.same(document.components.schemas.ProblemEnvelope, { type: 'object', properties: { errors: { $ref: '#/components/schemas/Problem' } }, required: ['errors'] })
  })
  t.test('documents exactly the allowed methods of each path', t => checkAllow(t, app, document, { authorization: 'Bearer second-token' }))

  t.test('documents every route the plugin registers, and hides only the docs page', async t => {
    const documented = new Set(operationsOf(document).map(({ path, method }) => `${method.toUpperCase()} ${fastifyPath('/', path)}`))
    const registered = new Set(routes.filter(route => !route.hidden).map(route => `${route.method} ${route.url}`))
    t.same([...registered].sort(), [...documented].sort())
    t.same(routes.filter(route => route.hidden).map(route => `${route.method} ${route.url}`).sort(), [
      'GET /docs', 'GET /docs/', 'GET /docs/js/scalar.js', 'GET /problems/',
      'HEAD /docs', 'HEAD /docs/', 'HEAD /docs/js/scalar.js', 'HEAD /problems/',
      'OPTIONS *'
    ], 'the reference page, its script, an alias and the CORS preflight')
  })

  t.test('follows the options', async t => {
    t.same(document.info, { title: 'Second API', version: '2.0.0', description: 'Events, authors and books.' })
    t.same(document.servers, [{ url: '/' }])
    t.same(document.components.schemas.BookItem.properties.data, { $ref: '#/components/schemas/Book' }, 'flat single resources')
    const links = document.components.schemas.BookList.properties.links
    t.match(links, { type: 'object', additionalProperties: false })
    t.same(Object.keys(links.properties), ['self', 'first', 'prev', 'next', 'last', 'author', 'reviews'])
    t.same(links.properties.next.properties.rel.enum, ['next'])
    t.equal(links.properties.author.type, 'array', 'related links as arrays')
    t.match(document.components.schemas.EventItem.properties.links, { description: 'Links; none are sent for this resource.' })
    t.same(Object.keys(document.components.securitySchemes), ['bearer', 'basic'])
    t.same(Object.keys(document.paths['/events']).sort(), ['get', 'head', 'options'], 'the read-only resource')
    t.same(Object.keys(document.paths['/events/{id}']).sort(), ['get', 'head', 'options'])
    t.equal(document.paths['/events'].get.deprecated, true, 'the deprecated resource')
    t.equal(document.paths['/books'].get.deprecated, undefined)
    t.notOk(document.paths['/books'].get.responses['429'], 'no rate limit, no 429')
    t.ok(document.paths['/openapi.json'].get.responses['503'], 'a handler time limit: 503 everywhere')
    t.ok(document.paths['/books'].options.responses['503'])
    const parameters = document.paths['/events'].get.parameters.map((parameter: Json) => parameter.name)
    t.notOk(parameters.includes('payload'), 'objects cannot be filtered')
    t.equal(parameters.filter((name: string) => name === 'page').length, 1, 'a field named like a paging parameter is that parameter')
    const pageSize = document.paths['/events'].get.parameters.find((parameter: Json) => parameter.name === 'pageSize')
    t.equal(pageSize.schema.maximum, 50)
    const at = document.paths['/events'].get.parameters.find((parameter: Json) => parameter.name === 'at')
    t.same(at.schema.items, { type: 'string', format: 'date-time' })
    t.same(document.paths['/events'].get.parameters.find((parameter: Json) => parameter.name === 'sort').schema.items.enum, ['id', '-id', '+id', 'at', '-at', '+at', 'page', '-page', '+page'])
  })
})

t.test('named body schemas still validate: a body setting the id is 400 naming it', async t => {
  const demo = await demoApp(t)
  const bad = await demo.inject({ method: 'POST', url: '/v1/authors', headers: write, payload: { id: 'x', name: 'A' } })
  t.equal(bad.statusCode, 400)
  t.match(bad.json(), { invalidParams: [{ name: 'id' }] })
})

t.test('without authentication the document names no security and no 401', async t => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(apiConventions, { prefix: '/v1', resources: demoResources(memoryStore()), cursorSecret: 'a-test-secret-of-enough-length' })
  const document = await documentOf(app, '/v1/openapi.json')
  t.same(document.components.securitySchemes, {})
  t.same(document.security, [])
  t.notOk(document.paths['/books'].get.responses['401'])
  t.ok(document.paths['/books'].get.responses['403'], 'a refused Origin is still 403')
  t.notOk(document.paths['/books'].options.responses['204'], 'no origin allowed, so no preflight')
  t.notOk(document.paths['/books'].get.responses['429'], 'no rate limit')
  t.equal(document.info.title, 'HTTP JSON API')
  t.match(document.info.description, /^Resources: authors, books, reviews\./)
})

t.test('the document is the same on every request, built at boot', async t => {
  const app = await demoApp(t)
  const first = await app.inject({ url: '/v1/openapi.json' })
  const second = await app.inject({ url: '/v1/openapi.json' })
  t.equal(first.body, second.body)
})

t.test('openapi.json answers JSON only: another Accept is a 406 problem', async t => {
  const app = await demoApp(t)
  const res = await app.inject({ url: '/v1/openapi.json', headers: { accept: 'text/html' } })
  t.equal(res.statusCode, 406)
  t.match(res.headers['content-type'], /^application\/problem\+json/)
  t.match(res.json(), { status: 406, detail: /available: application\/json\.$/ })
})

t.test('no request header or parameter carries an example a console would send as a prefilled value', async t => {
  const app = await demoApp(t)
  const document = inlined((await app.inject({ url: '/v1/openapi.json' })).json())
  const prefilled: string[] = []
  for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, { parameters?: Array<{ name: string, in: string, example?: unknown, examples?: unknown, schema?: { examples?: unknown, example?: unknown } }> }>>)) {
    for (const [method, operation] of Object.entries(item)) {
      for (const parameter of operation.parameters ?? []) {
        if (parameter.example !== undefined || parameter.examples !== undefined || parameter.schema?.examples !== undefined || parameter.schema?.example !== undefined) prefilled.push(`${method} ${path} ${parameter.in} ${parameter.name}`)
      }
    }
  }
  t.same(prefilled, [])
  t.match(document.paths['/books'].post.parameters.find((parameter: { name: string }) => parameter.name === 'Date').description, /Sun, 06 Nov 1994 08:49:37 GMT/, 'the form is told in prose')
})

t.test('the reference page is served without credentials, with its own CSP', async t => {
  const app = await demoApp(t)
  const page = await app.inject({ url: '/v1/docs', headers: { accept: 'text/html' } })
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-type'], /^text\/html/)
  t.match(page.headers['content-security-policy'], /script-src 'self' 'unsafe-inline'/)
  t.match(page.headers['content-security-policy'], /frame-ancestors 'none'/)
  t.match(page.body, /"url": "\/v1\/openapi.json"/, 'it loads the served document')
  t.notMatch(page.body, /cdn\.jsdelivr/, 'and the bundled script, not a CDN')
  t.match(page.body, /<script src="\/v1\/docs\/js\/scalar.js"><\/script>/, 'by an absolute URL, which resolves from /v1/docs and /v1/docs/ alike')
  for (const url of ['/v1/docs/', '/v1/docs?theme=none', '/v1/docs/?theme=none']) {
    const same = await app.inject({ url, headers: { accept: 'text/html' } })
    t.same({ status: same.statusCode, body: same.body }, { status: 200, body: page.body }, `${url} is the same page, not a redirect`)
  }
  const script = await app.inject({ url: '/v1/docs/js/scalar.js' })
  t.equal(script.statusCode, 200)
  t.match(script.headers['content-type'], /^application\/javascript/)
  const api = await app.inject({ url: '/v1/books' })
  t.equal(api.statusCode, 401, 'while the API itself needs credentials')
  t.equal(api.headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'")
})

t.test('openapi.license is info.license, as given', async t => {
  const app = Fastify()
  t.teardown(() => app.close())
  const license = { name: 'Proprietary', url: 'https://example.com/terms' }
  await app.register(apiConventions, { resources: demoResources(memoryStore()), openapi: { license } })
  t.same((await app.inject({ url: '/openapi.json' })).json().info.license, license)
})

t.test('a bad openapi option stops registration naming it', async t => {
  for (const [openapi, message] of [
    ['yes', /openapi must be an object/],
    [{ title: '' }, /openapi.title must be a non-empty string, received ""/],
    [{ version: 2 }, /openapi.version must be a non-empty string, received 2/],
    [{ license: 'MIT' }, /openapi.license must be an object \{ name, identifier\? or url\? \}, received "MIT"/],
    [{ license: null }, /openapi.license must be an object/],
    [{ license: { identifier: 'MIT' } }, /openapi.license.name must be a non-empty string, received undefined/],
    [{ license: { name: 'MIT', spdx: 'MIT' } }, /openapi.license.spdx is not a known key/],
    [{ license: { name: 'MIT', url: 7 } }, /openapi.license.url must be a non-empty string, received 7/],
    [{ license: { name: 'MIT', identifier: 'MIT', url: 'https://opensource.org/license/mit' } }, /openapi.license takes an identifier or a url, not both/],
    [{ detail: 'short' }, /openapi.detail must be one of 'full', 'compact', received "short"/]
  ] as const) {
    const app = Fastify()
    t.teardown(() => app.close())
    await t.rejects(async () => { await app.register(apiConventions, { resources: demoResources(memoryStore()), openapi } as unknown as ApiConventionsOptions) }, { code: 'API_ERR_OPTIONS_INVALID', message })
  }
})

// Spec "Operations" rule 3: every unsupported method on a known path, the document's and the
// page's included.
t.test('other methods on openapi.json and the docs page answer 405 problem+json with Allow', async t => {
  const app = await demoApp(t)
  const cases: Array<[string, string]> = [
    ['PUT', '/v1/openapi.json'], ['DELETE', '/v1/openapi.json'], ['OPTIONS', '/v1/openapi.json'], ['POST', '/v1/openapi.json'],
    ['DELETE', '/v1/docs'], ['PUT', '/v1/docs/'], ['OPTIONS', '/v1/docs'], ['POST', '/v1/docs/js/scalar.js']
  ]
  for (const [method, url] of cases) {
    const res = await app.inject({ method: method as 'PUT', url, headers: write })
    t.same({ status: res.statusCode, type: res.headers['content-type'], allow: res.headers.allow }, { status: 405, type: 'application/problem+json; charset=utf-8', allow: 'GET, HEAD' }, `${method} ${url}`)
    t.match(res.json(), { status: 405, type: '/v1/problems/method-not-allowed', detail: `Method ${method} is not allowed here; allowed: GET, HEAD.` })
  }
  t.equal((await app.inject({ url: '/v1/openapi.json/more', headers: write })).statusCode, 404, 'paths below them are unknown')
})
