// The demo's reviews (docs/demo-contract.md, "Application rules: the `reviews` resource"), driven over HTTP
// against the running demo app on each store it runs on: memory, PGlite, and PostgreSQL when
// DATABASE_URL is set (in a schema of its own, dropped afterwards). Each sentence of that section
// has its test below; the callers are the default tokens, one token without a user, and 50 users
// for the parallel writes.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import t from 'tap'
import type { Test } from 'tap'
import { buildDemoApp } from '../demo/app.js'
import { loadConfig } from '../demo/config.js'
import { buildApp, json } from './helpers/app.js'

interface TestLike { teardown (fn: () => unknown): void }

const many = Array.from({ length: 50 }, (_, i) => `user${i + 1}`)
// The default tokens (dev, reader, alice, bob, admin) as the demo defines them, plus callers of the tests' own.
const defaultTokens = [...loadConfig({}).apiTokens].map(([token, { right, user }]) => `${token}:${right}:${user}`)
const demoEnv = {
  API_TOKENS: [...defaultTokens, 'plain-token:write', ...many.map(user => `${user}-token:write:${user}`)].join(','),
  RATE_LIMIT_MAX: '1000000',
  CURSOR_SECRET: 'a-test-secret-of-enough-length'
}
const tokenOf: Record<string, string> = { dev: 'dev-token', reader: 'read-token', alice: 'alice-token', bob: 'bob-token', admin: 'admin-token', plain: 'plain-token' }

function credentials (caller: string): Record<string, string> {
  if (caller === 'key') return { 'x-api-key': 'dev-key' }
  return { authorization: `Bearer ${tokenOf[caller] ?? `${caller}-token`}` }
}

interface Answer { readonly status: number, readonly headers: Headers, readonly body: any }
type Api = (caller: string, method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<Answer>

function client (base: string): Api {
  return async (caller, method, path, body, headers = {}) => {
    const type: Record<string, string> = body === undefined ? {} : { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' }
    const res = await fetch(`${base}${path}`, { method, headers: { ...credentials(caller), ...type, ...headers }, body: body === undefined ? undefined : JSON.stringify(body) })
    const text = await res.text()
    return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) }
  }
}

/** The demo app on a store, listening on a free port; closed (then its data removed) at teardown. */
async function startDemo (t: TestLike, storeEnv: Record<string, string>, cleanup: () => Promise<unknown>): Promise<Api> {
  const app = await buildDemoApp(loadConfig({ ...storeEnv, ...demoEnv }), { logger: false })
  t.teardown(async () => { await app.close(); await cleanup() })
  return client(await app.listen({ port: 0, host: '127.0.0.1' }))
}

const stores: ReadonlyArray<{ name: string, skip: string | false, start: (t: TestLike) => Promise<Api> }> = [
  { name: 'memory', skip: false, start: async t => await startDemo(t, { STORE: 'memory' }, async () => {}) },
  {
    name: 'PGlite',
    skip: false,
    start: async t => {
      const dir = await mkdtemp(join(tmpdir(), 'demo-reviews-'))
      return await startDemo(t, { STORE: 'pglite', DATA_DIR: dir }, () => rm(dir, { recursive: true, force: true }))
    }
  },
  {
    name: 'PostgreSQL',
    skip: process.env.DATABASE_URL === undefined ? 'needs DATABASE_URL' : false,
    start: async t => {
      const url = new URL(process.env.DATABASE_URL as string)
      const schema = `apic_test_reviews_${randomBytes(4).toString('hex')}`
      const admin = new pg.Pool({ connectionString: url.href })
      await admin.query(`CREATE SCHEMA "${schema}"`)
      // The demo has no schema setting: the connection's search_path puts its tables in the test schema.
      url.searchParams.set('options', `-c search_path=${schema}`)
      return await startDemo(t, { DATABASE_URL: url.href }, async () => {
        await admin.query(`DROP SCHEMA "${schema}" CASCADE`)
        await admin.end()
      })
    }
  }
]

