// guardHostRoutes through a host app that is not the demo: its own routes beside the plugin answer
// with the plugin's headers, Request-Id, Origin and Host checks, and problem+json errors.
import { rawExchange } from './helpers/raw-http.js'
import t from 'tap'
import Fastify from 'fastify'
import { Type } from '@sinclair/typebox'
import apiConventions, { defineResource, guardHostRoutes, memoryStore, securityHeaders } from '../lib/index.js'
import type { HostRouteOptions } from '../lib/index.js'

const problemJson = 'application/problem+json; charset=utf-8'
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const notes = defineResource({
  name: 'notes',
  singular: 'note',
  schema: Type.Object({ id: Type.Readonly(Type.String()), text: Type.String() }, { additionalProperties: false }),
  store: memoryStore()
})

/** A host with /health and /boom guarded, and the plugin under /api beside them. */
async function hostApp (t: { teardown (fn: () => unknown): void }, options?: HostRouteOptions) {
  const app = Fastify({ http: { requireHostHeader: false } })
  t.teardown(() => app.close())
  await app.register(async function ownRoutes (scope) {
    guardHostRoutes(scope, options)
    scope.get('/health', async () => ({ status: 'ok' }))
    scope.get('/boom', async () => { throw new Error('database at 10.0.0.5 is down') })
  })
  await app.register(apiConventions, { prefix: '/api', resources: [notes] })
  return app
}

t.test('the plugin\'s security headers on a host route, its errors and its 404s', async t => {
  const app = await hostApp(t)
  const expected = securityHeaders()
  t.match(expected, { 'strict-transport-security': /max-age/, 'x-frame-options': 'DENY', 'content-security-policy': "default-src 'none'; frame-ancestors 'none'", 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' })
  const api = await app.inject({ url: '/api/notes' })
  for (const url of ['/health', '/boom', '/nowhere']) {
    const res = await app.inject({ url })
    for (const [name, value] of Object.entries(expected)) {
      t.equal(res.headers[name], value, `${url} ${name}`)
      t.equal(res.headers[name], api.headers[name], `${url} ${name} as on the plugin's routes`)
    }
  }
})

t.test('Request-Id: a safe X-Request-Id is echoed, an unsafe one replaced, none generated', async t => {
  const app = await hostApp(t)
  t.equal((await app.inject({ url: '/health', headers: { 'x-request-id': 'trace-42.a:b' } })).headers['request-id'], 'trace-42.a:b')
  t.equal((await app.inject({ url: '/nowhere', headers: { 'x-request-id': 'trace-43' } })).headers['request-id'], 'trace-43', 'on a 404 too')
  t.match((await app.inject({ url: '/health', headers: { 'x-request-id': 'evil\u00e9<script>' } })).headers['request-id'], uuid)
  t.match((await app.inject({ url: '/health' })).headers['request-id'], uuid)
})

t.test('an unknown path is a 404 problem, typed under the prefix; flat by default', async t => {
  const res = await (await hostApp(t, { prefix: '/api' })).inject({ url: '/v2/books?x=1' })
  t.same({ status: res.statusCode, type: res.headers['content-type'] }, { status: 404, type: problemJson })
  t.match(res.json(), { type: '/api/problems/not-found', title: 'Not Found', status: 404, instance: '/v2/books' })
  const bare = await (await hostApp(t)).inject({ url: '/v2/books' })
  t.match(bare.json(), { type: '/problems/not-found', status: 404 }, 'without a prefix')
  const slashed = await (await hostApp(t, { prefix: '/api/' })).inject({ url: '/v2/books' })
  t.match(slashed.json(), { type: '/api/problems/not-found' }, 'a prefix written with a trailing slash, as the plugin takes it')
})

t.test('errorFormat envelope wraps the problem; problemTypeBase replaces where types point', async t => {
  const app = await hostApp(t, { prefix: '/api', errorFormat: 'envelope', problemTypeBase: 'https://errors.example/' })
  const res = await app.inject({ url: '/nowhere' })
  t.equal(res.statusCode, 404)
  t.match(res.json(), { errors: { type: 'https://errors.example/not-found', status: 404, instance: '/nowhere' } })
})

t.test('a host route that throws is a 500 problem in the catalogue\'s words, not the error\'s', async t => {
  const res = await (await hostApp(t)).inject({ url: '/boom' })
  t.same({ status: res.statusCode, type: res.headers['content-type'] }, { status: 500, type: problemJson })
  t.match(res.json(), { type: '/problems/internal', status: 500 })
  t.notMatch(res.body, /10\.0\.0\.5/)
})

t.test('allowedMethods: another method on a known path is 405 with Allow; without it, 404', async t => {
  const allowedMethods = (path: string) => path === '/health' ? ['GET', 'HEAD'] : undefined
  const res = await (await hostApp(t, { allowedMethods })).inject({ method: 'POST', url: '/health' })
  t.same({ status: res.statusCode, allow: res.headers.allow, type: res.headers['content-type'] }, { status: 405, allow: 'GET, HEAD', type: problemJson })
  t.match(res.json(), { type: '/problems/method-not-allowed', status: 405 })
  t.equal((await (await hostApp(t)).inject({ method: 'POST', url: '/health' })).statusCode, 404)
})

t.test('allowedOrigins: another Origin is a 403 problem; without the option Origin is not checked', async t => {
  const app = await hostApp(t, { allowedOrigins: ['https://app.example'] })
  const evil = await app.inject({ url: '/health', headers: { origin: 'https://evil.example' } })
  t.same({ status: evil.statusCode, type: evil.headers['content-type'] }, { status: 403, type: problemJson })
  t.match(evil.json(), { type: '/problems/forbidden', status: 403, detail: 'The Origin of this request is not allowed.' })
  t.match(evil.headers, { 'x-frame-options': 'DENY', 'request-id': uuid })
  t.equal((await app.inject({ url: '/health', headers: { origin: 'https://app.example' } })).statusCode, 200)
  t.equal((await app.inject({ url: '/health' })).statusCode, 200, 'no Origin')
  t.equal((await (await hostApp(t)).inject({ url: '/health', headers: { origin: 'https://evil.example' } })).statusCode, 200)
})

t.test('an HTTP/1.1 request without Host is a 400 problem naming Host; HTTP/1.0 needs none', async t => {
  const app = await hostApp(t, { prefix: '/api' })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as { port: number }).port
  const raw = await rawExchange(port, 'GET /health HTTP/1.1\r\nX-Request-Id: no-host-1\r\nConnection: close\r\n\r\n')
  const [head, body] = raw.split('\r\n\r\n')
  t.match(head, /^HTTP\/1\.1 400 Bad Request\r\n/)
  t.match(head, /\r\ncontent-type: application\/problem\+json; charset=utf-8\r\n/)
  t.match(head, /\r\nx-frame-options: DENY\r\n/)
  t.match(head, /\r\nrequest-id: no-host-1\r\n/)
  t.match(JSON.parse(body), { status: 400, instance: '/health', invalidParams: [{ name: 'Host', reason: 'is required in HTTP/1.1 (RFC 9112 §3.2)' }] })
  t.match(await rawExchange(port, 'GET /health HTTP/1.0\r\n\r\n'), /^HTTP\/1\.1 200 OK\r\n/)
})
