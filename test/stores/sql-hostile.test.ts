// Hostile input to the SQL store: filter, sort, fields, simple filters, ids and bodies full of
// quotes, semicolons, comments, wildcards, unicode or sheer length are answered with 400 or with
// the correct literal match (the memory store's answer), never a 500, never executed as SQL. Text
// PostgreSQL cannot keep exactly (NUL, unpaired surrogates) is refused, never altered. On PGlite,
// and on PostgreSQL when DATABASE_URL is set.
import t from 'tap'
import type { Test as Tap } from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildApp, create, json } from '../helpers/app.js'
import { pgliteStore, postgresStore } from '../../lib/stores/sql/index.js'
import type { Store } from '../../lib/stores/store.js'
import { listQuery, suiteModels } from './conformance.js'
import { openPglite } from './pglite-db.js'
import { runSchemas } from './run-schemas.js'

/** A store on a fresh schema named after `base`, closed by whoever holds it. */
type OpenStore = (base: string) => Promise<Store>

const titles = [
  "Robert'); DROP TABLE books;--",
  'plain',
  '100% _real_ \\escaped\\',
  '/* comment */ -- too',
  'Ünïcödé 𝄞 ✓ עברית',
  '"double" \'single\''
]

async function seeded (t: Tap, app: FastifyInstance) {
  const author = await create(app, 'authors', { name: "O'Hara; SELECT 1", country: 'NZ' })
  for (const title of titles) await create(app, 'books', { title, authorId: author.id, year: 2000 })
  t.pass('seeded')
}

const long = 'x'.repeat(1900)
const urls = [
  `/v1/books?filter=${encodeURIComponent("title eq 'Robert''); DROP TABLE books;--'")}`,
  `/v1/books?filter=${encodeURIComponent("title eq 'x''; DROP TABLE books; --'")}`,
  `/v1/books?filter=${encodeURIComponent("title eq '\"; SELECT pg_sleep(10); --'")}`,
  `/v1/books?filter=${encodeURIComponent("contains(title, '%')")}`,
  `/v1/books?filter=${encodeURIComponent("contains(title, '_')")}`,
  `/v1/books?filter=${encodeURIComponent("contains(title, '\\')")}`,
  `/v1/books?filter=${encodeURIComponent("startswith(title, '/*')")}`,
  `/v1/books?filter=${encodeURIComponent("endswith(title, '--')")}`,
  `/v1/books?filter=${encodeURIComponent("contains(title, '𝄞')")}`,
  `/v1/books?filter=${encodeURIComponent("tolower(title) eq 'ünïcödé 𝄞 ✓ עברית'")}`,
  `/v1/books?filter=${encodeURIComponent("author/name eq 'O''Hara; SELECT 1'")}`,
  `/v1/books?filter=${encodeURIComponent(`title eq '${long}'`)}`,
  `/v1/books?filter=${encodeURIComponent(`title eq '${'y'.repeat(5000)}'`)}`,
  `/v1/books?filter=${encodeURIComponent('title eq title; DROP TABLE books')}`,
  `/v1/books?filter=${encodeURIComponent('year eq 2000) OR (1=1')}`,
  `/v1/books?filter=${encodeURIComponent('"title" eq \'plain\'')}`,
  `/v1/books?filter=${encodeURIComponent("title eq 'plain' -- comment")}`,
  `/v1/books?filter=${encodeURIComponent('pg_sleep(10) eq 1')}`,
  `/v1/books?title=${encodeURIComponent("' OR 1=1 --")}`,
  `/v1/books?title=${encodeURIComponent("Robert'); DROP TABLE books;--")}`,
  `/v1/books?title=${encodeURIComponent('y'.repeat(8000))}`,
  `/v1/books?year=${encodeURIComponent('2000 OR 1=1')}`,
  `/v1/books?author.name=${encodeURIComponent("O'Hara; SELECT 1")}`,
  `/v1/books?author.country=${encodeURIComponent("NZ' OR '1'='1")}`,
  `/v1/books?sort=${encodeURIComponent('title;DROP TABLE books')}`,
  `/v1/books?sort=${encodeURIComponent('-"title"')}`,
  `/v1/books?sort=${encodeURIComponent('title desc')}`,
  `/v1/books?sort=${encodeURIComponent('-title,year')}`,
  `/v1/books?fields=${encodeURIComponent('title,"; DROP TABLE books')}`,
  `/v1/books?fields=${encodeURIComponent('title) FROM books; --')}`,
  `/v1/books/${encodeURIComponent("'; DROP TABLE books; --")}`,
  `/v1/books/${encodeURIComponent('1 OR 1=1')}`,
  '/v1/books/%00',
  `/v1/books?filter=${encodeURIComponent("title eq 'nul\u0000'")}`,
  `/v1/books?title=${encodeURIComponent('nul\u0000')}`
]