for (const store of stores) {
  t.test(`reviews on the ${store.name} store`, { skip: store.skip }, async t => {
    const api = await store.start(t)
    await reviewsSuite(t, api)
  })
}

/** A new book (by a new author), created by the admin; its id. */
async function newBook (api: Api, fields: Record<string, unknown> = {}): Promise<string> {
  const author = await api('admin', 'POST', '/v1/authors', { name: 'Ann Author' })
  const book = await api('admin', 'POST', '/v1/books', { title: 'A Book', authorId: author.body.data.author.id, ...fields })
  if (book.status !== 201) throw new Error(`book not created: ${JSON.stringify(book.body)}`)
  return book.body.data.book.id
}

/** Creates a review as the caller; its id (the test fails when it is not created). */
async function newReview (t: Test, api: Api, caller: string, bookId: string, fields: Record<string, unknown> = {}): Promise<string> {
  const res = await api(caller, 'POST', '/v1/reviews', { bookId, rating: 4, ...fields })
  t.equal(res.status, 201, `${caller} creates a review`)
  return res.body?.data?.review?.id
}

/** What the admin reads of a book: its ETag and derived values. */
async function bookState (api: Api, id: string) {
  const res = await api('admin', 'GET', `/v1/books/${id}`)
  return { etag: res.headers.get('etag'), reviewCount: res.body.data.book.reviewCount, averageRating: res.body.data.book.averageRating }
}

const ids = (list: Array<{ id: string }>) => list.map(item => item.id).sort()
const q = encodeURIComponent

