// Origin checks and CORS (spec "Request headers": Origin, Access-Control-Request-Method;
// "Response headers": Access-Control-Allow-Origin; "Authentication" 6).
import t from 'tap'
import { buildDemoApp } from '../demo/app.js'
import { loadConfig } from '../demo/config.js'
import { buildApp } from './helpers/app.js'
import { auth, testAuth } from './helpers/auth.js'
import { buildSecureApp, seedOne } from './helpers/secure-app.js'

const allowed = 'https://app.example.com'
const cors = { origins: [allowed, 'http://localhost:8080'] }
const preflight = (origin: string, method = 'PATCH') => ({ origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type, if-match' })
const list = (value: unknown) => String(value).split(',').map(s => s.trim().toLowerCase())

t.test('a preflight from an allowed origin answers 204 without credentials, listing methods and headers', async t => {
  const app = await buildSecureApp(t, { cors })
  const { book } = await seedOne(app)
  for (const url of ['/v1/books', `/v1/books/${book.id}`, '/v1/not-a-route']) {
    const res = await app.inject({ method: 'OPTIONS', url, headers: preflight(allowed) })
    t.equal(res.statusCode, 204, url)
    t.equal(res.body, '')
    t.equal(res.headers['access-control-allow-origin'], allowed)
    t.ok(list(res.headers.vary).includes('origin'))
    // The methods of the route asked about, as its Allow lists them (a path that is no route: the read methods).
    const allow = (await app.inject({ method: 'OPTIONS', url, headers: auth.read })).headers.allow ?? 'GET, HEAD, OPTIONS'
    t.same(list(res.headers['access-control-allow-methods']), list(allow), `${url}: ${String(allow)}`)
    const headers = list(res.headers['access-control-allow-headers'])
    for (const name of ['authorization', 'content-type', 'if-match', 'if-none-match', 'x-request-id', 'x-audit-consent', 'x-audit-device', 'x-audit-organisation', 'x-audit-user', 'x-authenticated_user']) {
      t.ok(headers.includes(name), `allows ${name}`)
    }
    t.notOk(headers.includes('x-api-key'), 'x-api-key only when the legacy method is on')
    t.equal(res.headers['access-control-max-age'], '600')
    t.notOk(res.headers['www-authenticate'])
  }
})

t.test('a preflight from an origin not on the list is 403 problem+json naming Origin', async t => {
  const app = await buildSecureApp(t, { cors })
  for (const origin of ['https://evil.example.com', 'https://app.example.com.evil.example', 'null', `${allowed}/`]) {
    const res = await app.inject({ method: 'OPTIONS', url: '/v1/books', headers: preflight(origin) })
    t.equal(res.statusCode, 403, origin)
    t.match(res.headers['content-type'], /^application\/problem\+json/)
    t.match(res.json(), { status: 403, type: '/v1/problems/forbidden', invalidParams: [{ name: 'Origin', reason: 'is not on the list of allowed origins' }] })
    t.notOk(res.headers['access-control-allow-origin'])
    t.notMatch(res.body, /evil/, 'the origin is not reflected')
  }
})

t.test('an actual request from an allowed origin echoes it, with Vary and the exposed headers', async t => {
  const app = await buildSecureApp(t, { cors })
  const res = await app.inject({ url: '/v1/books', headers: { ...auth.read, origin: allowed } })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['access-control-allow-origin'], allowed)
  t.ok(list(res.headers.vary).includes('origin'))
  t.notOk(res.headers['access-control-allow-credentials'])
  const exposed = list(res.headers['access-control-expose-headers'])
  for (const name of ['etag', 'location', 'request-id', 'retry-after', 'link', 'ratelimit', 'ratelimit-policy', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) {
    t.ok(exposed.includes(name), `exposes ${name}`)
  }
})

t.test('an actual request from another origin is 403 before authentication', async t => {
  const app = await buildSecureApp(t, { cors })
  for (const headers of [{ ...auth.write, origin: 'https://evil.example.com' }, { origin: 'https://evil.example.com' }]) {
    const res = await app.inject({ method: 'DELETE', url: '/v1/books/x', headers })
    t.equal(res.statusCode, 403)
    t.match(res.headers['content-type'], /^application\/problem\+json/)
    t.match(res.json(), { status: 403, invalidParams: [{ name: 'Origin' }] })
    t.notOk(res.headers['access-control-allow-origin'])
  }
})

t.test('a 401 to an allowed origin carries Access-Control-Allow-Origin, so the browser can read it', async t => {
  const app = await buildSecureApp(t, { cors })
  const res = await app.inject({ url: '/v1/books', headers: { origin: allowed } })
  t.equal(res.statusCode, 401)
  t.equal(res.headers['access-control-allow-origin'], allowed)
  t.ok(list(res.headers['access-control-expose-headers']).includes('www-authenticate'))
})

t.test('a 414 and a 429 to an allowed origin carry Access-Control-Allow-Origin too', async t => {
  const app = await buildSecureApp(t, { cors, maxQueryLength: 10, rateLimit: { max: 1, timeWindow: '1 minute' } })
  const tooLong = await app.inject({ url: `/v1/books?filter=${'x'.repeat(20)}`, headers: { ...auth.read, origin: allowed } })
  t.equal(tooLong.statusCode, 414)
  t.equal(tooLong.headers['access-control-allow-origin'], allowed)
  t.match(tooLong.json(), { status: 414 })
  // The 414 comes before the rate limit, so it is not counted: the second plain request is over.
  t.equal((await app.inject({ url: '/v1/books', headers: { ...auth.read, origin: allowed } })).statusCode, 200)
  const limited = await app.inject({ url: '/v1/books', headers: { ...auth.read, origin: allowed } })
  t.equal(limited.statusCode, 429)
  t.equal(limited.headers['access-control-allow-origin'], allowed)
  t.match(limited.headers['content-type'], /^application\/problem\+json/)
  t.ok(list(limited.headers['access-control-expose-headers']).includes('retry-after'), 'the browser may read Retry-After')
  t.match(limited.headers['retry-after'], /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/, 'an HTTP date (rateLimit.retryAfter)')
  t.ok(list(limited.headers['access-control-expose-headers']).includes('ratelimit'), 'and RateLimit')
})

t.test('OPTIONS without Access-Control-Request-Method is QUERY CAPABILITIES, with or without Origin', async t => {
  const app = await buildSecureApp(t, { cors })
  const plain = await app.inject({ method: 'OPTIONS', url: '/v1/books', headers: auth.read })
  t.equal(plain.statusCode, 200)
  t.same(plain.json().data.methods, ['GET', 'HEAD', 'POST', 'OPTIONS'])
  t.equal(plain.headers.allow, 'GET, HEAD, POST, OPTIONS')
  const crossOrigin = await app.inject({ method: 'OPTIONS', url: '/v1/books', headers: { ...auth.read, origin: allowed } })
  t.equal(crossOrigin.statusCode, 200)
  t.equal(crossOrigin.headers['access-control-allow-origin'], allowed)
  t.same(crossOrigin.json(), plain.json())
  t.equal((await app.inject({ method: 'OPTIONS', url: '/v1/books', headers: { origin: allowed } })).statusCode, 401, 'capabilities need credentials')
  t.equal((await app.inject({ method: 'OPTIONS', url: '/v1/nothing', headers: auth.read })).statusCode, 404)
})

t.test('with ownOrigin, a request from the server\'s own origin passes without CORS headers, as the docs page\'s writes do', async t => {
  const own = { host: 'api.example.com:8443', origin: 'http://api.example.com:8443' }
  const strict = await buildSecureApp(t, { cors })
  t.equal((await strict.inject({ url: '/v1/authors', headers: { ...auth.read, ...own } })).statusCode, 403, 'by default the own origin must be listed, as any other')
  await t.rejects(buildSecureApp(t, { cors: { ...cors, ownOrigin: 'yes' as never } }), { message: /cors\.ownOrigin must be true or false/ })
  const app = await buildSecureApp(t, { cors: { ...cors, ownOrigin: true } })
  const created = await app.inject({ method: 'POST', url: '/v1/authors', headers: { ...auth.writeJson, ...own }, payload: { name: 'Ann' } })
  t.equal(created.statusCode, 201)
  t.notOk(created.headers['access-control-allow-origin'], 'same-origin: no CORS headers needed')
  // Origins drop a scheme's default port; Host may carry it.
  const defaultPort = await app.inject({ url: '/v1/authors', headers: { ...auth.read, host: 'api.example.com:80', origin: 'http://api.example.com' } })
  t.equal(defaultPort.statusCode, 200)
  for (const [host, origin] of [['api.example.com:8443', 'https://api.example.com:8443'], ['api.example.com:8443', 'http://api.example.com'], ['api.example.com', 'http://evil.example.com'], ['bad host', 'http://bad host']]) {
    const res = await app.inject({ method: 'DELETE', url: '/v1/books/x', headers: { ...auth.write, host, origin } })
    t.same({ status: res.statusCode, param: res.json().invalidParams?.[0]?.name }, { status: 403, param: 'Origin' }, `${origin} at ${host}: another scheme, port or host is another origin`)
  }
})

t.test('behind a proxy trusted with X-Forwarded-Proto and -Host, its public origin is the own one', async t => {
  const app = await buildSecureApp(t, { cors: { ...cors, ownOrigin: true }, server: { trustProxy: true } })
  const headers = { ...auth.read, host: '10.0.0.5:3000', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'api.example.com' }
  t.equal((await app.inject({ url: '/v1/authors', headers: { ...headers, origin: 'https://api.example.com' } })).statusCode, 200)
  t.equal((await app.inject({ url: '/v1/authors', headers: { ...headers, origin: 'http://10.0.0.5:3000' } })).statusCode, 403)
})

t.test('without the cors option every request carrying Origin is refused; others pass', async t => {
  const app = await buildApp(t)
  t.equal((await app.inject({ url: '/v1/books' })).statusCode, 200)
  t.equal((await app.inject({ url: '/v1/books', headers: { origin: allowed } })).statusCode, 403)
  t.equal((await app.inject({ method: 'OPTIONS', url: '/v1/books', headers: preflight(allowed) })).statusCode, 403)
})

t.test('x-api-key is an allowed request header when the legacy method is on', async t => {
  const app = await buildSecureApp(t, { cors, auth: testAuth({ apiKeys: [['legacy-key-1', { id: 'legacy', right: 'read' }]] }) })
  const res = await app.inject({ method: 'OPTIONS', url: '/v1/books', headers: preflight(allowed, 'GET') })
  t.ok(list(res.headers['access-control-allow-headers']).includes('x-api-key'))
})

t.test('maxAge sets Access-Control-Max-Age', async t => {
  const app = await buildApp(t, { cors: { origins: [allowed], maxAge: 0 } })
  const res = await app.inject({ method: 'OPTIONS', url: '/v1/books', headers: preflight(allowed) })
  t.equal(res.headers['access-control-max-age'], '0')
})

t.test('a wildcard or malformed origin list stops registration', async t => {
  const cases: Array<[unknown, RegExp]> = [
    [{ origins: ['*'] }, /cors\.origins must not contain \*/],
    [{ origins: [allowed, '*'] }, /cors\.origins must not contain \*/],
    [{ origins: 'https://app.example.com' }, /cors\.origins must be an array/],
    ['yes', /cors\.origins must be an array/],
    [{ origins: ['https://app.example.com/'] }, /cors\.origins entries must be origins/],
    [{ origins: ['app.example.com'] }, /cors\.origins entries must be origins/],
    [{ origins: [42] }, /cors\.origins entries must be origins/],
    [{ origins: [allowed], maxAge: -1 }, /cors\.maxAge must be/]
  ]
  for (const [value, message] of cases) {
    await t.rejects(buildApp(t, { cors: value as never }), { code: 'API_ERR_OPTIONS_INVALID', message }, JSON.stringify(value))
  }
})

t.test('the demo accepts ALLOWED_ORIGINS and refuses others', async t => {
  const app = await buildDemoApp(loadConfig({ STORE: 'memory', ALLOWED_ORIGINS: 'https://a.example, https://b.example:8443' }), { logger: false })
  t.teardown(() => app.close())
  const headers = { authorization: 'Bearer read-token' }
  const ok = await app.inject({ url: '/v1/books', headers: { ...headers, origin: 'https://b.example:8443' } })
  t.equal(ok.headers['access-control-allow-origin'], 'https://b.example:8443')
  t.equal((await app.inject({ url: '/v1/books', headers: { ...headers, origin: 'http://localhost:8080' } })).statusCode, 403)
  const pre = await app.inject({ method: 'OPTIONS', url: '/v1/books', headers: preflight('https://a.example', 'POST') })
  t.equal(pre.statusCode, 204)
  t.ok(list(pre.headers['access-control-allow-headers']).includes('x-api-key'))
})
