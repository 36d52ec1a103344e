// Framework and dependency internals the code relies on beyond their documented API, one test each
// (the list, and where each is used, heads lib/symbols.ts): an upgrade that changes one fails here,
// naming it, rather than somewhere downstream or only in a benchmark.
import t from 'tap'
import type { Test } from 'tap'
import { createServer, request as httpRequest } from 'node:http'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { connect } from 'node:net'
import type { AddressInfo } from 'node:net'
import { createRequire } from 'node:module'
import Fastify from 'fastify'
import type { FastifyReply } from 'fastify'
import swagger from '@fastify/swagger'
import compress from '@fastify/compress'
import helmet from 'helmet'
import Negotiator from 'negotiator'
import fastJsonStringify from 'fast-json-stringify'
import { PGlite } from '@electric-sql/pglite'
import { createAjv } from '../lib/validation.js'

const require = createRequire(import.meta.url)

async function listening (t: Test, server: Server): Promise<number> {
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => server.close(() => resolve())))
  return (server.address() as AddressInfo).port
}

t.test('Fastify keeps reply headers in an own property described fastify.reply.headers, read and replaced there', async t => {
  const app = Fastify()
  t.teardown(() => app.close())
  app.get('/', (_request, reply) => {
    reply.header('x-before', '1')
    const key = Object.getOwnPropertySymbols(reply).find(symbol => symbol.description === 'fastify.reply.headers')
    const store = key === undefined ? undefined : (reply as unknown as Record<symbol, Record<string, string>>)[key]
    if (key !== undefined) (reply as unknown as Record<symbol, object>)[key] = { ...store, 'x-after': '2' }
    return reply.send({ seen: store?.['x-before'] })
  })
  const res = await app.inject({ url: '/' })
  t.same({ seen: res.json().seen, before: res.headers['x-before'], after: res.headers['x-after'] }, { seen: '1', before: '1', after: '2' })
})

t.test('Fastify passes genReqId the raw request that becomes request.raw', async t => {
  let given: IncomingMessage | undefined
  const app = Fastify({ genReqId (raw) { given = raw; return 'id-1' } })
  t.teardown(() => app.close())
  app.get('/', request => ({ same: request.raw === given, id: request.id }))
  t.same((await app.inject({ url: '/' })).json(), { same: true, id: 'id-1' })
})

t.test('Fastify reports a path parameter over maxParamLength to frameworkErrors as FST_ERR_MAX_PARAM_LENGTH', async t => {
  const app = Fastify({ maxParamLength: 5, frameworkErrors (error, _request, reply) { (reply as FastifyReply).code(400).send(error.code) } })
  t.teardown(() => app.close())
  app.get('/:id', () => 'found')
  t.equal((await app.inject({ url: '/abcdefghij' })).body, 'FST_ERR_MAX_PARAM_LENGTH')
})

/** The status and body a request with `Expect: extension` gets. */
function expecting (port: number): Promise<[number | undefined, string]> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ port, host: '127.0.0.1', path: '/', headers: { expect: 'extension' } }, res => {
      let body = ''
      res.setEncoding('utf8').on('data', chunk => { body += chunk }).on('end', () => resolve([res.statusCode, body]))
    })
    req.on('error', reject).end()
  })
}

t.test('Node answers an unmet Expect with 417 itself, unless a checkExpectation listener takes it and emits request', async t => {
  const app = (_request: IncomingMessage, response: ServerResponse) => response.end('app')
  const bare = createServer(app)
  t.same(await expecting(await listening(t, bare)), [417, ''])
  const handed = createServer(app)
  handed.on('checkExpectation', (request, response) => handed.emit('request', request, response))
  t.same(await expecting(await listening(t, handed)), [200, 'app'])
})

/** The code of the error Node gives clientError for what `send` writes on a fresh connection. */
async function clientErrorCode (t: Test, server: Server, send: string): Promise<string | undefined> {
  const code = new Promise<string | undefined>(resolve => server.on('clientError', (error: Error & { code?: string }, socket) => {
    resolve(error.code)
    socket.destroy()
  }))
  const socket = connect(await listening(t, server), '127.0.0.1')
  socket.on('error', () => {})
  socket.write(send)
  t.teardown(() => socket.destroy())
  return await code
}

t.test('Node reports headers over maxHeaderSize to clientError as HPE_HEADER_OVERFLOW', async t => {
  const server = createServer({ maxHeaderSize: 1024 }, (_request, response) => response.end())
  t.equal(await clientErrorCode(t, server, `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(4096)}\r\n\r\n`), 'HPE_HEADER_OVERFLOW')
})

