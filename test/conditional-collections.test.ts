// Conditional requests on collections (spec "Errors" 7: 412 on POST; RFC 9110
// §13.2.2): a collection exists and sends no ETag or Last-Modified (docs/conditional-requests.md),
// so `If-Match: *` passes, an If-Match tag list fails, `If-None-Match: *` is 412 on
// POST and 304 on GET/HEAD, the dates are ignored, and nothing is written on a 412.
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildApp, json, pick, seed } from './helpers/app.js'

const PROBLEM_TYPE = 'application/problem+json; charset=utf-8'
const newAuthor = { name: 'Octavia E. Butler', country: 'US' }

function failed (instance: string, detail: string) {
  return { type: '/v1/problems/precondition-failed', title: 'Precondition Failed', status: 412, detail, instance }
}
const ifMatchFailed = (instance: string) => failed(instance, 'If-Match does not match the current version of the resource; fetch it again and retry.')

/** The names of the authors stored now, read without conditions. */
async function authorNames (app: FastifyInstance): Promise<string[]> {
  return (await app.inject({ url: '/v1/authors' })).json().data.authors.map((a: { name: string }) => a.name)
}

async function seeded (t: Parameters<typeof buildApp>[0]) {
  const app = await buildApp(t)
  const data = await seed(app)
  return { app, ...data, names: await authorNames(app) }
}

t.test('POST with If-None-Match * answers a 412 problem and creates nothing: the collection exists', async t => {
  const { app, names } = await seeded(t)
  const res = await app.inject({ method: 'POST', url: '/v1/authors', headers: { ...json, 'if-none-match': '*' }, payload: newAuthor })
  t.same(pick(res.headers, 'content-type', 'location', 'etag'), { 'content-type': PROBLEM_TYPE, location: undefined, etag: undefined })
  t.same({ status: res.statusCode, body: res.json() }, { status: 412, body: failed('/v1/authors', 'If-None-Match matches the current resource.') })
  t.same(await authorNames(app), names)
})

for (const value of ['"zzz"', '"1"', '"1", "2"', `"1.${'a'.repeat(12)}"`]) {
  t.test(`POST with If-Match ${value} answers a 412 problem and creates nothing: a collection has no ETag`, async t => {
    const { app, names } = await seeded(t)
    const res = await app.inject({ method: 'POST', url: '/v1/authors', headers: { ...json, 'if-match': value }, payload: newAuthor })
    t.same(pick(res.headers, 'content-type', 'location', 'etag'), { 'content-type': PROBLEM_TYPE, location: undefined, etag: undefined })
    t.same({ status: res.statusCode, body: res.json() }, { status: 412, body: ifMatchFailed('/v1/authors') })
    t.same(await authorNames(app), names)
  })
}

for (const [name, headers] of [
  ['If-Match *', { 'if-match': '*' }],
  ['If-None-Match of a tag', { 'if-none-match': '"1"' }],
  ['If-Unmodified-Since in the past', { 'if-unmodified-since': 'Sat, 01 Jan 2000 00:00:00 GMT' }]
] as const) {
  t.test(`POST with ${name} creates: 201 with Location and ETag`, async t => {
    const { app, names } = await seeded(t)
    const res = await app.inject({ method: 'POST', url: '/v1/authors', headers: { ...json, ...headers }, payload: newAuthor })
    const { id, ...created } = res.json().data.author
    t.same({ status: res.statusCode, location: res.headers.location, etag: res.headers.etag }, { status: 201, location: `/v1/authors/${String(id)}`, etag: '"1"' })
    t.same(created, { ...newAuthor, born: null })
    t.same(await authorNames(app), [...names, newAuthor.name])
  })
}

for (const method of ['GET', 'HEAD'] as const) {
  t.test(`${method} on a collection with If-Match of a tag answers 412`, async t => {
    const { app } = await seeded(t)
    const res = await app.inject({ method, url: '/v1/books', headers: { 'if-match': '"zzz"' } })
    t.same({ status: res.statusCode, type: res.headers['content-type'], etag: res.headers.etag }, { status: 412, type: PROBLEM_TYPE, etag: undefined })
    if (method === 'GET') t.same(res.json(), ifMatchFailed('/v1/books'))
    else t.equal(res.body, '')
  })

  t.test(`${method} on a collection with If-None-Match * answers 304 with no body`, async t => {
    const { app } = await seeded(t)
    const res = await app.inject({ method, url: '/v1/books', headers: { 'if-none-match': '*' } })
    t.same({ status: res.statusCode, etag: res.headers.etag, body: res.body }, { status: 304, etag: undefined, body: '' })
  })
}

