// Exports and estimated counts (docs/export.md; demo contract "Reading more than a page": Counts on
// big tables, Export), over HTTP against the demo on each store: memory, PGlite, and PostgreSQL
// when DATABASE_URL is set (a schema of its own). An export holds the same records as paging
// through the LIST; CSV quotes as RFC 4180 and defuses formulas; the caller's rules apply; on
// PostgreSQL a client that leaves mid-export ends the database's read, and total=estimated gives
// the planner's estimate from 10,000 rows.
import { request as httpRequest } from 'node:http'
import pg from 'pg'
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { defineResource, memoryStore } from '../lib/index.js'
import { buildApp } from './helpers/app.js'
import { placeFor, places } from './helpers/demo-http.js'
import type { Api } from './helpers/demo-http.js'

const ndjson = { accept: 'application/x-ndjson' }
const csv = { accept: 'text/csv' }
const tokens: Record<string, string> = { reader: 'read-token', bob: 'bob-token', admin: 'admin-token' }

interface Download { readonly status: number, readonly headers: Headers, readonly text: string }
/** An answer as text (the demo client reads every answer as JSON). */
const downloader = (base: string) => async (caller: string, path: string, headers: Record<string, string>): Promise<Download> => {
  const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${tokens[caller]}`, ...headers } })
  return { status: res.status, headers: res.headers, text: await res.text() }
}

const titles = ['=SUM(A1:A9)', '+1 more', '-minus', '@at', '\tTabbed', '\rReturned', 'Comma, and "quotes"', 'Line\nbreak', 'Plain', 'Zebra']

/** Every item of a LIST, following its next links. */
async function pagedThrough (api: Api, caller: string, path: string): Promise<Array<Record<string, unknown>>> {
  const items: Array<Record<string, unknown>> = []
  let next: string | undefined = path
  while (next !== undefined) {
    const answer = await api(caller, 'GET', next)
    if (answer.status !== 200) throw new Error(`${next}: ${answer.status} ${answer.text}`)
    const resource = Object.keys(answer.body.data).find(key => Array.isArray(answer.body.data[key])) as string
    items.push(...answer.body.data[resource])
    const link = (answer.body.links as Array<{ rel: string, href: string }>).find(one => one.rel === 'next')
    next = link === undefined ? undefined : link.href.replace(/^https?:\/\/[^/]+/, '')
  }
  return items
}

const lines = (text: string) => text.split('\n').filter(line => line !== '').map(line => JSON.parse(line))

/** The test's own reading of RFC 4180 (what a spreadsheet does): quoted cells may hold commas, quotes doubled, line breaks. */
function parseCsv (text: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let cell = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { cell += '"'; i++ } else if (c === '"') quoted = false
      else cell += c
    } else if (c === '"') quoted = true
    else if (c === ',') { row.push(cell); cell = '' } else if (c === '\r' && text[i + 1] === '\n') { row.push(cell); rows.push(row); row = []; cell = ''; i++ } else cell += c
  }
  if (cell !== '' || row.length > 0) { row.push(cell); rows.push(row) }
  return rows
}

for (const where of places('export')) {
  t.test(`exports on ${where.name}`, { skip: where.skip }, async t => {
    const { start } = await placeFor(t, where)
    const { api, base } = await start()
    const download = downloader(base)
    const author = (await api('admin', 'POST', '/v1/authors', { body: { name: 'Exporter', country: 'NZ' } })).body.data.author
    for (const [i, title] of titles.entries()) {
      const created = await api('admin', 'POST', '/v1/books', { body: { title, authorId: author.id, year: i === 3 ? null : 1950 + (i % 4), rating: i / 2 } })
      t.equal(created.status, 201, created.text)
    }
    const query = `filter=${encodeURIComponent('year ge 1950 or year eq null')}&sort=-year,title&fields=title,year`

    t.test('NDJSON holds the records paging through the LIST gives, in order, pageSize and total ignored', async t => {
      const paged = await pagedThrough(api, 'reader', `/v1/books?${query}&pageSize=3`)
      t.equal(paged.length, titles.length)
      const answer = await download('reader', `/v1/books?${query}&pageSize=3&offset=2&total=true`, ndjson)
      t.equal(answer.status, 200)
      t.match(answer.headers.get('content-type'), /^application\/x-ndjson/)
      t.same(lines(answer.text), paged)
      t.ok(answer.text.endsWith('\n'), 'every line ends')
    })

    t.test('CSV: a header row of the fields, RFC 4180 quoting, formulas defused', async t => {
      const paged = await pagedThrough(api, 'reader', `/v1/books?${query}`)
      const answer = await download('reader', `/v1/books?${query}`, csv)
      t.equal(answer.status, 200)
      t.match(answer.headers.get('content-type'), /^text\/csv/)
      const rows = parseCsv(answer.text)
      t.same(rows[0], ['id', 'title', 'authorId', 'year'], 'the required authorId comes too, as in the LIST')
      t.same(rows.slice(1), paged.map(book => {
        const text = String(book.title)
        return [String(book.id), /^[=+\-@\t\r]/.test(text) ? `'${text}` : text, String(book.authorId), book.year === null ? '' : String(book.year)]
      }))
      t.ok(answer.text.includes('"Comma, and ""quotes"""'), 'a comma and quotes are quoted, the quotes doubled')
      t.ok(answer.text.includes('"Line\nbreak"'), 'a line break is quoted')
      t.ok(answer.text.includes("'=SUM(A1:A9)"), 'a formula is prefixed')
      t.ok(answer.text.startsWith('id,title,authorId,year\r\n'), 'CRLF line ends')
    })

    t.test('CSV of every field: numbers as numbers, an empty cell for null', async t => {
      const answer = await download('reader', '/v1/books?sort=title&filter=title eq \'Plain\'', csv)
      const rows = parseCsv(answer.text)
      t.same(rows[0], ['id', 'title', 'authorId', 'year', 'rating', 'available', 'reviewCount', 'averageRating'])
      t.same(rows.slice(1).map(row => row.slice(1)), [['Plain', author.id, '1950', '4', 'true', '0', '']], 'booleans as true and false')
    })

    t.test('the caller\'s rules apply: rows and fields', async t => {
      const book = (await api('reader', 'GET', '/v1/books?title=Plain')).body.data.books[0]
      const own = await api('alice', 'POST', '/v1/reviews', { body: { bookId: book.id, rating: 4, text: 'mine, private', private: true } })
      const other = (await api('reader', 'GET', '/v1/books?title=Zebra')).body.data.books[0]
      const open = await api('alice', 'POST', '/v1/reviews', { body: { bookId: other.id, rating: 5, text: '=open' } })
      t.equal(own.status, 201)
      t.equal(open.status, 201)
      t.equal((await api('admin', 'PATCH', `/v1/reviews/${open.body.data.review.id as string}`, { body: { moderatorNote: 'checked' } })).status, 200)
      const bobs = lines((await download('bob', '/v1/reviews', ndjson)).text)
      t.same(bobs.map(review => review.id), [open.body.data.review.id], 'bob does not get alice\'s private review')
      t.notOk('moderatorNote' in bobs[0], 'nor the moderator\'s note')
      t.same(bobs, await pagedThrough(api, 'bob', '/v1/reviews'))
      const admins = parseCsv((await download('admin', '/v1/reviews?sort=rating', csv)).text)
      t.ok(admins[0].includes('moderatorNote'), 'an admin gets the note')
      t.equal(admins.length, 3, 'and every review')
      const bobsCsv = parseCsv((await download('bob', '/v1/reviews', csv)).text)
      t.notOk(bobsCsv[0].includes('moderatorNote'))
      t.equal(bobsCsv[1][bobsCsv[0].indexOf('text')], "'=open")
    })

    t.test('nested collections export too; a wildcard still gets JSON; refusals are problems', async t => {
      const nested = await download('reader', `/v1/authors/${author.id as string}/books?sort=title&fields=title`, ndjson)
      t.same(lines(nested.text).map(book => book.title), [...titles].sort())
      t.match((await api('reader', 'GET', '/v1/books', { headers: { accept: '*/*' } })).headers.get('content-type'), /^application\/json/)
      const expand = await download('reader', '/v1/books?expand=author', csv)
      t.equal(expand.status, 400)
      t.same(JSON.parse(expand.text).invalidParams.map((p: { name: string }) => p.name), ['expand'])
      const bad = await download('reader', '/v1/books?filter=nope eq 1', ndjson)
      t.equal(bad.status, 400)
      t.match(bad.headers.get('content-type'), /^application\/problem\+json/)
      t.equal((await download('reader', '/v1/authors/x', csv)).status, 406, 'RETRIEVE does not export')
    })

    t.test('total=estimated counts exactly below 10,000, without the flag; a bad value is a 400 naming total', async t => {
      const answer = await api('reader', 'GET', '/v1/books?total=estimated&pageSize=2')
      t.equal(answer.status, 200)
      t.same(answer.body.meta, { pageSize: 2, total: titles.length })
      t.match((answer.body.links as Array<{ rel: string, href: string }>).find(link => link.rel === 'next')?.href, /total=estimated/)
      const bad = await api('reader', 'GET', '/v1/books?total=roughly')
      t.equal(bad.status, 400)
      t.same(bad.body.invalidParams.map((p: { name: string }) => p.name), ['total'])
    })
  })
}

