// Limits (spec "Limits", "Errors"): query string → 414, body → 413, handler time → 503, and at the
// socket header size → 431, slow requests → 408, broken HTTP → 400, all as problem+json.
import { rawExchange } from './helpers/raw-http.js'
import type { Socket } from 'node:net'
import t from 'tap'
import Fastify from 'fastify'
import type { RouteOptions } from 'fastify'
import apiConventions, { createClientErrorHandler, memoryStore } from '../lib/index.js'
import type { Store } from '../lib/index.js'
import { demoResources } from '../demo/schemas/index.js'
import { buildApp, json } from './helpers/app.js'

t.test('a query string over maxQueryLength is 414 problem+json; at the limit it is served', async t => {
  const app = await buildApp(t, { maxQueryLength: 40 })
  const atLimit = await app.inject({ url: `/v1/books?title=${'x'.repeat(34)}` })
  t.equal(atLimit.statusCode, 200)
  const over = await app.inject({ url: `/v1/books?title=${'x'.repeat(35)}` })
  t.equal(over.statusCode, 414)
  t.match(over.headers['content-type'], /^application\/problem\+json/)
  t.match(over.json(), { status: 414, type: '/v1/problems/uri-too-long', detail: 'The request URL is longer than 40 characters.' })
  t.equal(over.headers['x-content-type-options'], 'nosniff')
  t.equal((await app.inject({ url: `/v1/books/${'x'.repeat(60)}` })).statusCode, 404, 'the path does not count')
})

t.test('a malformed or non-UTF-8 percent-escape in the query is a 400 naming its parameter, never read as literal text', async t => {
  const app = await buildApp(t)
  const reason = 'holds a percent-escape that is malformed or not UTF-8'
  for (const [url, name] of [
    ['/v1/books?title=%FF', 'title'],
    ['/v1/books?fields=title%FF', 'fields'],
    ['/v1/books?filter=title%20eq%20%27%FF%27', 'filter'],
    ['/v1/books?pageSize=1&title=%E0%A4%A', 'title'],
    ['/v1/books?%ZZ=1', '%ZZ'],
    ['/v1/books/some-id?fields=%', 'fields']
  ]) {
    const res = await app.inject({ url })
    t.same({ status: res.statusCode, type: res.json().type, invalidParams: res.json().invalidParams }, { status: 400, type: '/v1/problems/bad-url', invalidParams: [{ name, reason }] }, url)
  }
  for (const url of ['/v1/books?title=100%25', '/v1/books?title=%C3%89t%C3%A9+x', '/v1/books?filter=year%20gt%201']) {
    t.equal((await app.inject({ url })).statusCode, 200, url)
  }
})

t.test('the default maxQueryLength is 4096', async t => {
  const app = await buildApp(t)
  t.equal((await app.inject({ url: `/v1/books?title=${'x'.repeat(4090)}` })).statusCode, 200)
  t.equal((await app.inject({ url: `/v1/books?title=${'x'.repeat(4091)}` })).statusCode, 414)
})

t.test('a body over bodyLimit is 413 problem+json', async t => {
  const app = await buildApp(t, { bodyLimit: 64 })
  const small = await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: { name: 'Hone Tuwhare' } })
  t.equal(small.statusCode, 201)
  const large = await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: { name: 'x'.repeat(100) } })
  t.equal(large.statusCode, 413)
  t.match(large.headers['content-type'], /^application\/problem\+json/)
  t.match(large.json(), { status: 413, type: '/v1/problems/body-too-large' })
})