async function reviewsSuite (t: Test, api: Api) {
  t.test('CREATE sets ownerId to the caller\'s user, createdAt and updatedAt; writes move only updatedAt', async t => {
    const book = await newBook(api)
    const created = await api('alice', 'POST', '/v1/reviews', { bookId: book, rating: 5, text: 'Loved it' })
    t.equal(created.status, 201)
    const review = created.body.data.review
    t.equal(created.headers.get('location'), `/v1/reviews/${review.id}`)
    t.match(review, { bookId: book, rating: 5, text: 'Loved it', private: false, ownerId: 'alice' })
    t.notOk('moderatorNote' in review)
    t.match(review.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/)
    t.equal(review.updatedAt, review.createdAt, 'one time for every field a write sets')
    await new Promise(resolve => setTimeout(resolve, 20))
    const modified = await api('admin', 'PATCH', `/v1/reviews/${review.id}`, { rating: 4 })
    t.equal(modified.status, 200)
    t.match(modified.body.data.review, { ownerId: 'alice', createdAt: review.createdAt, rating: 4 })
    t.ok(Date.parse(modified.body.data.review.updatedAt) > Date.parse(review.updatedAt), 'updatedAt moves on every write')
    const replaced = await api('alice', 'PUT', `/v1/reviews/${review.id}`, { bookId: book, rating: 3 })
    t.equal(replaced.status, 200)
    t.match(replaced.body.data.review, { ownerId: 'alice', createdAt: review.createdAt, rating: 3, private: false })
    t.ok(Date.parse(replaced.body.data.review.updatedAt) > Date.parse(modified.body.data.review.updatedAt))
    t.equal(replaced.body.data.review.text ?? null, null, 'REPLACE drops the text it was not given')
  })

  t.test('the user is the token itself when API_TOKENS names none, and the key itself for x-api-key', async t => {
    const book = await newBook(api)
    const byToken = await api('plain', 'POST', '/v1/reviews', { bookId: book, rating: 2 })
    const byKey = await api('key', 'POST', '/v1/reviews', { bookId: book, rating: 2 })
    t.same([byToken.status, byToken.body.data.review.ownerId, byKey.status, byKey.body.data.review.ownerId], [201, 'plain-token', 201, 'dev-key'])
  })

  t.test('a read-only client value (ownerId, createdAt, updatedAt, id) is a 400 naming it, on CREATE, REPLACE and MODIFY', async t => {
    const book = await newBook(api)
    const id = await newReview(t, api, 'alice', book)
    const values = { ownerId: 'alice', createdAt: '2024-01-01T00:00:00Z', updatedAt: '2024-01-01T00:00:00Z', id }
    for (const [field, value] of Object.entries(values)) {
      for (const [method, path] of [['POST', '/v1/reviews'], ['PUT', `/v1/reviews/${id}`], ['PATCH', `/v1/reviews/${id}`]]) {
        if (field === 'id' && method !== 'POST') continue
        const res = await api('alice', method, path, { bookId: book, rating: 4, [field]: value })
        t.same([res.status, res.body.invalidParams], [400, [{ name: field, reason: 'is read-only and set by the server' }]], `${method} with ${field}`)
      }
    }
    for (const field of ['reviewCount', 'averageRating']) {
      const res = await api('admin', 'PATCH', `/v1/books/${book}`, { [field]: 3 })
      t.same([res.status, res.body.invalidParams], [400, [{ name: field, reason: 'is read-only and set by the server' }]], `a book's ${field}`)
    }
  })

  t.test('the fields of a review are checked as the table says', async t => {
    const book = await newBook(api)
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ rating: 0 }, 'rating'], [{ rating: 6 }, 'rating'], [{ rating: 4.5 }, 'rating'], [{ rating: '4' }, 'rating'], [{ rating: undefined }, 'rating'],
      [{ bookId: undefined }, 'bookId'], [{ bookId: 7 }, 'bookId'],
      [{ text: 'x'.repeat(2001) }, 'text'], [{ text: 5 }, 'text'],
      [{ private: 'yes' }, 'private'], [{ private: null }, 'private'],
      [{ moderatorNote: 5 }, 'moderatorNote'], [{ madeUp: 1 }, 'madeUp']
    ]
    for (const [fields, name] of bad) {
      const res = await api('admin', 'POST', '/v1/reviews', { bookId: book, rating: 3, ...fields })
      t.same([res.status, res.body.invalidParams.map((p: { name: string }) => p.name)], [400, [name]], JSON.stringify(fields))
    }
    const longest = await api('alice', 'POST', '/v1/reviews', { bookId: book, rating: 1, text: 'é'.repeat(2000), private: true })
    t.same([longest.status, longest.body.data.review.text.length, longest.body.data.review.private], [201, 2000, true])
    const nulls = await api('bob', 'POST', '/v1/reviews', { bookId: book, rating: 5, text: null })
    t.same([nulls.status, nulls.body.data.review.text, nulls.body.data.review.private], [201, null, false])
    const note = await api('admin', 'POST', '/v1/reviews', { bookId: book, rating: 2, moderatorNote: null })
    t.same([note.status, note.body.data.review.moderatorNote], [201, null])
  })

  t.test('a review that is not visible does not exist for the caller, on every path', async t => {
    const book = await newBook(api)
    const open = await newReview(t, api, 'alice', book, { rating: 5 })
    const secret = await newReview(t, api, 'bob', book, { rating: 1, private: true })
    const visible: Record<string, string[]> = { reader: [open], alice: [open], bob: [open, secret].sort(), admin: [open, secret].sort() }
    for (const [caller, expected] of Object.entries(visible)) {
      const sees = (id: string) => expected.includes(id)
      const list = await api(caller, 'GET', `/v1/reviews?bookId=${book}&total=true`)
      t.same([ids(list.body.data.reviews), list.body.meta.total], [expected, expected.length], `${caller}: LIST and total`)
      const nested = await api(caller, 'GET', `/v1/books/${book}/reviews?total=true`)
      t.same([ids(nested.body.data.reviews), nested.body.meta.total], [expected, expected.length], `${caller}: nested collection`)
      const filtered = await api(caller, 'GET', `/v1/reviews?filter=${q(`bookId eq '${book}' and rating le 1`)}`)
      t.same(ids(filtered.body.data.reviews), expected.filter(id => id === secret), `${caller}: a filter matching only the private review`)
      // Paging: one per page, so the second page exists only when the private review is visible.
      const first = await api(caller, 'GET', `/v1/books/${book}/reviews?pageSize=1`)
      const next = first.body.links.find((link: { rel: string }) => link.rel === 'next')
      t.equal(next !== undefined, expected.length === 2, `${caller}: paging`)
      for (const method of ['GET', 'HEAD', 'OPTIONS']) {
        const res = await api(caller, method, `/v1/reviews/${secret}`)
        t.equal(res.status, sees(secret) ? 200 : 404, `${caller}: ${method} of the private review`)
      }
      const expanded = await api(caller, 'GET', `/v1/books/${book}?expand=reviews`)
      t.same(ids(expanded.body.data.book.reviews), expected, `${caller}: expand=reviews`)
      const expandedList = await api(caller, 'GET', `/v1/books?filter=${q(`id eq '${book}'`)}&expand=reviews`)
      t.same(ids(expandedList.body.data.books[0].reviews), expected, `${caller}: expand=reviews on LIST`)
      const included = await api(caller, 'GET', `/v1/books/${book}?include=reviews`)
      const links = included.body.links.filter((link: { rel: string }) => link.rel === 'reviews')
      t.same(links.map((link: { href: string }) => link.href).sort(), expected.map(id => `/v1/reviews/${id}`), `${caller}: include=reviews`)
      const related = await api(caller, 'GET', `/v1/books?filter=${q(`id eq '${book}' and reviews/rating eq 1`)}`)
      t.equal(related.body.data.books.length, sees(secret) ? 1 : 0, `${caller}: a related-path filter`)
      const dotted = await api(caller, 'GET', `/v1/books?id=${book}&reviews.rating=1`)
      t.equal(dotted.body.data.books.length, sees(secret) ? 1 : 0, `${caller}: a dotted simple filter`)
      const everyone = await api(caller, 'GET', '/v1/reviews?pageSize=100')
      t.ok(everyone.body.data.reviews.every((review: { private: boolean, ownerId: string }) => caller === 'admin' || !review.private || review.ownerId === caller), `${caller}: LIST of all reviews`)
    }
    for (const [method, body] of [['PUT', { bookId: book, rating: 2 }], ['PATCH', { rating: 2 }], ['DELETE', undefined]] as const) {
      const res = await api('alice', method, `/v1/reviews/${secret}`, body)
      t.equal(res.status, 404, `${method} of a review the caller cannot see`)
    }
    t.equal((await bookState(api, book)).reviewCount, 2, 'the count holds private reviews too')
    // Made private by its owner, a review disappears for the others.
    t.equal((await api('alice', 'PATCH', `/v1/reviews/${open}`, { private: true })).status, 200)
    t.equal((await api('bob', 'GET', `/v1/reviews/${open}`)).status, 404)
    t.equal((await api('alice', 'GET', `/v1/reviews/${open}`)).status, 200)
  })

  t.test('REPLACE, MODIFY and DELETE of a visible review someone else owns are 403; its owner and admin may', async t => {
    const book = await newBook(api)
    const id = await newReview(t, api, 'alice', book)
    const before = await api('alice', 'GET', `/v1/reviews/${id}`)
    for (const caller of ['bob', 'dev', 'reader']) {
      for (const [method, body] of [['PUT', { bookId: book, rating: 1 }], ['PATCH', { rating: 1 }], ['DELETE', undefined]] as const) {
        const res = await api(caller, method, `/v1/reviews/${id}`, body)
        t.same([res.status, res.headers.get('content-type')], [403, 'application/problem+json; charset=utf-8'], `${caller} ${method}`)
      }
    }
    const after = await api('alice', 'GET', `/v1/reviews/${id}`)
    t.same([after.body, after.headers.get('etag')], [before.body, before.headers.get('etag')], 'unchanged')
    t.equal((await api('alice', 'PATCH', `/v1/reviews/${id}`, { rating: 2 })).status, 200)
    t.equal((await api('admin', 'PUT', `/v1/reviews/${id}`, { bookId: book, rating: 5 })).status, 200)
    t.equal((await api('alice', 'DELETE', `/v1/reviews/${id}`)).status, 204)
    const again = await newReview(t, api, 'alice', book)
    t.equal((await api('admin', 'DELETE', `/v1/reviews/${again}`)).status, 204)
    t.equal((await api('reader', 'POST', '/v1/reviews', { bookId: book, rating: 3 })).status, 403, 'a read token creates nothing')
  })

  t.test('moderatorNote does not exist for a caller who is not admin', async t => {
    const book = await newBook(api)
    const id = await newReview(t, api, 'alice', book)
    const noted = await api('admin', 'PATCH', `/v1/reviews/${id}`, { moderatorNote: 'spoilers' })
    t.same([noted.status, noted.body.data.review.moderatorNote], [200, 'spoilers'])
    const reads = [`/v1/reviews/${id}`, `/v1/reviews?bookId=${book}`, `/v1/books/${book}/reviews`, `/v1/books/${book}?expand=reviews`, `/v1/reviews/${id}?expand=book`]
    for (const caller of ['alice', 'bob', 'reader']) {
      for (const path of reads) {
        const res = await api(caller, 'GET', path)
        t.equal(res.status, 200, `${caller} ${path}`)
        t.notMatch(JSON.stringify(res.body), /moderatorNote|spoilers/, `${caller} ${path}: absent`)
      }
    }
    // Each way of naming a field, answered exactly as for a made-up name.
    const namings = [
      (field: string) => `/v1/reviews?fields=${field}`,
      (field: string) => `/v1/reviews/${id}?fields=rating,${field}`,
      (field: string) => `/v1/reviews?filter=${q(`${field} eq 'spoilers'`)}`,
      (field: string) => `/v1/reviews?filter=${q(`${field} ne null or rating gt 0`)}`,
      (field: string) => `/v1/reviews?sort=-${field}`,
      (field: string) => `/v1/reviews?${field}=spoilers`,
      (field: string) => `/v1/books/${book}/reviews?sort=${field}`,
      (field: string) => `/v1/books?filter=${q(`reviews/${field} eq 'spoilers'`)}`,
      (field: string) => `/v1/books?reviews.${field}=spoilers`
    ]
    for (const caller of ['alice', 'reader']) {
      for (const naming of namings) {
        const real = await api(caller, 'GET', naming('moderatorNote'))
        const madeUp = await api(caller, 'GET', naming('moderatorNots'))
        t.equal(real.status, 400, `${caller} ${naming('moderatorNote')}`)
        t.match(JSON.stringify(real.body.invalidParams), /unknown[^"]* field/)
        t.same(JSON.parse(JSON.stringify(madeUp.body).replaceAll('moderatorNots', 'moderatorNote')), real.body, 'the answer for a made-up name')
      }
    }
    for (const [method, path] of [['POST', '/v1/reviews'], ['PUT', `/v1/reviews/${id}`], ['PATCH', `/v1/reviews/${id}`]]) {
      const res = await api('alice', method, path, { bookId: book, rating: 4, moderatorNote: 'mine' })
      t.same([res.status, res.body.invalidParams.map((p: { name: string }) => p.name)], [400, ['moderatorNote']], `alice ${method} with moderatorNote`)
    }
    // The owner's REPLACE cannot write it, so cannot erase it either.
    t.equal((await api('alice', 'PUT', `/v1/reviews/${id}`, { bookId: book, rating: 1 })).status, 200)
    t.equal((await api('admin', 'GET', `/v1/reviews/${id}`)).body.data.review.moderatorNote, 'spoilers', 'kept through the owner\'s REPLACE')
    // The admin reads, selects, filters, sorts and writes it like any field.
    const selected = await api('admin', 'GET', `/v1/reviews/${id}?fields=moderatorNote`)
    t.same(selected.body.data.review, { id, bookId: book, rating: 1, ownerId: 'alice', moderatorNote: 'spoilers' })
    for (const query of [`filter=${q("moderatorNote eq 'spoilers'")}&bookId=${book}`, `moderatorNote=spoilers&bookId=${book}`, `sort=moderatorNote&bookId=${book}`]) {
      const res = await api('admin', 'GET', `/v1/reviews?${query}`)
      t.same([res.status, ids(res.body.data.reviews)], [200, [id]], `admin ${query}`)
    }
    const related = await api('admin', 'GET', `/v1/books?filter=${q(`reviews/moderatorNote eq 'spoilers' and id eq '${book}'`)}`)
    t.same(ids(related.body.data.books), [book])
    const own = await api('admin', 'POST', '/v1/reviews', { bookId: book, rating: 3, moderatorNote: 'by staff' })
    t.same([own.status, own.body.data.review.moderatorNote], [201, 'by staff'])
    const cleared = await api('admin', 'PUT', `/v1/reviews/${id}`, { bookId: book, rating: 1, moderatorNote: null })
    t.same([cleared.status, cleared.body.data.review.moderatorNote], [200, null])
  })

  t.test('a review needs a book that exists and is available: else 422 naming bookId', async t => {
    const unavailable = await newBook(api, { available: false })
    const defaulted = await newBook(api)
    const before = await bookState(api, unavailable)
    for (const bookId of [unavailable, '0193e7a2-0000-7000-8000-000000000000', '']) {
      const res = await api('alice', 'POST', '/v1/reviews', { bookId, rating: 4 })
      t.same([res.status, res.headers.get('content-type'), res.body.invalidParams?.map((p: { name: string }) => p.name)], [422, 'application/problem+json; charset=utf-8', ['bookId']], `bookId '${bookId}'`)
    }
    t.same(await bookState(api, unavailable), before, 'the book is unchanged')
    t.equal((await api('alice', 'GET', `/v1/reviews?bookId=${unavailable}&total=true`)).body.meta.total, 0)
    // available defaults to true.
    const id = await newReview(t, api, 'alice', defaulted)
    // Moving a review is making it a review of the other book: the same rules hold.
    const moved = await api('alice', 'PATCH', `/v1/reviews/${id}`, { bookId: unavailable })
    t.same([moved.status, moved.body.invalidParams?.map((p: { name: string }) => p.name)], [422, ['bookId']])
    // A book made unavailable keeps its reviews, and they can still change.
    t.equal((await api('admin', 'PATCH', `/v1/books/${defaulted}`, { available: false })).status, 200)
    t.equal((await api('alice', 'PATCH', `/v1/reviews/${id}`, { rating: 1 })).status, 200)
  })

  t.test('a user reviews a book at most once: a second CREATE is 409', async t => {
    const book = await newBook(api)
    const other = await newBook(api)
    const first = await newReview(t, api, 'alice', book, { private: true })
    const before = await bookState(api, book)
    const second = await api('alice', 'POST', '/v1/reviews', { bookId: book, rating: 1 })
    t.same([second.status, second.headers.get('content-type')], [409, 'application/problem+json; charset=utf-8'])
    t.same(await bookState(api, book), before, 'nothing changed')
    await newReview(t, api, 'bob', book)
    await newReview(t, api, 'alice', other)
    // Moving her review of the other book onto this one would make two.
    const otherReview = (await api('alice', 'GET', `/v1/reviews?bookId=${other}`)).body.data.reviews[0].id
    t.equal((await api('alice', 'PATCH', `/v1/reviews/${otherReview}`, { bookId: book })).status, 409)
    // Once her review is deleted she may write a new one.
    t.equal((await api('alice', 'DELETE', `/v1/reviews/${first}`)).status, 204)
    await newReview(t, api, 'alice', book)
    // The admin's reviews are the admin's own: admin may review the book once too.
    await newReview(t, api, 'admin', book)
    t.equal((await api('admin', 'POST', '/v1/reviews', { bookId: book, rating: 3 })).status, 409)
  })

  t.test('reviewCount and averageRating follow every review write, in the book\'s ETag too', async t => {
    const book = await newBook(api)
    const other = await newBook(api)
    const etags = new Map<string, string[]>([[book, []], [other, []]])
    async function expect (id: string, reviewCount: number, averageRating: number | null, label: string) {
      const state = await bookState(api, id)
      t.same({ reviewCount: state.reviewCount, averageRating: state.averageRating }, { reviewCount, averageRating }, label)
      const seen = etags.get(id) as string[]
      t.notOk(seen.includes(state.etag as string), `${label}: a new ETag`)
      seen.push(state.etag as string)
    }
    await expect(book, 0, null, 'a new book')
    await expect(other, 0, null, 'another new book')
    const a = await newReview(t, api, 'alice', book, { rating: 4 })
    await expect(book, 1, 4, 'CREATE')
    const b = await newReview(t, api, 'bob', book, { rating: 5, private: true })
    await expect(book, 2, 4.5, 'CREATE of a private review')
    const d = await newReview(t, api, 'dev', book, { rating: 5 })
    await expect(book, 3, 4.67, 'rounded to 2 decimals')
    t.equal((await api('alice', 'PATCH', `/v1/reviews/${a}`, { rating: 2 })).status, 200)
    await expect(book, 3, 4, 'MODIFY')
    t.equal((await api('bob', 'PUT', `/v1/reviews/${b}`, { bookId: book, rating: 3, private: true })).status, 200)
    await expect(book, 3, 3.33, 'REPLACE')
    t.equal((await api('dev', 'DELETE', `/v1/reviews/${d}`)).status, 204)
    await expect(book, 2, 2.5, 'DELETE')
    t.equal((await api('alice', 'PATCH', `/v1/reviews/${a}`, { bookId: other })).status, 200)
    await expect(book, 1, 3, 'MODIFY moving a review away')
    await expect(other, 1, 2, 'MODIFY moving a review here')
    t.equal((await api('bob', 'PUT', `/v1/reviews/${b}`, { bookId: other, rating: 5 })).status, 200)
    await expect(book, 0, null, 'REPLACE moving the last review away')
    await expect(other, 2, 3.5, 'REPLACE moving a review here')
    // A write of a review that leaves the average as it was still counts as a change of the book.
    t.equal((await api('bob', 'PATCH', `/v1/reviews/${b}`, { text: 'on reflection' })).status, 200)
    await expect(other, 2, 3.5, 'MODIFY of the text only')
    // The values are the server's: a book REPLACE keeps them.
    const kept = await api('admin', 'PUT', `/v1/books/${other}`, { title: 'Renamed', authorId: (await api('admin', 'GET', `/v1/books/${other}`)).body.data.book.authorId })
    t.match(kept.body.data.book, { title: 'Renamed', reviewCount: 2, averageRating: 3.5 })
    const listed = await api('reader', 'GET', `/v1/books?filter=${q(`id eq '${other}'`)}&fields=reviewCount,averageRating`)
    t.match(listed.body.data.books, [{ reviewCount: 2, averageRating: 3.5 }], 'served in lists and to every caller')
    const sorted = await api('reader', 'GET', `/v1/books?filter=${q(`reviewCount ge 2 and id eq '${other}'`)}&sort=-averageRating`)
    t.equal(sorted.body.data.books.length, 1, 'filtered and sorted by')
  })

  t.test('a write that fails leaves the review and the book unchanged', async t => {
    const book = await newBook(api)
    const id = await newReview(t, api, 'alice', book, { rating: 4 })
    const snapshot = async () => ({ book: await bookState(api, book), review: (await api('admin', 'GET', `/v1/reviews/${id}`)).body, etag: (await api('admin', 'GET', `/v1/reviews/${id}`)).headers.get('etag') })
    const before = await snapshot()
    const failing: Array<[string, string, string, unknown, Record<string, string>, number]> = [
      ['alice', 'POST', '/v1/reviews', { bookId: book, rating: 5 }, {}, 409],
      ['alice', 'PATCH', `/v1/reviews/${id}`, { rating: 9 }, {}, 400],
      ['alice', 'PATCH', `/v1/reviews/${id}`, { rating: 1 }, { 'if-match': '"999"' }, 412],
      ['bob', 'PATCH', `/v1/reviews/${id}`, { rating: 1 }, {}, 403],
      ['bob', 'DELETE', `/v1/reviews/${id}`, undefined, {}, 403],
      ['alice', 'PATCH', `/v1/reviews/${id}`, { bookId: 'no-such-book', rating: 1 }, {}, 422],
      ['alice', 'PUT', `/v1/reviews/${id}`, { bookId: book, rating: 1, ownerId: 'bob' }, {}, 400]
    ]
    for (const [caller, method, path, body, headers, status] of failing) {
      t.equal((await api(caller, method, path, body, headers)).status, status, `${caller} ${method} ${JSON.stringify(body)}`)
    }
    t.same(await snapshot(), before)
  })

  t.test('50 users reviewing one book at once: every review counted', async t => {
    const book = await newBook(api)
    const answers = await Promise.all(many.map((user, i) => api(user, 'POST', '/v1/reviews', { bookId: book, rating: i % 5 + 1 })))
    t.same(answers.map(answer => answer.status), many.map(() => 201))
    const state = await bookState(api, book)
    // Ratings 1..5, ten times each; the book written once when created and once per review.
    t.same(state, { etag: '"51"', reviewCount: 50, averageRating: 3 })
    t.equal((await api('reader', 'GET', `/v1/books/${book}/reviews?total=true&pageSize=0`)).body.meta.total, 50)
  })

  t.test('one user sending the same review ten times at once: exactly one is created', async t => {
    const book = await newBook(api)
    const answers = await Promise.all(Array.from({ length: 10 }, () => api('alice', 'POST', '/v1/reviews', { bookId: book, rating: 5 })))
    t.same(answers.map(answer => answer.status).sort(), [201, 409, 409, 409, 409, 409, 409, 409, 409, 409])
    t.match(await bookState(api, book), { reviewCount: 1, averageRating: 5 })
  })

  t.test('the admin right: every operation on every resource', async t => {
    const author = await api('admin', 'POST', '/v1/authors', { name: 'Keri Hulme' })
    t.equal(author.status, 201)
    t.equal((await api('admin', 'DELETE', `/v1/authors/${author.body.data.author.id}`)).status, 204)
  })

  t.test('a book that has reviews cannot be deleted (409), as an author with books', async t => {
    const book = await newBook(api)
    const id = await newReview(t, api, 'alice', book, { private: true })
    t.equal((await api('admin', 'DELETE', `/v1/books/${book}`)).status, 409)
    t.equal((await api('alice', 'DELETE', `/v1/reviews/${id}`)).status, 204)
    t.equal((await api('admin', 'DELETE', `/v1/books/${book}`)).status, 204)
  })
}

t.test('without a caller (the resources served with no authentication) nobody owns a review, so none is created', async t => {
  const app = await buildApp(t)
  const author = await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: { name: 'Ann' } })
  const book = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload: { title: 'T', authorId: author.json().data.author.id } })
  const res = await app.inject({ method: 'POST', url: '/v1/reviews', headers: json, payload: { bookId: book.json().data.book.id, rating: 3 } })
  t.equal(res.statusCode, 403)
  t.same(book.json().data.book.reviewCount, 0)
})
