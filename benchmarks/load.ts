// Load run (the bounded version is test/hardening/load.test.ts): the
// demo's configuration of the plugin in a process of its own (started with --expose-gc), loaded by
// autocannon over loopback with 50 connections for LOAD_SECONDS (default 20) with mixed LIST,
// RETRIEVE, CREATE, PATCH and DELETE, twice. Checks: no connection errors, timeouts, 5xx or
// unexpected statuses; every create answered 201 reads back 200 afterwards (404 once this run
// deleted it); heap used after forced GC grows by less than a margin from the first run to the second.
// Usage: node dist/benchmarks/load.js [memory|pglite|postgres] (or LOAD_STORE); postgres needs
// DATABASE_URL. Prints one line per run, a verdict line and a JSON line; exits 1 on any failure.
import { randomBytes } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import autocannon from 'autocannon'
import type { Request } from 'autocannon'
import pg from 'pg'
import { pgliteStore, postgresStore } from '../lib/index.js'
import type { Store } from '../lib/index.js'
import { startServer } from './harness.js'
import type { Server } from './harness.js'
import type { StoreKind as BenchStoreKind } from './cases.js'
import { databaseUrl } from './postgres.js'
import { fillStore, generate } from './seed.js'
import { benchConfig, buildPluginApp, seededMemoryStore } from './server.js'

type StoreKind = 'memory' | 'pglite' | 'postgres'
const storeKinds: readonly StoreKind[] = ['memory', 'pglite', 'postgres']

const connections = 50
const mebibyte = 1024 * 1024
// Two garbage-collected heaps of the same server after the same work differ by V8's noise (a few
// hundred KiB: code, inline caches, the pools' free lists) plus, here, the records of creates still
// in flight when a run stops (at most one per connection, never acknowledged, so never cleaned up:
// 50 records, well under 100 KiB). A leak of a closure, a listener or a cache entry per request
// (100 bytes or more) over the tens of thousands of requests of a run exceeds 2 MiB.
const heapMargin = 2 * mebibyte

const read = { authorization: 'Bearer read-token', accept: 'application/json' }
const write = { authorization: 'Bearer dev-token', accept: 'application/json', 'content-type': 'application/json' }
const patch = { ...write, 'content-type': 'application/merge-patch+json' }
const booksQuery = `/v1/books?filter=${encodeURIComponent('year ge 1950 and rating gt 2')}&sort=-year,title&pageSize=20`

// ---- The server process -------------------------------------------------------------------------

/** Fills a SQL store with the same seed as the memory store, through the store itself. */
async function seededSqlStore (store: Store): Promise<Store> {
  await fillStore(store, generate(), 50)
  return store
}

async function openStore (kind: StoreKind): Promise<Store> {
  if (kind === 'memory') return await seededMemoryStore()
  if (kind === 'pglite') return await seededSqlStore(await pgliteStore({ dataDir: process.env.LOAD_DATA_DIR as string }))
  return await seededSqlStore(await postgresStore({ connectionString: databaseUrl(), schema: process.env.LOAD_SCHEMA }))
}

/**
 * The plugin as benchmarks/server.ts builds it, on the chosen store, plus GET /_load/heap outside
 * the plugin: collects garbage and answers heapUsed. Prints `listening <url>` for harness.ts.
 */
async function serve (kind: StoreKind) {
  const app = await buildPluginApp(benchConfig(process.env), await openStore(kind))
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error('the load server needs node --expose-gc')
  app.get('/_load/heap', async function heap () {
    // Several passes, each after a turn of the event loop: finalizers and weak references free more on the next one.
    for (let i = 0; i < 4; i++) {
      gc()
      await new Promise(resolve => setImmediate(resolve))
    }
    return { heapUsed: process.memoryUsage().heapUsed }
  })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  process.stdout.write(`listening ${url}\n`)
  process.on('SIGTERM', () => { app.close().then(() => process.exit(0), () => process.exit(1)) })
}

// ---- The load -----------------------------------------------------------------------------------

/**
 * What one run wrote: item path → `kept`, `deleted` (its DELETE answered 204) or `deleting` (its
 * DELETE was sent but the run stopped before the answer came: either outcome is correct).
 */
type Written = Map<string, 'kept' | 'deleting' | 'deleted'>

interface Step {
  readonly name: string
  readonly status: number
}

interface Context { author?: string, authorId?: string, etag?: string, book?: string }

// autocannon hands headers over as the server spelled them.
const header = (headers: IncomingHttpHeaders | undefined, name: string): string | undefined => {
  const found = Object.keys(headers ?? {}).find(key => key.toLowerCase() === name)
  return found === undefined ? undefined : String(headers?.[found])
}

