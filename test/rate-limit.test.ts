// Rate limiting (spec "Errors" 8, "Limits" 1): RateLimit-Policy and RateLimit
// (draft-ietf-httpapi-ratelimit-headers-11), or the older RateLimit-Limit/-Remaining/-Reset by
// option; over the limit a 429 of the IANA quota-exceeded problem type with violated-policies and
// Retry-After (an HTTP date, or seconds by option); keyed by principal or client address, and one
// limit across instances sharing Redis (run when REDIS_URL is set).
import { createHash, randomUUID } from 'node:crypto'
import { Writable } from 'node:stream'
import t from 'tap'
import { Redis } from 'ioredis'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { buildDemoApp } from '../demo/app.js'
import { loadConfig } from '../demo/config.js'
import { buildApp, pick } from './helpers/app.js'
import { auth, testAuth, tokens } from './helpers/auth.js'
import { buildSecureApp } from './helpers/secure-app.js'
import { inlined } from './helpers/openapi.js'

const limit = { max: 2, timeWindow: '1 minute' }
const quotaExceeded = 'https://iana.org/assignments/http-problem-types#quota-exceeded'
const httpDate = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/
/** The draft-11 fields and the older trio, as a client reads them. */
const limitFields = (headers: Record<string, unknown>) => pick(headers, 'ratelimit-policy', 'ratelimit', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset')

async function statuses (app: FastifyInstance, count: number, request: InjectOptions) {
  const result = []
  for (let i = 0; i < count; i++) result.push((await app.inject(request)).statusCode)
  return result
}

t.test('responses under the limit carry RateLimit-Policy and RateLimit (draft-11), and nothing of the older trio', async t => {
  const app = await buildApp(t, { rateLimit: { max: 5, timeWindow: 60000 } })
  const res = await app.inject({ url: '/v1/books' })
  t.equal(res.statusCode, 200)
  t.same(limitFields(res.headers), { 'ratelimit-policy': '"default";q=5;w=60', ratelimit: '"default";r=4;t=60', 'ratelimit-limit': undefined, 'ratelimit-remaining': undefined, 'ratelimit-reset': undefined })
  t.notOk(res.headers['retry-after'])
})

t.test('over the limit: 429 quota-exceeded naming the policy, Retry-After as an HTTP date, and every other header', async t => {
  const app = await buildApp(t, { rateLimit: limit })
  t.same(await statuses(app, 2, { url: '/v1/books' }), [200, 200])
  const before = Date.now()
  const res = await app.inject({ url: '/v1/books', headers: { 'x-request-id': 'over-1' } })
  t.equal(res.statusCode, 429)
  t.match(res.headers['content-type'], /^application\/problem\+json/)
  t.same(res.json(), { type: quotaExceeded, title: 'Too Many Requests', status: 429, detail: res.json().detail, instance: '/v1/books', 'violated-policies': ['default'] })
  t.match(res.json().detail, /^Too many requests; retry after \d+ seconds\.$/)
  const retryAfter = res.headers['retry-after'] as string
  t.match(retryAfter, httpDate, 'IMF-fixdate, the form the spec recommends')
  const at = Date.parse(retryAfter)
  t.ok(at > before && at <= before + 61000, `within the minute's window: ${retryAfter}`)
  t.match(limitFields(res.headers), { 'ratelimit-policy': '"default";q=2;w=60', ratelimit: /^"default";r=0;t=\d+$/ })
  const reset = Number(/t=(\d+)$/.exec(res.headers.ratelimit as string)?.[1])
  t.ok(Math.abs(before + reset * 1000 - at) <= 1000, 'RateLimit\'s t and Retry-After name the same second')
  t.equal(res.headers['request-id'], 'over-1')
  t.equal(res.headers['x-content-type-options'], 'nosniff')
  t.equal(res.headers['cache-control'], 'no-store')
})

t.test('the 429 in the envelope form and as XML carries violated-policies too', async t => {
  const app = await buildApp(t, { rateLimit: { max: 1, timeWindow: 60000 }, errorFormat: 'envelope' })
  t.same(await statuses(app, 1, { url: '/v1/books' }), [200])
  t.match((await app.inject({ url: '/v1/books' })).json(), { errors: { type: quotaExceeded, status: 429, 'violated-policies': ['default'] } })
  const xml = await app.inject({ url: '/v1/books', headers: { accept: 'application/xml' } })
  t.equal(xml.statusCode, 429)
  t.match(xml.headers['content-type'], /^application\/problem\+xml/)
  t.match(xml.body, `<type>${quotaExceeded}</type>`)
  t.match(xml.body, '<violated-policies><i>default</i></violated-policies>')
})

t.test('retryAfter: seconds sends Retry-After as a delay', async t => {
  const app = await buildApp(t, { rateLimit: { ...limit, retryAfter: 'seconds' } })
  t.same(await statuses(app, 2, { url: '/v1/books' }), [200, 200])
  const res = await app.inject({ url: '/v1/books' })
  t.equal(res.statusCode, 429)
  t.match(res.json(), { status: 429, type: quotaExceeded, 'violated-policies': ['default'] })
  t.match(res.headers['retry-after'], /^\d+$/)
  t.ok(Number(res.headers['retry-after']) > 0 && Number(res.headers['retry-after']) <= 60)
  t.equal(res.headers.ratelimit, `"default";r=0;t=${res.headers['retry-after'] as string}`, 'the same delay as RateLimit\'s t')
})

t.test('fields: legacy sends RateLimit-Limit, -Remaining and -Reset instead', async t => {
  const app = await buildApp(t, { rateLimit: { ...limit, fields: 'legacy' } })
  const res = await app.inject({ url: '/v1/books' })
  t.same(limitFields(res.headers), { 'ratelimit-policy': undefined, ratelimit: undefined, 'ratelimit-limit': '2', 'ratelimit-remaining': '1', 'ratelimit-reset': '60' })
  t.same(await statuses(app, 1, { url: '/v1/books' }), [200])
  const over = await app.inject({ url: '/v1/books' })
  t.equal(over.statusCode, 429)
  t.match(over.json(), { type: quotaExceeded, 'violated-policies': ['default'] })
  t.same(pick(over.headers, 'ratelimit-limit', 'ratelimit-remaining'), { 'ratelimit-limit': '2', 'ratelimit-remaining': '0' })
  t.match(over.headers['retry-after'], httpDate)
})

t.test('the OpenAPI document describes the 429 headers as configured', async t => {
  const header429 = async (rateLimit: object) => {
    const app = await buildApp(t, { rateLimit: { ...limit, ...rateLimit } })
    const document = inlined((await app.inject({ url: '/v1/openapi.json' })).json())
    return document.paths['/books'].get.responses['429'].headers
  }
  const current = await header429({})
  t.same(Object.keys(current).sort(), ['RateLimit', 'RateLimit-Policy', 'Request-Id', 'Retry-After'])
  t.match(current['Retry-After'], { description: /HTTP date/ })
  const legacy = await header429({ fields: 'legacy', retryAfter: 'seconds' })
  t.same(Object.keys(legacy).sort(), ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Request-Id', 'Retry-After'])
  t.match(legacy['Retry-After'], { description: /^Seconds/ })
})

t.test('404s and 405s count too', async t => {
  const app = await buildApp(t, { rateLimit: limit })
  t.same(await statuses(app, 3, { url: '/v1/nothing' }), [404, 404, 429])
})

t.test('anonymous requests are keyed by client address', async t => {
  const app = await buildApp(t, { rateLimit: limit })
  t.same(await statuses(app, 3, { url: '/v1/books', remoteAddress: '192.0.2.1' }), [200, 200, 429])
  t.same(await statuses(app, 2, { url: '/v1/books', remoteAddress: '192.0.2.2' }), [200, 200])
  // IPv6 clients share a budget per /64, as one host usually holds the whole prefix.
  t.same(await statuses(app, 2, { url: '/v1/books', remoteAddress: '2001:db8::1' }), [200, 200])
  t.same(await statuses(app, 1, { url: '/v1/books', remoteAddress: '2001:db8::2' }), [429])
})

t.test('authenticated requests are keyed by principal, whatever the address', async t => {
  const app = await buildSecureApp(t, { rateLimit: limit })
  t.same(await statuses(app, 1, { url: '/v1/books', headers: auth.read, remoteAddress: '192.0.2.1' }), [200])
  t.same(await statuses(app, 2, { url: '/v1/books', headers: auth.read, remoteAddress: '192.0.2.2' }), [200, 429])
  t.same(await statuses(app, 2, { url: '/v1/books', headers: auth.write, remoteAddress: '192.0.2.1' }), [200, 200], 'another principal has its own budget')
  // Bad credentials are counted against the address, not the principal they claim.
  t.same(await statuses(app, 3, { url: '/v1/books', headers: auth.bad, remoteAddress: '192.0.2.3' }), [401, 401, 429])
  t.same(await statuses(app, 1, { url: '/v1/books', headers: { authorization: 'Bearer' }, remoteAddress: '192.0.2.4' }), [401])
})

t.test('principals are keyed by principalKey, or by their credentials when they have no id', async t => {
  const byRight = await buildSecureApp(t, { rateLimit: limit, auth: testAuth({ principalKey: principal => principal.right }) })
  t.same(await statuses(byRight, 2, { url: '/v1/books', headers: auth.read }), [200, 200])
  t.same(await statuses(byRight, 1, { url: '/v1/books', headers: auth.read, remoteAddress: '192.0.2.9' }), [429])
  const anonymousPrincipals = await buildSecureApp(t, {
    rateLimit: limit,
    auth: testAuth({ bearer: token => token === tokens.read || token === tokens.write ? { id: { nested: true }, right: 'read' } as never : null })
  })
  t.same(await statuses(anonymousPrincipals, 3, { url: '/v1/books', headers: auth.read }), [200, 200, 429])
  t.same(await statuses(anonymousPrincipals, 1, { url: '/v1/books', headers: auth.write }), [200], 'other credentials, other key')
  const numbered = await buildSecureApp(t, { rateLimit: limit, auth: testAuth({ bearer: () => ({ id: 7, right: 'read' }) as never }) })
  t.same(await statuses(numbered, 3, { url: '/v1/books', headers: auth.read }), [200, 200, 429])
})

t.test('rateLimit off (absent or false) sends no RateLimit headers', async t => {
  for (const rateLimit of [undefined, false] as const) {
    const app = await buildApp(t, { rateLimit })
    const res = await app.inject({ url: '/v1/books' })
    t.same(limitFields(res.headers), { 'ratelimit-policy': undefined, ratelimit: undefined, 'ratelimit-limit': undefined, 'ratelimit-remaining': undefined, 'ratelimit-reset': undefined })
  }
})

t.test('bad rateLimit options stop registration, naming the option', async t => {
  const cases: Array<[unknown, RegExp]> = [
    [true, /rateLimit\.max must be a positive integer/],
    [{ max: 0, timeWindow: 1000 }, /rateLimit\.max must be a positive integer/],
    [{ max: 1.5, timeWindow: 1000 }, /rateLimit\.max/],
    [{ max: 1 }, /rateLimit\.timeWindow must be/],
    [{ max: 1, timeWindow: 'soon' }, /rateLimit\.timeWindow must be/],
    [{ max: 1, timeWindow: '0 seconds' }, /rateLimit\.timeWindow must be/],
    [{ max: 1, timeWindow: -5 }, /rateLimit\.timeWindow must be/],
    [{ max: 1, timeWindow: 1000, redis: {} }, /rateLimit\.redis must be an ioredis client/],
    [{ max: 1, timeWindow: 1000, redis: null }, /rateLimit\.redis must be an ioredis client/],
    [{ max: 1, timeWindow: 1000, nameSpace: '' }, /rateLimit\.nameSpace must be/],
    [{ max: 1, timeWindow: 1000, retryAfter: 'minutes' }, /rateLimit\.retryAfter must be 'date' or 'seconds'/],
    [{ max: 1, timeWindow: 1000, fields: 'draft-06' }, /rateLimit\.fields must be 'draft-11' or 'legacy', received "draft-06"/]
  ]
  for (const [value, message] of cases) {
    await t.rejects(buildApp(t, { rateLimit: value as never }), { code: 'API_ERR_OPTIONS_INVALID', message }, JSON.stringify(value))
  }
})

t.test('durations: milliseconds as a number or digits, or a count of a unit; the window in whole seconds', async t => {
  for (const [timeWindow, seconds] of [[1500, '2'], ['90000', '90'], ['30s', '30'], ['2 minutes', '120'], ['1h', '3600'], ['1 day', '86400'], ['500 ms', '1']] as const) {
    const app = await buildApp(t, { rateLimit: { max: 10, timeWindow } })
    const res = await app.inject({ url: '/v1/books' })
    t.same(limitFields(res.headers), { 'ratelimit-policy': `"default";q=10;w=${seconds}`, ratelimit: `"default";r=9;t=${seconds}` }, String(timeWindow))
  }
})

t.test('a counter store that fails lets requests through and logs a warning', async t => {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({ write (chunk, _e, callback) { lines.push(JSON.parse(String(chunk))); callback() } })
  // Nothing listens on port 1, and without the offline queue every command fails at once.
  const redis = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null })
  t.teardown(() => redis.disconnect())
  const app = await buildApp(t, { rateLimit: { ...limit, redis }, server: { logger: { stream, level: 'warn' } } })
  t.same(await statuses(app, 3, { url: '/v1/books' }), [200, 200, 200])
  t.match(lines, [{ level: 40, msg: 'rate limit not applied: the counter store failed' }])
})