t.test('on PostgreSQL with 40,000 books', { skip: places('export')[2].skip }, async t => {
  const where = places('export')[2]
  const { place, start } = await placeFor(t, where)
  const { api, base } = await start()
  const download = downloader(base)
  const author = (await api('admin', 'POST', '/v1/authors', { body: { name: 'Prolific' } })).body.data.author
  const seed = await api('admin', 'POST', '/v1/books', { body: { title: 'first', authorId: author.id, year: 1 } })
  t.equal(seed.status, 201)
  const db = new pg.Pool({ connectionString: place.databaseUrl, max: 2 })
  t.teardown(() => db.end())
  // One statement, into the fresh schema the demo's tables are in.
  // Long titles, so that an export outgrows what the sockets' buffers hold (the test of a client that leaves).
  await db.query(`INSERT INTO books (id, title, "authorId", year, available, "reviewCount", version, modified_at)
    SELECT 'bulk-' || lpad(g::text, 6, '0'), 'Bulk book ' || g || repeat(' and more', 40), $1, 1900 + g % 100, true, 0, 1, now() FROM generate_series(1, 39999) AS g`, [author.id])
  // The row count the estimate reads; a column list leaves out the search index's expression,
  // whose statistics would take half a minute to gather on these long titles.
  await db.query('ANALYZE books (id)')

  t.test('total=estimated is the planner\'s estimate, flagged; total=true stays exact', async t => {
    const estimated = await api('reader', 'GET', '/v1/books?total=estimated&pageSize=1')
    t.equal(estimated.status, 200)
    t.equal(estimated.body.meta.totalEstimated, true)
    t.ok(estimated.body.meta.total >= 10_000 && estimated.body.meta.total <= 80_000, `an estimate near 40,000: ${String(estimated.body.meta.total)}`)
    t.same((await api('reader', 'GET', '/v1/books?total=true&pageSize=1')).body.meta, { pageSize: 1, total: 40_000 })
    const few = await api('reader', 'GET', `/v1/books?total=estimated&pageSize=1&filter=${encodeURIComponent("title eq 'first'")}`)
    t.same(few.body.meta, { pageSize: 1, total: 1 }, 'a small estimate is counted exactly')
  })

  t.test('an export of every book, then a client that leaves mid-export ends the read', async t => {
    const all = await download('reader', '/v1/books?fields=title', ndjson)
    t.equal(lines(all.text).length, 40_000)
    const openCursors = async () => Number((await db.query("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'FETCH % FROM api_export' AND state LIKE 'idle in transaction%'")).rows[0].count)
    const until = async (holds: () => Promise<boolean>) => {
      for (let i = 0; i < 100; i++) {
        if (await holds()) return true
        await new Promise(resolve => setTimeout(resolve, 50))
      }
      return false
    }
    // Read the first bytes, then stop reading: the server waits on the full socket, its cursor open.
    const url = new URL('/v1/books', base)
    const response = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
      httpRequest(url, { headers: { ...ndjson, authorization: 'Bearer read-token' } }, resolve).on('error', reject).end()
    })
    t.equal(response.statusCode, 200)
    await new Promise(resolve => response.once('data', resolve))
    response.pause()
    t.ok(await until(async () => await openCursors() === 1), 'mid-export: the cursor is open in its transaction',
      { sessions: (await db.query("SELECT state, query FROM pg_stat_activity WHERE query LIKE '%api_export%'")).rows })
    response.destroy()
    t.ok(await until(async () => await openCursors() === 0), 'the client gone, the cursor is closed and the transaction over')
    const after = await api('reader', 'GET', '/v1/books?pageSize=1&total=true')
    t.equal(after.status, 200, 'the next request is served')
    t.equal(after.body.meta.total, 40_000)
  })
})