/**
 * One autocannon run, bounded in time. Each connection repeats: LIST books (filter, sort), CREATE
 * an author, RETRIEVE it, PATCH it with its ETag in If-Match, CREATE a book by it, RETRIEVE the
 * book, DELETE the book, LIST authors. Every 201's Location is recorded, every DELETE's 204 too;
 * `unexpected` counts answers other than each step's status, by step and status.
 */
async function runLoad (origin: string, seconds: number, tag: string, written: Written, unexpected: Map<string, number>) {
  let serial = 0
  const check = (step: Step, then?: (headers: IncomingHttpHeaders | undefined, context: Context) => void) =>
    (status: number, _body: string, context: object, headers: IncomingHttpHeaders | undefined) => {
      if (status !== step.status) {
        const key = `${step.name} ${status}`
        unexpected.set(key, (unexpected.get(key) ?? 0) + 1)
        return
      }
      then?.(headers, context as Context)
    }
  const created = (kind: 'author' | 'book') => (headers: IncomingHttpHeaders | undefined, context: Context) => {
    const location = header(headers, 'location')
    if (location === undefined) return
    const path = new URL(location, origin).pathname
    written.set(path, 'kept')
    context[kind] = path
    if (kind === 'author') context.authorId = path.slice(path.lastIndexOf('/') + 1)
  }
  // Without the record an earlier step made (its create failed, counted above), a falsy value makes
  // autocannon start this connection's sequence over.
  const on = (kind: 'author' | 'book', build: (request: Request, context: Context) => Request) =>
    (request: Request, context: object): Request => {
      const path = (context as Context)[kind]
      if (path === undefined) return undefined as unknown as Request
      return build({ ...request, path }, context as Context)
    }
  const steps = {
    listBooks: { name: 'LIST books', status: 200 },
    createAuthor: { name: 'CREATE author', status: 201 },
    getAuthor: { name: 'RETRIEVE author', status: 200 },
    patchAuthor: { name: 'PATCH author', status: 200 },
    createBook: { name: 'CREATE book', status: 201 },
    getBook: { name: 'RETRIEVE book', status: 200 },
    deleteBook: { name: 'DELETE book', status: 204 },
    listAuthors: { name: 'LIST authors', status: 200 }
  } satisfies Record<string, Step>
  return await autocannon({
    url: origin,
    connections,
    pipelining: 1,
    duration: seconds,
    timeout: 10,
    requests: [
      { method: 'GET', path: booksQuery, headers: read, onResponse: check(steps.listBooks) },
      {
        method: 'POST',
        path: '/v1/authors',
        headers: write,
        setupRequest: request => ({ ...request, body: JSON.stringify({ name: `${tag} author ${serial++}`, country: 'NZ' }) }),
        onResponse: check(steps.createAuthor, created('author'))
      },
      {
        method: 'GET',
        path: '/v1/authors',
        headers: read,
        setupRequest: on('author', request => request),
        onResponse: check(steps.getAuthor, (headers, context) => { context.etag = header(headers, 'etag') })
      },
      {
        method: 'PATCH',
        path: '/v1/authors',
        headers: patch,
        // If-Match is optional in the demo's configuration: sent when the RETRIEVE gave an ETag.
        setupRequest: on('author', (request, context) => ({
          ...request,
          headers: context.etag === undefined ? patch : { ...patch, 'if-match': context.etag },
          body: JSON.stringify({ country: 'PL' })
        })),
        onResponse: check(steps.patchAuthor)
      },
      {
        method: 'POST',
        path: '/v1/books',
        headers: write,
        setupRequest: on('author', (request, context) => ({
          ...request,
          path: '/v1/books',
          body: JSON.stringify({ title: `${tag} book ${serial++}`, authorId: context.authorId, year: 1900 + (serial % 120), rating: serial % 6 })
        })),
        onResponse: check(steps.createBook, created('book'))
      },
      { method: 'GET', path: '/v1/books', headers: read, setupRequest: on('book', request => request), onResponse: check(steps.getBook) },
      {
        method: 'DELETE',
        path: '/v1/books',
        headers: { authorization: write.authorization },
        setupRequest: on('book', (request, context) => {
          written.set(context.book as string, 'deleting')
          return request
        }),
        onResponse: check(steps.deleteBook, (_headers, context) => { written.set(context.book as string, 'deleted') })
      },
      { method: 'GET', path: '/v1/authors?pageSize=10&sort=-name', headers: read, onResponse: check(steps.listAuthors) }
    ]
  })
}

/** Runs `task` over `items`, eight at a time (loopback keep-alive connections). */
async function eachLimited<T> (items: readonly T[], task: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async () => { while (next < items.length) await task(items[next++]) }
  await Promise.all(Array.from({ length: 8 }, worker))
}

