// Tracing (the `tracing` option, docs/metrics.md "Tracing"): with an OpenTelemetry SDK registered,
// a server span per request named and described by OpenTelemetry's HTTP conventions, the client's
// W3C traceparent continued, and a client span per SQL statement as the request span's child; none
// when tracing is off. Read with the SDK's in-memory exporter.
import { request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import type { FastifyInstance, InjectOptions } from 'fastify'
import type { Test } from 'tap'
import { SpanKind, SpanStatusCode } from '@opentelemetry/api'
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-node'
import Fastify from 'fastify'
import apiConventions, { memoryStore, pgliteStore, postgresStore } from '../lib/index.js'
import type { ResourceModel, Store } from '../lib/index.js'
import { auth, testAuth } from './helpers/auth.js'
import { buildApp, json, seed } from './helpers/app.js'
import { openPglite } from './stores/pglite-db.js'
import { runSchemas } from './stores/run-schemas.js'
import { demoResources } from '../demo/schemas/index.js'

const exporter = new InMemorySpanExporter()
// The SDK as a host registers it: the global tracer provider, AsyncLocalStorage for the context, W3C propagation.
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
provider.register()
t.teardown(() => provider.shutdown())
t.beforeEach(() => exporter.reset())

const traceId = '0af7651916cd43dd8448eb211c80319c'
const parentId = 'b7ad6b7169203331'

/** The spans ended so far, the request spans among them by kind. */
async function finished (): Promise<{ requests: ReadableSpan[], statements: ReadableSpan[] }> {
  // The request span ends in onResponse, which may run after inject has its answer.
  await new Promise(resolve => setImmediate(resolve))
  const spans = exporter.getFinishedSpans()
  return { requests: spans.filter(span => span.kind === SpanKind.SERVER), statements: spans.filter(span => span.kind === SpanKind.CLIENT) }
}

/** What an exporter sends of a span: its name, attributes, status and events, as text. */
const exported = (span: ReadableSpan) => JSON.stringify({ name: span.name, attributes: span.attributes, status: span.status, events: span.events })

/** A memory store whose RETRIEVE fails as a broken store would. */
function failingStore (): Store {
  const store = memoryStore()
  return { ...store, get: async (model: ResourceModel, id: string) => { throw new Error(`the store broke reading ${model.name} ${id}`) } }
}

t.test('a LIST has a server span named by its route, with the request, the operation and the answer', async t => {
  const app = await buildApp(t)
  exporter.reset()
  const res = await app.inject({ url: '/v1/books?pageSize=2', headers: { 'user-agent': 'tracing-test', 'x-request-id': 'list-1' } })
  t.equal(res.statusCode, 200)
  const { requests: [span], statements } = await finished()
  t.match(span, { name: 'GET /v1/books', kind: SpanKind.SERVER, status: { code: SpanStatusCode.UNSET }, parentSpanContext: undefined })
  t.same(span.attributes, {
    'http.request.method': 'GET',
    'url.path': '/v1/books',
    'url.scheme': 'http',
    'http.route': '/v1/books',
    'network.protocol.version': '1.1',
    'client.address': '127.0.0.1',
    'user_agent.original': 'tracing-test',
    'api_conventions.operation': 'LIST',
    'api_conventions.operation_id': 'listBooks',
    'api_conventions.resource': 'books',
    'http.response.status_code': 200,
    'api_conventions.request_id': 'list-1'
  })
  t.equal(res.headers['request-id'], 'list-1')
  t.same(statements, [], 'the memory store sends no statements')
})

t.test('RETRIEVE, RETRIEVE HEADERS and CREATE spans name their operations; a 404 is not an error', async t => {
  const app = await buildApp(t)
  const { books: [book] } = await seed(app)
  exporter.reset()
  const created = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload: { title: 'Ubik', authorId: book.authorId, year: 1969 } })
  const retrieved = await app.inject({ url: `/v1/books/${book.id}` })
  const head = await app.inject({ method: 'HEAD', url: `/v1/books/${book.id}` })
  const missing = await app.inject({ url: '/v1/books/no-such-book' })
  t.same([created.statusCode, retrieved.statusCode, head.statusCode, missing.statusCode], [201, 200, 200, 404])
  const { requests } = await finished()
  t.same(requests.map(span => [span.name, span.attributes['api_conventions.operation'], span.attributes['api_conventions.operation_id'], span.attributes['url.path'], span.attributes['http.response.status_code'], span.status.code]), [
    ['POST /v1/books', 'CREATE', 'createBook', '/v1/books', 201, SpanStatusCode.UNSET],
    ['GET /v1/books/:id', 'RETRIEVE', 'getBook', `/v1/books/${book.id}`, 200, SpanStatusCode.UNSET],
    ['HEAD /v1/books/:id', 'RETRIEVE HEADERS', 'getBook', `/v1/books/${book.id}`, 200, SpanStatusCode.UNSET],
    ['GET /v1/books/:id', 'RETRIEVE', 'getBook', '/v1/books/no-such-book', 404, SpanStatusCode.UNSET]
  ])
  t.same(requests.map(span => span.attributes['http.route']), ['/v1/books', '/v1/books/:id', '/v1/books/:id', '/v1/books/:id'])
  t.same(requests.map(span => span.attributes['api_conventions.request_id']), [created, retrieved, head, missing].map(res => res.headers['request-id']))
})