/** The client's view with server-assigned ids left out, since the two apps assign different ones. */
function view (body: Record<string, unknown>): unknown {
  const data = body.data as Record<string, unknown> | undefined
  const items = (data?.books ?? data?.items ?? (Array.isArray(data) ? data : undefined)) as Array<Record<string, unknown>> | undefined
  if (items !== undefined) return items.map(({ title, year }) => ({ title, year }))
  return { status: body.status, invalidParams: (body.invalidParams as Array<{ name: string }> | undefined)?.map(p => p.name) }
}

function hostileSuite (t: Tap, open: OpenStore): void {
  t.test('hostile query values get the memory store\'s answer or a 400, never a 500, and run nothing', async t => {
    const memoryApp = await buildApp(t)
    const sqlStore = await open('hostile')
    t.teardown(() => sqlStore.close())
    const sqlApp = await buildApp(t, { store: sqlStore })
    await seeded(t, memoryApp)
    await seeded(t, sqlApp)
    let matched = 0
    for (const url of urls) {
      const [expected, actual] = await Promise.all([memoryApp.inject({ url }), sqlApp.inject({ url })])
      t.ok(actual.statusCode < 500, `${url.slice(0, 120)} is not a 5xx (${actual.statusCode})`)
      t.equal(actual.statusCode, expected.statusCode, url.slice(0, 120))
      t.same(view(actual.json()), view(expected.json()), url.slice(0, 120))
      if (Array.isArray(view(expected.json())) && (view(expected.json()) as unknown[]).length > 0) matched++
    }
    t.ok(matched >= 10, `${matched} hostile queries found their literal matches`)
    const res = await sqlApp.inject({ url: '/v1/books?total=true' })
    t.equal(res.json().meta.total, titles.length, 'every table and row is still there')
    const filtered = await sqlApp.inject({ url: `/v1/books?filter=${encodeURIComponent("title eq 'nul\u0000'")}` })
    t.match(filtered.json(), { status: 400, invalidParams: [{ name: 'filter' }] })
  })

  t.test('hostile strings in bodies are stored and read back exactly; what PostgreSQL cannot hold is 422 naming the field', async t => {
    const store = await open('hostile_bodies')
    t.teardown(() => store.close())
    const app = await buildApp(t, { store })
    const author = await create(app, 'authors', { name: "x'); DELETE FROM authors; --" })
    for (const title of titles) {
      const book = await create(app, 'books', { title, authorId: author.id })
      const res = await app.inject({ url: `/v1/books/${book.id}` })
      t.equal(res.json().data.book.title, title)
      const found = await app.inject({ url: `/v1/books?filter=${encodeURIComponent(`title eq '${title.replaceAll("'", "''")}'`)}` })
      t.same(found.json().data.books.map((b: { id: string }) => b.id), [book.id], `a filter finds ${JSON.stringify(title)} literally`)
    }
    const nul = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload: { title: 'a\u0000b', authorId: author.id } })
    // Refused at the edge for every store alike (400); the store's own 422 is the next test's.
    t.equal(nul.statusCode, 400)
    t.match(nul.json(), { invalidParams: [{ name: 'title', reason: /NUL/ }] })
    const huge = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload: '{"title":"t","authorId":"' + author.id + '","year":100000000000000000000}' })
    t.equal(huge.statusCode, 422)
    t.match(huge.json(), { invalidParams: [{ name: 'year' }] })
  })

  t.test('an unpaired surrogate in a body is refused naming the field, never stored as U+FFFD', async t => {
    const store = await open('hostile_surrogates')
    t.teardown(() => store.close())
    const app = await buildApp(t, { store })
    const author = await create(app, 'authors', { name: 'A' })
    const book = await create(app, 'books', { title: 'kept', authorId: author.id })
    // The body check answers 400 before the store sees it; the store's own 422 is the next test's.
    const expected = { invalidParams: [{ name: 'title', reason: /surrogate/ }] }
    for (const title of ['\\ud800', 'a\\udfffb', '\\udc00\\ud800', '😀\\ud83d']) {
      const body = `{"title":"${title}","authorId":"${author.id}"}`
      const created = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload: body })
      t.ok([400, 422].includes(created.statusCode), `POST ${title}: ${created.statusCode}`)
      t.match(created.json(), { status: created.statusCode, ...expected })
      const replaced = await app.inject({ method: 'PUT', url: `/v1/books/${book.id}`, headers: json, payload: body })
      t.ok([400, 422].includes(replaced.statusCode), `PUT ${title}: ${replaced.statusCode}`)
      t.match(replaced.json(), { status: replaced.statusCode, ...expected })
    }
    const paired = await create(app, 'books', { title: '😀 \ud83d\ude00', authorId: author.id })
    t.equal(paired.title, '😀 😀', 'a surrogate pair is one character and stays')
    const res = await app.inject({ url: '/v1/books?total=true' })
    t.same(res.json().data.books.map((b: { title: string }) => b.title), ['kept', '😀 😀'], 'nothing else was stored, as U+FFFD or otherwise')
  })

  t.test('text PostgreSQL cannot keep exactly is 422 naming the field, never altered, in strings and JSON', async t => {
    const store = await open('hostile_json')
    t.teardown(() => store.close())
    const { authors, books } = suiteModels(store)
    await store.create(authors, { id: 'a', name: 'A', born: null, country: null })
    const book = { id: 'b', title: 'B', authorId: 'a', editorId: null, year: null, rating: null, published: null }
    const surrogate = { statusCode: 422, code: 'API_ERR_UNPROCESSABLE', invalidParams: [{ name: 'title', reason: 'cannot contain an unpaired UTF-16 surrogate (\\uD800-\\uDFFF)' }] }
    for (const title of ['\ud800', 'a\udfffb', '\udc00\ud800', '😀\ud83d']) {
      await t.rejects(store.create(books, { ...book, title }), surrogate, `create ${JSON.stringify(title)}`)
    }
    await store.create(books, { ...book, id: 'kept' })
    await t.rejects(store.update(books, 'kept', { ...book, id: 'kept', title: 'x\udbff' }), surrogate, 'update')
    t.equal((await store.get(books, 'kept'))?.data.title, 'B')
    await store.remove(books, 'kept')
    for (const [meta, reason] of [
      [{ text: 'nul \u0000' }, /NUL/],
      [{ list: [1, ['deep \ud800']] }, /surrogate/],
      [{ 'key \udc00': true }, /surrogate/],
      [['\u0000'], /NUL/]
    ] as const) {
      await t.rejects(store.create(books, { ...book, meta }), { statusCode: 422, code: 'API_ERR_UNPROCESSABLE', invalidParams: [{ name: 'meta', reason }] }, JSON.stringify(meta))
    }
    // Deeper than the call stack: the check walks the value without recursion.
    let deep: unknown = 'bottom \u0000'
    for (let level = 0; level < 200_000; level++) deep = [deep]
    await t.rejects(store.create(books, { ...book, meta: deep }), { statusCode: 422, code: 'API_ERR_UNPROCESSABLE', invalidParams: [{ name: 'meta', reason: /NUL/ }] }, 'NUL 200,000 levels deep')
    await t.rejects(store.create(authors, { id: 'y0', name: 'Y', born: '0000-01-01', country: null }), { statusCode: 422, code: 'API_ERR_UNPROCESSABLE', invalidParams: [{ name: 'born' }] }, 'year 0 exists in ISO 8601, not in PostgreSQL')
    t.same((await store.list(books, listQuery(books))).items, [])
    // The HTTP layer refuses NUL in a filter before the store; a direct caller's reaches PostgreSQL,
    // which cannot compare it: a 400 naming the filter, not a 500.
    await t.rejects(store.list(books, listQuery(books, { filter: "title eq 'nul\u0000'" })), { statusCode: 400, code: 'API_ERR_QUERY_INVALID', invalidParams: [{ name: 'filter' }] })
    const kept = await store.create(books, { ...book, meta: { '😀': ['\ud83d\ude00', 'ok'] } })
    t.same(kept.data.meta, { '😀': ['😀', 'ok'] }, 'paired surrogates in JSON are kept')
  })
}

const db = await openPglite()
t.teardown(() => db.close())
t.test('on PGlite', async t => hostileSuite(t, async base => await pgliteStore({ db, schema: base })))

const connectionString = process.env.DATABASE_URL
t.test('on PostgreSQL', { skip: connectionString === undefined ? 'DATABASE_URL is not set (the PGlite run covers the same cases)' : false }, async t => {
  const { prefix } = runSchemas(t, connectionString)
  hostileSuite(t, async base => await postgresStore({ connectionString, schema: `${prefix}_${base}` }))
})
