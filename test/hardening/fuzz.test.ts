// Fuzzing (spec "Errors" 1–2, "Operations" rule 1): hostile methods,
// paths, query strings, headers and bodies sent to the demo app (memory store) through inject.
// For every exchange: no 5xx; every error is a problem (JSON, or XML when Accept asked for it)
// whose status matches the response's; each answer comes within a time bound; Object.prototype
// stays clean; and the stored data changes only through a successful write, and then only the
// record it names. Seeded and bounded: FUZZ_SEED, and FUZZ_RUNS (default 150; twice that for the
// LIST and body properties). `npm run test:long` runs 2000, `npm run fuzz` 20000.
import t from 'tap'
import type { Test as Tap } from 'tap'
import fc from 'fast-check'
import { STATUS_CODES } from 'node:http'
import { performance } from 'node:perf_hooks'
import { XMLParser } from 'fast-xml-parser'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { buildDemoApp } from '../../demo/app.js'
import { loadConfig } from '../../demo/config.js'

const runs = Number(process.env.FUZZ_RUNS ?? 150)
const seed = Number(process.env.FUZZ_SEED ?? 20240501)
/** Longest an in-process answer may take, huge bodies included. */
const timeBound = Number(process.env.FUZZ_TIME_BOUND ?? 3000)
// A long run (npm run fuzz) may take as long as it needs.
t.setTimeout(Math.max(120_000, runs * 400))

const write = { authorization: 'Bearer dev-token' }
const read = { authorization: 'Bearer read-token' }
const allowedOrigin = 'http://localhost:8080'

const app = await buildDemoApp(loadConfig({ STORE: 'memory', RATE_LIMIT_MAX: '1000000000', CURSOR_SECRET: 'fuzz-secret-0123456789abcdef' }))
await app.ready()
t.teardown(() => app.close())

/** Seeds authors and books through the API and returns their ids and a real continuation token. */
async function seedData (app: FastifyInstance) {
  const authors: string[] = []
  const books: string[] = []
  for (const [name, country] of [['Janet Frame', 'NZ'], ['Stanisław Lem', 'PL'], ['Ursula K. Le Guin', 'US']]) {
    const res = await app.inject({ method: 'POST', url: '/v1/authors', headers: write, payload: { name, country } })
    authors.push(res.json().data.author.id)
  }
  for (let i = 0; i < 6; i++) {
    const res = await app.inject({ method: 'POST', url: '/v1/books', headers: write, payload: { title: `Book ${i}`, authorId: authors[i % 3], year: 1950 + i, rating: i % 5 } })
    books.push(res.json().data.book.id)
  }
  const page = await app.inject({ url: '/v1/books?pageSize=2&sort=-year', headers: read })
  const next = (page.json().links as Array<{ rel: string, href: string }>).find(link => link.rel === 'next')?.href as string
  return { authors, books, token: new URL(next, 'http://x').searchParams.get('token') as string }
}

const seeded = await seedData(app)

// ---- What every exchange must satisfy -------------------------------------------------------

const cleanPrototype = Object.getOwnPropertyNames(Object.prototype).sort().join()
const xml = new XMLParser()

/** Every record, by resource then id, read through LIST with a read-only credential. */
async function snapshot (): Promise<Record<string, Map<string, string>>> {
  const result: Record<string, Map<string, string>> = {}
  for (const resources of ['authors', 'books']) {
    const records = new Map<string, string>()
    let url: string | undefined = `/v1/${resources}?pageSize=100`
    while (url !== undefined) {
      const res: LightMyRequestResponse = await app.inject({ url, headers: read })
      if (res.statusCode !== 200) throw new Error(`snapshot LIST failed: ${res.statusCode} ${res.body}`)
      const body = res.json() as { data: Record<string, Array<{ id: string }>>, links: Array<{ rel: string, href: string }> }
      for (const record of body.data[resources]) records.set(record.id, JSON.stringify(record))
      url = body.links.find(link => link.rel === 'next')?.href
    }
    result[resources] = records
  }
  return result
}

/** The ids whose records differ between two snapshots, as `resources/id`. */
function changed (before: Record<string, Map<string, string>>, after: Record<string, Map<string, string>>): string[] {
  const ids: string[] = []
  for (const resources of Object.keys(before)) {
    for (const id of new Set([...before[resources].keys(), ...after[resources].keys()])) {
      if (before[resources].get(id) !== after[resources].get(id)) ids.push(`${resources}/${id}`)
    }
  }
  return ids
}