t.test('a handler slower than handlerTimeout is answered 503 problem+json', async t => {
  let release: () => void = () => {}
  const stalled = new Promise<void>(resolve => { release = resolve })
  t.teardown(() => release())
  const resources = (store: Store) => {
    // Listing books never answers while the test runs; authors answer at once.
    const slow = Object.assign(Object.create(store) as Store, {
      async list (...args: Parameters<Store['list']>) {
        if (args[0].name === 'books') await stalled
        return store.list(...args)
      }
    })
    return demoResources(slow)
  }
  const app = await buildApp(t, { handlerTimeout: 50, resources })
  const res = await app.inject({ url: '/v1/books' })
  t.equal(res.statusCode, 503)
  t.match(res.headers['content-type'], /^application\/problem\+json/)
  t.match(res.json(), { status: 503, title: 'Service Unavailable', type: '/v1/problems/handler-timeout' })
  t.equal(res.headers['cache-control'], 'no-store')
  t.equal((await app.inject({ url: '/v1/authors' })).statusCode, 200, 'fast handlers are unaffected')
})

t.test('a route\'s own bodyLimit and handlerTimeout win over the options', async t => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  // A host hook stands in for a route that sets its own limits.
  app.addHook('onRoute', (route: RouteOptions) => {
    if (route.url === '/v1/authors' && route.method === 'POST') Object.assign(route, { bodyLimit: 1000, handlerTimeout: 60000 })
  })
  await app.register(apiConventions, { prefix: '/v1', resources: demoResources(memoryStore()), bodyLimit: 64, handlerTimeout: 1000 })
  const res = await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: { name: 'x'.repeat(100) } })
  t.equal(res.statusCode, 201)
  t.equal((await app.inject({ method: 'PUT', url: `/v1/authors/${res.json().data.author.id}`, headers: json, payload: { name: 'x'.repeat(100) } })).statusCode, 413)
})

t.test('bad limit options stop registration, naming the option', async t => {
  for (const [name, value] of [['maxQueryLength', 0], ['bodyLimit', '1mb'], ['handlerTimeout', -1], ['handlerTimeout', 1.5]] as const) {
    await t.rejects(buildApp(t, { [name]: value }), { code: 'API_ERR_OPTIONS_INVALID', message: new RegExp(`${name} must be a positive integer`) }, `${name}=${value}`)
  }
})

function parse (raw: string) {
  const [head, body] = raw.split('\r\n\r\n')
  const [statusLine, ...lines] = head.split('\r\n')
  const headers = Object.fromEntries(lines.map(line => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]))
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) }
}

