// Aggregates pushed down (docs/aggregates.md) against what a client did without them: 100,000
// books in a fresh PostgreSQL schema; the average rating and the count per author (1,000 authors)
// through the whole plugin (inject), as one `apply=groupby(…)` request (one GROUP BY statement),
// against walking every page of 100 books by token and summing in JS. Both must agree.
// Usage (needs DATABASE_URL): node dist/benchmarks/aggregate-postgres.js [--books=N]; a line, then JSON.
import { pathToFileURL } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { withFreshSchema } from './server.js'

const headers = { authorization: 'Bearer dev-token', accept: 'application/json' }
const apply = encodeURIComponent('groupby((authorId),aggregate($count as n,rating with average as avg))')

interface Page { data: { books: Array<Record<string, any>> }, links: Array<{ rel: string, href: string }> }

async function get (app: FastifyInstance, url: string): Promise<Page> {
  const response = await app.inject({ url, headers })
  if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${response.body}`)
  return response.json()
}

/** Every page of `first` and those its `next` links lead to. */
async function walk (app: FastifyInstance, first: string, each: (page: Page) => void): Promise<void> {
  let url: string | undefined = first
  while (url !== undefined) {
    const page = await get(app, url)
    each(page)
    url = page.links.find(link => link.rel === 'next')?.href
  }
}

async function timed<T> (work: () => Promise<T>): Promise<{ ms: number, value: T }> {
  const start = process.hrtime.bigint()
  const value = await work()
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, value }
}

async function main () {
  const books = Number(process.argv.find(arg => arg.startsWith('--books='))?.slice(8) ?? 100_000)
  await withFreshSchema('aggregate-postgres', 'aggregate', async ({ schema, admin, app }) => {
    await admin.query(`INSERT INTO "${schema}"."authors" ("id", "name", "version", "modified_at")
      SELECT 'a' || lpad(i::text, 7, '0'), 'Author ' || i, 1, now() FROM generate_series(1, 1000) AS i`)
    await admin.query(`INSERT INTO "${schema}"."books" ("id", "title", "authorId", "year", "rating", "available", "version", "modified_at")
      SELECT 'b' || lpad(i::text, 8, '0'), 'Book ' || i, 'a' || lpad((1 + i % 1000)::text, 7, '0'), 1900 + (i::bigint * 7919) % 125,
        CASE WHEN i % 10 = 0 THEN NULL ELSE ((i * 31) % 51) / 10.0 END, true, 1, now()
      FROM generate_series(1, $1::int) AS i`, [books])
    await admin.query(`ANALYZE "${schema}"."authors", "${schema}"."books"`)
    const pushed = await timed(async () => {
      const groups = new Map<string, { n: number, avg: number | null }>()
      await walk(app, `/v1/books?apply=${apply}&pageSize=100`, page => { for (const group of page.data.books) groups.set(group.authorId, { n: group.n, avg: group.avg }) })
      return groups
    })
    const fetched = await timed(async () => {
      const sums = new Map<string, { n: number, sum: number, rated: number }>()
      await walk(app, '/v1/books?pageSize=100&fields=authorId,rating&sort=id', page => {
        for (const book of page.data.books) {
          const entry = sums.get(book.authorId) ?? { n: 0, sum: 0, rated: 0 }
          entry.n++
          if (book.rating !== null && book.rating !== undefined) { entry.sum += book.rating; entry.rated++ }
          sums.set(book.authorId, entry)
        }
      })
      return new Map([...sums].map(([id, { n, sum, rated }]) => [id, { n, avg: rated === 0 ? null : sum / rated }]))
    })
    for (const [id, group] of pushed.value) {
      const other = fetched.value.get(id)
      if (other?.n !== group.n || Math.abs((other.avg ?? 0) - (group.avg ?? 0)) > 1e-9) throw new Error(`author ${id}: ${JSON.stringify(group)} pushed down, ${JSON.stringify(other)} summed in JS`)
    }
    const report = { books, groups: pushed.value.size, pushedDownMs: Math.round(pushed.ms), fetchedAndSummedMs: Math.round(fetched.ms), ratio: Math.round(10 * fetched.ms / pushed.ms) / 10 }
    process.stdout.write(`aggregate-postgres  ${books} books  apply= ${report.pushedDownMs} ms  every page + JS ${report.fetchedAndSummedMs} ms  (${report.ratio}×)\n`)
    process.stdout.write(JSON.stringify(report) + '\n')
  })
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main()