/** The path Fastify sees for an injected URL: light-my-request's parsing (`//x` is a path there). */
function injectedPath (url: string): string {
  return new URL(url.startsWith('//') ? `http://localhost${url}` : url, 'http://localhost').pathname
}

const writeMethods = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** `/v1/books/{id}` → `books/{id}`; the target a successful write may change. */
function targetOf (url: string, res: LightMyRequestResponse): string | undefined {
  const location = res.headers.location
  const path = typeof location === 'string' ? location : url.split('?', 1)[0]
  const match = /^\/v1\/(authors|books)\/([^/]+)$/.exec(path)
  return match === null ? undefined : `${match[1]}/${decodeURIComponent(match[2])}`
}

/** Sends one request and checks it against every property; returns the response for more checks. */
async function exchange (request: InjectOptions & { url: string, method: string }): Promise<LightMyRequestResponse> {
  const before = await snapshot()
  const started = performance.now()
  const res = await app.inject(request)
  const took = performance.now() - started
  const what = `${request.method} ${request.url.slice(0, 200)} → ${res.statusCode} ${res.body.slice(0, 300)}`

  if (res.statusCode >= 500) throw new Error(`5xx: ${what}`)
  if (took > timeBound) throw new Error(`took ${Math.round(took)} ms (bound ${timeBound}): ${what}`)
  if (Object.getOwnPropertyNames(Object.prototype).sort().join() !== cleanPrototype || ({} as Record<string, unknown>).polluted !== undefined) {
    throw new Error(`Object.prototype polluted: ${what}`)
  }
  // The plugin answers every path under /v1; elsewhere (/health, 404s outside it) is the host's.
  // inject resolves the URL as WHATWG does (`/v1/%2e%2e/x` is `/x`), so judge the resolved path.
  const ours = /^\/v1(\/|$)/.test(injectedPath(request.url))
  if (res.statusCode >= 400 && ours) checkProblem(request, res, what)

  const after = await snapshot()
  const diff = changed(before, after)
  const succeeded = res.statusCode >= 200 && res.statusCode < 300
  if (!(writeMethods.has(request.method) && succeeded)) {
    if (diff.length > 0) throw new Error(`the store changed (${diff.join(', ')}) without a successful write: ${what}`)
  } else {
    const target = targetOf(request.url, res)
    if (diff.some(id => id !== target)) throw new Error(`a successful write changed ${diff.join(', ')}, not only ${target}: ${what}`)
  }
  return res
}

const problemType = /^application\/problem\+(json|xml); charset=utf-8$/

function checkProblem (request: InjectOptions, res: LightMyRequestResponse, what: string) {
  const type = problemType.exec(String(res.headers['content-type']))
  if (type === null) throw new Error(`an error that is not a problem (${String(res.headers['content-type'])}): ${what}`)
  const accept = String((request.headers as Record<string, unknown> | undefined)?.accept ?? '')
  if (type[1] === 'xml' && !/xml/i.test(accept)) throw new Error(`problem+xml without XML in Accept: ${what}`)
  if (request.method === 'HEAD') {
    if (res.body !== '') throw new Error(`a HEAD error with a body: ${what}`)
    return
  }
  const problem = type[1] === 'json' ? res.json() : xml.parse(res.body).problem
  // The status family: the body's status is the response's, and its title is that status's.
  if (Number(problem.status) !== res.statusCode || problem.title !== STATUS_CODES[res.statusCode] ||
      typeof problem.type !== 'string' || typeof problem.detail !== 'string') {
    throw new Error(`a malformed problem: ${what}`)
  }
}

// ---- Arbitraries ----------------------------------------------------------------------------

const pick = <T>(...values: T[]) => fc.constantFrom(...values)
/** Text of any Unicode, lone surrogates included. */
const anyText = fc.string({ unit: 'binary', maxLength: 40 })
/** A URL cannot carry a lone surrogate: it becomes U+FFFD, as a browser would send it. */
const wellFormed = (text: string) => text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd')
const asciiText = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map(c => String.fromCharCode(c)), maxLength: 60 })

