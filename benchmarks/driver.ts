// An experiment for issue 33's candidate "the driver", before the store is changed for it: one bare
// Fastify server answers LIST-20's page through node-postgres and through postgres.js (porsager),
// with the same bytes, and wrk loads the routes in turns.
//   /pg:          the store's own node-postgres engine (poolDatabase of lib/stores/sql/pg.ts: a
//                 pool of 10, named prepared statements, rows in array mode, its query timeout);
//   /pg-unnamed:  the same engine as the store runs it behind a transaction pooler (unnamed
//                 statements: Parse, Bind, Execute in one round trip);
//   /postgres:    postgres.js, `sql.unsafe(text, values, { prepare: true }).values()` (prepared
//                 statements, its default; rows as arrays), a pool of 10 (its default), with the
//                 same kind of timeout the store would need (a timer that cancels the query);
//   /postgres-unprepared: the same with `prepare: false`, what PgBouncer's transaction mode needs.
// Every route turns rows into records as the store does and serializes the page with
// fast-json-stringify from one response schema. PostgreSQL shares the two cores with the server
// and wrk, so req/s counts the database's work too; CPU per response is the server's and its
// PostgreSQL backends' (from /proc: the database must run on this machine).
// postgres.js is a peer (benchmarks/peers/), never a dependency of the package. Needs DATABASE_URL;
// seeds and drops the benchmark schema like run.ts. Usage, after `npx tsc -p benchmarks/tsconfig.json`:
// node dist/benchmarks/driver.js [rounds] [seconds] [connections]
import { pathToFileURL } from 'node:url'
import Fastify from 'fastify'
import pg from 'pg'
import { poolDatabase } from '../lib/stores/sql/pg.js'
import { listData, statements } from './baseline.js'
import type { DbListRow } from './baseline.js'
import { book } from './envelope-schemas.js'
import { cpuSecondsOf, loadRequest, median, startServer } from './harness.js'
import type { LoadRequest, Server } from './harness.js'
import { requirePeer } from './peers.js'
import { databaseUrl, dropBenchSchema, seedPostgres } from './postgres.js'

/** The part of postgres.js used here: a query is a promise that runs when awaited. */
interface PostgresQuery extends PromiseLike<unknown[][]> {
  values (): PostgresQuery
  cancel (): void
}
interface Sql {
  unsafe (text: string, values: unknown[], options: { prepare: boolean }): PostgresQuery
  end (): Promise<void>
}
type Postgres = (url: string) => Sql

type QueryFunction = (text: string, values: readonly unknown[]) => PromiseLike<unknown[][]>

const PAGE = 20
/** What the store gives a query by default (queryTimeoutMillis 10 s, plus the second it waits beyond statement_timeout). */
const TIMEOUT_MILLIS = 11_000

/** postgres.js with the store's per-query timeout: a timer that cancels the query, cleared when it settles. */
function postgresQuery (sql: Sql, prepare: boolean): QueryFunction {
  return (text, values) => {
    const query = sql.unsafe(text, values as unknown[], { prepare }).values()
    const timer = setTimeout(() => { query.cancel() }, TIMEOUT_MILLIS)
    return query.then(rows => { clearTimeout(timer); return rows }, (error: unknown) => { clearTimeout(timer); throw error })
  }
}

const paths = ['/pg', '/pg-unnamed', '/postgres', '/postgres-unprepared']

async function serve () {
  const postgres = requirePeer<Postgres>('postgres')
  if (typeof postgres !== 'function') return process.stdout.write(`unavailable ${postgres.unavailable}\n`)
  const url = databaseUrl() as string
  const pool = new pg.Pool({ connectionString: url })
  const sql = postgres(url)
  const queries: Record<string, QueryFunction> = {
    '/pg': poolDatabase(pool, false, TIMEOUT_MILLIS).query,
    '/pg-unnamed': poolDatabase(pool, false, TIMEOUT_MILLIS, { statementTimeoutMillis: TIMEOUT_MILLIS - 1000 }).query,
    '/postgres': postgresQuery(sql, true),
    '/postgres-unprepared': postgresQuery(sql, false)
  }
  const app = Fastify()
  const schema = { response: { 200: { type: 'object', properties: { items: { type: 'array', items: book } } } } }
  for (const path of paths) {
    const query = queries[path]
    // The store asks for one row more than the page, to know whether there is a next one.
    app.get(path, { schema }, async () => ({ items: (await query(statements.first, [PAGE + 1, 0]) as DbListRow[]).slice(0, PAGE).map(row => listData(row)) }))
  }
  const listening = await app.listen({ port: 0, host: '127.0.0.1' })
  process.stdout.write(`listening ${listening}\n`)
  process.on('SIGTERM', () => { app.close().then(async () => { await Promise.all([pool.end(), sql.end()]) }).then(() => process.exit(0), () => process.exit(1)) })
}