t.test('Node reports a request slower than requestTimeout to clientError as ERR_HTTP_REQUEST_TIMEOUT', async t => {
  const server = createServer({ requestTimeout: 100, connectionsCheckingInterval: 20 }, (_request, response) => response.end())
  t.equal(await clientErrorCode(t, server, 'GET / HTTP/1.1\r\nHost: x\r\n'), 'ERR_HTTP_REQUEST_TIMEOUT')
})

interface Count { current: number, ttl: number }
type CounterStore = new (continueExceeding: boolean, exponentialBackoff: boolean, ...rest: unknown[]) => {
  incr (key: string, callback: (error: Error | null, count: Count | null) => void, timeWindow: number, max: number): void
}

t.test('@fastify/rate-limit counter stores load by path, and LocalStore counts before incr returns', async t => {
  const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as CounterStore
  const RedisStore = require('@fastify/rate-limit/store/RedisStore.js') as CounterStore
  t.equal(typeof RedisStore.prototype.incr, 'function')
  const store = new LocalStore(false, false, 5000)
  const counts: unknown[] = []
  const record = (_error: Error | null, count: Count | null) => { counts.push([count?.current, count?.ttl]) }
  store.incr('k', record, 1000, 10)
  store.incr('k', record, 1000, 10)
  // Counted synchronously, both; the time left may have dropped by a millisecond between the two.
  t.same(counts.map(count => (count as number[])[0]), [1, 2])
  t.ok(counts.every(count => (count as number[])[1] > 900 && (count as number[])[1] <= 1000), 'time left within the window')
})

t.test('helmet middleware sets its headers through setHeader and calls next before it returns', async t => {
  const headers: Record<string, string> = {}
  let nextCalled = false
  const collector = { setHeader (name: string, value: string) { headers[name.toLowerCase()] = value }, removeHeader (name: string) { delete headers[name.toLowerCase()] } }
  helmet({ contentSecurityPolicy: false })({} as IncomingMessage, collector as unknown as ServerResponse, () => { nextCalled = true })
  t.same({ nextCalled, nosniff: headers['x-content-type-options'] }, { nextCalled: true, nosniff: 'nosniff' })
})

t.test('Negotiator returns the offer as given, the first at equal preference, undefined when none is acceptable', async t => {
  const offers = ['application/json; charset=utf-8', 'application/xml; charset=utf-8']
  const choose = (accept: string) => new Negotiator({ headers: { accept } }).mediaType(offers)
  t.same(
    ['*/*', 'application/xml', 'application/xml, application/json', 'application/json;q=0.5, application/xml;q=0.9', 'application/json; charset=utf-8', 'text/html'].map(choose),
    ['application/json; charset=utf-8', 'application/xml; charset=utf-8', 'application/xml; charset=utf-8', 'application/xml; charset=utf-8', 'application/json; charset=utf-8', undefined]
  )
})

t.test('fast-json-stringify serializes type [T, null] as anyOf [T, null] would', async t => {
  const schema = { type: 'object', properties: { a: { type: ['string', 'null'] }, n: { type: ['integer', 'null'] } } }
  const serialize = fastJsonStringify(schema as unknown as Parameters<typeof fastJsonStringify>[0])
  t.same([serialize({ a: null, n: null }), serialize({ a: 'x', n: 3 })], ['{"a":null,"n":null}', '{"a":"x","n":3}'])
})

t.test('Ajv reports a failed anyOf as one error per branch, then one with keyword anyOf', async t => {
  const validate = createAjv().compile({
    type: 'object',
    properties: { meta: { anyOf: [{ type: 'object', properties: { x: { type: 'integer' } } }, { type: 'null' }] } }
  })
  t.notOk(validate({ meta: { x: 'a' } }))
  t.same(validate.errors?.map(error => [error.keyword, error.instancePath, error.schemaPath]), [
    ['type', '/meta/x', '#/properties/meta/anyOf/0/properties/x/type'],
    ['type', '/meta', '#/properties/meta/anyOf/1/type'],
    ['anyOf', '/meta', '#/properties/meta/anyOf']
  ])
})