/** A string with a few characters inserted, deleted or replaced: near-misses of valid input. */
function mutated (valid: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const edit = fc.tuple(pick('insert', 'delete', 'replace'), fc.nat(), pick(...'()\'",-+ ./%\\:;*$@\u0000\u00e9\ud800'.split('')))
  return fc.tuple(valid, fc.array(edit, { minLength: 1, maxLength: 3 })).map(([text, edits]) => {
    let out = text
    for (const [kind, at, char] of edits) {
      const i = out.length === 0 ? 0 : at % out.length
      out = kind === 'insert' ? out.slice(0, i) + char + out.slice(i) : kind === 'delete' ? out.slice(0, i) + out.slice(i + 1) : out.slice(0, i) + char + out.slice(i + 1)
    }
    return out
  })
}

const fieldNames = ['id', 'name', 'born', 'country', 'title', 'authorId', 'year', 'rating', 'available', 'author', 'books', 'author.country', 'author/name', 'books/title', '__proto__', 'constructor', 'prototype']
const field = pick(...fieldNames)
const literal = fc.oneof(
  fc.integer().map(String), fc.double().map(String), pick('null', 'true', 'false', '1974-01-01', '2024-05-01T12:00:00Z', "''", "'it''s'", "'Frame'"),
  anyText.map(s => `'${s.replaceAll("'", "''")}'`)
)
const comparison = fc.tuple(field, pick('eq', 'ne', 'gt', 'ge', 'lt', 'le', 'contains', 'startswith', 'endswith', 'in', 'has'), literal)
  .map(([f, op, v]) => ['contains', 'startswith', 'endswith'].includes(op) ? `${op}(${f},${v})` : `${f} ${op} ${v}`)
const validFilter: fc.Arbitrary<string> = fc.letrec<{ expr: string }>(tie => ({
  expr: fc.oneof({ depthSize: 'small', withCrossShrink: true },
    comparison,
    fc.tuple(tie('expr'), pick('and', 'or'), tie('expr')).map(([a, op, b]) => `${a} ${op} ${b}`),
    tie('expr').map(e => `not (${e})`),
    tie('expr').map(e => `(${e})`))
})).expr
const filter = fc.oneof(validFilter, mutated(validFilter), anyText, pick('('.repeat(1500), 'not '.repeat(400) + 'year eq 1', `year eq ${'9'.repeat(400)}`, '('.repeat(5000)))
const list = (items: fc.Arbitrary<string>) => fc.array(items, { maxLength: 5 }).map(parts => parts.join(','))
const sort = fc.oneof(list(fc.tuple(pick('', '-', '+', '--'), field).map(([d, f]) => d + f)), mutated(pick('-year,title', 'name')), anyText)
const fields = fc.oneof(list(field), anyText)
const relations = fc.oneof(list(pick('author', 'books', 'authors', 'book', '')), anyText)
const count = fc.oneof(fc.integer({ min: -5, max: 200 }).map(String), pick('', '1e3', '0x10', '9'.repeat(30), '1.5', ' 1', 'NaN'), anyText)
const token = fc.oneof(pick(seeded.token), mutated(pick(seeded.token)), fc.base64String({ maxLength: 200 }), anyText)

