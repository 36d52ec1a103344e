// Deprecation (spec "Versioning" 2): the whole API or one resource sends
// Deprecation (RFC 9745, `@<epoch>`), Sunset (RFC 8594, HTTP date) and Link rel="deprecation".
import t from 'tap'
import Fastify from 'fastify'
import apiConventions, { memoryStore } from '../lib/index.js'
import { demoResources } from '../demo/schemas/index.js'
import { buildApp, pick } from './helpers/app.js'
import { auth } from './helpers/auth.js'
import { buildSecureApp, seedOne } from './helpers/secure-app.js'

const deprecation = { date: '2025-01-01T00:00:00Z', sunset: new Date('2026-07-01T00:00:00Z'), link: 'https://api.example.com/deprecations/v1' }
const headers = {
  deprecation: '@1735689600',
  sunset: 'Wed, 01 Jul 2026 00:00:00 GMT',
  link: '<https://api.example.com/deprecations/v1>; rel="deprecation"'
}
const names = Object.keys(headers)

t.test('a deprecated API says so on every response: 200, 304, 401, 404, 405', async t => {
  const app = await buildSecureApp(t, { deprecation })
  const { book } = await seedOne(app)
  const item = await app.inject({ url: `/v1/books/${book.id}`, headers: auth.read })
  const responses = [
    item,
    await app.inject({ url: `/v1/books/${book.id}`, headers: { ...auth.read, 'if-none-match': item.headers.etag as string } }),
    await app.inject({ url: '/v1/authors' }),
    await app.inject({ url: '/v1/nothing', headers: auth.read }),
    await app.inject({ method: 'DELETE', url: '/v1/authors', headers: auth.write })
  ]
  t.same(responses.map(res => res.statusCode), [200, 304, 401, 404, 405])
  for (const res of responses) t.same(pick(res.headers, ...names), headers, String(res.statusCode))
})

t.test('a deprecated resource says so on its own routes only, nested list included', async t => {
  const app = await buildSecureApp(t, { resourcePolicies: { books: { deprecation } } })
  const { author, book } = await seedOne(app)
  for (const url of ['/v1/books', `/v1/books/${book.id}`, '/v1/books/missing', `/v1/authors/${author.id}/books`]) {
    t.same(pick((await app.inject({ url, headers: auth.read })).headers, ...names), headers, url)
  }
  for (const url of ['/v1/authors', `/v1/authors/${author.id}`, '/v1/nothing']) {
    t.same(pick((await app.inject({ url, headers: auth.read })).headers, ...names), { deprecation: undefined, sunset: undefined, link: undefined }, url)
  }
})

t.test('a resource\'s own deprecation replaces the API\'s on its routes', async t => {
  const app = await buildApp(t, { deprecation, resourcePolicies: { authors: { deprecation: { date: new Date('2024-05-01T12:00:00Z') } } } })
  const res = await app.inject({ url: '/v1/authors' })
  t.same(pick(res.headers, ...names), { deprecation: '@1714564800', sunset: undefined, link: undefined })
  t.same(pick((await app.inject({ url: '/v1/books' })).headers, ...names), headers)
})

t.test('bad deprecation options stop registration, naming the option', async t => {
  const cases: Array<[object, RegExp]> = [
    [{ deprecation: 'soon' }, /deprecation must be an object/],
    [{ deprecation: {} }, /deprecation\.date must be a Date or an ISO 8601 date string/],
    [{ deprecation: { date: 'next year' } }, /deprecation\.date must be/],
    [{ deprecation: { date: 1735689600 } }, /deprecation\.date must be/],
    [{ deprecation: { date: '2025-01-01', sunset: 'never' } }, /deprecation\.sunset must be/],
    [{ deprecation: { date: '2025-01-01', sunset: '2024-01-01' } }, /deprecation\.sunset must not be earlier than deprecation\.date/],
    [{ deprecation: { date: '2025-01-01', link: 'https://x.example/a b' } }, /deprecation\.link must be a URI/],
    [{ deprecation: { date: '2025-01-01', link: 'https://x.example/>; rel="x"' } }, /deprecation\.link must be a URI/],
    [{ deprecation: { date: '2025-01-01', link: 42 } }, /deprecation\.link must be a URI/],
    [{ resourcePolicies: { books: { deprecation: { date: 'x' } } } }, /resourcePolicies\.books\.deprecation\.date must be/]
  ]
  for (const [options, message] of cases) {
    await t.rejects(buildApp(t, options), { code: 'API_ERR_OPTIONS_INVALID', message }, JSON.stringify(options))
  }
})

t.test('a sunset at the deprecation date itself is accepted; the date is whole seconds (RFC 9745 §2)', async t => {
  const app = await buildApp(t, { deprecation: { date: '2025-01-01T00:00:00.999Z', sunset: '2025-01-01T00:00:00.999Z' } })
  t.same(pick((await app.inject({ url: '/v1/books' })).headers, 'deprecation', 'sunset'), { deprecation: '@1735689600', sunset: 'Wed, 01 Jan 2025 00:00:00 GMT' })
})

t.test('the deprecation Link joins a Link header the host already set', async t => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  // Root hooks run before the plugin's: the host's Link is there first.
  app.addHook('onSend', async (_request, reply) => { reply.header('link', '<https://api.example.com/v2>; rel="successor-version"') })
  await app.register(apiConventions, { prefix: '/v1', resources: demoResources(memoryStore()), deprecation })
  const res = await app.inject({ url: '/v1/books' })
  t.equal(res.headers.link, `<https://api.example.com/v2>; rel="successor-version", ${headers.link}`)
})