// A store without an export of its own (the memory store) is read page after page; JSON fields go
// into CSV cells as JSON text.
const Sheet = Type.Object({
  id: Type.Readonly(Type.String()),
  page: Type.Integer(),
  // Never given: a sort by it pages through values that are all absent.
  note: Type.Optional(Type.String()),
  body: Type.Union([Type.Object({ tags: Type.Array(Type.String()) }), Type.Array(Type.Integer())])
}, { additionalProperties: false })

t.test('a store without its own export: every page of its LIST in order, JSON cells as JSON text, an empty export', async t => {
  const store = memoryStore()
  t.equal(store.exportList, undefined, 'the memory store pages')
  const app = await buildApp(t, { store, resources: store => [defineResource({ name: 'sheets', singular: 'sheet', schema: Sheet, store })] })
  // More than one page of the store's (500), made through the API.
  const count = 1203
  for (let page = 0; page < count; page++) {
    const res = await app.inject({ method: 'POST', url: '/v1/sheets', payload: { page, body: page % 2 === 0 ? { tags: ['a', `n${page}`] } : [page, 1] } })
    if (res.statusCode !== 201) throw new Error(res.body)
  }
  const exported = await app.inject({ url: '/v1/sheets?sort=-page', headers: ndjson })
  t.equal(exported.statusCode, 200)
  t.same(lines(exported.body).map(sheet => sheet.page), Array.from({ length: count }, (_, i) => count - 1 - i), 'every record once, in order, across the pages')
  const byAbsent = await app.inject({ url: '/v1/sheets?sort=note', headers: ndjson })
  t.equal(new Set(lines(byAbsent.body).map(sheet => sheet.id)).size, count, 'sorted by a field no record has: every record once, across the pages')
  const table = await app.inject({ url: '/v1/sheets?sort=page&filter=page lt 2', headers: csv })
  t.same(parseCsv(table.body).map(row => row.slice(1)), [['page', 'note', 'body'], ['0', '', '{"tags":["a","n0"]}'], ['1', '', '[1,1]']])
  const none = await app.inject({ url: '/v1/sheets?filter=page lt 0', headers: csv })
  t.equal(none.statusCode, 200)
  t.equal(none.body, 'id,page,note,body\r\n', 'nothing matches: the header row alone')
  const noLines = await app.inject({ url: '/v1/sheets?filter=page lt 0', headers: ndjson })
  t.equal(noLines.body, '', 'nothing matches: no line')
})