/** A query string: reserved parameters, simple filters and random names, possibly repeated, percent-encoded or not. */
const queryString = fc.array(fc.oneof(
  fc.tuple(pick('filter'), filter),
  fc.tuple(pick('sort'), sort),
  fc.tuple(pick('fields'), fields),
  fc.tuple(pick('expand', 'include'), relations),
  fc.tuple(pick('token'), token),
  fc.tuple(pick('pageSize', 'offset', 'pageOffset', 'page'), count),
  fc.tuple(pick('total'), fc.oneof(pick('true', 'false', 'TRUE', '1'), anyText)),
  fc.tuple(field, fc.oneof(literal, anyText)),
  fc.tuple(anyText, anyText)
), { maxLength: 6 }).chain(pairs => fc.tuple(fc.constant(pairs), fc.boolean())).map(([pairs, raw]) => {
  // Raw: only what cannot appear in a URL at all is escaped, so `'`, `(`, `,`, `+` … arrive as typed.
  const encode = (text: string) => raw ? wellFormed(text).replace(/[#?&=\s%\p{Cc}\u0080-\u{10ffff}]/gu, c => encodeURIComponent(c)) : encodeURIComponent(wellFormed(text))
  return pairs.length === 0 ? '' : '?' + pairs.map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&')
})

const segment = fc.oneof(
  pick(...seeded.authors, ...seeded.books, 'authors', 'books', 'v1', '..', '.', '', '%00', '%2e%2e', '%E0%A4%A', '%ZZ', '%', 'openapi.json', 'docs', 'problems', 'not-found'),
  anyText.map(s => encodeURIComponent(wellFormed(s))),
  fc.nat(5000).map(n => 'x'.repeat(n))
)
const itemPath = fc.tuple(pick('authors', 'books'), pick(...seeded.authors, ...seeded.books, 'missing', '%00', '%E0%A4%A')).map(([r, id]) => `/v1/${r}/${id}`)
const path = fc.oneof(
  { weight: 3, arbitrary: pick('/v1/authors', '/v1/books', `/v1/authors/${seeded.authors[0]}/books`) },
  { weight: 3, arbitrary: itemPath },
  { weight: 2, arbitrary: fc.array(segment, { minLength: 1, maxLength: 5 }).map(parts => `/v1/${parts.join('/')}`) },
  { weight: 1, arbitrary: fc.array(segment, { maxLength: 3 }).map(parts => `/${parts.join('/')}`) }
)

const method = fc.oneof({ weight: 5, arbitrary: pick('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS') }, { weight: 1, arbitrary: pick('TRACE', 'PROPFIND', 'SEARCH', 'MKCOL', 'LOCK', 'PURGE') })

const base64 = (text: string) => Buffer.from(text).toString('base64')
const headerText = asciiText
const optional = <T>(value: fc.Arbitrary<T>) => fc.option(value, { nil: undefined, freq: 2 })
const headers = fc.record({
  authorization: fc.oneof({ weight: 6, arbitrary: pick(write.authorization, read.authorization) },
    { weight: 1, arbitrary: fc.oneof(pick('Bearer', 'Bearer ', 'Bearer  dev-token', 'Basic Zm9vOmJhcg==', 'bearer dev-token', 'Token x', 'Bearer dev-token extra', 'Bearer ===='), headerText) }),
  'x-api-key': optional(fc.oneof(pick('dev-key', 'nope', ''), headerText)),
  origin: optional(fc.oneof(pick(allowedOrigin, 'http://evil.example', 'null', 'http://localhost:8080/'), headerText)),
  'access-control-request-method': optional(pick('GET', 'DELETE', 'BREW')),
  'x-audit-consent': optional(fc.oneof(pick(base64('{"resourceType":"Consent"}'), base64('{"resourceType":"Patient"}'), base64('[]'), '%%%', 'A'.repeat(9000)), fc.jsonValue().map(v => base64(JSON.stringify(v) ?? '')), headerText)),
  'x-audit-user': optional(fc.oneof(anyText.map(s => base64(s)), headerText)),
  'x-audit-device': optional(headerText),
  'x-authenticated_user': optional(headerText),
  'if-match': optional(fc.oneof(pick('"1"', '"2"', 'W/"1"', '*', '"1", "2"', '""', '"'), headerText)),
  'if-none-match': optional(fc.oneof(pick('"1"', 'W/"1"', '*'), headerText)),
  'if-modified-since': optional(fc.oneof(pick('Wed, 01 May 2024 12:00:00 GMT'), headerText)),
  date: optional(fc.oneof(pick('Sun, 06 Nov 1994 08:49:37 GMT', 'Sunday, 06-Nov-94 08:49:37 GMT', 'Sun Nov  6 08:49:37 1994', 'Mon, 06 Nov 1994 08:49:37 GMT', '31 Feb 2024 00:00 +0000'), headerText)),
  'content-type': optional(fc.oneof(pick('application/json', 'application/json; charset=utf-8', 'application/merge-patch+json', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'text/plain', 'application/json; charset=latin1', 'application/*'), headerText)),
  accept: optional(fc.oneof(pick('application/json', 'application/xml', 'application/problem+json', 'application/problem+xml', 'text/html', '*/*', 'application/xml;q=0.1, application/json;q=0.2', 'application/json;q=0'), headerText)),
  'x-request-id': optional(headerText)
}, { requiredKeys: ['authorization'] }).map(h => Object.fromEntries(Object.entries(h).filter(([, v]) => v !== undefined)) as Record<string, string>)

const protoKeys = pick('__proto__', 'constructor', 'prototype')
const hostileObject = fc.oneof(
  fc.tuple(protoKeys, fc.jsonValue()).map(([k, v]) => `{"name":"P","${k}":${JSON.stringify(v) ?? 'null'}}`),
  pick('{"__proto__":{"polluted":"yes"},"name":"A"}', '{"constructor":{"prototype":{"polluted":"yes"}},"name":"A"}', '{"name":"A","authorId":{"__proto__":{"polluted":1}}}')
)
const recordLike = fc.record({
  id: fc.oneof(fc.string(), pick(...seeded.authors)),
  name: fc.oneof(fc.string({ maxLength: 250 }), fc.jsonValue()),
  born: fc.oneof(pick(null, '1929-10-21', '1929-02-30', '0000-00-00'), fc.string()),
  country: fc.oneof(pick(null, 'NZ', 'nz', 'NZL'), fc.jsonValue()),
  title: fc.oneof(fc.string({ maxLength: 600 }), fc.jsonValue()),
  authorId: fc.oneof(pick(...seeded.authors, 'missing', ''), fc.jsonValue()),
  year: fc.oneof(fc.integer(), fc.double(), pick<unknown>(null, 2 ** 60, -0, '1974')),
  rating: fc.oneof(fc.double(), pick(null, 5, 5.0001, -1)),
  available: fc.oneof(fc.boolean(), fc.jsonValue())
}, { requiredKeys: [] }).map(v => JSON.stringify(v))
const body = fc.oneof(
  { weight: 4, arbitrary: recordLike },
  { weight: 2, arbitrary: fc.jsonValue().map(v => JSON.stringify(v) ?? '') },
  { weight: 2, arbitrary: hostileObject },
  { weight: 1, arbitrary: fc.nat({ max: 20000 }).map(depth => '{"name":'.repeat(depth) + '1' + '}'.repeat(depth)) },
  { weight: 1, arbitrary: fc.nat({ max: 20000 }).map(depth => '['.repeat(depth) + ']'.repeat(depth)) },
  { weight: 1, arbitrary: pick(100_000, 1_100_000).map(n => `{"name":"${'x'.repeat(n)}"}`) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map(bytes => Buffer.concat([Buffer.from('{"name":"'), Buffer.from(bytes), Buffer.from('"}')])) },
  { weight: 1, arbitrary: pick(Buffer.from([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]), Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d])) },
  { weight: 1, arbitrary: pick('<author><name>A</name></author>', '<?xml version="1.0"?><!DOCTYPE a [<!ENTITY e SYSTEM "file:///etc/passwd">]><author><name>&e;</name></author>', `<a>${'<b>'.repeat(5000)}</a>`, 'name=A&country=NZ', 'name=A&name=B&__proto__[polluted]=1', '--x\r\nContent-Disposition: form-data; name="name"\r\n\r\nA\r\n--x--\r\n') },
  { weight: 1, arbitrary: mutated(pick('{"name":"A"}', '{"title":"T","authorId":"x"}')) }
)

