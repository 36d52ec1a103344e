// The change feed's promise under concurrency (docs/demo-contract.md "Changes": commit order): N
// writers on two app instances over one PostgreSQL database, a reader paging the feed and an SSE
// client meanwhile. Afterwards every acknowledged write appears exactly once, what the reader and
// the stream saw while writes were committing equals what a read after them all finds (nothing
// skipped, nothing reordered), and each record's versions ascend. Each transaction is held open a
// random few milliseconds after it appends its changes, so commits land out of the order they
// began. The same run with naive positions (a timestamp taken as the change is appended, before the
// commit, which may land after a later one's, instead of numbering what has committed) must be
// caught: it proves the test can fail. CHANGES_PROPERTY_WRITES sets the writes per writer (default 12).
import { randomBytes } from 'node:crypto'
import Fastify from 'fastify'
import pg from 'pg'
import t from 'tap'
import type { Test } from 'tap'
import apiConventions, { postgresStore } from '../lib/index.js'
import type { PostgresPool } from '../lib/index.js'
import { demoSecurityOptions } from '../demo/app.js'
import { loadConfig } from '../demo/config.js'
import { demoResources } from '../demo/schemas/index.js'
import { client } from './helpers/demo-http.js'
import type { Api } from './helpers/demo-http.js'
import { eventReader } from './helpers/events.js'

const databaseUrl = process.env.DATABASE_URL
const writesPerWriter = Number(process.env.CHANGES_PROPERTY_WRITES ?? 12)
const writers = 6

interface Change { id: string, position: string, resource: string, recordId: string, operation: string, version: number }

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

/**
 * The pool of one instance, each write that appends a change held open 0..8 ms before it commits
 * (a write outside a transaction, one statement, is run in a transaction of its own to be held);
 * `naive`: each change positioned as it is appended, by the time (the variant the test must catch).
 */
function heldPool (pool: pg.Pool, naive: boolean): PostgresPool {
  const appends = /INSERT INTO "[^"]+"\."api_change_log"/
  // A position at INSERT, in microseconds (and a random tail, so that two appends never collide): numbering then finds nothing left to number.
  const positioned = (text: string) => naive ? text.replace('NULL::bigint', '(extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000 + (random() * 999)::integer') : text
  const wrap = (client: pg.PoolClient) => {
    let inTransaction = false
    const held = async (config: { text: string, name?: string }) => {
      const text = positioned(config.text)
      if (inTransaction) {
        const result = await client.query({ ...config, text, name: naive ? undefined : config.name } as never)
        await sleep(Math.random() * 8)
        return result
      }
      await client.query('BEGIN')
      try {
        const result = await client.query({ ...config, text, name: naive ? undefined : config.name } as never)
        await sleep(Math.random() * 8)
        await client.query('COMMIT')
        return result
      } catch (error) {
        await client.query('ROLLBACK')
        throw error
      }
    }
    return new Proxy(client, {
      get (target, name) {
        if (name !== 'query') return Reflect.get(target, name, target)
        return (config: { text: string, name?: string }, callback?: (error: Error | null, result?: unknown) => void) => {
          if (typeof config === 'object' && /^BEGIN/.test(config.text)) inTransaction = true
          if (typeof config === 'object' && /^(COMMIT|ROLLBACK)/.test(config.text)) inTransaction = false
          const result = typeof config === 'object' && appends.test(config.text) ? held(config) : target.query(config as never)
          if (callback === undefined) return result
          result.then(rows => callback(null, rows), (error: Error) => callback(error))
        }
      }
    })
  }
  return {
    connect: ((callback?: (error: Error | undefined, client: pg.PoolClient | undefined, release: () => void) => void) =>
      callback === undefined
        ? pool.connect().then(wrap)
        : pool.connect((error, client, release) => callback(error, client === undefined ? undefined : wrap(client), release))) as PostgresPool['connect'],
    on: (event, listener) => pool.on(event, listener),
    end: async () => await pool.end(),
    get totalCount () { return pool.totalCount },
    get idleCount () { return pool.idleCount },
    get waitingCount () { return pool.waitingCount }
  }
}

async function instance (t: Test, url: string, schema: string, naive: boolean): Promise<{ api: Api, base: string }> {
  const pool = new pg.Pool({ connectionString: url, max: 8 })
  const store = await postgresStore({ pool: heldPool(pool, naive), schema })
  const app = Fastify()
  await app.register(apiConventions, {
    prefix: '/v1',
    resources: demoResources(store),
    cursorSecret: 'commit-order-secret-0123456789',
    changes: { pollInterval: 50 },
    ...demoSecurityOptions(loadConfig({ STORE: 'memory', RATE_LIMIT_MAX: '1000000000' }))
  })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(async () => { await app.close(); await store.close(); await pool.end() })
  return { api: client(base), base }
}

const nextOf = (body: { links: Array<{ rel: string, href: string }> }) => (body.links.find(link => link.rel === 'next') as { href: string }).href

/** Pages from the start until `done()` and a read at the head finds nothing more. */
async function pageThrough (api: Api, done: () => boolean): Promise<Change[]> {
  const seen: Change[] = []
  let path = '/v1/changes?pageSize=7'
  for (;;) {
    const finished = done()
    const res = await api('admin', 'GET', path)
    if (res.status !== 200) throw new Error(`feed answered ${res.status} ${res.text}`)
    seen.push(...res.body.data.changes)
    path = nextOf(res.body)
    if (finished && res.body.data.changes.length === 0) return seen
  }
}

