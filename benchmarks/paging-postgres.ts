// Paging on PostgreSQL (spec "Paging stability" 4): 1,000,000 books in a fresh schema, LIST with a
// filter and a sort through the whole plugin (inject) on the SQL store, timing pages 1 to 1,000 by
// token (keyset) and by offset. Keyset must stay flat; OFFSET reads and discards every row before
// it.
// Usage (needs DATABASE_URL): node dist/benchmarks/paging-postgres.js [--quick]; a table, then JSON.
import { pathToFileURL } from 'node:url'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import { withFreshSchema } from './server.js'

// PAGING_QUERY overrides the query, e.g. to compare sort shapes (a nullable first key splits each page at its NULL group).
const query = process.env.PAGING_QUERY ?? 'filter=year%20ge%202000&sort=-rating'
const headers = { authorization: 'Bearer dev-token', accept: 'application/json' }
const pageSize = 20

export interface PostgresPagingResult {
  readonly books: number
  readonly query: string
  /** Median milliseconds per page of 20, by page number. */
  readonly pages: ReadonlyArray<{ readonly page: number, readonly tokenMs: number, readonly offsetMs: number }>
  /** Page `deepest` ÷ page 1, each mode. */
  readonly tokenRatio: number
  readonly offsetRatio: number
}

async function get (app: FastifyInstance, url: string) {
  const response = await app.inject({ url, headers })
  if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${response.body}`)
  return response.json() as { data: { books: unknown[] }, links: Array<{ rel: string, href: string }> }
}

/** The `next` href after each listed page, by walking the pages in order. */
async function nextLinks (app: FastifyInstance, pages: readonly number[]): Promise<Map<number, string>> {
  const links = new Map<number, string>()
  let url = `/v1/books?${query}&pageSize=${pageSize}`
  for (let page = 1; page < Math.max(...pages); page++) {
    const next = (await get(app, url)).links.find(link => link.rel === 'next')
    if (next === undefined) throw new Error(`fewer than ${page + 1} pages match`)
    url = next.href
    if (pages.includes(page + 1)) links.set(page + 1, url)
  }
  return links
}

async function medianMs (app: FastifyInstance, url: string, times: number): Promise<number> {
  const samples: number[] = []
  for (let i = 0; i < times; i++) {
    const start = process.hrtime.bigint()
    const body = await get(app, url)
    samples.push(Number(process.hrtime.bigint() - start) / 1e6)
    if (body.data.books.length !== pageSize) throw new Error(`${url}: a short page`)
  }
  samples.sort((a, b) => a - b)
  return samples[samples.length >> 1]
}

/** Authors and books straight into the tables the store made (its own DDL and indexes), by generate_series. */
async function seed (pool: pg.Pool, schema: string, books: number) {
  await pool.query(`INSERT INTO "${schema}"."authors" ("id", "name", "version", "modified_at")
    SELECT 'a' || lpad(i::text, 7, '0'), 'Author ' || i, 1, now() FROM generate_series(1, 1000) AS i`)
  // Years 1900–2024 (about a fifth from 2000 on), ratings 0–5 in tenths with every tenth one null.
  await pool.query(`INSERT INTO "${schema}"."books" ("id", "title", "authorId", "year", "rating", "available", "version", "modified_at")
    SELECT 'b' || lpad(i::text, 8, '0'), 'Book ' || i, 'a' || lpad((1 + i % 1000)::text, 7, '0'), 1900 + (i::bigint * 7919) % 125,
      CASE WHEN i % 10 = 0 THEN NULL ELSE ((i * 31) % 51) / 10.0 END, i % 3 <> 0, 1, now()
    FROM generate_series(1, $1::int) AS i`, [books])
  await pool.query(`ANALYZE "${schema}"."authors", "${schema}"."books"`)
}

async function main () {
  const quick = process.argv.includes('--quick')
  const books = quick ? 100_000 : 1_000_000
  const pages = quick ? [1, 10, 100] : [1, 10, 100, 1000]
  const times = quick ? 5 : 21
  await withFreshSchema('paging-postgres', 'paging', async ({ schema, admin, app }) => {
    await seed(admin, schema, books)
    const links = await nextLinks(app, pages)
    const results = []
    for (const page of pages) {
      const tokenUrl = page === 1 ? `/v1/books?${query}&pageSize=${pageSize}` : links.get(page) as string
      const offsetUrl = `/v1/books?${query}&pageSize=${pageSize}&offset=${(page - 1) * pageSize}`
      const result = { page, tokenMs: await medianMs(app, tokenUrl, times), offsetMs: await medianMs(app, offsetUrl, times) }
      results.push(result)
      process.stdout.write(`paging-postgres  ${books} books  page ${String(page).padStart(5)}  token ${result.tokenMs.toFixed(2).padStart(7)} ms  offset ${result.offsetMs.toFixed(2).padStart(7)} ms\n`)
    }
    const [first, deepest] = [results[0], results[results.length - 1]]
    const report: PostgresPagingResult = {
      books,
      query: decodeURIComponent(query),
      pages: results,
      tokenRatio: Math.round(100 * deepest.tokenMs / first.tokenMs) / 100,
      offsetRatio: Math.round(100 * deepest.offsetMs / first.offsetMs) / 100
    }
    process.stdout.write(JSON.stringify(report) + '\n')
  })
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main()