const request = fc.record({ method, path, query: queryString, headers, body: fc.option(body, { freq: 3, nil: undefined }) })
  .map(({ method, path, query, headers, body }) => ({ method, url: path + query, headers, payload: body }))

// ---- Properties -------------------------------------------------------------------------------

/** Runs a property; a failure reports the seed, the replay path and the first failing exchange, shortened. */
async function check (t: Tap, name: string, arbitrary: fc.Arbitrary<InjectOptions & { url: string, method: string }>, numRuns = runs) {
  const result = await fc.check(fc.asyncProperty(arbitrary, async req => { await exchange(req) }), { seed, numRuns, endOnFailure: true })
  const error = result.errorInstance as Error | undefined
  t.notOk(result.failed, name, result.failed ? { seed, path: result.counterexamplePath, error: error?.message.slice(0, 2000) } : {})
}

t.test('any method, path, query string, headers and body', async t => {
  await check(t, `${runs} requests`, request)
})

t.test('LIST query strings: random and mutated filter, sort, fields, expand, include, token, pageSize, offset', async t => {
  const listRequest = fc.tuple(pick('/v1/books', '/v1/authors', `/v1/authors/${seeded.authors[0]}/books`), queryString, pick<Record<string, string>>(read, { ...read, accept: 'application/xml' }))
    .map(([path, query, headers]) => ({ method: 'GET', url: path + query, headers }))
  await check(t, `${runs * 2} list requests`, listRequest, runs * 2)
})

