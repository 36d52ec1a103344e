// Response security headers on every answer (spec "Response headers"):
// their values on a 200, 4xx answers, a 304 and a preflight; the lean API profile and the
// document one (headerProfile), the feature policy's name (featurePolicyHeader), pages; per-resource
// and per-route Cache-Control and CSP; the request Date header (RFC 5322) and the response Date.
import type { OutgoingHttpHeaders } from 'node:http'
import t from 'tap'
import Fastify from 'fastify'
import type { RouteOptions } from 'fastify'
import apiConventions, { memoryStore } from '../lib/index.js'
import { demoResources } from '../demo/schemas/index.js'
import { buildApp, pick } from './helpers/app.js'
import { auth } from './helpers/auth.js'
import { buildSecureApp, seedOne } from './helpers/secure-app.js'

// The lean profile (`headerProfile: 'api'`, the default): the spec's headers, the feature policy
// under the spec's name only (Feature-Policy), and none of helmet's browser-document headers.
const expected = {
  'cache-control': 'no-store',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'feature-policy': "camera 'none'; geolocation 'none'; microphone 'none'; payment 'none'",
  'permissions-policy': undefined,
  'cross-origin-opener-policy': undefined,
  'cross-origin-resource-policy': undefined,
  'origin-agent-cluster': undefined,
  'x-dns-prefetch-control': undefined,
  'x-download-options': undefined,
  'x-permitted-cross-domain-policies': undefined,
  'x-xss-protection': undefined
}
// What `headerProfile: 'document'` adds: helmet's headers for browser documents, and a feature
// policy denying every feature a page does not use.
const documentHeaders = {
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'x-dns-prefetch-control': 'off',
  'x-download-options': 'noopen',
  'x-permitted-cross-domain-policies': 'none',
  'x-xss-protection': '0',
  'feature-policy': "accelerometer 'none'; autoplay 'none'; camera 'none'; display-capture 'none'; encrypted-media 'none'; fullscreen 'none'; geolocation 'none'; gyroscope 'none'; magnetometer 'none'; microphone 'none'; midi 'none'; payment 'none'; picture-in-picture 'none'; publickey-credentials-get 'none'; screen-wake-lock 'none'; sync-xhr 'none'; usb 'none'; xr-spatial-tracking 'none'"
}
const names = Object.keys(expected)

t.test('every security header, with its value, on a 200, 4xx answers, a 304 and a preflight', async t => {
  const app = await buildSecureApp(t, { cors: { origins: ['https://app.example.com'] } })
  const { book } = await seedOne(app)
  const etag = (await app.inject({ url: `/v1/books/${book.id}`, headers: auth.read })).headers.etag as string
  const cases = [
    [200, { url: '/v1/books', headers: auth.read }],
    [200, { url: `/v1/books/${book.id}`, headers: auth.read }],
    [201, { method: 'POST', url: '/v1/authors', headers: auth.writeJson, payload: { name: 'Keri Hulme' } }],
    [304, { url: `/v1/books/${book.id}`, headers: { ...auth.read, 'if-none-match': etag } }],
    [400, { url: '/v1/books?pageSize=x', headers: auth.read }],
    [401, { url: '/v1/books' }],
    [403, { method: 'DELETE', url: `/v1/books/${book.id}`, headers: auth.read }],
    [403, { url: '/v1/books', headers: { ...auth.read, origin: 'https://evil.example.com' } }],
    [404, { url: '/v1/books/missing', headers: auth.read }],
    [404, { url: '/v1/nothing', headers: auth.read }],
    [405, { method: 'PUT', url: '/v1/books', headers: auth.writeJson, payload: {} }],
    [415, { method: 'POST', url: '/v1/authors', headers: { ...auth.write, 'content-type': 'text/plain' }, payload: 'x' }],
    [204, { method: 'OPTIONS', url: '/v1/books', headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET' } }],
    [200, { url: '/v1/problems/not-found' }]
  ] as const
  for (const [status, request] of cases) {
    const res = await app.inject(request)
    const label = `${status} ${'method' in request ? request.method : 'GET'} ${request.url}`
    t.equal(res.statusCode, status, label)
    t.same(pick(res.headers, ...names), expected, label)
    t.match(res.headers.date, /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/, `Date on ${label}`)
  }
})

t.test('the headers are there without any security option too', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ url: '/v1/books/missing' })
  t.equal(res.statusCode, 404)
  t.same(pick(res.headers, ...names), expected)
})