/** GETs every path the run wrote: 200 if kept, 404 if the run deleted it. Returns the paths answering otherwise. */
async function unreadable (origin: string, written: Written): Promise<string[]> {
  const failed: string[] = []
  await eachLimited([...written], async ([path, state]) => {
    const response = await fetch(origin + path, { headers: read })
    await response.arrayBuffer()
    const expected = state === 'kept' ? [200] : state === 'deleted' ? [404] : [200, 404]
    if (!expected.includes(response.status)) failed.push(`${path} ${response.status} (${state})`)
  })
  return failed
}

/**
 * Deletes what the run left, books before their authors (deleting an author with books is 409), so
 * both measured runs start from the seed. A book whose 201 never arrived (the run stopped first)
 * is found through its author's books. Returns the deletes that failed.
 */
async function removeWritten (origin: string, written: Written): Promise<string[]> {
  const failed: string[] = []
  const remove = async (path: string) => {
    const response = await fetch(origin + path, { method: 'DELETE', headers: { authorization: write.authorization } })
    await response.arrayBuffer()
    return response.status
  }
  const kept = [...written].filter(([, state]) => state !== 'deleted').map(([path]) => path)
  await eachLimited(kept.filter(path => path.startsWith('/v1/books/')), async path => {
    const status = await remove(path)
    if (status !== 204 && !(status === 404 && written.get(path) === 'deleting')) failed.push(`DELETE ${path} ${status}`)
  })
  await eachLimited(kept.filter(path => path.startsWith('/v1/authors/')), async path => {
    let status = await remove(path)
    if (status === 409) {
      const response = await fetch(`${origin}${path}/books?pageSize=100`, { headers: read })
      const body = await response.json() as { data: { books: Array<{ id: string }> } }
      for (const book of body.data.books) await remove(`/v1/books/${book.id}`)
      status = await remove(path)
    }
    if (status !== 204) failed.push(`DELETE ${path} ${status}`)
  })
  return failed
}

async function heapUsed (origin: string): Promise<number> {
  const response = await fetch(`${origin}/_load/heap`)
  if (response.status !== 200) throw new Error(`/_load/heap answered ${response.status}`)
  return (await response.json() as { heapUsed: number }).heapUsed
}

interface RunResult {
  readonly run: number
  readonly requests: number
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly errors: number
  readonly non2xx: number
  readonly status5xx: number
  readonly unexpected: Record<string, number>
  readonly written: number
  readonly deleted: number
  /** DELETEs sent whose answer the end of the run cut off. */
  readonly deleting: number
  readonly unreadable: readonly string[]
  readonly cleanupFailed: readonly string[]
  readonly heapUsed: number
}

/** One run, its read-back and its clean-up, then the server's heap. */
async function measure (origin: string, run: number, seconds: number): Promise<RunResult> {
  const written: Written = new Map()
  const unexpected = new Map<string, number>()
  const result = await runLoad(origin, seconds, `load run ${run}`, written, unexpected)
  let status5xx = 0
  for (const [status, stats] of Object.entries(result.statusCodeStats ?? {})) {
    if (Number(status) >= 500) status5xx += stats.count ?? 0
  }
  const failedReads = await unreadable(origin, written)
  const cleanupFailed = await removeWritten(origin, written)
  return {
    run,
    requests: result.requests.total,
    rps: result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    status5xx,
    unexpected: Object.fromEntries(unexpected),
    written: written.size,
    deleted: [...written.values()].filter(state => state === 'deleted').length,
    deleting: [...written.values()].filter(state => state === 'deleting').length,
    unreadable: failedReads,
    cleanupFailed,
    heapUsed: await heapUsed(origin)
  }
}

/** Starts the server, runs a warm-up (JIT and pools fill there), then two identical measured runs. */
async function loadStore (kind: StoreKind, seconds: number) {
  // harness.ts starts this file as the server: LOAD_ROLE tells it so (the child inherits this
  // process's environment), STORE which store; harness's type names run.ts's stores only.
  process.env.LOAD_ROLE = 'server'
  const server = await startServer('load.js', kind as BenchStoreKind, ['--expose-gc'])
  if ('unavailable' in server) throw new Error(`the load server is unavailable: ${server.unavailable}`)
  try {
    return await loadServer(kind, server, seconds)
  } finally {
    await server.stop()
  }
}

