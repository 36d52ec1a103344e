// The change record's cost on writes (docs/changes.md "Positions in commit order"): CREATE
// throughput of the demo's authors on PostgreSQL with the `changes` option off and on, the same
// process, the same database, alternating rounds. Run: npm run bench:changes (needs DATABASE_URL).
// Each CREATE is one request through inject (no sockets: the database's part is what differs).
import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import Fastify from 'fastify'
import pg from 'pg'
import apiConventions, { postgresStore } from '../lib/index.js'
import { demoResources } from '../demo/schemas/index.js'

const url = process.env.DATABASE_URL
if (url === undefined) throw new Error('DATABASE_URL is needed')
const creates = Number(process.env.CREATES ?? 2000)
const concurrency = Number(process.env.CONCURRENCY ?? 16)
const rounds = Number(process.env.ROUNDS ?? 3)

async function throughput (changes: boolean, schema: string): Promise<number> {
  const store = await postgresStore({ connectionString: url, schema, poolOptions: { max: concurrency } })
  const app = Fastify()
  await app.register(apiConventions, { prefix: '/v1', resources: demoResources(store), cursorSecret: 'bench-secret-0123456789', changes })
  await app.ready()
  let next = 0
  const worker = async () => {
    while (next++ < creates) {
      const res = await app.inject({ method: 'POST', url: '/v1/authors', headers: { 'content-type': 'application/json' }, payload: { name: `A${next}` } })
      if (res.statusCode !== 201) throw new Error(`CREATE answered ${res.statusCode}`)
    }
  }
  // Warm up: pools, prepared statements, the tables.
  for (let i = 0; i < 50; i++) await app.inject({ method: 'POST', url: '/v1/authors', headers: { 'content-type': 'application/json' }, payload: { name: 'warm' } })
  const start = performance.now()
  await Promise.all(Array.from({ length: concurrency }, worker))
  const perSecond = creates / ((performance.now() - start) / 1000)
  await app.close()
  await store.close()
  return perSecond
}

const admin = new pg.Pool({ connectionString: url })
const schemas = [`bench_changes_off_${randomBytes(3).toString('hex')}`, `bench_changes_on_${randomBytes(3).toString('hex')}`]
try {
  const results: Record<'off' | 'on', number[]> = { off: [], on: [] }
  for (let round = 0; round < rounds; round++) {
    results.off.push(await throughput(false, schemas[0]))
    results.on.push(await throughput(true, schemas[1]))
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
  const off = median(results.off)
  const on = median(results.on)
  console.log(`create-changes-off  ${off.toFixed(0)} req/s`)
  console.log(`create-changes-on   ${on.toFixed(0)} req/s  (${((1 - on / off) * 100).toFixed(1)} % slower)`)
  console.log(JSON.stringify({ creates, concurrency, rounds, off: results.off, on: results.on }))
} finally {
  for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  await admin.end()
}
