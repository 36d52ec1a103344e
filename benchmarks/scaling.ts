// docs/scaling.md's measured table: the demo (`dist/demo/server.js`, as `npm start` runs it) on
// .ci/cluster.sh's cluster, in five topologies: one instance straight on the primary; one through
// PgBouncer in transaction mode; then one, two and three instances through PgBouncer reading from
// the streaming replica. wrk drives each instance with its share of 32 connections at once; the
// table shows the sums, and the worst p99 among the instances. Medians of rounds.
//
//   eval "$(.ci/cluster.sh)" && npm run build:demo && npx tsc -p benchmarks/tsconfig.json && node dist/benchmarks/scaling.js
//
// BENCH_SECONDS (default 5) and BENCH_ROUNDS (default 3) shorten or lengthen it.
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import pg from 'pg'
import { postgresStore } from '../lib/index.js'
import { fillStore, generate } from './seed.js'
import { hasWrk, wrkLoad } from './wrk.js'
import { median } from './harness.js'
import type { DriverResult, LoadRequest } from './harness.js'

const { CLUSTER_DATABASE_URL: bouncerUrl, CLUSTER_PRIMARY_URL: primaryUrl, CLUSTER_READ_URL: replicaUrl, REDIS_URL: redisUrl = 'redis://127.0.0.1:6379' } = process.env
const seconds = Number(process.env.BENCH_SECONDS ?? 5)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const CONNECTIONS = 32

interface Topology { readonly name: string, readonly instances: number, readonly through: 'primary' | 'pgbouncer', readonly replica: boolean }
const topologies: readonly Topology[] = [
  { name: '1 instance, primary directly', instances: 1, through: 'primary', replica: false },
  { name: '1 instance, PgBouncer', instances: 1, through: 'pgbouncer', replica: false },
  { name: '1 instance, PgBouncer, reads on the replica', instances: 1, through: 'pgbouncer', replica: true },
  { name: '2 instances, PgBouncer, reads on the replica', instances: 2, through: 'pgbouncer', replica: true },
  { name: '3 instances, PgBouncer, reads on the replica', instances: 3, through: 'pgbouncer', replica: true }
]

const withDatabase = (url: string, database: string) => Object.assign(new URL(url), { pathname: `/${database}` }).href

async function startDemo (env: Record<string, string>): Promise<{ url: string, child: ChildProcess }> {
  const child = spawn(process.execPath, ['dist/demo/server.js'], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', SEED: 'false', RATE_LIMIT_MAX: '1000000000', CURSOR_SECRET: 'scaling-bench-secret-0123456789', DATABASE_READ_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', line => {
      const api = /^\s+API:\s+(http:\/\/\S+)\/v1$/.exec(line)
      if (api !== null) resolve(api[1])
    })
    child.once('exit', code => reject(new Error(`the demo exited with ${String(code)} before listening`)))
  })
  return { url, child }
}

async function stop (child: ChildProcess): Promise<void> {
  const exited = new Promise(resolve => child.once('exit', resolve))
  child.kill('SIGTERM')
  await exited
}

async function main () {
  if (bouncerUrl === undefined || primaryUrl === undefined || replicaUrl === undefined) throw new Error('run `eval "$(.ci/cluster.sh)"` first: CLUSTER_DATABASE_URL, CLUSTER_PRIMARY_URL and CLUSTER_READ_URL are needed')
  if (!hasWrk()) throw new Error('wrk is needed (apt-get install wrk)')
  const database = `apic_scaling_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: primaryUrl })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${database}`)
  try {
    // The demo's tables, made by the store's migrations, filled with the benchmark's data set.
    const store = await postgresStore({ connectionString: withDatabase(primaryUrl, database) })
    const data = generate(500, 5000)
    await fillStore(store, data, 20)
    await store.close()
    const book = data.books[0].id
    const requests: Record<string, LoadRequest> = {
      RETRIEVE: { method: 'GET', path: `/v1/books/${book}`, headers: { authorization: 'Bearer read-token' }, keyed: false, status: 200 },
      'LIST-20': { method: 'GET', path: '/v1/books?pageSize=20', headers: { authorization: 'Bearer read-token' }, keyed: false, status: 200 },
      CREATE: { method: 'POST', path: '/v1/authors', headers: { authorization: 'Bearer dev-token', 'content-type': 'application/json' }, body: '{"name":"Scaling"}', keyed: false, status: 201 }
    }
    const rows: Array<Record<string, unknown>> = []
    for (const topology of topologies) {
      const env = {
        DATABASE_URL: withDatabase(topology.through === 'primary' ? primaryUrl : bouncerUrl, database),
        DATABASE_POOLER: topology.through === 'pgbouncer' ? 'transaction' : 'none',
        DATABASE_READ_URL: topology.replica ? withDatabase(replicaUrl, database) : '',
        REDIS_URL: redisUrl
      }
      const demos = await Promise.all(Array.from({ length: topology.instances }, async () => await startDemo(env)))
      try {
        const row: Record<string, unknown> = { topology: topology.name }
        for (const [name, request] of Object.entries(requests)) {
          // Warm-up, then the rounds.
          await Promise.all(demos.map(async demo => await wrkLoad(demo.url, request, 1, Math.ceil(CONNECTIONS / demos.length))))
          const perRound: Array<{ rate: number, p99: number, errors: number }> = []
          for (let round = 0; round < rounds; round++) {
            const results: DriverResult[] = await Promise.all(demos.map(async demo => await wrkLoad(demo.url, request, seconds, Math.ceil(CONNECTIONS / demos.length))))
            perRound.push({
              rate: results.reduce((sum, result) => sum + result.requests / result.seconds, 0),
              p99: Math.max(...results.map(result => result.p99)),
              errors: results.reduce((sum, result) => sum + result.errors, 0)
            })
          }
          row[name] = Math.round(median(perRound.map(r => r.rate)))
          row[`${name} p99 ms`] = Number(median(perRound.map(r => r.p99)).toFixed(1))
          row[`${name} errors`] = perRound.reduce((sum, r) => sum + r.errors, 0)
          console.error(`${topology.name}: ${name} ${String(row[name])} req/s, p99 ${String(row[`${name} p99 ms`])} ms, errors ${String(row[`${name} errors`])}`)
        }
        rows.push(row)
      } finally {
        for (const demo of demos) await stop(demo.child)
      }
    }
    const file = 'benchmarks/results/scaling.json'
    writeFileSync(file, JSON.stringify({ date: new Date().toISOString(), seconds, rounds, connections: CONNECTIONS, rows }, null, 2) + '\n')
    console.log('| topology | RETRIEVE req/s | p99 ms | LIST-20 req/s | p99 ms | CREATE req/s | p99 ms |')
    console.log('|---|---:|---:|---:|---:|---:|---:|')
    for (const row of rows) {
      console.log(`| ${String(row.topology)} | ${String(row.RETRIEVE)} | ${String(row['RETRIEVE p99 ms'])} | ${String(row['LIST-20'])} | ${String(row['LIST-20 p99 ms'])} | ${String(row.CREATE)} | ${String(row['CREATE p99 ms'])} |`)
    }
    console.log(`(written to ${file})`)
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
    await admin.end()
  }
}

await main()
