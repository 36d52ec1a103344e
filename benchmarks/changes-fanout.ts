// The change feed's read side (docs/changes.md; issue 33 "the new paths measured"): the demo as
// `npm start` serves it (server.ts BENCH_DEMO), in a process of its own, over the memory store or
// PostgreSQL (STORE=postgres, DATABASE_URL).
// - Fan-out: SUBSCRIBERS (default 1,000) Server-Sent Events streams of `GET /v1/changes` held open
//   from this process, while WRITES (default 30) authors are created one every 100 ms; for each
//   change and each stream, the time from the CREATE's request to the event's arrival. Reports
//   p50/p99/max and deliveries missing (the target: p99 ≤ 1 s at 1,000 subscribers).
// - Feed pages: pages of 100 changes read with wrk (or autocannon) for SECONDS (default 6), pages/s.
// Run: npm run bench:feed.
import { request } from 'node:http'
import type { IncomingMessage } from 'node:http'
import { performance } from 'node:perf_hooks'
import { loadRequest, startServer } from './harness.js'
import type { Server } from './harness.js'
import { commonHeaders } from './cases.js'
import type { StoreKind } from './cases.js'

const subscribers = Number(process.env.SUBSCRIBERS ?? 1000)
const writes = Number(process.env.WRITES ?? 30)
const seconds = Number(process.env.SECONDS ?? 6)
const store: StoreKind = process.env.STORE === 'postgres' ? 'postgres' : 'memory'

/** An event stream of the feed: calls `arrived(change id, ms)` for each change event. */
function subscribe (origin: string, arrived: (id: string, at: number) => void): Promise<IncomingMessage> {
  const url = new URL('/v1/changes?resource=authors', origin)
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { ...commonHeaders, accept: 'text/event-stream' }, agent: false }, res => {
      if (res.statusCode !== 200) return reject(new Error(`the feed answered ${String(res.statusCode)}`))
      let text = ''
      res.setEncoding('utf8').on('data', (chunk: string) => {
        const at = performance.now()
        text += chunk
        let end: number
        while ((end = text.indexOf('\n\n')) !== -1) {
          const data = /^data: (.*)$/m.exec(text.slice(0, end))
          if (data !== null) arrived((JSON.parse(data[1]) as { recordId: string }).recordId, at)
          text = text.slice(end + 2)
        }
      })
      resolve(res)
    })
    req.on('error', reject)
    req.end()
  })
}

async function create (origin: string, name: string): Promise<string> {
  const res = await fetch(new URL('/v1/authors', origin), { method: 'POST', headers: { ...commonHeaders, 'content-type': 'application/json' }, body: JSON.stringify({ name }) })
  if (res.status !== 201) throw new Error(`CREATE answered ${res.status}`)
  return ((await res.json()) as { data: { author: { id: string } } }).data.author.id
}

const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]

async function fanOut (server: Server) {
  const arrivals = new Map<string, number[]>()
  const streams: IncomingMessage[] = []
  // Opened a hundred at a time, so that the server's accept queue never overflows.
  for (let opened = 0; opened < subscribers; opened += 100) {
    streams.push(...await Promise.all(Array.from({ length: Math.min(100, subscribers - opened) }, async () =>
      await subscribe(server.origin, (id, at) => { arrivals.get(id)?.push(at) ?? arrivals.set(id, [at]) }))))
  }
  const sent = new Map<string, number>()
  for (let i = 0; i < writes; i++) {
    const start = performance.now()
    sent.set(await create(server.origin, `Fan ${i}`), start)
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  // The last events: up to 5 s more.
  const deadline = performance.now() + 5000
  while (performance.now() < deadline && [...sent.keys()].some(id => (arrivals.get(id)?.length ?? 0) < subscribers)) await new Promise(resolve => setTimeout(resolve, 50))
  for (const stream of streams) stream.destroy()
  const latencies: number[] = []
  let missing = 0
  for (const [id, start] of sent) {
    const times = arrivals.get(id) ?? []
    missing += subscribers - times.length
    for (const at of times) latencies.push(at - start)
  }
  latencies.sort((a, b) => a - b)
  return { subscribers, writes, deliveries: latencies.length, missing, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), max: latencies.at(-1) ?? NaN }
}

async function feedPages (server: Server) {
  const measured = await loadRequest(server, { method: 'GET', path: '/v1/changes?pageSize=100', headers: commonHeaders, keyed: false, status: 200 }, seconds, 16)
  return { pagesPerSecond: measured.rps, p99: measured.p99, errors: measured.errors, cpuMicros: measured.cpuMicros }
}

const server = await startServer('./server.js', store, [], { BENCH_DEMO: '1' })
if ('unavailable' in server) throw new Error(server.unavailable)
try {
  const fan = await fanOut(server)
  console.log(`fan-out on ${store}: ${fan.subscribers} streams × ${fan.writes} changes: p50 ${fan.p50.toFixed(0)} ms, p99 ${fan.p99.toFixed(0)} ms, max ${fan.max.toFixed(0)} ms, ${fan.missing} deliveries missing`)
  const pages = await feedPages(server)
  console.log(`feed pages of 100 on ${store}: ${pages.pagesPerSecond.toFixed(0)} pages/s, p99 ${pages.p99} ms, ${pages.errors} errors, ${pages.cpuMicros?.toFixed(0) ?? '?'} µs server CPU per page`)
  console.log(JSON.stringify({ store, fan, pages }))
} finally {
  await server.stop()
}
