// Load: a bounded autocannon run — 50 connections, mixed reads and
// writes — against the demo's resources and security on the memory store, the SQL store on
// PGlite and, when DATABASE_URL is set, on PostgreSQL (a fresh schema per run, dropped after).
// Properties: no connection errors, timeouts or non-2xx answers; every create answered 201 is
// readable afterwards; and, on memory (and on PGlite in the long variant), heap use after a second
// identical run is within a small margin of the first (no leak), measured in a server process
// started with --expose-gc (this file, started with LOAD_SERVER_STORE set). Runs are a fixed number
// of requests, so that two runs are identical whatever the machine's speed; LOAD_SCALE multiplies
// them (default 1).
// `npm test` runs the short variant: runs of one pass per connection (350 requests, every
// connection at once) on each store, and the heap comparison on memory, where 1 MiB over 350
// requests is a leak of 3 KiB a request (a request's or a reply's objects kept). TEST_LONG=1
// (`npm run test:long`) runs the long one: thousands of requests a store, which finds a leak of a
// few hundred bytes a request, and the heap comparison on PGlite too.
import { fork } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import type { Test as Tap } from 'tap'
import type { Request } from 'autocannon'

type StoreKind = 'memory' | 'pglite' | 'postgres'
type Command = 'heap' | 'clear' | 'stop'

const cursorSecret = 'load-test-secret-0123456789'

// ---- The server process -----------------------------------------------------------------------

/** The demo's resources and security on the chosen store; answers `heap`, `clear` and `stop` over IPC. */
async function serve (kind: StoreKind) {
  const { default: Fastify } = await import('fastify')
  const { default: apiConventions, memoryStore } = await import('../../lib/index.js')
  const { pgliteStore, postgresStore } = await import('../../lib/stores/sql/index.js')
  const { buildRegistry } = await import('../../lib/registry/index.js')
  const { demoSecurityOptions } = await import('../../demo/app.js')
  const { loadConfig } = await import('../../demo/config.js')
  const { demoResources } = await import('../../demo/schemas/index.js')
  const { openPglite } = await import('../stores/pglite-db.js')

  const db = kind === 'pglite' ? await openPglite() : undefined
  const store = kind === 'memory'
    ? memoryStore()
    : db !== undefined ? await pgliteStore({ db }) : await postgresStore({ connectionString: process.env.LOAD_DATABASE_URL, schema: process.env.LOAD_SCHEMA })
  const app = Fastify()
  await app.register(apiConventions, {
    prefix: '/v1',
    resources: demoResources(store),
    cursorSecret,
    ...demoSecurityOptions(loadConfig({ STORE: 'memory', RATE_LIMIT_MAX: '1000000000' }))
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const models = Object.fromEntries(buildRegistry(demoResources(store)).map(model => [model.name, model]))
  const gc = (globalThis as { gc?: () => void }).gc as () => void

  const commands: Record<Command, () => Promise<unknown>> = {
    async heap () {
      // Several passes: finalizers and weak references free more on the next one.
      for (let i = 0; i < 4; i++) {
        gc()
        await new Promise(resolve => setImmediate(resolve))
      }
      return process.memoryUsage().heapUsed
    },
    async clear () {
      // Children before parents, or the referential rule refuses (409).
      for (const name of ['books', 'authors']) {
        const model = models[name]
        for (;;) {
          const page = await store.list(model, { filter: null, sort: [{ field: 'id', direction: 'asc' }], window: { kind: 'offset', offset: 0 }, limit: 500, total: false })
          if (page.items.length === 0) break
          for (const record of page.items) await store.remove(model, record.data.id as string)
        }
      }
      return true
    },
    async stop () {
      await app.close()
      await store.close()
      await db?.close()
      return true
    }
  }
  process.on('message', (message: { command: Command }) => {
    commands[message.command]().then(result => {
      process.send?.({ command: message.command, result })
      if (message.command === 'stop') process.disconnect()
    }, (error: Error) => { process.send?.({ command: message.command, error: error.message }) })
  })
  process.send?.({ port: (app.server.address() as { port: number }).port })
}

// ---- The tests --------------------------------------------------------------------------------

interface Server {
  readonly url: string
  ask (command: Command): Promise<unknown>
}

async function startServer (t: Tap, kind: StoreKind, env: Record<string, string> = {}): Promise<Server> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), [], {
    execArgv: [...process.execArgv, '--expose-gc'],
    env: { ...process.env, ...env, LOAD_SERVER_STORE: kind },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc']
  })
  t.teardown(() => { if (child.connected) child.kill('SIGKILL') })
  const [hello] = await once(child, 'message') as [{ port: number }]
  return {
    url: `http://127.0.0.1:${hello.port}`,
    async ask (command) {
      child.send({ command })
      for (;;) {
        const [reply] = await once(child, 'message') as [{ command: Command, result?: unknown, error?: string }]
        if (reply.command !== command) continue
        if (reply.error !== undefined) throw new Error(`${command} failed in the server: ${reply.error}`)
        return reply.result
      }
    }
  }
}

