// A database that stops answering (spec "Errors": unreachable or failing mid-request is 503
// problem+json with Retry-After): the connection stays open but nothing comes back. Every query
// is bounded by queryTimeoutMillis and connecting by connectionTimeoutMillis, so requests answer
// 503 within the bound, and the store recovers when answers come back. Through a TCP relay that
// can go silent: to PGlite speaking the wire protocol, and to PostgreSQL when DATABASE_URL is set.
import t from 'tap'
import type { Test as Tap } from 'tap'
import net from 'node:net'
import { once } from 'node:events'
import pg from 'pg'
import { buildApp, create, json } from '../helpers/app.js'
import { postgresStore } from '../../lib/stores/sql/index.js'
import { listQuery, suiteModels } from './conformance.js'
import { openPglite } from './pglite-db.js'
import type { PGlite } from '@electric-sql/pglite'

interface Relay {
  /** The URL to connect to through the relay. */
  readonly url: string
  /** While silent, what either side sends is dropped: the TCP connections stay up, unanswered. */
  silence (silent: boolean): void
}

/** A TCP listener on 127.0.0.1; `handle` serves each connection. Closed, with its sockets, when the test ends. */
async function listen (t: Tap, handle: (socket: net.Socket) => void): Promise<number> {
  const sockets = new Set<net.Socket>()
  const server = net.createServer(socket => {
    sockets.add(socket.on('error', () => {}).on('close', () => sockets.delete(socket)))
    handle(socket)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(async () => {
    const closed = once(server, 'close')
    server.close()
    for (const socket of sockets) socket.destroy()
    await closed
  })
  return (server.address() as net.AddressInfo).port
}

/** PGlite as a PostgreSQL server: each frontend message goes to its protocol handler, in order. */
async function pgliteRelay (t: Tap, db: PGlite): Promise<Relay> {
  let silent = false
  let queue = Promise.resolve()
  const port = await listen(t, socket => {
    let pending = Buffer.alloc(0)
    socket.on('data', (data: Buffer) => {
      pending = Buffer.concat([pending, data])
      for (;;) {
        // The startup message has no type byte (its length comes first, so its first byte is 0).
        const length = pending.length < 5 ? Infinity : pending[0] === 0 ? pending.readInt32BE(0) : pending.readInt32BE(1) + 1
        if (pending.length < length) return
        const message = new Uint8Array(pending.subarray(0, length))
        pending = pending.subarray(length)
        if (silent) continue
        queue = queue.then(async () => {
          const reply = await db.execProtocolRaw(message)
          if (!silent && !socket.destroyed && reply.length > 0) socket.write(reply)
        })
      }
    })
  })
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, silence (value) { silent = value } }
}

/** A TCP relay to a real server that forwards bytes unless silenced. */
async function postgresRelay (t: Tap, target: URL): Promise<Relay> {
  let silent = false
  const port = await listen(t, client => {
    const server = net.connect(Number(target.port || 5432), target.hostname)
    server.on('error', () => {}).on('close', () => client.destroy())
    client.on('close', () => server.destroy())
    client.on('data', (data: Buffer) => { if (!silent) server.write(data) })
    server.on('data', (data: Buffer) => { if (!silent) client.write(data) })
  })
  const url = new URL(target)
  url.host = `127.0.0.1:${port}`
  return { url: url.href, silence (value) { silent = value } }
}

// Small bounds keep the test fast: a statement may take 200 ms, an unanswered one is given up
// after 1.2 s, a connection attempt after 2 s (test files run in parallel on few cores, so a
// healthy handshake can take a while). Without the bounds these requests would never end.
const queryTimeoutMillis = 200
const poolOptions = { max: 1, connectionTimeoutMillis: 2000 }
const bound = 2000 + 2000

/** `sessions`: what the store is told of the server's sessions (PGlite has one, shared by every connection, as behind a pooler). */
function timeoutSuite (t: Tap, relay: () => Promise<Relay>, schema: (base: string) => string, sessions: { pooler?: 'transaction' } = {}): void {
  t.test('a database that stops answering: every request is 503 with Retry-After within the timeout, then recovers', async t => {
    const { url, silence } = await relay()
    const store = await postgresStore({ connectionString: url, schema: schema('timeout_stalled'), queryTimeoutMillis, retryAfterSeconds: 4, poolOptions, ...sessions })
    const app = await buildApp(t, { store })
    const author = await create(app, 'authors', { name: 'Pat' })
    silence(true)
    // The first goes out on the pool's open connection and is never answered; the pool then
    // drops it, so the second waits for a new connection that never completes its handshake.
    const requests = [
      { url: `/v1/authors/${author.id}` },
      { method: 'POST' as const, url: '/v1/authors', headers: json, payload: { name: 'B' } }
    ]
    for (const request of requests) {
      const started = Date.now()
      const res = await app.inject(request)
      const elapsed = Date.now() - started
      t.same({ status: res.statusCode, type: res.headers['content-type'], retryAfter: res.headers['retry-after'] },
        { status: 503, type: 'application/problem+json; charset=utf-8', retryAfter: '4' }, `${request.url}: 503 with Retry-After`)
      t.match(res.json(), { status: 503, type: /store-unavailable$/ })
      t.ok(elapsed < bound, `${request.method ?? 'GET'} ${request.url} answered in ${elapsed} ms`)
    }
    silence(false)
    const res = await app.inject({ url: `/v1/authors/${author.id}` })
    t.equal(res.statusCode, 200, 'recovers once the database answers again')
    t.match(res.json().data, { author: { name: 'Pat' } })
  })

  t.test('an upgrade whose database stops answering is 503, bounded, and done by the next use', async t => {
    const { url, silence } = await relay()
    // Opening leaves one idle connection in the pool: the upgrade's BEGIN goes out on it and is never answered.
    const store = await postgresStore({ connectionString: url, schema: schema('timeout_upgrade'), queryTimeoutMillis, poolOptions, ...sessions })
    t.teardown(() => store.close())
    const { books } = suiteModels(store)
    silence(true)
    const started = Date.now()
    await t.rejects(store.list(books, listQuery(books)), { statusCode: 503, code: 'API_ERR_STORE_UNAVAILABLE', headers: { 'retry-after': '2' } })
    t.ok(Date.now() - started < bound, `answered in ${Date.now() - started} ms`)
    silence(false)
    t.same((await store.list(books, listQuery(books))).items, [])
  })
}

const db = await openPglite()
t.teardown(() => db.close())
t.test('through PGlite', async t => timeoutSuite(t, async () => await pgliteRelay(t, db), base => base, { pooler: 'transaction' }))

const connectionString = process.env.DATABASE_URL
t.test('through PostgreSQL', { skip: connectionString === undefined ? 'DATABASE_URL is not set (the PGlite run covers the same cases)' : false }, async t => {
  const prefix = `apic_test_${process.pid}_${Date.now()}`
  const admin = new pg.Pool({ connectionString })
  t.teardown(async () => {
    const { rows } = await admin.query<{ nspname: string }>('SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)', [`${prefix}_`])
    for (const { nspname } of rows) await admin.query(`DROP SCHEMA "${nspname}" CASCADE`)
    await admin.end()
  })
  timeoutSuite(t, async () => await postgresRelay(t, new URL(connectionString as string)), base => `${prefix}_${base}`)
})
