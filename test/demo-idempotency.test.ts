// Idempotency-Key on the demo (docs/demo-contract.md "Safe retries and atomic writes", "Many instances"),
// over HTTP against the demo app on each store it runs on: memory, PGlite in a fresh DATA_DIR, and
// PostgreSQL when DATABASE_URL is set (in a schema of its own, dropped afterwards). Each sentence of
// the Idempotency-Key paragraph has its test: both forms of the key, its limits, the replay that
// writes nothing twice, 422 for another body, keys per caller (and method and path), PATCH, a
// review and its book's derived values, and, on the stores that keep data, the replay after a
// restart on the same data. 409 while the first request runs: on PostgreSQL, where the test holds
// the book row the first request must lock, with a second instance on the same database; the
// memory store's case is in test/idempotency.test.ts, as is "a 5xx is not kept" (a store failure
// cannot be caused from outside the demo). Idempotency-Key on the batch endpoint the paragraph
// names, and its replay after a restart, are in test/demo-batch.test.ts.
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import t from 'tap'
import type { Test } from 'tap'
import { placeFor, places, unique } from './helpers/demo-http.js'
import type { Answer, Api, Call } from './helpers/demo-http.js'

const q = encodeURIComponent

/** How many records of the collection match the filter, as the admin (who sees every row) counts them. */
async function count (api: Api, resource: string, filter: string): Promise<number> {
  const res = await api('admin', 'GET', `/v1/${resource}?filter=${q(filter)}&total=true`)
  if (res.status !== 200) throw new Error(`count ${resource}: ${res.status} ${res.text}`)
  return res.body.meta.total
}
const named = (name: string) => `name eq '${name}'`

/** What a client compares between an answer and its replay. */
const answer = (res: Answer) => ({ status: res.status, body: res.text, location: res.headers.get('location'), etag: res.headers.get('etag') })

/** The retry is the first answer again, marked replayed; the first was not marked. */
function sameAnswer (t: Test, first: Answer, again: Answer, what: string) {
  t.equal(first.headers.get('idempotent-replayed'), null, `${what}: the first answer is not marked replayed`)
  t.equal(again.headers.get('idempotent-replayed'), 'true', `${what}: the retry is marked Idempotent-Replayed: true`)
  t.same(answer(again), answer(first), `${what}: same status, body, Location and ETag`)
}

/** A new book (by a new author), created by the admin; its id. */
async function newBook (api: Api): Promise<string> {
  const author = await api('admin', 'POST', '/v1/authors', { body: { name: unique('Author') } })
  const book = await api('admin', 'POST', '/v1/books', { body: { title: unique('Book'), authorId: author.body.data.author.id } })
  if (book.status !== 201) throw new Error(`book not created: ${book.text}`)
  return book.body.data.book.id
}

/** What the admin reads of a book: its ETag and review count. */
async function bookState (api: Api, id: string) {
  const res = await api('admin', 'GET', `/v1/books/${id}`)
  return { etag: res.headers.get('etag'), reviewCount: res.body.data.book.reviewCount }
}

/** Keyed requests made by the suite, each with its first answer: sent again after a restart. */
interface Sent { readonly caller: string, readonly method: string, readonly path: string, readonly call: Call, readonly first: Answer }

for (const where of places('demo-idem')) {
  t.test(`Idempotency-Key on the demo, ${where.name} store`, { skip: where.skip }, async t => {
    const { place, start } = await placeFor(t, where)
    const main = await start()
    const sent: Sent[] = []
    /** Sends a keyed request and remembers it with its answer. */
    const send = async (caller: string, method: string, path: string, call: Call) => {
      const first = await main.api(caller, method, path, call)
      sent.push({ caller, method, path, call, first })
      return first
    }
    await suite(t, main.api, send)
    if (place.databaseUrl !== undefined) await busyAcrossInstances(t, main.api, (await start()).api, place.databaseUrl)
    if (place.keeps) {
      t.test('across a restart on the same data, every kept answer replays and nothing is written again', async t => {
        const names = sent.filter(s => s.method === 'POST' && s.path === '/v1/authors').map(s => (s.call.body as { name: string }).name)
        const before = await Promise.all(names.map(name => count(main.api, 'authors', named(name))))
        await main.close()
        const { api } = await start()
        for (const { caller, method, path, call, first } of sent) {
          sameAnswer(t, first, await api(caller, method, path, call), `${caller} ${method} ${path} with ${call.key as string}`)
        }
        t.same(await Promise.all(names.map(name => count(api, 'authors', named(name)))), before, 'the collection is as it was')
        const created = await api('alice', 'POST', '/v1/authors', { body: { name: unique('After') }, key: `"after-${randomBytes(8).toString('hex')}"` })
        t.equal(created.status, 201, 'and the restarted demo takes new keys')
      })
    }
  })
}