async function listen (t: { teardown (fn: () => unknown): void }, server: object) {
  const app = await buildApp(t, { server: { clientErrorHandler: createClientErrorHandler({ prefix: '/v1' }), ...server } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return (app.server.address() as { port: number }).port
}

t.test('headers over the server\'s maxHeaderSize are 431 problem+json', async t => {
  const port = await listen(t, { http: { maxHeaderSize: 1024 } })
  const res = parse(await rawExchange(port, `GET /v1/books HTTP/1.1\r\nHost: x\r\nX-Big: ${'x'.repeat(2000)}\r\n\r\n`))
  t.equal(res.status, 431)
  t.match(res.headers['content-type'], /^application\/problem\+json/)
  t.equal(res.headers['x-content-type-options'], 'nosniff')
  t.ok(Math.abs(Date.parse(res.headers.date) - Date.now()) < 5000)
  t.same(res.body, { type: '/v1/problems/headers-too-large', title: 'Request Header Fields Too Large', status: 431, detail: 'The request headers are too large.' })
})

t.test('an Expect other than 100-continue is a 417 problem naming Expect, with the headers of any answer', async t => {
  const port = await listen(t, {})
  const res = parse(await rawExchange(port, 'GET /v1/books HTTP/1.1\r\nHost: x\r\nExpect: x-custom\r\nX-Request-Id: expect-1\r\nConnection: close\r\n\r\n'))
  t.equal(res.status, 417)
  t.match(res.headers, { 'content-type': /^application\/problem\+json/, 'x-content-type-options': 'nosniff', 'cache-control': 'no-store', 'request-id': 'expect-1' })
  t.same(res.body, {
    type: '/v1/problems/expectation-failed',
    title: 'Expectation Failed',
    status: 417,
    detail: 'The server cannot meet the expectation in the Expect header; only 100-continue is supported.',
    instance: '/v1/books',
    invalidParams: [{ name: 'Expect', reason: 'only 100-continue can be met' }]
  })
})

t.test('Expect: 100-continue is met: the client hears 100, sends the body, and the write is done', async t => {
  const port = await listen(t, {})
  const body = JSON.stringify({ name: 'Patricia Grace' })
  const raw = await rawExchange(port, `POST /v1/authors HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`)
  t.match(raw, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 Created\r\n/)
  t.match(JSON.parse(raw.slice(raw.lastIndexOf('\r\n\r\n') + 4)), { data: { author: { name: 'Patricia Grace' } } })
})

const unmetExpectation = (path: string) => `POST ${path} HTTP/1.1\r\nHost: x\r\nExpect: x-custom\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`

t.test('two instances of the plugin on one server answer an unmet Expect once; the host\'s own routes keep Node\'s answer', async t => {
  const app = Fastify()
  t.teardown(() => app.close())
  const store = memoryStore()
  let hostRouteRan = false
  app.post('/hook', async () => { hostRouteRan = true; return 'done' })
  await app.register(apiConventions, { prefix: '/v1', resources: demoResources(store) })
  await app.register(apiConventions, { prefix: '/v2', resources: demoResources(store) })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as { port: number }).port
  const raw = await rawExchange(port, unmetExpectation('/v2/books'))
  t.equal(raw.match(/^HTTP\/1\.1 /gm)?.length, 1, raw)
  t.match(parse(raw), { status: 417, body: { instance: '/v2/books' } })
  t.match(parse(await rawExchange(port, unmetExpectation('/v1'))), { status: 417, body: { instance: '/v1' } })
  t.match(await rawExchange(port, unmetExpectation('/hook')), /^HTTP\/1\.1 417 Expectation Failed\r\n(?![^]*request-id)[^]*\r\n\r\n$/i)
  t.match(await rawExchange(port, unmetExpectation('/v10/books')), /^HTTP\/1\.1 417 Expectation Failed\r\n(?![^]*request-id)/i, 'another path that only starts like the prefix')
  t.notOk(hostRouteRan, 'the host\'s route did not run')
})

t.test('a plugin registered without a prefix takes an unmet Expect on every path', async t => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(apiConventions, { resources: demoResources(memoryStore()) })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as { port: number }).port
  t.match(parse(await rawExchange(port, unmetExpectation('/books'))), { status: 417, headers: { 'x-content-type-options': 'nosniff' }, body: { type: '/problems/expectation-failed', invalidParams: [{ name: 'Expect' }] } })
})

for (const when of ['before', 'after'] as const) {
  t.test(`a checkExpectation listener the host adds ${when} registering the plugin is left in charge`, async t => {
    const host = Fastify()
    t.teardown(() => host.close())
    const own = () => host.server.on('checkExpectation', (_request, response) => response.writeHead(417, { 'x-host': 'own' }).end())
    if (when === 'before') own()
    await host.register(apiConventions, { prefix: '/v1', resources: demoResources(memoryStore()) })
    if (when === 'after') own()
    await host.listen({ port: 0, host: '127.0.0.1' })
    const raw = await rawExchange((host.server.address() as { port: number }).port, unmetExpectation('/v1/books'))
    t.match(raw, /^HTTP\/1\.1 417 Expectation Failed\r\nx-host: own\r\n/)
    t.equal(raw.match(/^HTTP\/1\.1 /gm)?.length, 1, raw)
  })
}

t.test('a request slower than the server\'s requestTimeout is 408 problem+json', async t => {
  const port = await listen(t, { requestTimeout: 100, http: { connectionsCheckingInterval: 20 } })
  const res = parse(await rawExchange(port, 'GET /v1/books HTTP/1.1\r\nHost: x\r\n'))
  t.equal(res.status, 408)
  t.match(res.body, { type: '/v1/problems/request-timeout', status: 408 })
})

