// `search=` on PostgreSQL (issue 30 item 2): books with generated titles in a fresh schema, LIST
// with a search through the whole plugin (inject) on the SQL store, timed with the GIN index
// migrate made, then again once it is dropped (a sequential scan computing each title's words).
// Usage (needs DATABASE_URL): node dist/benchmarks/search-postgres.js [--quick]; a table, then JSON.
import { pathToFileURL } from 'node:url'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import { withFreshSchema } from './server.js'

const headers = { authorization: 'Bearer dev-token', accept: 'application/json' }
// A rare word (one title in 1,000), a common one (one in 10), a phrase, and relevance with OR.
const queries = ['search=zephyr', 'search=garden', 'search=%22winter%20garden%22', 'search=zephyr%20OR%20garden&total=true']

export interface PostgresSearchResult {
  readonly books: number
  /** Median milliseconds per first page of 20, with the index and without. */
  readonly queries: ReadonlyArray<{ readonly query: string, readonly indexedMs: number, readonly scannedMs: number }>
}

async function medianMs (app: FastifyInstance, url: string, times: number): Promise<number> {
  const samples: number[] = []
  for (let i = 0; i < times; i++) {
    const start = process.hrtime.bigint()
    const response = await app.inject({ url, headers })
    samples.push(Number(process.hrtime.bigint() - start) / 1e6)
    if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${response.body}`)
  }
  samples.sort((a, b) => a - b)
  return samples[samples.length >> 1]
}

/** Titles of three words from a small vocabulary, `zephyr` in one of 1,000 and `garden` in one of 10. */
async function seed (pool: pg.Pool, schema: string, books: number) {
  await pool.query(`INSERT INTO "${schema}"."authors" ("id", "name", "version", "modified_at") VALUES ('a1', 'Author', 1, now())`)
  await pool.query(`INSERT INTO "${schema}"."books" ("id", "title", "authorId", "version", "modified_at")
    SELECT 'b' || lpad(i::text, 8, '0'),
      (ARRAY['Winter', 'Summer', 'Dark', 'Silent', 'Crimson'])[1 + i % 5] || ' ' ||
      CASE WHEN i % 1000 = 0 THEN 'Zephyr' WHEN i % 10 = 1 THEN 'Garden' ELSE (ARRAY['River', 'Stone', 'House', 'Road'])[1 + i % 4] END ||
      ' of ' || (ARRAY['Ash', 'Light', 'Glass', 'Years', 'Salt', 'Iron', 'Rain'])[1 + i % 7] || ' ' || i,
      'a1', 1, now()
    FROM generate_series(1, $1::int) AS i`, [books])
  await pool.query(`ANALYZE "${schema}"."books"`)
}

async function main () {
  const quick = process.argv.includes('--quick')
  const books = quick ? 100_000 : 1_000_000
  const times = quick ? 5 : 11
  await withFreshSchema('search-postgres', 'search', async ({ schema, admin, app }) => {
    await seed(admin, schema, books)
    const indexed = new Map<string, number>()
    for (const query of queries) indexed.set(query, await medianMs(app, `/v1/books?${query}&pageSize=20`, times))
    await admin.query(`DROP INDEX "${schema}"."books_search"`)
    const results = []
    for (const query of queries) {
      const result = { query: decodeURIComponent(query), indexedMs: indexed.get(query) as number, scannedMs: await medianMs(app, `/v1/books?${query}&pageSize=20`, times) }
      results.push(result)
      process.stdout.write(`search-postgres  ${books} books  ${result.query.padEnd(36)}  index ${result.indexedMs.toFixed(2).padStart(8)} ms  no index ${result.scannedMs.toFixed(2).padStart(8)} ms\n`)
    }
    const report: PostgresSearchResult = { books, queries: results }
    process.stdout.write(JSON.stringify(report) + '\n')
  })
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main()