for (const [name, headers] of [
  ['If-Match *', { 'if-match': '*' }],
  ['If-None-Match of a tag', { 'if-none-match': '"1", W/"1"' }],
  ['If-Modified-Since in the future', { 'if-modified-since': 'Fri, 01 Jan 2100 00:00:00 GMT' }],
  ['If-Unmodified-Since in the past', { 'if-unmodified-since': 'Sat, 01 Jan 2000 00:00:00 GMT' }]
] as const) {
  t.test(`GET on a collection with ${name} answers 200 with the page`, async t => {
    const { app, books } = await seeded(t)
    const res = await app.inject({ url: '/v1/books', headers })
    t.same(pick(res.headers, 'content-type', 'etag', 'last-modified'), { 'content-type': 'application/json; charset=utf-8', etag: undefined, 'last-modified': undefined })
    t.same({ status: res.statusCode, ids: res.json().data.books.map((b: { id: string }) => b.id) }, { status: 200, ids: books.map(b => b.id) })
  })
}

for (const method of ['GET', 'POST'] as const) {
  t.test(`${method} on a collection with a malformed If-Match answers 400 naming If-Match`, async t => {
    const { app, names } = await seeded(t)
    const res = await app.inject({ method, url: '/v1/authors', headers: { ...json, 'if-match': 'garbage' }, payload: method === 'POST' ? newAuthor : undefined })
    t.same({ status: res.statusCode, type: res.headers['content-type'] }, { status: 400, type: PROBLEM_TYPE })
    t.same(res.json(), {
      type: '/v1/problems/header-invalid',
      title: 'Bad Request',
      status: 400,
      detail: 'One or more request headers are invalid.',
      instance: '/v1/authors',
      invalidParams: [{ name: 'If-Match', reason: 'must be * or a list of quoted entity tags' }]
    })
    t.same(await authorNames(app), names)
  })
}

t.test('a collection query error answers 400 before If-Match is evaluated (RFC 9110 §13.2.1)', async t => {
  const { app } = await seeded(t)
  const res = await app.inject({ url: '/v1/books?pageSize=101', headers: { 'if-match': '"zzz"' } })
  t.same({ status: res.statusCode, type: res.headers['content-type'] }, { status: 400, type: PROBLEM_TYPE })
  t.match(res.json(), { status: 400, instance: '/v1/books', invalidParams: [{ name: 'pageSize' }] })
})

t.test('a nested collection evaluates If-Match and If-None-Match like a collection', async t => {
  const { app, authors, books } = await seeded(t)
  const url = `/v1/authors/${authors[0].id}/books`
  const tag = await app.inject({ url, headers: { 'if-match': '"1"' } })
  t.same({ status: tag.statusCode, type: tag.headers['content-type'] }, { status: 412, type: PROBLEM_TYPE })
  t.same(tag.json(), ifMatchFailed(url))
  const star = await app.inject({ url, headers: { 'if-match': '*' } })
  t.same({ status: star.statusCode, ids: star.json().data.books.map((b: { id: string }) => b.id) }, { status: 200, ids: [books[0].id, books[1].id] })
  const none = await app.inject({ method: 'HEAD', url, headers: { 'if-none-match': '*' } })
  t.same({ status: none.statusCode, body: none.body }, { status: 304, body: '' })
})

t.test('a nested collection of an unknown parent answers 404 whatever the preconditions', async t => {
  const { app } = await seeded(t)
  const res = await app.inject({ url: '/v1/authors/nobody/books', headers: { 'if-match': '"1"' } })
  t.same({ status: res.statusCode, type: res.headers['content-type'] }, { status: 404, type: PROBLEM_TYPE })
  t.match(res.json(), { status: 404, instance: '/v1/authors/nobody/books' })
})