t.test('a path no route serves has a span named by its method alone, without a route', async t => {
  const app = await buildApp(t)
  exporter.reset()
  const res = await app.inject({ url: '/v1/no-such-resource?x=1' })
  t.equal(res.statusCode, 404)
  const { requests: [span] } = await finished()
  t.equal(span.name, 'GET')
  t.match(span.attributes, { 'url.path': '/v1/no-such-resource', 'http.response.status_code': 404 })
  t.notOk('http.route' in span.attributes)
  t.notOk('api_conventions.operation' in span.attributes)
})

t.test('a request refused by authentication still has its span, with its 401', async t => {
  const app = await buildApp(t, { auth: testAuth() })
  exporter.reset()
  const refused = await app.inject({ url: '/v1/books' })
  const admitted = await app.inject({ url: '/v1/books', headers: auth.read })
  t.same([refused.statusCode, admitted.statusCode], [401, 200])
  const { requests } = await finished()
  t.same(requests.map(span => [span.name, span.attributes['api_conventions.operation'], span.attributes['http.response.status_code'], span.status.code]), [
    ['GET /v1/books', 'LIST', 401, SpanStatusCode.UNSET],
    ['GET /v1/books', 'LIST', 200, SpanStatusCode.UNSET]
  ])
})

t.test('a request refused by the rate limit has its span, with its 429', async t => {
  const app = await buildApp(t, { rateLimit: { max: 1, timeWindow: 60_000 } })
  exporter.reset()
  const statuses = [(await app.inject({ url: '/v1/books' })).statusCode, (await app.inject({ url: '/v1/books' })).statusCode]
  t.same(statuses, [200, 429])
  const { requests } = await finished()
  t.same(requests.map(span => span.attributes['http.response.status_code']), [200, 429])
})

t.test('a request the host answers before the plugin sees it has no span, and nothing fails', async t => {
  const errors: string[] = []
  const stream = new Writable({ write (chunk: Buffer, _encoding, done) { if (JSON.parse(chunk.toString()).level >= 50) errors.push(chunk.toString()); done() } })
  const app = Fastify({ logger: { level: 'info', stream } })
  t.teardown(() => app.close())
  app.addHook('onRequest', function closedForMaintenance (request, reply, done) {
    if (request.headers['x-maintenance'] === undefined) return done()
    reply.code(503).header('retry-after', '60').send({ maintenance: true })
  })
  await app.register(apiConventions, { prefix: '/v1', resources: demoResources(memoryStore()) })
  exporter.reset()
  const [closed, open] = [await app.inject({ url: '/v1/books', headers: { 'x-maintenance': '1' } }), await app.inject({ url: '/v1/books' })]
  t.same([closed.statusCode, closed.json(), open.statusCode], [503, { maintenance: true }, 200])
  const { requests } = await finished()
  t.same(requests.map(span => span.attributes['http.response.status_code']), [200])
  t.same(errors, [], 'no error logged')
})

t.test('a request whose client goes away before the answer ends its span as the connection closes, without a status', async t => {
  const inner = memoryStore()
  let listed: () => void = () => {}
  const reached = new Promise<void>(resolve => { listed = resolve })
  // A LIST that waits long enough for the client to leave first.
  const store: Store = { ...inner, list: async (model, query) => { listed(); await sleep(300); return await inner.list(model, query) } }
  const app = await buildApp(t, { store })
  await app.listen({ port: 0, host: '127.0.0.1' })
  exporter.reset()
  const client = httpRequest({ host: '127.0.0.1', port: (app.server.address() as AddressInfo).port, path: '/v1/books' })
  const gone = new Promise(resolve => client.on('error', resolve).on('close', resolve))
  client.end()
  await reached
  client.destroy()
  await gone
  await sleep(50)
  const { requests } = await finished()
  t.match(requests, [{ name: 'GET /v1/books', attributes: { 'api_conventions.operation': 'LIST' } }])
  t.notOk('http.response.status_code' in requests[0].attributes)
  await sleep(400)
  t.equal(exporter.getFinishedSpans().length, 1, 'the answer written later ends no span again')
})