type Send = (caller: string, method: string, path: string, call: Call) => Promise<Answer>

async function suite (t: Test, api: Api, send: Send) {
  t.test('a quoted key and its bare form are one key: the retry replays the first answer, and nothing is written twice', async t => {
    const name = unique('Ann')
    const key = `k-${randomBytes(8).toString('hex')}`
    const first = await send('alice', 'POST', '/v1/authors', { body: { name }, key: `"${key}"` })
    t.equal(first.status, 201)
    t.match(first.headers.get('location'), /^\/v1\/authors\/[^/]+$/)
    t.equal(first.headers.get('location'), `/v1/authors/${first.body.data.author.id as string}`)
    t.ok(first.headers.get('etag'), 'the first answer has an ETag')
    sameAnswer(t, first, await api('alice', 'POST', '/v1/authors', { body: { name }, key: `"${key}"` }), 'quoted again')
    sameAnswer(t, first, await api('alice', 'POST', '/v1/authors', { body: { name }, key }), 'the bare form')
    sameAnswer(t, first, await api('alice', 'POST', '/v1/authors', { body: { name }, key: `  "${key}"  ` }), 'with spaces around')
    t.equal(await count(api, 'authors', named(name)), 1, 'one record written')
    const escaped = await send('alice', 'POST', '/v1/authors', { body: { name: `${name} escaped` }, key: `"${key}\\"quoted\\\\"` })
    t.equal(escaped.status, 201, 'a quoted key with \\" and \\\\ escapes')
    t.not(escaped.headers.get('location'), first.headers.get('location'), 'is another key')
    sameAnswer(t, escaped, await api('alice', 'POST', '/v1/authors', { body: { name: `${name} escaped` }, key: `"${key}\\"quoted\\\\"` }), 'the escaped key again')
  })

  t.test('a key of 255 characters is taken; longer, empty or malformed is a 400 naming Idempotency-Key, and nothing is written', async t => {
    const stem = randomBytes(8).toString('hex')
    for (const [form, key] of [['quoted', `"${stem.padEnd(255, 'q')}"`], ['bare', stem.padEnd(255, 'b')]]) {
      const name = unique('Longest')
      const first = await send('alice', 'POST', '/v1/authors', { body: { name }, key })
      t.equal(first.status, 201, `255 characters, ${form}`)
      sameAnswer(t, first, await api('alice', 'POST', '/v1/authors', { body: { name }, key }), `255 characters, ${form}`)
    }
    const name = unique('Refused')
    const refused: Array<[string, string, RegExp]> = [
      ['256 characters, quoted', `"${stem.padEnd(256, 'q')}"`, /^must be at most 255 characters$/],
      ['256 characters, bare', stem.padEnd(256, 'b'), /^must be at most 255 characters$/],
      ['empty quotes', '""', /^must not be empty$/],
      ['an empty header', '', /structured-field string/],
      ['unterminated', `"${stem}`, /structured-field string/],
      ['a space in the bare form', `${stem} ${stem}`, /structured-field string/],
      ['a tab in quotes', `"${stem}\t${stem}"`, /structured-field string/],
      ['a backslash escaping a letter', `"${stem}\\n"`, /structured-field string/],
      ['a character outside ASCII', `"${stem}é"`, /structured-field string/],
      ['two keys in one header', `"${stem}", "${stem}"`, /structured-field string/]
    ]
    for (const [what, key, reason] of refused) {
      const res = await api('alice', 'POST', '/v1/authors', { body: { name }, key })
      t.equal(res.status, 400, what)
      t.match(res.headers.get('content-type'), /^application\/problem\+json/, `${what}: a problem`)
      t.match(res.body.invalidParams, [{ name: 'Idempotency-Key', reason }], `${what}: it names Idempotency-Key`)
    }
    t.equal(await count(api, 'authors', named(name)), 0, 'no refused request wrote anything')
    const author = await api('admin', 'POST', '/v1/authors', { body: { name } })
    const patch = await api('alice', 'PATCH', `/v1/authors/${author.body.data.author.id as string}`, { body: { country: 'NZ' }, key: '""' })
    t.same([patch.status, patch.body.invalidParams[0].name], [400, 'Idempotency-Key'], 'on PATCH too')
    t.equal((await api('admin', 'GET', `/v1/authors/${author.body.data.author.id as string}`)).headers.get('etag'), author.headers.get('etag'), 'and the record is unchanged')
  })

  t.test('the same key with another body is a 422 problem; nothing is written, and the first answer still replays', async t => {
    const [name, other] = [unique('First'), unique('Other')]
    const key = `"${randomBytes(8).toString('hex')}"`
    const first = await send('alice', 'POST', '/v1/authors', { body: { name }, key })
    t.equal(first.status, 201)
    for (const body of [{ name: other }, { name, country: 'NZ' }]) {
      const res = await api('alice', 'POST', '/v1/authors', { body, key })
      t.equal(res.status, 422, JSON.stringify(body))
      t.match(res.headers.get('content-type'), /^application\/problem\+json/)
      t.match(res.body, { status: 422, detail: /another request body/ })
      t.equal(res.headers.get('idempotent-replayed'), null)
    }
    t.same([await count(api, 'authors', named(name)), await count(api, 'authors', named(other))], [1, 0], 'only the first request wrote')
    sameAnswer(t, first, await api('alice', 'POST', '/v1/authors', { body: { name }, key }), 'the first body again')
  })

  t.test("another caller's identical key is another key, and so is the same key on another method or path", async t => {
    const name = unique('Shared')
    const key = `"${randomBytes(8).toString('hex')}"`
    const alice = await send('alice', 'POST', '/v1/authors', { body: { name }, key })
    const bob = await send('bob', 'POST', '/v1/authors', { body: { name }, key })
    t.same([alice.status, bob.status], [201, 201])
    t.equal(bob.headers.get('idempotent-replayed'), null, "bob's request runs")
    t.not(bob.headers.get('location'), alice.headers.get('location'), 'a record of its own')
    t.equal(await count(api, 'authors', named(name)), 2)
    sameAnswer(t, alice, await api('alice', 'POST', '/v1/authors', { body: { name }, key }), 'alice again')
    sameAnswer(t, bob, await api('bob', 'POST', '/v1/authors', { body: { name }, key }), 'bob again')
    t.equal(await count(api, 'authors', named(name)), 2, 'still two')
    const book = await send('alice', 'POST', '/v1/books', { body: { title: name, authorId: alice.body.data.author.id }, key })
    t.same([book.status, book.headers.get('idempotent-replayed')], [201, null], 'the same key on another path runs')
    const patch = await send('alice', 'PATCH', alice.headers.get('location') as string, { body: { country: 'NZ' }, key })
    t.same([patch.status, patch.headers.get('idempotent-replayed'), patch.body.data.author.country], [200, null, 'NZ'], 'and on another method')
  })

  t.test('PATCH: the retry replays the first answer, and the change is written once', async t => {
    const created = await api('admin', 'POST', '/v1/authors', { body: { name: unique('Patched') } })
    const path = created.headers.get('location') as string
    const key = `"${randomBytes(8).toString('hex')}"`
    const first = await send('alice', 'PATCH', path, { body: { country: 'NZ' }, key })
    t.equal(first.status, 200)
    t.equal(first.body.data.author.country, 'NZ')
    t.not(first.headers.get('etag'), created.headers.get('etag'), 'the PATCH made a new version')
    sameAnswer(t, first, await api('alice', 'PATCH', path, { body: { country: 'NZ' }, key }), 'PATCH again')
    t.equal((await api('admin', 'GET', path)).headers.get('etag'), first.headers.get('etag'), 'one write: the version is the first answer\'s')
    // Someone else changes the record; the retry still gets the kept answer and does not write over the change.
    const later = await api('admin', 'PATCH', path, { body: { country: 'PL' } })
    t.equal(later.status, 200)
    sameAnswer(t, first, await api('alice', 'PATCH', path, { body: { country: 'NZ' }, key }), 'PATCH again after another change')
    const now = await api('admin', 'GET', path)
    t.same([now.body.data.author.country, now.headers.get('etag')], ['PL', later.headers.get('etag')], 'the later change stands')
    const other = await api('alice', 'PATCH', path, { body: { country: 'DE' }, key })
    t.equal(other.status, 422, 'another body under the key')
    t.equal((await api('admin', 'GET', path)).body.data.author.country, 'PL')
  })

  t.test("reviews: alice's keyed CREATE replays, and the book's reviewCount moves once", async t => {
    const bookId = await newBook(api)
    const key = `"${randomBytes(8).toString('hex')}"`
    const before = await bookState(api, bookId)
    const first = await send('alice', 'POST', '/v1/reviews', { body: { bookId, rating: 4 }, key })
    t.equal(first.status, 201)
    t.match(first.body.data.review, { bookId, rating: 4, ownerId: 'alice' })
    const after = await bookState(api, bookId)
    t.equal(after.reviewCount, 1)
    t.not(after.etag, before.etag, 'the book\'s version moved with the review')
    // Run again, a second review by alice of this book would be a 409: the retry gets the kept 201.
    sameAnswer(t, first, await api('alice', 'POST', '/v1/reviews', { body: { bookId, rating: 4 }, key }), 'the review again')
    t.same(await bookState(api, bookId), after, 'reviewCount and the book\'s ETag did not move again')
    t.equal(await count(api, 'reviews', `bookId eq '${bookId}'`), 1)
    const bob = await send('bob', 'POST', '/v1/reviews', { body: { bookId, rating: 4 }, key })
    t.same([bob.status, bob.headers.get('idempotent-replayed'), bob.body.data.review.ownerId], [201, null, 'bob'], "bob's identical key runs")
    t.equal((await bookState(api, bookId)).reviewCount, 2)
    const other = await api('alice', 'POST', '/v1/reviews', { body: { bookId, rating: 5 }, key })
    t.equal(other.status, 422, 'another body under alice\'s key')
    t.equal((await bookState(api, bookId)).reviewCount, 2)
  })
}

