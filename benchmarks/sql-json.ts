// An experiment for issue 21's item 3 ("building the page's JSON in SQL where it beats
// fast-json-stringify"), before the store is changed for it: one bare Fastify + pg server answers
// the first 20 books two ways, with the same bytes, and wrk loads the two in turns.
//   /rows: the statement the store sends today, rows in array mode, serialized by
//          fast-json-stringify from the route's response schema (what the hand-written baseline does);
//   /sql:  PostgreSQL writes each record's JSON text and joins them (string_agg); the route only
//          wraps the text.
// Both are named prepared statements. PostgreSQL shares the two cores with the server and wrk, so
// req/s counts the work moved into the database too. Needs DATABASE_URL; seeds and drops the
// benchmark schema like run.ts. Usage, after `npx tsc -p benchmarks/tsconfig.json`:
// node dist/benchmarks/sql-json.js [rounds] [seconds]
import { pathToFileURL } from 'node:url'
import Fastify from 'fastify'
import pg from 'pg'
import { loadRequest, median, startServer } from './harness.js'
import type { LoadRequest, Server } from './harness.js'
import { BENCH_SCHEMA, databaseUrl, dropBenchSchema, seedPostgres } from './postgres.js'
import { book } from './envelope-schemas.js'

const table = `"${BENCH_SCHEMA}"."books" AS "t0"`
const page = `SELECT "t0"."id", "t0"."title", "t0"."authorId", "t0"."year", "t0"."rating", "t0"."available", "t0"."reviewCount", "t0"."averageRating" FROM ${table} ORDER BY "t0"."id" COLLATE "C" ASC LIMIT $1`
// Each member written as JSON.stringify writes it (to_json escapes strings the same way; a double
// prints the same shortest digits for these values; bigints as digits).
const member = (name: string, json: string, first = false) => `'${first ? '' : ','}"${name}":' || ${json}`
const orNull = (json: string) => `coalesce(${json}, 'null')`
const recordJson = [
  member('id', 'to_json("t0"."id")::text', true),
  member('title', 'to_json("t0"."title")::text'),
  member('authorId', 'to_json("t0"."authorId")::text'),
  member('year', orNull('"t0"."year"::text')),
  member('rating', orNull('to_json("t0"."rating")::text')),
  member('available', 'to_json("t0"."available")::text'),
  member('reviewCount', '"t0"."reviewCount"::text'),
  member('averageRating', orNull('to_json("t0"."averageRating")::text'))
].join(' || ')
const pageJson = `SELECT string_agg('{' || ${recordJson} || '}', ',' ORDER BY "t0"."id" COLLATE "C") FROM (${page}) AS "t0"`

type Row = [string, string, string, string | null, number | null, boolean, string, number | null]

async function serve () {
  const pool = new pg.Pool({ connectionString: databaseUrl() })
  const app = Fastify()
  app.get('/rows', { schema: { response: { 200: { type: 'object', properties: { items: { type: 'array', items: book } } } } } }, async () => {
    const { rows } = await pool.query<Row>({ name: 'rows', text: page, values: [20], rowMode: 'array' })
    return {
      items: rows.map(([id, title, authorId, year, rating, available, reviewCount, averageRating]) =>
        ({ id, title, authorId, year: year === null ? null : Number(year), rating, available, reviewCount: Number(reviewCount), averageRating }))
    }
  })
  app.get('/sql', async (_request, reply) => {
    const { rows } = await pool.query<[string | null]>({ name: 'sql', text: pageJson, values: [20], rowMode: 'array' })
    reply.type('application/json; charset=utf-8')
    return `{"items":[${rows[0][0] ?? ''}]}`
  })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  process.stdout.write(`listening ${url}\n`)
  process.on('SIGTERM', () => { app.close().then(async () => { await pool.end() }).then(() => process.exit(0), () => process.exit(1)) })
}

async function main () {
  if (databaseUrl() === undefined) throw new Error('DATABASE_URL is not set')
  const [rounds, seconds] = [Number(process.argv[2] ?? 5), Number(process.argv[3] ?? 3)]
  await seedPostgres()
  const server = await startServer('./sql-json.js', 'postgres', [], { SQL_JSON_SERVE: '1' }) as Server
  try {
    const request = (path: string): LoadRequest => ({ method: 'GET', path, headers: {}, keyed: false, status: 200 })
    const [rows, sql] = await Promise.all(['/rows', '/sql'].map(async path => await (await fetch(server.origin + path)).text()))
    if (rows !== sql) throw new Error(`the two answers differ:\n${rows}\n${sql}`)
    for (const path of ['/rows', '/sql']) await loadRequest(server, request(path), 2, 10)
    const ratios: number[] = []
    const rps: Record<string, number[]> = { '/rows': [], '/sql': [] }
    for (let round = 0; round < rounds; round++) {
      const [a, b] = [await loadRequest(server, request('/rows'), seconds, 10), await loadRequest(server, request('/sql'), seconds, 10)]
      if (a.errors + b.errors > 0) throw new Error(`errors: rows ${a.errors}, sql ${b.errors}`)
      rps['/rows'].push(a.rps)
      rps['/sql'].push(b.rps)
      ratios.push(b.rps / a.rps)
    }
    process.stdout.write(`${rows.length} bytes each; req/s rows ${median(rps['/rows']).toFixed(0)}, sql ${median(rps['/sql']).toFixed(0)}; sql ÷ rows ${median(ratios).toFixed(2)} (median of ${rounds} rounds of ${seconds} s)\n`)
  } finally {
    await server.stop()
    await dropBenchSchema()
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await (process.env.SQL_JSON_SERVE === '1' ? serve() : main())