interface Outcome { acknowledged: string[], paged: Change[], streamed: Change[], all: Change[] }

/** Writers on both instances, a reader on the second, a stream on the first; then the whole feed. */
async function run (t: Test, url: string, naive: boolean): Promise<Outcome> {
  const schema = `apic_changes_${randomBytes(4).toString('hex')}`
  const admin = new pg.Pool({ connectionString: url })
  t.teardown(async () => { await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`); await admin.end() })
  const a = await instance(t, url, schema, naive)
  const b = await instance(t, url, schema, naive)
  const seeded = await a.api('admin', 'POST', '/v1/authors', { body: { name: 'Seed' } })
  if (seeded.status !== 201) throw new Error(`seeding answered ${seeded.status} ${seeded.text}`)
  const author = seeded.body.data.author
  const books: string[] = []
  for (let i = 0; i < 3; i++) books.push((await a.api('admin', 'POST', '/v1/books', { body: { title: `B${i}`, authorId: author.id } })).body.data.book.id)

  const acknowledged: string[] = []
  const ack = (resource: string, id: string, etag: string | null) => acknowledged.push(`${resource} ${id} v${/^"(\d+)/.exec(String(etag))?.[1]}`)
  let writing = true
  const stream = await fetch(`${a.base}/v1/changes`, { headers: { authorization: 'Bearer admin-token', accept: 'text/event-stream' } })
  const events = eventReader(stream.body as ReadableStream<Uint8Array>)
  const streamed: Change[] = []
  const listening = (async () => {
    for (let event = await events.next(); event !== null; event = await events.next()) if (event.data !== undefined) streamed.push(JSON.parse(event.data) as Change)
  })()
  const paging = pageThrough(b.api, () => !writing)

  await Promise.all(Array.from({ length: writers }, async (_, w) => {
    const api = w % 2 === 0 ? a.api : b.api
    // Each writer a user of its own: one review per book each, and the books' counts contended.
    const user = ['alice', 'bob', 'dev'][w % 3]
    for (let i = 0; i < writesPerWriter; i++) {
      const made = await api('dev', 'POST', '/v1/authors', { body: { name: `W${w}-${i}` } })
      if (made.status === 201) ack('authors', made.body.data.author.id, made.headers.get('etag'))
      const changed = await api('dev', 'PATCH', `/v1/books/${books[i % books.length]}`, { body: { year: 1900 + i } })
      if (changed.status === 200) ack('books', books[i % books.length], changed.headers.get('etag'))
      if (i % 4 === 0 && w < 3) {
        const review = await api(user, 'POST', '/v1/reviews', { body: { bookId: books[(i / 4) % books.length], rating: 3 } })
        if (review.status === 201) ack('reviews', review.body.data.review.id, review.headers.get('etag'))
      }
    }
  }))
  writing = false
  const paged = await paging
  const all = await pageThrough(a.api, () => true)
  // The stream has caught up once it holds the last change; then it is closed.
  while (streamed.length < all.length && streamed.at(-1)?.position !== all.at(-1)?.position) await sleep(20)
  await events.cancel()
  await listening
  return { acknowledged, paged, streamed, all }
}

const key = (change: Change) => `${change.resource} ${change.recordId} v${change.version}`

/** What is wrong with an outcome; empty when the feed kept its promise. */
function violations ({ acknowledged, paged, streamed, all }: Outcome): string[] {
  const found: string[] = []
  const keys = all.map(key)
  const counts = new Map<string, number>()
  for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1)
  for (const write of acknowledged) if (counts.get(write) !== 1) found.push(`acknowledged ${write} appears ${counts.get(write) ?? 0} times`)
  if (new Set(all.map(change => change.id)).size !== all.length) found.push('a change id repeats')
  const last = new Map<string, number>()
  for (const change of all) {
    const record = `${change.resource} ${change.recordId}`
    if ((last.get(record) ?? 0) >= change.version) found.push(`${record}: v${change.version} after v${last.get(record)}`)
    last.set(record, change.version)
  }
  const sameAs = (name: string, seen: Change[]) => {
    const missed = keys.filter(k => !seen.some(change => key(change) === k))
    if (missed.length > 0) found.push(`${name} missed ${missed.length} changes (${missed.slice(0, 3).join(', ')})`)
    else if (seen.map(key).join('\n') !== keys.join('\n')) found.push(`${name} saw another order`)
  }
  sameAs('the reader', paged)
  sameAs('the stream', streamed)
  return found
}

t.test('N writers on two instances, a reader and a stream: every acknowledged write once, in commit order', { skip: databaseUrl === undefined ? 'needs DATABASE_URL' : false }, async t => {
  const outcome = await run(t, databaseUrl as string, false)
  t.ok(outcome.acknowledged.length >= writers * writesPerWriter * 2, 'the writes were acknowledged')
  t.same(violations(outcome), [])
})

t.test('the same run over a naive sequence is caught', { skip: databaseUrl === undefined ? 'needs DATABASE_URL' : false }, async t => {
  // A miss needs a reader between two commits that landed out of order: a few runs make it certain enough.
  let caught: string[] = []
  for (let round = 0; round < 5 && caught.length === 0; round++) caught = violations(await run(t, databaseUrl as string, true))
  t.not(caught.length, 0, 'the test fails on a naive sequence')
  t.comment(caught.slice(0, 3).join('; '))
})
