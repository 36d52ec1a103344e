// Authentication and authorization (spec "Authentication" 1–4, "Request headers": Authorization,
// x-api-key): 401 with WWW-Authenticate, 403 from the authorization check.
import type { OutgoingHttpHeaders } from 'node:http'
import t from 'tap'
import Fastify from 'fastify'
import type { RouteOptions } from 'fastify'
import apiConventions, { defineAuth, memoryStore, secretTable } from '../lib/index.js'
import type { AuthorizationCheck, Store } from '../lib/index.js'
import { buildDemoApp } from '../demo/app.js'
import { loadConfig } from '../demo/config.js'
import { demoResources } from '../demo/schemas/index.js'
import { buildApp, json } from './helpers/app.js'
import { auth, testAuth, tokens } from './helpers/auth.js'
import type { TestPrincipal } from './helpers/auth.js'
import { buildSecureApp, createAs, seedOne } from './helpers/secure-app.js'

const challenge = 'Bearer realm="test", authorization_uri="https://auth.example.com/authorize"'
const basic64 = (text: string) => Buffer.from(text).toString('base64')

t.test('without the auth option no credentials are needed', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ url: '/v1/books' })
  t.equal(res.statusCode, 200)
  t.notOk(res.headers['www-authenticate'])
})

t.test('a request without credentials is 401 with the Bearer challenge and no error code', async t => {
  const app = await buildSecureApp(t)
  const res = await app.inject({ url: '/v1/books' })
  t.equal(res.statusCode, 401)
  t.match(res.headers['content-type'], /^application\/problem\+json/)
  t.equal(res.headers['www-authenticate'], challenge)
  t.match(res.json(), { status: 401, type: '/v1/problems/unauthorized', invalidParams: [{ name: 'Authorization', reason: 'credentials are required' }] })
})

t.test('malformed Authorization values are 401 naming Authorization, with the RFC 6750 error code', async t => {
  const app = await buildSecureApp(t)
  const cases: Array<[string | string[], string, RegExp]> = [
    ['Bearer', challenge + ', error="invalid_request"', /missing/],
    ['Bearer ', challenge + ', error="invalid_request"', /missing/],
    ['Bearer abc def', challenge + ', error="invalid_token"', /malformed/],
    ['Bearer ab$c', challenge + ', error="invalid_token"', /malformed/],
    ['Bearer ab=c', challenge + ', error="invalid_token"', /malformed/],
    [',Bearer abc', challenge + ', error="invalid_request"', /scheme/],
    ['Token abc', challenge, /not supported; use Bearer$/],
    ['Basic ' + basic64('user:pass'), challenge, /not supported/],
    [[`Bearer ${tokens.write}`, `Bearer ${tokens.read}`], challenge + ', error="invalid_request"', /once/]
  ]
  for (const [value, wwwAuthenticate, reason] of cases) {
    const res = await app.inject({ url: '/v1/books', headers: { authorization: value } as OutgoingHttpHeaders })
    t.equal(res.statusCode, 401, String(value))
    t.equal(res.headers['www-authenticate'], wwwAuthenticate, String(value))
    t.match(res.json().invalidParams, [{ name: 'Authorization', reason }], String(value))
  }
})

t.test('an unknown token is 401 with error="invalid_token"', async t => {
  const app = await buildSecureApp(t)
  const res = await app.inject({ url: '/v1/books', headers: auth.bad })
  t.equal(res.statusCode, 401)
  t.equal(res.headers['www-authenticate'], challenge + ', error="invalid_token"')
  t.match(res.json().invalidParams, [{ name: 'Authorization', reason: 'the Bearer token is not valid' }])
})

t.test('a valid token is accepted, the scheme in any case and after several spaces', async t => {
  const app = await buildSecureApp(t)
  for (const authorization of [`Bearer ${tokens.read}`, `bearer ${tokens.read}`, `BEARER   ${tokens.read}`]) {
    const res = await app.inject({ url: '/v1/books', headers: { authorization } })
    t.equal(res.statusCode, 200, authorization)
    t.notOk(res.headers['www-authenticate'])
  }
})