t.test('the demo limits with RATE_LIMIT_MAX and RATE_LIMIT_WINDOW', async t => {
  const app = await buildDemoApp(loadConfig({ STORE: 'memory', RATE_LIMIT_MAX: '2', RATE_LIMIT_WINDOW: '30 seconds' }), { logger: false })
  t.teardown(() => app.close())
  const request = { url: '/v1/books', headers: { authorization: 'Bearer read-token' } }
  t.same(await statuses(app, 3, request), [200, 200, 429])
  t.equal((await app.inject({ url: '/health' })).statusCode, 200, '/health is outside the plugin')
  const last = await app.inject(request)
  t.equal(last.headers['ratelimit-policy'], '"default";q=2;w=30')
  t.ok(Date.parse(last.headers['retry-after'] as string) <= Date.now() + 31000, 'Retry-After within the window')
})

t.test('the demo stops start-up when REDIS_URL cannot be reached', async t => {
  await t.rejects(buildDemoApp(loadConfig({ STORE: 'memory', REDIS_URL: 'redis://127.0.0.1:1' }), { logger: false }), { name: 'ConfigError', message: /^Invalid setting REDIS_URL: cannot be reached/ })
})

t.test('a counter store that answers later, behind a verifier that answers later, still limits', async t => {
  // The part of ioredis the counter store uses: the command it defines, answered on a later turn.
  const counts = new Map<string, number>()
  const redis = {
    defineCommand (name: string) {
      Object.assign(redis, {
        [name]: (key: string, _window: number, _max: number, _continue: boolean, _backoff: boolean, callback: (error: null, result: [number, number]) => void) => {
          counts.set(key, (counts.get(key) ?? 0) + 1)
          setImmediate(() => callback(null, [counts.get(key) as number, 30000]))
        }
      })
    }
  }
  // testAuth's verifier is async too.
  const app = await buildSecureApp(t, { auth: testAuth(), rateLimit: { ...limit, redis: redis as unknown as Redis } })
  const request = { url: '/v1/books', headers: auth.read }
  t.same(await statuses(app, 3, request), [200, 200, 429])
  const res = await app.inject(request)
  t.equal(res.headers.ratelimit, '"default";r=0;t=30')
  t.match(res.headers['retry-after'], httpDate)
  t.same([...counts.keys()], ['api-conventions-rate-limit:principal:id:reader'], 'counted per principal, under the default prefix')
})