/** CPU seconds each PostgreSQL backend of the server has used so far, by process id (the database runs on this machine). */
async function backendCpu (stats: pg.Client, applicationName: string): Promise<Map<number, number>> {
  const { rows } = await stats.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [applicationName])
  return new Map(rows.map(({ pid }) => [pid, cpuSecondsOf(pid) ?? 0]))
}

/** CPU the backends used between two readings; a backend opened in between counts from zero. */
function cpuBetween (before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): number {
  let total = 0
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0)
  return total
}

interface Round { rps: number, p99: number, serverMicros: number, postgresMicros: number }

async function main () {
  if (databaseUrl() === undefined) throw new Error('DATABASE_URL is not set')
  const [rounds, seconds, connections] = [Number(process.argv[2] ?? 5), Number(process.argv[3] ?? 5), Number(process.argv[4] ?? 32)]
  await seedPostgres()
  // Both drivers name their connections from PGAPPNAME: the backends whose CPU is counted.
  const applicationName = `driver-bench-${process.pid}`
  const started = await startServer('./driver.js', 'postgres', [], { DRIVER_SERVE: '1', PGAPPNAME: applicationName })
  if ('unavailable' in started) throw new Error(started.unavailable)
  const server: Server = started
  const stats = new pg.Client({ connectionString: databaseUrl(), application_name: 'driver-bench-stats' })
  await stats.connect()
  try {
    const request = (path: string): LoadRequest => ({ method: 'GET', path, headers: {}, keyed: false, status: 200 })
    const bodies = await Promise.all(paths.map(async path => await (await fetch(server.origin + path)).text()))
    for (const [i, body] of bodies.entries()) if (body !== bodies[0]) throw new Error(`${paths[i]} answers otherwise than ${paths[0]}:\n${body}\n${bodies[0]}`)
    for (const path of paths) await loadRequest(server, request(path), 2, connections)
    const measured: Record<string, Round[]> = Object.fromEntries(paths.map(path => [path, []]))
    for (let round = 0; round < rounds; round++) {
      // Each round starts with the next route, so that none always follows the same one.
      for (const path of [...paths.slice(round % paths.length), ...paths.slice(0, round % paths.length)]) {
        const backendsBefore = await backendCpu(stats, applicationName)
        const m = await loadRequest(server, request(path), seconds, connections)
        if (m.errors > 0) throw new Error(`${path}: ${m.errors} errors`)
        const postgresSeconds = cpuBetween(backendsBefore, await backendCpu(stats, applicationName))
        measured[path].push({ rps: m.rps, p99: m.p99, serverMicros: m.cpuMicros ?? NaN, postgresMicros: postgresSeconds * 1e6 / (m.rps * seconds) })
      }
    }
    const pg = measured['/pg']
    const ratio = (rounds: readonly Round[], of: (r: Round, i: number) => number) => median(rounds.map(of)).toFixed(2)
    process.stdout.write(`${bodies[0].length} bytes each; ${rounds} rounds of ${seconds} s, ${connections} connections; medians (ratios: of the rounds' ratios to /pg)\n`)
    process.stdout.write('| route | req/s | ÷ /pg | p99 ms | server CPU µs/response | /pg ÷ it | PostgreSQL CPU µs/response | /pg ÷ it |\n|---|---:|---:|---:|---:|---:|---:|---:|\n')
    for (const path of paths) {
      const of = measured[path]
      process.stdout.write(`| ${path} | ${median(of.map(r => r.rps)).toFixed(0)} | ${ratio(of, (r, i) => r.rps / pg[i].rps)} | ${median(of.map(r => r.p99)).toFixed(1)} | ` +
        `${median(of.map(r => r.serverMicros)).toFixed(1)} | ${ratio(of, (r, i) => pg[i].serverMicros / r.serverMicros)} | ` +
        `${median(of.map(r => r.postgresMicros)).toFixed(1)} | ${ratio(of, (r, i) => pg[i].postgresMicros / r.postgresMicros)} |\n`)
    }
  } finally {
    await stats.end()
    await server.stop()
    await dropBenchSchema()
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await (process.env.DRIVER_SERVE === '1' ? serve() : main())