t.test('a verifier that answers false is a refusal, one that throws is a 500 that does not leak', async t => {
  const refusing = await buildSecureApp(t, { auth: testAuth({ bearer: () => false as unknown as null }) })
  t.equal((await refusing.inject({ url: '/v1/books', headers: auth.write })).statusCode, 401)
  const throwing = await buildSecureApp(t, { auth: testAuth({ bearer: async () => { throw new Error('token service at 10.0.0.7 is down') } }) })
  const res = await throwing.inject({ url: '/v1/books', headers: auth.write })
  t.equal(res.statusCode, 500)
  t.notMatch(res.body, /10\.0\.0\.7/)
})

t.test('the principal is on the request, typed through defineAuth', async t => {
  const seen: Array<{ principal: TestPrincipal, typed: TestPrincipal | null }> = []
  const options = testAuth()
  const recording = defineAuth<TestPrincipal>({
    ...options,
    authorize (check) {
      seen.push({ principal: check.principal, typed: recording.principalOf(check.request) })
      return true
    }
  })
  const app = await buildSecureApp(t, { auth: recording })
  await app.inject({ url: '/v1/books', headers: auth.read })
  t.same(seen, [{ principal: { id: 'reader', right: 'read' }, typed: { id: 'reader', right: 'read' } }])
})

t.test('principalOf is null, never undefined, on a host route the plugin does not authenticate', async t => {
  const options = testAuth()
  const app = Fastify()
  t.teardown(() => app.close())
  // Outside the plugin: its credentials check never runs here, whatever the request carries.
  app.get('/whoami', async request => {
    const principal = options.principalOf(request)
    return { isNull: principal === null, isUndefined: principal === undefined }
  })
  await app.register(apiConventions, { prefix: '/v1', resources: demoResources(memoryStore()), cursorSecret: 'a-test-secret-of-enough-length', auth: options })
  for (const headers of [auth.read, {}]) {
    const res = await app.inject({ url: '/whoami', headers })
    t.same({ status: res.statusCode, body: res.json() }, { status: 200, body: { isNull: true, isUndefined: false } })
  }
})

t.test('public routes (the problem type pages) need no credentials', async t => {
  const app = await buildSecureApp(t)
  for (const url of ['/v1/problems/', '/v1/problems/unauthorized']) {
    const res = await app.inject({ url })
    t.equal(res.statusCode, 200, url)
    t.match(res.headers['content-type'], /^text\/html/)
  }
})

t.test('404 and 405 answers come after authentication', async t => {
  const app = await buildSecureApp(t)
  t.equal((await app.inject({ url: '/v1/nothing' })).statusCode, 401)
  t.equal((await app.inject({ url: '/v1/nothing', headers: auth.read })).statusCode, 404)
  t.equal((await app.inject({ method: 'DELETE', url: '/v1/books', headers: auth.write })).statusCode, 405)
})

t.test('authorization: the read right gets 403 on writes and may read', async t => {
  const app = await buildSecureApp(t)
  const { author, book } = await seedOne(app)
  const writes = [
    { method: 'POST', url: '/v1/books', payload: { title: 'Faces in the Water', authorId: author.id } },
    { method: 'PUT', url: `/v1/books/${book.id}`, payload: { title: 'Owls', authorId: author.id } },
    { method: 'PATCH', url: `/v1/books/${book.id}`, payload: { year: 1958 } },
    { method: 'DELETE', url: `/v1/books/${book.id}` }
  ] as const
  for (const request of writes) {
    const res = await app.inject({ ...request, headers: auth.readJson })
    t.equal(res.statusCode, 403, request.method)
    t.match(res.headers['content-type'], /^application\/problem\+json/)
    t.match(res.json(), { status: 403, type: '/v1/problems/forbidden', detail: /do not allow/ })
  }
  for (const [method, url] of [['GET', '/v1/books'], ['HEAD', `/v1/books/${book.id}`], ['OPTIONS', '/v1/books'], ['GET', `/v1/authors/${author.id}/books`]] as const) {
    t.equal((await app.inject({ method, url, headers: auth.read })).statusCode, 200, `${method} ${url}`)
  }
  t.equal((await app.inject({ method: 'DELETE', url: `/v1/books/${book.id}`, headers: auth.write })).statusCode, 204)
})

