// The batch endpoint on the demo (docs/demo-contract.md "Safe retries and atomic writes", the Batch
// part), over HTTP against the demo app on each store it runs on: memory, PGlite in a fresh
// DATA_DIR, and PostgreSQL when DATABASE_URL is set (in a schema of its own, dropped afterwards).
// Each sentence of the Batch paragraph has its test: the example with local ids, merge-patch
// modify, unknown lids, the results, all or nothing with each operation's own problem (400, 403,
// 404, 409, 412, 422) under the reviews' rules, the books' derived values, the limit of 100, the
// shape, a `read` caller; and Idempotency-Key on a batch, replayed after a restart on the stores
// that keep data.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import type { Test } from 'tap'
import { placeFor, places, unique } from './helpers/demo-http.js'
import type { Answer, Api } from './helpers/demo-http.js'

type Json = Record<string, any>

/** Every record of the three collections, every row and field, as the admin reads them page by page. */
async function everything (api: Api): Promise<Json> {
  const state: Json = {}
  for (const name of ['authors', 'books', 'reviews']) {
    state[name] = []
    let next: string | undefined = `/v1/${name}?pageSize=100&sort=id`
    while (next !== undefined) {
      const res: Answer = await api('admin', 'GET', next)
      if (res.status !== 200) throw new Error(`${next}: ${res.status} ${res.text}`)
      state[name].push(...res.body.data[name])
      next = res.body.links.find((link: Json) => link.rel === 'next')?.href
    }
  }
  return state
}

/** A new author and a book of hers, made by the admin (the book available unless said otherwise). */
async function newBook (api: Api, fields: Json = {}): Promise<{ author: Json, book: Json, etag: string }> {
  const author = await api('admin', 'POST', '/v1/authors', { body: { name: unique('Author') } })
  const book = await api('admin', 'POST', '/v1/books', { body: { title: unique('Book'), authorId: author.body.data.author.id, ...fields } })
  if (book.status !== 201) throw new Error(`book not created: ${book.text}`)
  return { author: author.body.data.author, book: book.body.data.book, etag: book.headers.get('etag') as string }
}

/** A problem+json answer with this status. */
function isProblem (t: Test, res: Answer, status: number, what = `${status}`) {
  t.equal(res.status, status, what)
  t.match(res.headers.get('content-type'), /^application\/problem\+json/, `${what}: a problem`)
}

/** A keyed batch the suite sent, with its first answer: sent again after a restart. */
interface Sent { readonly caller: string, readonly body: unknown, readonly key: string, readonly first: Answer }

for (const where of places('demo-batch')) {
  t.test(`Batch on the demo, ${where.name} store`, { skip: where.skip }, async t => {
    const { place, start } = await placeFor(t, where)
    const main = await start()
    const sent: Sent[] = []
    await suite(t, main.api, sent)
    if (place.keeps) {
      t.test('after a restart on the same data, a keyed batch replays its answer and writes nothing again', async t => {
        t.ok(sent.length > 0)
        const before = await everything(main.api)
        await main.close()
        const { api } = await start()
        for (const { caller, body, key, first } of sent) {
          const again = await api(caller, 'POST', '/v1/batch', { body, headers: { 'idempotency-key': key } })
          t.same({ status: again.status, replayed: again.headers.get('idempotent-replayed'), body: again.text }, { status: first.status, replayed: 'true', body: first.text }, `${caller} ${key}`)
        }
        t.same(await everything(api), before, 'every collection is as it was')
      })
    }
  })
}

