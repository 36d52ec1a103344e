// `npm run bench:async`: asynchronous writes (docs/async.md). The demo app on a store
// (BENCH_ASYNC_STORE: memory, pglite or postgres at DATABASE_URL; default pglite), listening on
// loopback; ASYNC_N CREATEs with `Prefer: respond-async` sent by ASYNC_CONNECTIONS clients at once.
// Prints the 202 throughput (answers per second while sending) and, from the monitor's own clock,
// the time from acceptance (createdAt) to `succeeded` (updatedAt): p50 and p99, under that load.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildDemoApp } from '../demo/app.js'
import { loadConfig } from '../demo/config.js'

const total = Number(process.env.ASYNC_N ?? 2000)
const connections = Number(process.env.ASYNC_CONNECTIONS ?? 10)
const storeKind = process.env.BENCH_ASYNC_STORE ?? 'pglite'
const dir = await mkdtemp(join(tmpdir(), 'bench-async-'))
const storeEnv: Record<string, string> = storeKind === 'postgres'
  ? { DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' }
  : { STORE: storeKind, DATA_DIR: join(dir, 'data') }
const app = await buildDemoApp(loadConfig({ ...storeEnv, SEED: 'false', RATE_LIMIT_MAX: '100000000', CURSOR_SECRET: 'a-benchmark-secret-of-enough-length' }), { logger: false })
const base = await app.listen({ port: 0, host: '127.0.0.1' })
const headers = { authorization: 'Bearer dev-token', 'content-type': 'application/json', prefer: 'respond-async' }

const locations: string[] = []
let next = 0
const started = performance.now()
await Promise.all(Array.from({ length: connections }, async () => {
  while (next < total) {
    const i = next++
    const res = await fetch(`${base}/v1/authors`, { method: 'POST', headers, body: JSON.stringify({ name: `Bench ${i}` }) })
    if (res.status !== 202) throw new Error(`expected 202, got ${res.status}: ${await res.text()}`)
    await res.arrayBuffer()
    locations.push(res.headers.get('location') as string)
  }
}))
const sending = (performance.now() - started) / 1000

const durations: number[] = []
for (const location of locations) {
  for (;;) {
    const res = await fetch(`${base}${location}`, { headers: { authorization: 'Bearer dev-token' } })
    const { data: { operation } } = await res.json() as { data: { operation: { status: string, createdAt: string, updatedAt: string } } }
    if (operation.status === 'failed') throw new Error(`an operation failed: ${JSON.stringify(operation)}`)
    if (operation.status === 'succeeded') {
      durations.push(Date.parse(operation.updatedAt) - Date.parse(operation.createdAt))
      break
    }
    await new Promise(resolve => setTimeout(resolve, 50))
  }
}
const drained = (performance.now() - started) / 1000
durations.sort((a, b) => a - b)
const at = (q: number) => durations[Math.min(durations.length - 1, Math.floor(q * durations.length))]
console.log(`async writes on ${storeKind}: ${total} CREATEs, ${connections} connections`)
console.log(`  202 answers: ${(total / sending).toFixed(0)}/s (${sending.toFixed(2)} s)`)
console.log(`  all succeeded after ${drained.toFixed(2)} s: ${(total / drained).toFixed(0)} writes/s`)
console.log(`  202 → succeeded: p50 ${at(0.5)} ms, p99 ${at(0.99)} ms`)
await app.close()
await rm(dir, { recursive: true, force: true })