t.test('authorization is checked before the body is read or validated', async t => {
  const app = await buildSecureApp(t)
  const res = await app.inject({ method: 'POST', url: '/v1/books', headers: auth.readJson, payload: '{"broken' })
  t.equal(res.statusCode, 403)
})

t.test('the check receives resource, operation, id and, for item operations, the record', async t => {
  const checks: Array<Omit<AuthorizationCheck<TestPrincipal>, 'request' | 'principal'>> = []
  const app = await buildSecureApp(t, {
    auth: testAuth({
      async authorize ({ request, principal, ...check }) {
        checks.push(check)
        return principal.right === 'write'
      }
    })
  })
  const { author, book } = await seedOne(app)
  checks.length = 0
  await app.inject({ url: `/v1/books/${book.id}`, headers: auth.write })
  await app.inject({ url: '/v1/books/missing', headers: auth.write })
  await app.inject({ method: 'PATCH', url: `/v1/books/${book.id}`, headers: auth.writeJson, payload: { year: 1958 } })
  await app.inject({ url: '/v1/authors', headers: auth.write })
  await app.inject({ url: `/v1/authors/${author.id}/books`, headers: auth.write })
  await app.inject({ method: 'OPTIONS', url: `/v1/books/${book.id}`, headers: auth.write })
  t.match(checks, [
    { resource: 'books', operation: 'retrieve', method: 'GET', id: book.id, record: { title: 'Owls Do Cry', year: 1957 } },
    { resource: 'books', operation: 'retrieve', id: 'missing', record: null },
    { resource: 'books', operation: 'modify', method: 'PATCH', id: book.id, record: { year: 1957 } },
    { resource: 'authors', operation: 'list', id: undefined, record: undefined },
    { resource: 'books', operation: 'list', method: 'GET' },
    { resource: 'books', operation: 'capabilities', method: 'OPTIONS' }
  ])
  t.equal(checks.length, 6)
})

t.test('a RETRIEVE reads its record from the store once, though the authorization check read it first', async t => {
  const inner = memoryStore()
  const gets: string[] = []
  const store: Store = { list: inner.list.bind(inner), getMany: inner.getMany.bind(inner), create: inner.create.bind(inner), update: inner.update.bind(inner), remove: inner.remove.bind(inner), transaction: inner.transaction.bind(inner), claimKey: inner.claimKey.bind(inner), keepResponse: inner.keepResponse.bind(inner), purgeKeys: inner.purgeKeys.bind(inner), close: inner.close.bind(inner), get (model, id) { gets.push(`${model.name}/${id}`); return inner.get(model, id) } }
  const app = await buildSecureApp(t, { store, auth: testAuth({ authorize: ({ record }) => record !== null }) })
  const { book } = await seedOne(app)
  gets.length = 0
  const res = await app.inject({ url: `/v1/books/${book.id}`, headers: auth.read })
  t.same({ status: res.statusCode, etag: res.headers.etag, title: res.json().data.book.title }, { status: 200, etag: '"1"', title: 'Owls Do Cry' })
  t.same(gets, [`books/${book.id}`], 'one read serves the check and the handler')
  gets.length = 0
  t.equal((await app.inject({ url: '/v1/books/missing', headers: auth.read })).statusCode, 403, 'the check sees the missing record as null')
  t.same(gets, ['books/missing'])
})

t.test('a record-based refusal is 403 for that record only', async t => {
  const app = await buildSecureApp(t, {
    auth: testAuth({ authorize: ({ operation, record }) => operation !== 'delete' || record?.year !== 1957 })
  })
  const { author, book } = await seedOne(app)
  const other = await createAs(app, 'books', { title: 'Faces in the Water', authorId: author.id, year: 1961 })
  t.equal((await app.inject({ method: 'DELETE', url: `/v1/books/${book.id}`, headers: auth.write })).statusCode, 403)
  t.equal((await app.inject({ method: 'DELETE', url: `/v1/books/${other.id}`, headers: auth.write })).statusCode, 204)
})