/**
 * 409 while the first request runs, on PostgreSQL with a second demo instance on the database: the
 * test holds the book's row, so alice's keyed review (which locks that row) waits inside its
 * transaction, holding the key. Meanwhile the same key is a 409 on either instance; once the row
 * is let go, the first request finishes, and the retries on both instances replay it.
 */
async function busyAcrossInstances (t: Test, api: Api, other: Api, databaseUrl: string) {
  t.test('a key whose first request is still running is a 409 problem, on this instance and on another one', async t => {
    const bookId = await newBook(api)
    const holder = new pg.Client({ connectionString: databaseUrl })
    const watcher = new pg.Client({ connectionString: databaseUrl })
    await Promise.all([holder.connect(), watcher.connect()])
    t.teardown(async () => { await holder.end(); await watcher.end() })
    const { rows: [{ pid }] } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
    await holder.query('BEGIN')
    await holder.query('SELECT id FROM books WHERE id = $1 FOR UPDATE', [bookId])
    const key = `"${randomBytes(8).toString('hex')}"`
    const body = { bookId, rating: 3 }
    const running = api('alice', 'POST', '/v1/reviews', { body, key })
    // The first request is inside its transaction, holding the key, once it waits for the held row.
    const waiting = async () => (await watcher.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))', [pid])).rows[0].n
    for (let tries = 0; await waiting() === 0; tries++) {
      if (tries === 500) throw new Error('the keyed review never waited for the held book row')
      await sleep(20)
    }
    for (const [where, on] of [['this instance', api], ['another instance', other]] as const) {
      const busy = await on('alice', 'POST', '/v1/reviews', { body, key })
      t.equal(busy.status, 409, where)
      t.match(busy.headers.get('content-type'), /^application\/problem\+json/)
      t.match(busy.body, { status: 409, detail: /still being processed/ }, `${where}: a problem saying why`)
    }
    await holder.query('COMMIT')
    const first = await running
    t.equal(first.status, 201, 'the first request finishes once the row is let go')
    sameAnswer(t, first, await other('alice', 'POST', '/v1/reviews', { body, key }), 'the retry on the other instance')
    sameAnswer(t, first, await api('alice', 'POST', '/v1/reviews', { body, key }), 'the retry on this instance')
    t.equal((await bookState(api, bookId)).reviewCount, 1, 'one review counted')
    t.equal(await count(other, 'reviews', `bookId eq '${bookId}'`), 1, 'one review written')
  })
}