t.test('a resource policy sets Cache-Control on that resource\'s 200 and 304 only', async t => {
  const app = await buildSecureApp(t, { cacheControl: 'no-cache', resourcePolicies: { books: { cacheControl: 'private, max-age=60' } } })
  const { author, book } = await seedOne(app)
  const item = await app.inject({ url: `/v1/books/${book.id}`, headers: auth.read })
  t.equal(item.headers['cache-control'], 'private, max-age=60')
  const notModified = await app.inject({ url: `/v1/books/${book.id}`, headers: { ...auth.read, 'if-none-match': item.headers.etag as string } })
  t.equal(notModified.statusCode, 304)
  t.equal(notModified.headers['cache-control'], 'private, max-age=60')
  t.equal((await app.inject({ method: 'HEAD', url: '/v1/books', headers: auth.read })).headers['cache-control'], 'private, max-age=60')
  t.equal((await app.inject({ url: `/v1/authors/${author.id}/books`, headers: auth.read })).headers['cache-control'], 'private, max-age=60')
  t.equal((await app.inject({ url: '/v1/books/missing', headers: auth.read })).headers['cache-control'], 'no-cache', 'not on a 404')
  t.equal((await app.inject({ url: '/v1/books' })).headers['cache-control'], 'no-cache', 'not on a 401')
  t.equal((await app.inject({ method: 'PATCH', url: `/v1/books/${book.id}`, headers: auth.writeJson, payload: { year: 1958 } })).headers['cache-control'], 'no-cache', 'not on a write')
  t.equal((await app.inject({ url: '/v1/authors', headers: auth.read })).headers['cache-control'], 'no-cache', 'not on other resources')
})

t.test('route config contentSecurityPolicy and cacheControl apply to that route only (the docs page uses them)', async t => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  // The OpenAPI docs route sets this config itself; here a host hook sets it on a problem page.
  app.addHook('onRoute', (route: RouteOptions) => {
    if (route.url === '/v1/problems/') route.config = { ...route.config, contentSecurityPolicy: "default-src 'self'", cacheControl: 'public, max-age=300' }
  })
  await app.register(apiConventions, { prefix: '/v1', resources: demoResources(memoryStore()) })
  const page = await app.inject({ url: '/v1/problems/' })
  t.equal(page.headers['content-security-policy'], "default-src 'self'")
  t.equal(page.headers['cache-control'], 'public, max-age=300')
  t.equal(page.headers['x-frame-options'], 'DENY')
  const other = await app.inject({ url: '/v1/problems/not-found' })
  t.equal(other.headers['content-security-policy'], expected['content-security-policy'])
  t.equal(other.headers['cache-control'], 'no-store')
})

t.test('headerProfile document adds helmet\'s browser-document headers to every answer', async t => {
  const app = await buildSecureApp(t, { headerProfile: 'document' })
  const { book } = await seedOne(app)
  for (const [status, url, headers] of [[200, `/v1/books/${book.id}`, auth.read], [401, '/v1/books', {}], [404, '/v1/nothing', auth.read]] as const) {
    const res = await app.inject({ url, headers })
    t.equal(res.statusCode, status, url)
    t.same(pick(res.headers, ...names), { ...expected, ...documentHeaders }, url)
  }
})

t.test('featurePolicyHeader permissions-policy sends the policy under its successor\'s name instead, never both', async t => {
  const api = await buildApp(t, { featurePolicyHeader: 'permissions-policy' })
  const res = await api.inject({ url: '/v1/books' })
  t.same(pick(res.headers, 'permissions-policy', 'feature-policy'), { 'feature-policy': undefined, 'permissions-policy': 'camera=(), geolocation=(), microphone=(), payment=()' })
  const document = await buildApp(t, { featurePolicyHeader: 'permissions-policy', headerProfile: 'document' })
  t.match((await document.inject({ url: '/v1/books' })).headers, { 'feature-policy': undefined, 'permissions-policy': /^accelerometer=\(\), autoplay=\(\), .*, xr-spatial-tracking=\(\)$/ })
})

t.test('a route serving a page (documentHeaders) gets the document headers under the api profile', async t => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  app.addHook('onRoute', (route: RouteOptions) => {
    if (route.url === '/v1/problems/') route.config = { ...route.config, documentHeaders: true }
  })
  await app.register(apiConventions, { prefix: '/v1', resources: demoResources(memoryStore()) })
  const page = await app.inject({ url: '/v1/problems/' })
  t.same(pick(page.headers, ...names), { ...expected, ...documentHeaders }, 'the page')
  t.same(pick((await app.inject({ url: '/v1/problems/not-found' })).headers, ...names), expected, 'another route')
})

t.test('the docs page gets the document headers beside its own CSP; the API keeps the lean set', async t => {
  const app = await buildApp(t)
  const page = await app.inject({ url: '/v1/docs/', headers: { accept: 'text/html' } })
  t.equal(page.statusCode, 200)
  t.same(pick(page.headers, ...names), { ...expected, ...documentHeaders, 'content-security-policy': page.headers['content-security-policy'] })
  t.match(page.headers['content-security-policy'], /script-src 'self'/)
  t.same(pick((await app.inject({ url: '/v1/openapi.json' })).headers, ...names), expected, 'the document it reads')
})