t.test('Basic credentials, when a verifier is configured', async t => {
  const app = await buildSecureApp(t, {
    auth: testAuth({ basic: (user, password) => user === 'ada' && password === 'pa:ss é' ? { id: 'ada', right: 'write' } : null })
  })
  const both = `${challenge}, Basic realm="test", charset="UTF-8"`
  const good = await app.inject({ url: '/v1/books', headers: { authorization: `Basic ${basic64('ada:pa:ss é')}` } })
  t.equal(good.statusCode, 200)
  const wrong = await app.inject({ url: '/v1/books', headers: { authorization: `Basic ${basic64('ada:nope')}` } })
  t.equal(wrong.statusCode, 401)
  t.equal(wrong.headers['www-authenticate'], `${challenge}, error="invalid_token", Basic realm="test", charset="UTF-8"`)
  t.match(wrong.json().invalidParams, [{ name: 'Authorization', reason: /user name or password/ }])
  for (const credentials of [basic64('no colon'), 'not base64!', 'YWRh', 'QQ']) {
    const res = await app.inject({ url: '/v1/books', headers: { authorization: `Basic ${credentials}` } })
    t.equal(res.statusCode, 401, credentials)
    t.equal(res.headers['www-authenticate'], `${challenge}, error="invalid_request", Basic realm="test", charset="UTF-8"`)
  }
  const missing = await app.inject({ url: '/v1/books' })
  t.equal(missing.headers['www-authenticate'], both)
  const other = await app.inject({ url: '/v1/books', headers: { authorization: 'Digest abc' } })
  t.match(other.json().invalidParams, [{ reason: /use Bearer or Basic/ }])
})

t.test('x-api-key is off unless keys are configured', async t => {
  const app = await buildSecureApp(t)
  const res = await app.inject({ url: '/v1/books', headers: { 'x-api-key': 'legacy-key-1' } })
  t.equal(res.statusCode, 401)
  t.match(res.json().invalidParams, [{ name: 'Authorization', reason: 'credentials are required' }])
})

t.test('x-api-key, when enabled: accepted, refused when wrong, and Authorization wins', async t => {
  const app = await buildSecureApp(t, { auth: testAuth({ apiKeys: new Map([['legacy-key-1', { id: 'legacy', right: 'write' as const }]]) }) })
  t.equal((await app.inject({ url: '/v1/books', headers: { 'x-api-key': 'legacy-key-1' } })).statusCode, 200)
  for (const key of ['legacy-key-2', 'legacy-key-1x', 'l', 'key with spaces']) {
    const res = await app.inject({ url: '/v1/books', headers: { 'x-api-key': key } })
    t.equal(res.statusCode, 401, key)
    // No Bearer token was sent, so no error code in the challenge (RFC 6750 §3).
    t.equal(res.headers['www-authenticate'], challenge)
    t.match(res.json().invalidParams, [{ name: 'x-api-key' }])
  }
  const badBearerGoodKey = await app.inject({ url: '/v1/books', headers: { ...auth.bad, 'x-api-key': 'legacy-key-1' } })
  t.equal(badBearerGoodKey.statusCode, 401)
  t.match(badBearerGoodKey.json().invalidParams, [{ name: 'Authorization' }])
  const goodBearerBadKey = await app.inject({ url: '/v1/books', headers: { ...auth.read, 'x-api-key': 'wrong' } })
  t.equal(goodBearerBadKey.statusCode, 200)
})

t.test('secretTable finds each secret, whatever the lengths, and nothing else', async t => {
  const lookUp = secretTable([['short', 1], ['a-much-longer-secret-value', 2], ['short2', 3]])
  t.equal(lookUp('short'), 1)
  t.equal(lookUp('a-much-longer-secret-value'), 2)
  t.equal(lookUp('short2'), 3)
  t.equal(lookUp('shor'), null)
  t.equal(lookUp(''), null)
  t.equal(secretTable([])('anything'), null)
})