const write = { authorization: 'Bearer dev-token', 'content-type': 'application/json' }
const read = { authorization: 'Bearer read-token' }

interface Acknowledged { authors: Set<string>, books: Set<string> }
interface RequestContext { authorId?: string }

/**
 * One autocannon run: each connection repeats LIST, CREATE an author, RETRIEVE it, CREATE a book
 * by it, MODIFY the author, LIST its books (nested) and LIST books filtered and sorted. Every
 * 201 is recorded. Resolves with autocannon's results.
 */
async function runLoad (url: string, amount: number, acknowledged: Acknowledged, tag: string) {
  const { default: autocannon } = await import('autocannon')
  let serial = 0
  const created = (kind: keyof Acknowledged) => (status: number, body: string, context: RequestContext) => {
    if (status !== 201) return
    const data = (JSON.parse(body) as { data: Record<string, { id: string }> }).data
    const id = Object.values(data)[0].id
    acknowledged[kind].add(id)
    if (kind === 'authors') context.authorId = id
  }
  const withAuthor = (path: (id: string) => string, body?: (id: string) => string) =>
    (request: Request, context: object): Request => {
      const { authorId } = context as RequestContext
      // No author: its create failed (counted as a non-2xx). A falsy value makes autocannon start the sequence over.
      if (authorId === undefined) return undefined as unknown as Request
      return { ...request, path: path(authorId), ...(body === undefined ? {} : { body: body(authorId) }) }
    }
  return await autocannon({
    url,
    connections: 50,
    amount,
    timeout: 30,
    requests: [
      { method: 'GET', path: '/v1/authors?pageSize=10&sort=-name', headers: read },
      {
        method: 'POST',
        path: '/v1/authors',
        headers: write,
        setupRequest: request => ({ ...request, body: JSON.stringify({ name: `${tag} author ${serial++}`, country: 'NZ' }) }),
        onResponse: created('authors')
      },
      { method: 'GET', path: '/v1/authors', headers: read, setupRequest: withAuthor(id => `/v1/authors/${id}`) },
      {
        method: 'POST',
        path: '/v1/books',
        headers: write,
        setupRequest: withAuthor(() => '/v1/books', id => JSON.stringify({ title: `${tag} book ${serial++}`, authorId: id, year: 1900 + (serial % 120), rating: serial % 6 })),
        onResponse: created('books')
      },
      { method: 'PATCH', path: '/v1/authors', headers: { ...write, 'content-type': 'application/merge-patch+json' }, setupRequest: withAuthor(id => `/v1/authors/${id}`, () => JSON.stringify({ country: 'PL' })) },
      { method: 'GET', path: '/v1/authors', headers: read, setupRequest: withAuthor(id => `/v1/authors/${id}/books?sort=-year`) },
      { method: 'GET', path: `/v1/books?filter=${encodeURIComponent('year ge 1950 and rating gt 2')}&sort=-year,title&pageSize=20&expand=author`, headers: read }
    ]
  })
}

/** Every id of a collection, read by walking its pages over HTTP. */
async function listIds (url: string, resources: string): Promise<Set<string>> {
  const ids = new Set<string>()
  let next: string | undefined = `/v1/${resources}?pageSize=100`
  while (next !== undefined) {
    const res = await fetch(`${url}${next}`, { headers: read })
    if (res.status !== 200) throw new Error(`LIST ${resources} answered ${res.status}`)
    const body = await res.json() as { data: Record<string, Array<{ id: string }>>, links: Array<{ rel: string, href: string }> }
    for (const record of body.data[resources]) ids.add(record.id)
    next = body.links.find(link => link.rel === 'next')?.href
  }
  return ids
}