t.test('a 500 is an error of the span, typed by its status; the message stays out', async t => {
  const app = await buildApp(t, { store: failingStore() })
  exporter.reset()
  const res = await app.inject({ url: '/v1/books/b1' })
  t.equal(res.statusCode, 500)
  const { requests: [span] } = await finished()
  t.match(span, { name: 'GET /v1/books/:id', status: { code: SpanStatusCode.ERROR } })
  t.match(span.attributes, { 'http.response.status_code': 500, 'error.type': '500' })
  t.notMatch(exported(span), 'the store broke')
})

t.test('a request carrying a W3C traceparent continues that trace, its tracestate too', async t => {
  const app = await buildApp(t)
  exporter.reset()
  const res = await app.inject({ url: '/v1/books', headers: { traceparent: `00-${traceId}-${parentId}-01`, tracestate: 'vendor=opaque' } })
  t.equal(res.statusCode, 200)
  const { requests: [span] } = await finished()
  t.equal(span.spanContext().traceId, traceId)
  t.not(span.spanContext().spanId, parentId)
  t.match(span.parentSpanContext, { traceId, spanId: parentId, isRemote: true })
  t.equal(span.spanContext().traceState?.serialize(), 'vendor=opaque')
})

t.test('a malformed traceparent starts a new trace', async t => {
  const app = await buildApp(t)
  exporter.reset()
  const res = await app.inject({ url: '/v1/books', headers: { traceparent: `00-${traceId}-not-a-span-id-01` } })
  t.equal(res.statusCode, 200)
  const { requests: [span] } = await finished()
  t.equal(span.parentSpanContext, undefined)
  t.not(span.spanContext().traceId, traceId)
})

t.test('tracing: false starts no span, and the API answers as ever', async t => {
  const app = await buildApp(t, { tracing: false })
  exporter.reset()
  const res = await app.inject({ url: '/v1/books', headers: { traceparent: `00-${traceId}-${parentId}-01` } })
  t.equal(res.statusCode, 200)
  t.same(exporter.getFinishedSpans(), [])
})

t.test('tracing: { tracer } starts the spans with that tracer', async t => {
  const tracer = provider.getTracer('the-host-service', '2.0.0')
  const app = await buildApp(t, { tracing: { tracer } })
  exporter.reset()
  await app.inject({ url: '/v1/books' })
  const { requests: [span] } = await finished()
  t.match(span.instrumentationScope, { name: 'the-host-service', version: '2.0.0' })
})

t.test('by default the spans are the global provider\'s, under the package\'s name', async t => {
  const app = await buildApp(t, { tracing: true })
  exporter.reset()
  await app.inject({ url: '/v1/books' })
  const { requests: [span] } = await finished()
  t.match(span.instrumentationScope, { name: 'fastify-api-conventions' })
})

t.test('a tracing option of the wrong shape stops registration naming it', async t => {
  for (const [tracing, message] of [
    ['yes', /tracing must be a boolean or an object \{ tracer\?, statements\? \}, received "yes"/],
    [null, /tracing must be a boolean or an object/],
    [[], /tracing must be a boolean or an object/],
    [{ tracer: 'x' }, /tracing\.tracer must be an OpenTelemetry Tracer, received "x"/],
    [{ tracer: null }, /tracing\.tracer must be an OpenTelemetry Tracer/],
    [{ statements: 'no' }, /tracing\.statements must be a boolean, received "no"/],
    [{ sampler: 1 }, /tracing/]
  ] as const) {
    await t.rejects(buildApp(t, { tracing: tracing as never }), { code: 'API_ERR_OPTIONS_INVALID', message }, JSON.stringify(tracing))
  }
})

/** The spans of one request made on `app`, and its answer. */
async function traced (app: FastifyInstance, request: InjectOptions) {
  exporter.reset()
  const res = await app.inject(request)
  return { res, ...await finished() }
}