async function suite (t: Test, api: Api, sent: Sent[]) {
  const batch = (caller: string, operations: unknown[], headers: Record<string, string> = {}) => api(caller, 'POST', '/v1/batch', { body: { operations }, headers })

  t.test('the example runs in order: local ids in id and in a relation field, modify with ifMatch, replace, delete', async t => {
    const { author, book, etag } = await newBook(api)
    const res = await batch('alice', [
      { op: 'create', resource: 'authors', lid: 'a1', data: { name: 'Ann' } },
      { op: 'create', resource: 'books', lid: 'b1', data: { title: 'T', authorId: { lid: 'a1' } } },
      { op: 'modify', resource: 'books', id: book.id, ifMatch: etag, data: { year: 2001 } },
      { op: 'replace', resource: 'authors', id: author.id, data: { name: 'Bo' } },
      { op: 'delete', resource: 'books', id: { lid: 'b1' } }
    ])
    t.equal(res.status, 200)
    t.match(res.headers.get('content-type'), /^application\/json/)
    t.same(Object.keys(res.body), ['data'])
    const [ann, t1, modified, replaced, deleted] = res.body.data.results
    t.same(Object.keys(ann).sort(), ['data', 'etag', 'location', 'status'])
    t.match(ann, { status: 201, location: `/v1/authors/${ann.data.author.id as string}`, etag: '"1"', data: { author: { name: 'Ann' } } })
    t.match(t1, { status: 201, location: `/v1/books/${t1.data.book.id as string}`, etag: '"1"', data: { book: { title: 'T', authorId: ann.data.author.id, reviewCount: 0, averageRating: null } } })
    t.same(Object.keys(modified).sort(), ['data', 'etag', 'status'])
    t.match(modified, { status: 200, etag: '"2"', data: { book: { id: book.id, title: book.title, year: 2001 } } })
    t.match(replaced, { status: 200, etag: '"2"', data: { author: { id: author.id, name: 'Bo' } } })
    t.same(deleted, { status: 204 })
    for (const [result, path] of [[ann, ann.location], [modified, `/v1/books/${book.id as string}`], [replaced, `/v1/authors/${author.id as string}`]]) {
      const now = await api('alice', 'GET', path)
      t.same({ status: now.status, etag: now.headers.get('etag'), data: now.body.data }, { status: 200, etag: result.etag, data: result.data }, `GET ${path as string} reads what the result said`)
    }
    isProblem(t, await api('alice', 'GET', t1.location), 404, 'the book created and deleted in the batch')
  })

  t.test('modify is a JSON merge patch: null removes a member, others are kept', async t => {
    const { book } = await newBook(api, { year: 1999, rating: 3 })
    const res = await batch('alice', [{ op: 'modify', resource: 'books', id: book.id, data: { year: null, rating: 4 } }])
    t.equal(res.status, 200)
    const single = await api('alice', 'PATCH', `/v1/books/${book.id as string}`, { body: { year: null, rating: 4 } })
    const { year, rating, title } = res.body.data.results[0].data.book
    t.same({ year, rating, title }, { year: null, rating: 4, title: book.title })
    t.same(single.body.data, res.body.data.results[0].data, 'as the single PATCH answers')
  })

  t.test('an unknown lid is a 400 naming where it is used, and nothing is written', async t => {
    const before = await everything(api)
    for (const [operations, member] of [
      [[{ op: 'create', resource: 'authors', lid: 'a1', data: { name: unique('A') } }, { op: 'delete', resource: 'authors', id: { lid: 'a2' } }], 'operations/1/id'],
      [[{ op: 'create', resource: 'authors', lid: 'a1', data: { name: unique('A') } }, { op: 'create', resource: 'books', data: { title: 'T', authorId: { lid: 'nobody' } } }], 'operations/1/authorId']
    ] as const) {
      const res = await batch('alice', [...operations])
      isProblem(t, res, 400, member)
      t.match(res.body, { status: 400, operation: 1, invalidParams: [{ name: member, reason: /names no record an earlier create of this batch made/ }] })
    }
    t.same(await everything(api), before)
  })

  t.test('a failing operation writes nothing; the answer is its problem with its status, its index and prefixed names', async t => {
    const { book } = await newBook(api)
    const unavailable = (await newBook(api, { available: false })).book
    const alicePublic = await api('alice', 'POST', '/v1/reviews', { body: { bookId: book.id, rating: 3 } })
    const alicePrivate = await api('alice', 'POST', '/v1/reviews', { body: { bookId: (await newBook(api)).book.id, rating: 3, private: true } })
    // The book's version after alice's review moved it.
    const etag = (await api('bob', 'GET', `/v1/books/${book.id as string}`)).headers.get('etag')
    const before = await everything(api)
    // Writes that would succeed: a new author and book (by local ids), a review of it (which moves its derived values), a modify.
    const leading = [
      { op: 'create', resource: 'authors', lid: 'a1', data: { name: unique('Lead') } },
      { op: 'create', resource: 'books', lid: 'b1', data: { title: 'Lead', authorId: { lid: 'a1' } } },
      { op: 'create', resource: 'reviews', lid: 'r1', data: { bookId: { lid: 'b1' }, rating: 5 } },
      { op: 'modify', resource: 'books', id: book.id, ifMatch: etag, data: { year: 1990 } }
    ]
    const cases: Array<[string, number, Json, RegExp | Json]> = [
      ['400: invalid data', 400, { op: 'modify', resource: 'reviews', id: { lid: 'r1' }, data: { rating: 9 } }, { invalidParams: [{ name: 'operations/4/rating' }] }],
      ['400: a read-only value', 400, { op: 'create', resource: 'reviews', data: { bookId: book.id, rating: 4, ownerId: 'admin' } }, { invalidParams: [{ name: 'operations/4/ownerId' }] }],
      ['403: a review someone else owns', 403, { op: 'modify', resource: 'reviews', id: alicePublic.body.data.review.id, data: { rating: 1 } }, /may not change this review/],
      ['404: a private review of someone else', 404, { op: 'delete', resource: 'reviews', id: alicePrivate.body.data.review.id }, /review/],
      ['409: a second review of the book by the same user', 409, { op: 'create', resource: 'reviews', data: { bookId: { lid: 'b1' }, rating: 1 } }, /already reviewed/],
      ['412: an ifMatch that no longer holds (the review moved the book)', 412, { op: 'modify', resource: 'books', id: { lid: 'b1' }, ifMatch: '"1"', data: { year: 2000 } }, /If-Match/],
      ['422: a review of a book not available', 422, { op: 'create', resource: 'reviews', data: { bookId: unavailable.id, rating: 4 } }, { invalidParams: [{ name: 'operations/4/bookId', reason: 'the book is not available for review' }] }],
      ['422: a made-up authorId', 422, { op: 'create', resource: 'books', data: { title: 'U', authorId: 'made-up' } }, { invalidParams: [{ name: 'operations/4/authorId' }] }]
    ]
    for (const [what, status, operation, expected] of cases) {
      const res = await batch('bob', [...leading, operation])
      isProblem(t, res, status, what)
      t.match(res.body, { status, operation: 4, instance: '/v1/batch' }, what)
      t.match(res.body, expected instanceof RegExp ? { detail: expected } : expected, what)
      t.same(await everything(api), before, `${what}: nothing is written`)
    }
  })

  t.test('field rules: moderatorNote is an unknown field for others, and the admin writes it', async t => {
    const { book } = await newBook(api)
    const review = (fields: Json) => [{ op: 'create', resource: 'reviews', data: { bookId: book.id, rating: 4, ...fields } }]
    const hidden = await batch('alice', review({ moderatorNote: 'fine' }))
    const unknown = await batch('alice', review({ madeUp: 'fine' }))
    isProblem(t, hidden, 400)
    t.same(hidden.body, { ...unknown.body, invalidParams: [{ ...unknown.body.invalidParams[0], name: 'operations/0/moderatorNote' }] }, 'the same answer as for a made-up name')
    const admin = await batch('admin', review({ moderatorNote: 'fine' }))
    t.match(admin.body.data.results[0], { status: 201, data: { review: { moderatorNote: 'fine', ownerId: 'admin' } } })
    const mine = await batch('alice', review({ private: true }))
    t.match(mine.body.data.results[0].data.review, { ownerId: 'alice', private: true, createdAt: String, updatedAt: String })
    t.notOk('moderatorNote' in mine.body.data.results[0].data.review)
    isProblem(t, await api('bob', 'GET', mine.body.data.results[0].location), 404, 'bob does not see alice\'s private review')
  })

  t.test('derived values: a batch that creates a book and reviews it leaves the book\'s reviewCount and averageRating in step', async t => {
    const author = (await newBook(api)).author
    const res = await batch('alice', [
      { op: 'create', resource: 'books', lid: 'b1', data: { title: unique('Reviewed'), authorId: author.id } },
      { op: 'create', resource: 'reviews', lid: 'r1', data: { bookId: { lid: 'b1' }, rating: 4 } },
      { op: 'modify', resource: 'reviews', id: { lid: 'r1' }, data: { rating: 3 } },
      { op: 'create', resource: 'books', lid: 'b2', data: { title: unique('Reviewed'), authorId: author.id } },
      { op: 'create', resource: 'reviews', data: { bookId: { lid: 'b2' }, rating: 5, private: true } }
    ])
    t.equal(res.status, 200)
    const [b1, r1, r1changed, b2] = res.body.data.results
    t.match(b1.data.book, { reviewCount: 0, averageRating: null }, 'the create\'s result is the book as created')
    t.same([r1.data.review.bookId, r1changed.data.review.rating], [b1.data.book.id, 3])
    const state = async (id: string) => {
      const now = await api('alice', 'GET', `/v1/books/${id}`)
      return { etag: now.headers.get('etag'), reviewCount: now.body.data.book.reviewCount, averageRating: now.body.data.book.averageRating }
    }
    const first = await state(b1.data.book.id)
    t.match(first, { reviewCount: 1, averageRating: 3 })
    t.not(first.etag, b1.etag, 'the book\'s version moved with its review')
    t.match(await state(b2.data.book.id), { reviewCount: 1, averageRating: 5 }, 'a private review counts')
    const bob = await batch('bob', [{ op: 'create', resource: 'reviews', data: { bookId: b1.data.book.id, rating: 4 } }])
    t.equal(bob.status, 200)
    const second = await state(b1.data.book.id)
    t.match(second, { reviewCount: 2, averageRating: 3.5 })
    const failed = await batch('alice', [{ op: 'delete', resource: 'reviews', id: r1.data.review.id }, { op: 'modify', resource: 'books', id: b1.data.book.id, ifMatch: second.etag, data: { year: 1 } }])
    isProblem(t, failed, 412, 'the delete moved the book: the ifMatch read before fails')
    t.equal(failed.body.operation, 1)
    t.same(await state(b1.data.book.id), second, 'and the derived values are as before the batch')
  })

  t.test('up to 100 operations run; more, or a body of another shape, is a 400', async t => {
    const name = unique('Hundred')
    const create = { op: 'create', resource: 'authors', data: { name } }
    const count = async () => (await api('admin', 'GET', `/v1/authors?filter=${encodeURIComponent(`name eq '${name}'`)}&total=true`)).body.meta.total
    const more = await batch('dev', Array.from({ length: 101 }, () => create))
    isProblem(t, more, 400, '101 operations')
    t.match(more.body.invalidParams, [{ name: 'operations', reason: /more than 100/ }])
    t.equal(await count(), 0)
    const hundred = await batch('dev', Array.from({ length: 100 }, () => create))
    t.equal(hundred.status, 200)
    t.equal(hundred.body.data.results.length, 100)
    t.equal(await count(), 100)
    for (const [what, body, member] of [
      ['not an object', '[]', '(body)'],
      ['no operations', '{}', 'operations'],
      ['an empty list', '{"operations":[]}', 'operations'],
      ['an unknown op', '{"operations":[{"op":"upsert","resource":"authors","data":{}}]}', 'operations/0/op'],
      ['an unknown resource', '{"operations":[{"op":"create","resource":"publishers","data":{}}]}', 'operations/0/resource'],
      ['a singular resource name', '{"operations":[{"op":"create","resource":"author","data":{}}]}', 'operations/0/resource']
    ]) {
      const res = await api('dev', 'POST', '/v1/batch', { body })
      isProblem(t, res, 400, what)
      t.match(res.body.invalidParams, [{ name: member }], what)
    }
  })

  t.test('a read caller: 403, and nothing is written', async t => {
    const before = await everything(api)
    const res = await batch('reader', [{ op: 'create', resource: 'authors', data: { name: unique('Reader') } }])
    isProblem(t, res, 403)
    t.match(res.body, { status: 403, operation: 0, detail: 'These credentials do not allow creating authors.' })
    t.same(await everything(api), before)
  })

  t.test('Idempotency-Key on a batch: the retry replays the answer and writes nothing twice; another body is 422', async t => {
    const { book } = await newBook(api)
    const key = `"${randomBytes(8).toString('hex')}"`
    const body = {
      operations: [
        { op: 'create', resource: 'authors', lid: 'a1', data: { name: unique('Keyed') } },
        { op: 'create', resource: 'books', lid: 'b1', data: { title: unique('Keyed'), authorId: { lid: 'a1' } } },
        { op: 'create', resource: 'reviews', data: { bookId: book.id, rating: 2 } }
      ]
    }
    const first = await api('alice', 'POST', '/v1/batch', { body, headers: { 'idempotency-key': key } })
    t.equal(first.status, 200)
    t.equal(first.headers.get('idempotent-replayed'), null)
    sent.push({ caller: 'alice', body, key, first })
    const after = await everything(api)
    const again = await api('alice', 'POST', '/v1/batch', { body, headers: { 'idempotency-key': key } })
    t.same({ status: again.status, replayed: again.headers.get('idempotent-replayed'), body: again.text }, { status: 200, replayed: 'true', body: first.text })
    t.same(await everything(api), after, 'nothing is written twice (run again, the review would be a 409)')
    const other = await api('alice', 'POST', '/v1/batch', { body: { operations: body.operations.slice(0, 1) }, headers: { 'idempotency-key': key } })
    isProblem(t, other, 422, 'another body under the key')
    t.match(other.body.detail, /another request body/)
    const bob = await api('bob', 'POST', '/v1/batch', { body, headers: { 'idempotency-key': key } })
    t.same([bob.status, bob.headers.get('idempotent-replayed')], [200, null], 'another caller\'s identical key runs')
    sent.push({ caller: 'bob', body, key, first: bob })
    const name = body.operations[0].data.name as string
    t.equal((await api('admin', 'GET', `/v1/authors?filter=${encodeURIComponent(`name eq '${name}'`)}&total=true`)).body.meta.total, 2, 'one author per caller')
  })
}