const mebibyte = 1024 * 1024

/** Requests per connection in one pass over the sequence in runLoad. */
const cycle = 7

/**
 * `cycles` times the sequence on each of the 50 connections, so every connection ends a full pass.
 * With `heap`, a warm-up run (JIT, caches and pools fill there) and two measured runs; without,
 * one run, for the errors and the acknowledged writes only.
 */
async function loadSuite (t: Tap, kind: StoreKind, cycles: number, { heap = true, env = {} }: { heap?: boolean, env?: Record<string, string> } = {}) {
  const amount = 50 * cycle * Math.max(1, Math.round(cycles * Number(process.env.LOAD_SCALE ?? 1)))
  const server = await startServer(t, kind, env)
  const heaps: number[] = []
  for (const [index, run] of (heap ? ['warm-up', 'first', 'second'] : ['only']).entries()) {
    const acknowledged: Acknowledged = { authors: new Set(), books: new Set() }
    const result = await runLoad(server.url, heap && index === 0 ? 50 * cycle : amount, acknowledged, run)
    const statuses = Object.keys(result.statusCodeStats ?? {}).sort()
    t.same({ errors: result.errors, timeouts: result.timeouts, non2xx: result.non2xx, statuses }, { errors: 0, timeouts: 0, non2xx: 0, statuses: ['200', '201'] },
      `${run} run: ${result.requests.total} requests (${Math.round(result.requests.average)}/s), no errors, no timeouts, only 200 and 201`)
    // Every pass creates one author and one book: a full run acknowledges exactly that many.
    const passes = result.requests.total / cycle
    t.same([acknowledged.authors.size, acknowledged.books.size], [passes, passes], `${run} run: ${passes} authors and ${passes} books created`)
    for (const resources of ['authors', 'books'] as const) {
      const stored = await listIds(server.url, resources)
      const missing = [...acknowledged[resources]].filter(id => !stored.has(id))
      t.same(missing, [], `${run} run: every ${resources} create answered 201 is listed afterwards`)
    }
    if (!heap) continue
    await server.ask('clear')
    heaps.push(await server.ask('heap') as number)
  }
  if (!heap) return await server.ask('stop')
  const [, first, second] = heaps
  // Garbage-collected heaps of two identical runs differ by noise only; a leak of a few hundred
  // bytes a request (a closure, a cache entry) over thousands of requests exceeds this.
  const margin = mebibyte
  t.ok(second - first < margin, `heap after the second run ${(second / mebibyte).toFixed(1)} MiB, after the first ${(first / mebibyte).toFixed(1)} MiB (margin ${(margin / mebibyte).toFixed(1)} MiB)`)
  await server.ask('stop')
}

async function tests () {
  const { default: t } = await import('tap')
  t.setTimeout(240_000)
  const long = process.env.TEST_LONG === '1'

  // Each pass lists a new author's books, one more entry in the memory store's bounded cache of
  // filter shapes: long runs of exactly its size leave that cache as they found it, so heaps
  // compare; the short ones add 50 entries each, some KiB, well within the margin.
  const { SHAPES_PER_TABLE } = await import('../../lib/stores/memory.js')
  t.test('memory store', async t => { await loadSuite(t, 'memory', long ? SHAPES_PER_TABLE / 50 : 1) })
  t.test('SQL store on PGlite', async t => { await loadSuite(t, 'pglite', long ? 2 : 1, { heap: long }) })
  // The server's code is the PGlite run's but for the driver: one run, without the heap comparison.
  t.test('SQL store on PostgreSQL', { skip: process.env.DATABASE_URL === undefined ? 'needs DATABASE_URL' : false }, async t => {
    const { default: pg } = await import('pg')
    const schema = `apic_test_load_${process.pid}_${Date.now()}`
    const admin = new pg.Pool({ connectionString: process.env.DATABASE_URL })
    await admin.query(`CREATE SCHEMA "${schema}"`)
    t.teardown(async () => {
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      await admin.end()
    })
    await loadSuite(t, 'postgres', long ? 3 : 1, { heap: false, env: { LOAD_DATABASE_URL: process.env.DATABASE_URL as string, LOAD_SCHEMA: schema } })
  })
}

const role = process.env.LOAD_SERVER_STORE as StoreKind | undefined
if (role === undefined) await tests()
else await serve(role)