t.test('@fastify/swagger calls transform with the route, its schema and url, and the document being built', async t => {
  const app = Fastify()
  t.teardown(() => app.close())
  const seen: Array<{ keys: string[], method: unknown, schemas: unknown }> = []
  await app.register(swagger, {
    openapi: { openapi: '3.1.0', info: { title: 't', version: '1' } },
    transform (argument) {
      const { schema, url, route, openapiObject } = argument as typeof argument & { openapiObject?: { components?: { schemas?: unknown } } }
      seen.push({ keys: Object.keys(argument).sort(), method: route.method, schemas: typeof openapiObject?.components?.schemas })
      return { schema, url }
    }
  })
  app.addSchema({ $id: 'Thing', type: 'object' })
  app.get('/things', { schema: { response: { 200: { $ref: 'Thing#' } } } }, () => ({}))
  await app.ready()
  app.swagger()
  t.same(seen, [{ keys: ['openapiObject', 'route', 'schema', 'url'], method: 'GET', schemas: 'object' }])
})

t.test('PGlite drops a leading U+FEFF from text it reads back', async t => {
  const db = new PGlite()
  t.teardown(() => db.close())
  const result = await db.query<unknown[]>('SELECT $1::text', ['\uFEFFx'], { rowMode: 'array' })
  t.equal(result.rows[0][0], 'x')
})

t.test('Fastify hands every onRoute hook the one route object, and derives HEAD with the GET route\'s config', async t => {
  // routes/table.ts createRouteIndex keeps the object the first hook saw and reads the route spec a
  // later hook (the docs page's) put in its config; pipeline.ts gives HEAD routes GET's hooks by it.
  const app = Fastify()
  t.teardown(() => app.close())
  const seen: Array<{ method: unknown, config?: unknown }> = []
  const first: object[] = []
  app.addHook('onRoute', route => { first.push(route); seen.push(route) })
  await app.register(async child => {
    child.addHook('onRoute', route => { route.config = { ...route.config, tagged: first.at(-1) === route } as typeof route.config })
    child.get('/page', { config: { mine: 1 } }, async () => 'ok')
  })
  await app.ready()
  t.same(seen.map(route => [route.method, route.config]), [['GET', { mine: 1, tagged: true }], ['HEAD', { mine: 1, tagged: true }]])
})

t.test('Fastify shows its router settings as initialConfig.routerOptions, in find-my-way\'s terms', async t => {
  // routes/table.ts builds its 405 index with these settings, so it matches paths as Fastify's router does.
  const app = Fastify({ routerOptions: { ignoreTrailingSlash: true, maxParamLength: 50 } })
  t.teardown(() => app.close())
  t.match(app.initialConfig, { routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: false, maxParamLength: 50 }, caseSensitive: true })
})

t.test('Fastify ends a derived HEAD route\'s onSend with headRouteOnSendHandler, and @fastify/compress adds its step after it', async t => {
  // http/compression.ts compressHead moves Fastify's step last, so HEAD is compressed as GET is.
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(compress, { threshold: 1 })
  const steps: Record<string, string[]> = {}
  app.addHook('onRoute', route => { steps[String(route.method)] = [route.onSend ?? []].flat().map(step => step.name) })
  app.get('/x', async () => 'x')
  await app.ready()
  t.same(steps, { GET: ['onSend'], HEAD: ['headRouteOnSendHandler', 'onSend'] })
})

t.test('@fastify/compress leaves a body that has a Content-Encoding alone, and adds accept-encoding to Vary unless it is there in lower case', async t => {
  // http/compression.ts: the constant bodies it compresses itself pass through; Vary is mended after.
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(compress, { threshold: 1 })
  app.get('/coded', async (_request, reply) => reply.header('content-encoding', 'br').send('made elsewhere'))
  app.get('/vary', async (_request, reply) => reply.header('vary', 'Origin, Accept-Encoding').send('x'.repeat(100)))
  const coded = await app.inject({ url: '/coded', headers: { 'accept-encoding': 'gzip' } })
  t.same([coded.headers['content-encoding'], coded.body], ['br', 'made elsewhere'])
  const vary = await app.inject({ url: '/vary', headers: { 'accept-encoding': 'gzip' } })
  t.same([vary.headers['content-encoding'], vary.headers.vary], ['gzip', 'Origin, Accept-Encoding, accept-encoding'])
})

t.test('Negotiator\'s encodings(available, { preferred }) breaks ties by the preferred order, as @fastify/compress does', async t => {
  // http/compression.ts acceptedCodings; @types/negotiator does not declare the option.
  const negotiator = new Negotiator({ headers: { 'accept-encoding': 'gzip, br' } }) as unknown as { encodings (available: string[], options?: { preferred: string[] }): string[] }
  t.same(negotiator.encodings(['br', 'gzip']).slice(0, 2), ['gzip', 'br'], 'without it: the header\'s order')
  t.same(negotiator.encodings(['br', 'gzip'], { preferred: ['br', 'gzip'] }).slice(0, 2), ['br', 'gzip'], 'with it: the preferred order')
})