t.test('a route serving a page under the document profile keeps the same headers', async t => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  app.addHook('onRoute', (route: RouteOptions) => {
    if (route.url === '/v1/problems/') route.config = { ...route.config, documentHeaders: true }
  })
  await app.register(apiConventions, { prefix: '/v1', resources: demoResources(memoryStore()), headerProfile: 'document', cacheControl: 'no-cache' })
  t.same(pick((await app.inject({ url: '/v1/problems/' })).headers, ...names), { ...expected, ...documentHeaders, 'cache-control': 'no-cache' })
})

t.test('bad header options stop registration', async t => {
  const cases: Array<[object, RegExp]> = [
    [{ cacheControl: 'no-store\r\nx-evil: 1' }, /cacheControl must be a header value/],
    [{ cacheControl: 7 }, /cacheControl must be a header value/],
    [{ headerProfile: 'browser' }, /headerProfile must be one of 'api', 'document', received "browser"/],
    [{ featurePolicyHeader: 'both' }, /featurePolicyHeader must be one of 'feature-policy', 'permissions-policy', received "both"/],
    [{ resourcePolicies: 'books' }, /resourcePolicies must be an object/],
    [{ resourcePolicies: { magazines: {} } }, /resourcePolicies\.magazines names no resource; known: authors, books/],
    [{ resourcePolicies: { books: { cacheControl: '' } } }, /resourcePolicies\.books\.cacheControl must be/]
  ]
  for (const [options, message] of cases) {
    await t.rejects(buildApp(t, options), { code: 'API_ERR_OPTIONS_INVALID', message }, JSON.stringify(options))
  }
  await t.resolves(buildApp(t, { resourcePolicies: { books: null as never } }), 'an empty policy changes nothing')
})

t.test('a request Date in an accepted form passes', async t => {
  const app = await buildSecureApp(t)
  const dates = [
    'Sun, 06 Nov 1994 08:49:37 GMT',
    '6 Nov 1994 08:49 +1300',
    'sun,  06 nov 1994 08:49:37 -0530',
    'Tue, 29 Feb 2000 23:59:60 EST',
    'Wed, 01 May 2024 12:00:00 PDT',
    'Sunday, 06-Nov-94 08:49:37 GMT',
    'Wednesday, 01-May-24 12:00:00 GMT',
    'Sun Nov  6 08:49:37 1994',
    'Wed May 01 12:00:00 2024'
  ]
  for (const date of dates) t.equal((await app.inject({ url: '/v1/books', headers: { ...auth.read, date } })).statusCode, 200, date)
})

t.test('a request Date that is not a date is 400 naming Date', async t => {
  const app = await buildSecureApp(t)
  const dates = [
    'yesterday',
    '2024-05-01T12:00:00Z',
    '1714564800',
    'Sun, 31 Feb 2024 08:49:37 GMT',
    'Mon, 06 Nov 1994 08:49:37 GMT',
    'Sun, 06 Nov 1994 24:00:00 GMT',
    'Sun, 06 Nov 1994 08:60:00 GMT',
    'Sun, 06 Nov 1994 08:49:61 GMT',
    'Sun, 06 Nov 1994 08:49:37 +0060',
    'Sun, 06 Nov 1994 08:49:37 CET',
    'Sun, 06 Nov 1994 08:49:37',
    'Sunday, 06-Nov-94 08:49:37 UTC',
    'Mon Nov  6 08:49:37 1994'
  ]
  for (const date of dates) {
    const res = await app.inject({ url: '/v1/books', headers: { ...auth.read, date } })
    t.equal(res.statusCode, 400, date)
    t.match(res.headers['content-type'], /^application\/problem\+json/)
    t.match(res.json(), { type: '/v1/problems/header-invalid', invalidParams: [{ name: 'Date', reason: /RFC 5322/ }] }, date)
  }
  const twice = await app.inject({ url: '/v1/books', headers: { ...auth.read, date: ['Sun, 06 Nov 1994 08:49:37 GMT', 'Sun, 06 Nov 1994 08:49:37 GMT'] } as unknown as OutgoingHttpHeaders })
  t.equal(twice.statusCode, 400, 'a repeated Date')
})

t.test('responses over a real socket carry Date and the security headers', async t => {
  const app = await buildApp(t)
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  const res = await fetch(`${url}/v1/nothing`)
  t.equal(res.status, 404)
  t.ok(Math.abs(Date.parse(res.headers.get('date') as string) - Date.now()) < 5000)
  t.equal(res.headers.get('x-content-type-options'), 'nosniff')
  t.equal(res.headers.get('content-security-policy'), expected['content-security-policy'])
})

t.test('headers a host sets before the plugin runs are kept beside the fixed ones', async t => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  app.addHook('onRequest', function hostHeader (_request, reply, done) {
    reply.header('x-served-by', 'edge-7').header('cache-control', 'private')
    done()
  })
  await app.register(apiConventions, { prefix: '/v1', resources: demoResources(memoryStore()) })
  const res = await app.inject({ url: '/v1/books' })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['x-served-by'], 'edge-7')
  t.same(pick(res.headers, ...names), { ...expected, 'cache-control': 'private' }, 'the host\'s value wins where both set one')
})