async function loadServer (kind: StoreKind, server: Server, seconds: number) {
  const warmup = Math.min(5, Math.max(1, Math.round(seconds / 4)))
  const warm = await measure(server.origin, 0, warmup)
  process.stdout.write(`load ${kind} warm-up ${warmup} s req/s ${warm.rps.toFixed(0)} errors ${warm.errors} non2xx ${warm.non2xx}\n`)
  const runs: RunResult[] = []
  for (const run of [1, 2]) {
    const result = await measure(server.origin, run, seconds)
    runs.push(result)
    process.stdout.write(`load ${kind} run ${run} req/s ${result.rps.toFixed(0)} p50 ${result.p50} p99 ${result.p99} errors ${result.errors} non2xx ${result.non2xx} heapMB ${(result.heapUsed / mebibyte).toFixed(2)}\n`)
  }
  return { warm, runs }
}

async function main () {
  const kind = (process.argv[2] ?? process.env.LOAD_STORE ?? 'memory') as StoreKind
  if (!storeKinds.includes(kind)) throw new Error(`the store must be one of ${storeKinds.join(', ')}, received ${kind}`)
  const seconds = Number(process.env.LOAD_SECONDS ?? 20)
  if (!Number.isInteger(seconds) || seconds < 1) throw new Error(`LOAD_SECONDS must be a positive integer, received ${process.env.LOAD_SECONDS}`)
  if (kind === 'postgres' && databaseUrl() === undefined) throw new Error('the postgres store needs DATABASE_URL')

  // The SQL stores' data lives only as long as this run: a temporary PGlite directory, or a fresh
  // PostgreSQL schema this process creates (CREATE SCHEMA fails rather than reuse one) and drops.
  let dispose = async () => {}
  if (kind === 'pglite') {
    const dir = await mkdtemp(join(tmpdir(), 'apic-load-'))
    process.env.LOAD_DATA_DIR = dir
    dispose = async () => { await rm(dir, { recursive: true, force: true }) }
  }
  if (kind === 'postgres') {
    const schema = `apic_load_${randomBytes(6).toString('hex')}`
    const admin = new pg.Pool({ connectionString: databaseUrl(), max: 1 })
    await admin.query(`CREATE SCHEMA "${schema}"`)
    process.env.LOAD_SCHEMA = schema
    dispose = async () => {
      try {
        await admin.query(`DROP SCHEMA "${schema}" CASCADE`)
      } finally {
        await admin.end()
      }
    }
  }
  // Ctrl-C reaches the server too (same process group); leave no directory or schema behind.
  process.once('SIGINT', () => { dispose().finally(() => process.exit(130)) })
  let outcome
  try {
    outcome = await loadStore(kind, seconds)
  } finally {
    await dispose()
  }

  const { warm, runs } = outcome
  const [first, second] = runs
  const growth = second.heapUsed - first.heapUsed
  const problems: string[] = []
  for (const result of [warm, ...runs]) {
    const name = result.run === 0 ? 'warm-up' : `run ${result.run}`
    if (result.errors > 0) problems.push(`${name}: ${result.errors} errors or timeouts`)
    if (result.status5xx > 0) problems.push(`${name}: ${result.status5xx} answers 5xx`)
    for (const [key, count] of Object.entries(result.unexpected)) problems.push(`${name}: ${count} × ${key}`)
    if (result.unreadable.length > 0) problems.push(`${name}: ${result.unreadable.length} writes not read back as acknowledged, e.g. ${result.unreadable[0]}`)
    if (result.cleanupFailed.length > 0) problems.push(`${name}: ${result.cleanupFailed.length} clean-up deletes failed, e.g. ${result.cleanupFailed[0]}`)
  }
  if (growth >= heapMargin) problems.push(`heap grew ${(growth / mebibyte).toFixed(2)} MiB from run 1 to run 2`)
  const pass = problems.length === 0
  const verdict = pass ? 'pass' : 'FAIL'
  process.stdout.write(`load ${kind} verdict ${verdict} heap growth ${(growth / mebibyte).toFixed(2)} MiB (margin ${(heapMargin / mebibyte).toFixed(0)} MiB)` +
    ` written ${runs.map(run => run.written).join('+')} unreadable ${runs.reduce((sum, run) => sum + run.unreadable.length, 0)}` +
    `${pass ? '' : ': ' + problems.join('; ')}\n`)
  process.stdout.write(JSON.stringify({
    store: kind,
    seconds,
    connections,
    node: process.version,
    heapMarginBytes: heapMargin,
    heapGrowthBytes: growth,
    pass,
    problems,
    runs: [warm, ...runs].map(({ unreadable: failedReads, cleanupFailed, ...rest }) => ({ ...rest, unreadable: failedReads.length, cleanupFailed: cleanupFailed.length }))
  }) + '\n')
  if (!pass) process.exitCode = 1
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.env.LOAD_ROLE === 'server') await serve(process.env.STORE as StoreKind)
  else await main()
}