const redisUrl = process.env.REDIS_URL
t.test('two instances sharing Redis enforce one limit', { skip: redisUrl === undefined ? 'REDIS_URL is not set' : false }, async t => {
  const nameSpace = `api-conventions-test-${randomUUID()}:`
  const redis = new Redis(redisUrl as string)
  t.teardown(async () => {
    const keys = await redis.keys(`${nameSpace}*`)
    if (keys.length > 0) await redis.del(...keys)
    await redis.quit()
  })
  const options = { auth: testAuth(), rateLimit: { max: 3, timeWindow: '1 minute', redis, nameSpace } }
  const one = await buildSecureApp(t, options)
  const two = await buildSecureApp(t, options)
  const request = { url: '/v1/books', headers: auth.read }
  t.same(await statuses(one, 2, request), [200, 200])
  t.same(await statuses(two, 2, request), [200, 429])
  t.same(await statuses(one, 1, request), [429])
  const res = await two.inject(request)
  t.match(res.headers['retry-after'], httpDate)
  t.ok((await redis.keys(`${nameSpace}*`)).length > 0, 'the counters live under the test prefix')
})

t.test('the demo shares its counters through REDIS_URL and closes the client', { skip: redisUrl === undefined ? 'REDIS_URL is not set' : false }, async t => {
  // A token of this run only, so the counter key is ours alone.
  const token = `demo-${randomUUID()}`
  const config = loadConfig({ STORE: 'memory', RATE_LIMIT_MAX: '2', REDIS_URL: redisUrl, API_TOKENS: `${token}:read` })
  const key = `api-conventions-rate-limit:principal:id:token:${createHash('sha256').update(token).digest('base64url').slice(0, 16)}`
  const redis = new Redis(redisUrl as string)
  const one = await buildDemoApp(config, { logger: false })
  const two = await buildDemoApp(config, { logger: false })
  t.teardown(async () => {
    await one.close()
    await two.close()
    await redis.del(key)
    await redis.quit()
  })
  const request = { url: '/v1/books', headers: { authorization: `Bearer ${token}` } }
  t.same(await statuses(one, 1, request), [200])
  t.same(await statuses(two, 2, request), [200, 429])
  t.equal(await redis.get(key), '3')
})