function statementSuite (t: Test, makeStore: () => Promise<Store>) {
  t.test('start-up\'s statements, outside any request, have no span', async t => {
    exporter.reset()
    const store = await makeStore()
    t.teardown(() => store.close())
    await buildApp(t, { store })
    t.same(exporter.getFinishedSpans(), [])
  })

  t.test('each statement of a request is a client span, child of the request\'s, with its parameterised text', async t => {
    const store = await makeStore()
    t.teardown(() => store.close())
    const app = await buildApp(t, { store })
    const { books: [book] } = await seed(app)
    const { res, requests: [request], statements } = await traced(app, { url: `/v1/books/${book.id}` })
    t.equal(res.statusCode, 200)
    t.ok(statements.length >= 1, `${statements.length} statements`)
    for (const statement of statements) {
      t.equal(statement.spanContext().traceId, request.spanContext().traceId)
      t.equal(statement.parentSpanContext?.spanId, request.spanContext().spanId)
      t.match(statement, { name: 'SELECT', kind: SpanKind.CLIENT, status: { code: SpanStatusCode.UNSET } })
      t.match(statement.attributes, { 'db.system.name': 'postgresql', 'db.operation.name': 'SELECT', 'db.query.text': /\$1/ })
      t.notMatch(statement.attributes['db.query.text'], book.id, 'the id stays a placeholder')
    }
  })

  // With an Idempotency-Key, the write and the kept answer are one transaction: its statements are the request's too.
  t.test('a keyed write\'s statements, in its transaction, are children of the request\'s span, a continued trace\'s too', async t => {
    const store = await makeStore()
    t.teardown(() => store.close())
    const app = await buildApp(t, { store })
    const { authors: [author] } = await seed(app)
    const { res, requests: [request], statements } = await traced(app, {
      method: 'POST',
      url: '/v1/books',
      headers: { ...json, traceparent: `00-${traceId}-${parentId}-01`, 'idempotency-key': 'tracing-write-1' },
      payload: { title: 'The Secret Life of Tracing', authorId: author.id, year: 2026 }
    })
    t.equal(res.statusCode, 201)
    t.equal(request.spanContext().traceId, traceId)
    // The key's lock, the record, the kept answer.
    t.ok(statements.filter(statement => statement.attributes['db.operation.name'] === 'INSERT').length >= 2, statements.map(statement => statement.name).join(', '))
    for (const statement of statements) {
      t.equal(statement.spanContext().traceId, traceId)
      t.equal(statement.parentSpanContext?.spanId, request.spanContext().spanId)
      t.notMatch(statement.attributes['db.query.text'], 'The Secret Life', 'values stay placeholders')
    }
  })

  t.test('a statement the database refuses is an error span typed by its SQLSTATE', async t => {
    const store = await makeStore()
    t.teardown(() => store.close())
    const app = await buildApp(t, { store })
    const { res, statements } = await traced(app, { method: 'POST', url: '/v1/books', headers: json, payload: { title: 'Orphan', authorId: 'no-such-author', year: 2000 } })
    t.equal(res.statusCode, 422)
    const failed = statements.filter(statement => statement.status.code === SpanStatusCode.ERROR)
    t.match(failed, [{ name: 'INSERT', attributes: { 'error.type': '23503' } }])
    t.notMatch(failed.map(exported).join(), 'no-such-author', 'no value in the span')
  })

  t.test('tracing: { statements: false }: the request\'s span without statement spans', async t => {
    const store = await makeStore()
    t.teardown(() => store.close())
    const app = await buildApp(t, { store, tracing: { statements: false } })
    await seed(app)
    const { res, requests, statements } = await traced(app, { url: '/v1/books' })
    t.equal(res.statusCode, 200)
    t.match(requests, [{ name: 'GET /v1/books' }])
    t.same(statements, [])
  })

  t.test('tracing: false: no statement spans either', async t => {
    const store = await makeStore()
    t.teardown(() => store.close())
    const app = await buildApp(t, { store, tracing: false })
    await seed(app)
    const { res } = await traced(app, { url: '/v1/books' })
    t.equal(res.statusCode, 200)
    t.same(exporter.getFinishedSpans(), [])
  })
}

t.test('on PGlite', async t => {
  const db = await openPglite()
  t.teardown(() => db.close())
  let schemas = 0
  statementSuite(t, async () => await pgliteStore({ db, schema: `tracing_${++schemas}` }))

  t.test('a statement failing without a SQLSTATE is an error span typed by the error', async t => {
    const own = await openPglite()
    const store = await pgliteStore({ db: own })
    t.teardown(() => store.close())
    const app = await buildApp(t, { store })
    await own.close()
    const { res, statements } = await traced(app, { url: '/v1/books' })
    t.equal(res.statusCode, 503)
    t.match(statements, [{ status: { code: SpanStatusCode.ERROR }, attributes: { 'error.type': 'Error' } }])
  })
})

t.test('on PostgreSQL', async t => {
  const connectionString = process.env.DATABASE_URL
  if (connectionString === undefined) return t.plan(0, 'DATABASE_URL is not set: the PostgreSQL run is skipped (PGlite sends the same statements)')
  const { prefix } = runSchemas(t, connectionString)
  let schemas = 0
  statementSuite(t, async () => await postgresStore({ connectionString, schema: `${prefix}_${++schemas}` }))
})