t.test('a request that is not HTTP is 400 problem+json', async t => {
  const port = await listen(t, {})
  const res = parse(await rawExchange(port, 'NOT HTTP AT ALL\r\n\r\n'))
  t.equal(res.status, 400)
  t.match(res.body, { type: '/v1/problems/body-malformed', status: 400 })
})

t.test('the client error handler: envelope form, a type base, and sockets with no one to answer', async t => {
  const written: string[] = []
  let destroyed = 0
  const socket = (state: { writable: boolean, destroyed: boolean }) => ({ ...state, write (text: string) { written.push(text) }, destroy () { destroyed++ } }) as unknown as Socket
  const handler = createClientErrorHandler({ errorFormat: 'envelope', problemTypeBase: 'https://errors.example.com/' })
  handler(Object.assign(new Error('overflow'), { code: 'HPE_HEADER_OVERFLOW' }), socket({ writable: true, destroyed: false }))
  t.match(JSON.parse(written[0].split('\r\n\r\n')[1]), { errors: { type: 'https://errors.example.com/headers-too-large', status: 431 } })
  handler(new Error('no code'), socket({ writable: false, destroyed: false }))
  handler(Object.assign(new Error('reset'), { code: 'ECONNRESET' }), socket({ writable: true, destroyed: false }))
  handler(new Error('gone'), socket({ writable: true, destroyed: true }))
  t.equal(written.length, 1)
  t.equal(destroyed, 2)
  const plain = createClientErrorHandler()
  plain(new Error('bad'), socket({ writable: true, destroyed: false }))
  t.match(JSON.parse(written[1].split('\r\n\r\n')[1]), { type: '/problems/body-malformed' })
})

/** The demo app on the memory store, closed after the test. */
async function demoApp (t: { teardown (fn: () => unknown): void }) {
  const { buildDemoApp } = await import('../demo/app.js')
  const { loadConfig } = await import('../demo/config.js')
  const app = await buildDemoApp(loadConfig({ STORE: 'memory' }))
  t.teardown(() => app.close())
  return app
}

t.test('a URL that cannot be decoded is a 400 problem when the host uses createFrameworkErrorHandler', async t => {
  const app = await demoApp(t)
  const res = await app.inject({ url: '/v1/books/%ZZ', headers: { authorization: 'Bearer dev-token' } })
  t.same({ status: res.statusCode, type: res.headers['content-type'] }, { status: 400, type: 'application/problem+json; charset=utf-8' })
  t.match(res.json(), { type: '/v1/problems/bad-url', status: 400, title: 'Bad Request', instance: '/v1/books/%ZZ' })
  t.match(res.headers, { 'strict-transport-security': /max-age/, 'x-frame-options': 'DENY', 'feature-policy': /camera 'none'/, 'request-id': /./ }, 'the router\'s refusal carries the security headers')
})

t.test('createFrameworkErrorHandler can put the problem under errors', async t => {
  const Fastify = (await import('fastify')).default
  const { createFrameworkErrorHandler } = await import('../lib/index.js')
  const app = Fastify({ frameworkErrors: createFrameworkErrorHandler({ problemTypeBase: 'https://errors.example/', errorFormat: 'envelope' }) })
  app.get('/x/:id', () => 'ok')
  t.teardown(() => app.close())
  const res = await app.inject({ url: '/x/%ZZ' })
  t.match(res.json(), { errors: { type: 'https://errors.example/bad-url', status: 400 } })
  const plain = Fastify({ frameworkErrors: createFrameworkErrorHandler() })
  plain.get('/x/:id', () => 'ok')
  t.teardown(() => plain.close())
  t.match((await plain.inject({ url: '/x/%ZZ' })).json(), { type: '/problems/bad-url', status: 400 }, 'no prefix, no type base: types under /problems/')
  const slashed = Fastify({ frameworkErrors: createFrameworkErrorHandler({ prefix: '/v1/' }) })
  slashed.get('/x/:id', () => 'ok')
  t.teardown(() => slashed.close())
  t.match((await slashed.inject({ url: '/x/%ZZ' })).json(), { type: '/v1/problems/bad-url' }, 'a prefix written with a trailing slash, as the plugin takes it')
})