t.test('bad auth options stop registration, naming the option', async t => {
  const cases: Array<[unknown, RegExp]> = [
    ['yes', /^Invalid api-conventions options: auth must be an object/],
    [{}, /auth\.bearer must be a function/],
    [{ bearer: () => null, basic: 'no' }, /auth\.basic must be a function/],
    [{ bearer: () => null, authorize: true }, /auth\.authorize must be a function/],
    [{ bearer: () => null, realm: 'a"b' }, /auth\.realm must be/],
    [{ bearer: () => null, realm: '' }, /auth\.realm must be/],
    [{ bearer: () => null, authorizationUri: 'https://x/ y' }, /auth\.authorizationUri must be a URI/],
    [{ bearer: () => null, authorizationUri: 7 }, /auth\.authorizationUri must be a URI/],
    [{ bearer: () => null, apiKeys: 'key' }, /auth\.apiKeys must be/],
    [{ bearer: () => null, apiKeys: [['ok', 1], ['with space', 2]] }, /auth\.apiKeys must be/],
    [{ bearer: () => null, apiKeys: [['ok', 1], 'x'] }, /auth\.apiKeys must be/]
  ]
  for (const [value, message] of cases) {
    await t.rejects(buildApp(t, { auth: value as never }), { code: 'API_ERR_OPTIONS_INVALID', message }, JSON.stringify(value))
  }
})

t.test('a principalKey option is accepted', async t => {
  const app = await buildSecureApp(t, { auth: testAuth({ principalKey: principal => principal.id }) })
  t.equal((await app.inject({ url: '/v1/books', headers: auth.read })).statusCode, 200)
})

t.test('the demo: read-token reads, gets 403 on writes; dev-token and dev-key write', async t => {
  const app = await buildDemoApp(loadConfig({ STORE: 'memory' }), { logger: false })
  t.teardown(() => app.close())
  t.equal((await app.inject({ url: '/health' })).statusCode, 200)
  t.equal((await app.inject({ url: '/v1/books' })).statusCode, 401)
  t.equal((await app.inject({ url: '/v1/books', headers: { authorization: 'Bearer read-token' } })).statusCode, 200)
  const refused = await app.inject({ method: 'POST', url: '/v1/authors', headers: { ...json, authorization: 'Bearer read-token' }, payload: { name: 'Keri Hulme' } })
  t.equal(refused.statusCode, 403)
  const created = await app.inject({ method: 'POST', url: '/v1/authors', headers: { ...json, authorization: 'Bearer dev-token' }, payload: { name: 'Keri Hulme' } })
  t.equal(created.statusCode, 201)
  const byKey = await app.inject({ method: 'POST', url: '/v1/authors', headers: { ...json, 'x-api-key': 'dev-key' }, payload: { name: 'Witi Ihimaera' } })
  t.equal(byKey.statusCode, 201)
  t.equal(refused.headers['www-authenticate'], undefined)
  t.equal((await app.inject({ url: '/v1/books' })).headers['www-authenticate'], 'Bearer realm="demo"')
})

t.test('the demo: an empty API_KEYS turns x-api-key off; API_TOKENS sets the tokens', async t => {
  const app = await buildDemoApp(loadConfig({ STORE: 'memory', API_KEYS: '', API_TOKENS: 'only-reader:read' }), { logger: false })
  t.teardown(() => app.close())
  t.equal((await app.inject({ url: '/v1/books', headers: { 'x-api-key': 'dev-key' } })).statusCode, 401)
  t.equal((await app.inject({ url: '/v1/books', headers: { authorization: 'Bearer dev-token' } })).statusCode, 401)
  t.equal((await app.inject({ url: '/v1/books', headers: { authorization: 'Bearer only-reader' } })).statusCode, 200)
})

t.test('a route\'s own preParsing hooks run too, before the authorization check', async t => {
  const order: string[] = []
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  // Host hooks stand in for routes that bring preParsing hooks of their own, one or several.
  app.addHook('onRoute', (route: RouteOptions) => {
    const mark = async (_request: unknown, _reply: unknown, payload: unknown) => { order.push(`${route.method} ${route.url}`); return payload }
    if (route.url === '/v1/authors') route.preParsing = route.method === 'GET' ? mark : [mark]
  })
  await app.register(apiConventions, {
    prefix: '/v1',
    resources: demoResources(memoryStore()),
    auth: testAuth({ authorize: ({ method }) => { order.push(`authorize ${method}`); return method === 'GET' } })
  })
  t.equal((await app.inject({ url: '/v1/authors', headers: auth.read })).statusCode, 200)
  t.equal((await app.inject({ method: 'POST', url: '/v1/authors', headers: auth.writeJson, payload: { name: 'x' } })).statusCode, 403)
  t.same(order, ['GET /v1/authors', 'authorize GET', 'POST /v1/authors', 'authorize POST'])
})