t.test('write bodies: random JSON, deep nesting, huge strings, prototype keys, invalid UTF-8', async t => {
  const writeRequest = fc.tuple(pick('POST', 'PUT', 'PATCH'), body, pick('application/json', 'application/merge-patch+json', 'application/xml', 'application/x-www-form-urlencoded'))
    .chain(([method, payload, type]) => fc.tuple(fc.constant(method), method === 'POST' ? pick('/v1/authors', '/v1/books') : itemPath, fc.constant(payload), fc.constant(type)))
    .map(([method, url, payload, type]) => ({ method, url, payload, headers: { ...write, 'content-type': type } }))
  await check(t, `${runs * 2} writes`, writeRequest, runs * 2)
})

t.test('the fuzzed app still serves well-formed requests afterwards', async t => {
  const res = await exchange({ method: 'POST', url: '/v1/authors', headers: write, payload: { name: 'After the storm' } })
  t.equal(res.statusCode, 201)
  const again = await exchange({ method: 'GET', url: res.headers.location as string, headers: read })
  t.equal(again.json().data.author.name, 'After the storm')
})

t.test('known hostile inputs, each asserted exactly', async t => {
  const polluting = await exchange({ method: 'POST', url: '/v1/authors', headers: { ...write, 'content-type': 'application/json' }, payload: '{"name":"A","__proto__":{"polluted":"yes"}}' })
  t.match({ status: polluting.statusCode, type: polluting.headers['content-type'] }, { status: 400, type: /^application\/problem\+json/ }, '__proto__ in JSON is a 400')
  const constructor = await exchange({ method: 'POST', url: '/v1/authors', headers: { ...write, 'content-type': 'application/json' }, payload: '{"name":"A","constructor":{"prototype":{"polluted":"yes"}}}' })
  t.equal(constructor.statusCode, 400, 'constructor.prototype in JSON is a 400')
  const form = await exchange({ method: 'POST', url: '/v1/authors', headers: { ...write, 'content-type': 'application/x-www-form-urlencoded' }, payload: 'name=A&__proto__[polluted]=1' })
  t.match({ status: form.statusCode, body: form.json() }, { status: 400, body: { invalidParams: [{ name: '__proto__[polluted]' }] } }, 'a form naming __proto__ is a 400 naming it')
  const nested = await exchange({ method: 'GET', url: `/v1/books?filter=${'('.repeat(1500)}`, headers: read })
  t.match({ status: nested.statusCode, body: nested.json() }, { status: 400, body: { invalidParams: [{ name: 'filter', reason: /deeper/ }] } }, 'a filter nested 1500 deep is a 400, not a stack overflow')
  const deep = await exchange({ method: 'POST', url: '/v1/authors', headers: { ...write, 'content-type': 'application/json' }, payload: '['.repeat(200_000) + ']'.repeat(200_000) })
  t.match({ status: deep.statusCode, type: deep.headers['content-type'] }, { status: 400, type: /^application\/problem\+json/ }, 'nesting deep enough to overflow a recursive parser is a 400')
  const huge = await exchange({ method: 'POST', url: '/v1/authors', headers: { ...write, 'content-type': 'application/json' }, payload: `{"name":"${'x'.repeat(2_000_000)}"}` })
  t.equal(huge.statusCode, 413, 'a body over the limit is 413')
  const entity = await exchange({ method: 'POST', url: '/v1/authors', headers: { ...write, 'content-type': 'application/xml' }, payload: '<?xml version="1.0"?><!DOCTYPE a [<!ENTITY e SYSTEM "file:///etc/passwd">]><author><name>&e;</name></author>' })
  t.match({ status: entity.statusCode, body: entity.json() }, { status: 400, body: { type: '/v1/problems/body-malformed', detail: /DOCTYPE/ } }, 'an XML body declaring an external entity is refused before parsing')
  const invalidUtf8 = await exchange({ method: 'POST', url: '/v1/authors', headers: { ...write, 'content-type': 'application/json' }, payload: Buffer.from([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]) })
  t.match({ status: invalidUtf8.statusCode, body: invalidUtf8.json() }, { status: 400, body: { type: '/v1/problems/body-malformed' } }, 'invalid UTF-8 in a JSON body is a 400, not a stored U+FFFD')
})

t.test('a malformed path escape is a 400 problem and an over-long id a 404 problem', async t => {
  for (const [url, status] of [['/v1/authors/%E0%A4%A', 400], [`/v1/authors/${'x'.repeat(101)}`, 404]] as const) {
    const res = await app.inject({ url, headers: read })
    t.match({ status: res.statusCode, type: res.headers['content-type'], body: res.json() }, { status, type: /^application\/problem\+json/, body: { status } }, url.slice(0, 40))
  }
})