t.test('an id longer than the router takes is a 404 problem, not a 400 about the URL', async t => {
  const app = await demoApp(t)
  const url = `/v1/books/${'x'.repeat(101)}`
  const res = await app.inject({ url, headers: { authorization: 'Bearer dev-token' } })
  t.same({ status: res.statusCode, type: res.headers['content-type'] }, { status: 404, type: 'application/problem+json; charset=utf-8' })
  t.match(res.json(), { type: '/v1/problems/not-found', status: 404, title: 'Not Found', instance: url })
})

t.test('a trailing slash after a known path is a 404 problem, not a 405 allowing the same method', async t => {
  const app = await demoApp(t)
  for (const url of ['/v1/books/some-id/', '/v1/authors/some-id/books/']) {
    const res = await app.inject({ url, headers: { authorization: 'Bearer dev-token' } })
    t.same({ status: res.statusCode, allow: res.headers.allow, type: res.headers['content-type'] }, { status: 404, allow: undefined, type: 'application/problem+json; charset=utf-8' }, url)
  }
})

t.test('outside the API the demo answers problems too: 404 for unknown paths, 405 on /health', async t => {
  const app = await demoApp(t)
  for (const url of ['/', '/v2/books']) {
    const res = await app.inject({ url })
    t.same({ status: res.statusCode, type: res.headers['content-type'] }, { status: 404, type: 'application/problem+json; charset=utf-8' }, url)
    t.match(res.json(), { type: '/v1/problems/not-found', status: 404, instance: url })
  }
  const post = await app.inject({ method: 'POST', url: '/health' })
  t.same({ status: post.statusCode, allow: post.headers.allow, type: post.headers['content-type'] }, { status: 405, allow: 'GET, HEAD', type: 'application/problem+json; charset=utf-8' })
  const head = await app.inject({ method: 'HEAD', url: '/health' })
  t.equal(head.statusCode, 200)
  for (const res of [post, head, await app.inject({ url: '/nope' })]) {
    t.match(res.headers, { 'strict-transport-security': /max-age/, 'x-frame-options': 'DENY', 'content-security-policy': /default-src 'none'/, 'request-id': /./ })
  }
})

t.test('/health checks Origin like the API: a disallowed one is 403, an allowed one passes', async t => {
  const app = await demoApp(t)
  const evil = await app.inject({ url: '/health', headers: { origin: 'https://evil.example' } })
  t.same({ status: evil.statusCode, type: evil.headers['content-type'] }, { status: 403, type: 'application/problem+json; charset=utf-8' })
  t.match(evil.json(), { status: 403, type: '/v1/problems/forbidden' })
  t.equal((await app.inject({ url: '/health', headers: { origin: 'http://localhost:8080' } })).statusCode, 200)
})

t.test('an HTTP/1.1 request without Host is a 400 problem naming Host, in the API and outside it, not Node\'s bare 400', async t => {
  const app = await demoApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as { port: number }).port
  for (const path of ['/v1/books', '/health']) {
    const res = parse(await rawExchange(port, `GET ${path} HTTP/1.1\r\nAuthorization: Bearer dev-token\r\nConnection: close\r\n\r\n`))
    t.equal(res.status, 400, path)
    t.match(res.headers, { 'content-type': /^application\/problem\+json/, 'x-frame-options': 'DENY', 'request-id': /./ }, path)
    t.same(res.body.invalidParams, [{ name: 'Host', reason: 'is required in HTTP/1.1 (RFC 9112 §3.2)' }], path)
  }
  // HTTP/1.0 has no Host requirement.
  t.match(await rawExchange(port, 'GET /health HTTP/1.0\r\n\r\n'), /^HTTP\/1\.1 200 OK\r\n/)
})
