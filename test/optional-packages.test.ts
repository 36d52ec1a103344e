// The optional peer dependencies (README "Install and compatibility"): each is imported only by the
// feature that needs it, and a feature whose package is missing stops start-up naming the package
// to install. The packages are made to look uninstalled by module hooks (helpers/missing-packages.mjs):
// tap's TypeScript loader reports a package Node cannot find without its code, which Node itself
// gives (package-consumer.test.ts runs an application without them in plain Node).
import t from 'tap'
import { register } from 'node:module'
import { Writable } from 'node:stream'
import Fastify from 'fastify'
import { Type } from '@sinclair/typebox'
import apiConventions, { createMetrics, defineResource, memoryStore, pgliteStore, postgresStore } from '../lib/index.js'
import { findOptional } from '../lib/optional.js'
// Before the hooks below: PGlite itself is loaded, so that a store can be opened on an instance given.
import { openPglite } from './stores/pglite-db.js'

register('./helpers/missing-packages.mjs', import.meta.url, {
  data: {
    // The MCP SDK is imported by its modules' paths, as the endpoint imports it.
    missing: ['pg', '@electric-sql/pglite', '@scalar/fastify-api-reference', 'prom-client', '@opentelemetry/api', 'nats', ...['server/index.js', 'server/webStandardStreamableHttp.js', 'types.js'].map(module => `@modelcontextprotocol/sdk/${module}`)],
    broken: ['api-conventions-broken']
  }
})

const Book = Type.Object({ id: Type.Readonly(Type.String()), title: Type.String() }, { additionalProperties: false })
const resources = () => [defineResource({ name: 'books', singular: 'book', schema: Book, store: memoryStore() })]
const missing = (name: string, feature: string) => ({
  code: 'API_ERR_OPTIONS_INVALID',
  message: `Invalid api-conventions options: ${feature} needs the package ${name}, which is not installed: npm install ${name}`
})

t.test('postgresStore without pg installed rejects naming pg', async t => {
  await t.rejects(postgresStore({ connectionString: 'postgres://127.0.0.1:1/none' }), missing('pg', 'postgresStore'))
})

t.test('pgliteStore without PGlite installed rejects naming @electric-sql/pglite', async t => {
  await t.rejects(pgliteStore({ dataDir: t.testdir() }), missing('@electric-sql/pglite', 'pgliteStore'))
})

t.test('createMetrics without prom-client installed rejects naming prom-client', async t => {
  await t.rejects(createMetrics(), missing('prom-client', 'createMetrics'))
})

t.test('changes.nats without nats installed stops registration naming nats', async t => {
  const app = Fastify()
  t.teardown(() => app.close())
  await t.rejects(async () => { await app.register(apiConventions, { prefix: '/v1', resources: resources(), changes: { nats: { url: 'nats://127.0.0.1:4222' } } }) },
    missing('nats', 'changes.nats'))
})

t.test('docsPage: true without Scalar installed stops registration naming @scalar/fastify-api-reference', async t => {
  const app = Fastify()
  t.teardown(() => app.close())
  await t.rejects(async () => { await app.register(apiConventions, { prefix: '/v1', resources: resources(), docsPage: true }) },
    missing('@scalar/fastify-api-reference', 'docsPage'))
})

t.test('mcp: true without the MCP SDK installed stops registration naming @modelcontextprotocol/sdk', async t => {
  const app = Fastify()
  t.teardown(() => app.close())
  await t.rejects(async () => { await app.register(apiConventions, { prefix: '/v1', resources: resources(), mcp: true }) },
    missing('@modelcontextprotocol/sdk', 'mcp'))
})

t.test('without Scalar installed the API serves no docs page by default, and logs so', async t => {
  const lines: Array<{ level: number, msg: string }> = []
  const stream = new Writable({ write (chunk: Buffer, _encoding, done) { lines.push(JSON.parse(chunk.toString())); done() } })
  const app = Fastify({ logger: { level: 'info', stream } })
  t.teardown(() => app.close())
  await app.register(apiConventions, { prefix: '/v1', resources: resources() })
  const [docs, document, created] = await Promise.all([
    app.inject({ url: '/v1/docs' }),
    app.inject({ url: '/v1/openapi.json' }),
    app.inject({ method: 'POST', url: '/v1/books', payload: { title: 'Dune' } })
  ])
  t.same([docs.statusCode, document.statusCode, created.statusCode], [404, 200, 201])
  t.match(docs.json(), { status: 404 })
  t.match(lines.filter(line => line.msg.includes('docs page')), [{ level: 30, msg: 'api-conventions: no docs page, @scalar/fastify-api-reference is not installed' }])
})

t.test('tracing: true without @opentelemetry/api installed stops registration naming it', async t => {
  for (const tracing of [true, { tracer: { startSpan: () => ({}) } }]) {
    const app = Fastify()
    t.teardown(() => app.close())
    await t.rejects(async () => { await app.register(apiConventions, { prefix: '/v1', resources: resources(), tracing }) },
      missing('@opentelemetry/api', 'tracing'))
  }
})

t.test('without @opentelemetry/api installed, requests are not traced by default, and a SQL store sends its statements as they are', async t => {
  const db = await openPglite()
  t.teardown(() => db.close())
  const store = await pgliteStore({ db })
  t.teardown(() => store.close())
  const Book = Type.Object({ id: Type.Readonly(Type.String()), title: Type.String() }, { additionalProperties: false })
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(apiConventions, { prefix: '/v1', resources: [defineResource({ name: 'books', singular: 'book', schema: Book, store })] })
  const created = await app.inject({ method: 'POST', url: '/v1/books', payload: { title: 'Dune' } })
  t.equal(created.statusCode, 201)
  const read = await app.inject({ url: `/v1/books/${String(created.json().data.book.id)}` })
  t.match([read.statusCode, read.json()], [200, { data: { book: { title: 'Dune' } } }])
})

t.test('a package found but failing to load is not reported as missing', async t => {
  await t.rejects(findOptional('api-conventions-broken'), { code: 'ERR_MODULE_NOT_FOUND', message: /'a-dependency-of-it'/ })
})
