// Failure (spec "Errors": 503): with the database unreachable or failing mid-request the API
// answers 503 problem+json with Retry-After, keeps running and recovers; start-up with an
// unreachable DATABASE_URL fails with one line naming it. Also the two driver adapters.
import t from 'tap'
import type { Test as Tap } from 'tap'
import net from 'node:net'
import { once } from 'node:events'
import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { createPgConfig } from '@electric-sql/pglite/node-postgres'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { buildApp, create, json } from '../helpers/app.js'
import { pgliteStore, postgresStore } from '../../lib/stores/sql/index.js'
import { SqlStore } from '../../lib/stores/sql/store.js'
import type { SqlDatabase } from '../../lib/stores/sql/store.js'
import { pgliteDatabase } from '../../lib/stores/sql/pglite.js'
import { createDemoStore } from '../../demo/store.js'
import { loadConfig } from '../../demo/config.js'
import { listQuery, suiteModels } from './conformance.js'
import { openPglite } from './pglite-db.js'

const db = await openPglite()
t.teardown(async () => { if (!db.closed) await db.close() })
const silent = { info () {}, warn () {} } as never

/** A database that can be switched off: every call fails as a refused connection would. */
function switchable (inner: SqlDatabase) {
  let down = false
  const refuse = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })
  const database: SqlDatabase = {
    query: async (text, values) => { if (down) throw refuse(); return await inner.query(text, values) },
    transaction: async work => { if (down) throw refuse(); return await inner.transaction(work) },
    close: async () => await inner.close()
  }
  return { database, set: (isDown: boolean) => { down = isDown } }
}

/** What a client sees of a 503: status, media type, Retry-After and the problem. */
async function expectUnavailable (t: Tap, app: FastifyInstance, request: InjectOptions, retryAfter: string) {
  const res = await app.inject(request)
  t.equal(res.statusCode, 503, `${JSON.stringify(request)} is 503`)
  t.match(res.headers['content-type'], /^application\/problem\+json/)
  t.equal(res.headers['retry-after'], retryAfter)
  t.match(res.json(), { status: 503, type: /store-unavailable$/, detail: /unavailable/ })
}

t.test('database down: 503 with Retry-After on every operation, then recovery without a restart', async t => {
  const { database, set } = switchable(pgliteDatabase(db, false))
  const store = new SqlStore(database, { schema: 'failure_switch', tables: {}, migrate: true, caseCollation: 'pg_unicode_fast', retryAfterSeconds: 7 })
  const app = await buildApp(t, { store })
  set(true)
  await expectUnavailable(t, app, { url: '/v1/books' }, '7')
  await expectUnavailable(t, app, { method: 'POST', url: '/v1/authors', headers: json, payload: { name: 'A' } }, '7')
  set(false)
  const author = await create(app, 'authors', { name: 'A' })
  t.equal((await app.inject({ url: '/v1/authors' })).statusCode, 200, 'the tables are made once the database is back')
  set(true)
  // Failing mid-request: the tables exist, the statements fail.
  await expectUnavailable(t, app, { url: `/v1/authors/${author.id}` }, '7')
  await expectUnavailable(t, app, { url: '/v1/authors?total=true&filter=name%20eq%20%27A%27' }, '7')
  await expectUnavailable(t, app, { url: '/v1/authors', headers: { accept: 'application/x-ndjson' } }, '7')
  await expectUnavailable(t, app, { method: 'PUT', url: `/v1/authors/${author.id}`, headers: json, payload: { name: 'B' } }, '7')
  await expectUnavailable(t, app, { method: 'DELETE', url: `/v1/authors/${author.id}` }, '7')
  set(false)
  const res = await app.inject({ url: `/v1/authors/${author.id}` })
  t.equal(res.statusCode, 200)
  t.match(res.json().data, { author: { name: 'A' } })
})

t.test('the change feed with the database down: 503 with Retry-After, then the changes once it is back', async t => {
  const { database, set } = switchable(pgliteDatabase(db, false))
  const store = new SqlStore(database, { schema: 'failure_changes', tables: {}, migrate: true, caseCollation: 'pg_unicode_fast', retryAfterSeconds: 4 })
  const app = await buildApp(t, { store, changes: true })
  await create(app, 'authors', { name: 'Logged' })
  set(true)
  await expectUnavailable(t, app, { url: '/v1/changes' }, '4')
  set(false)
  const read = await app.inject({ url: '/v1/changes' })
  t.equal(read.statusCode, 200)
  t.match(read.json().data.changes, [{ resource: 'authors', operation: 'create' }])
})

t.test('prepared at start-up while the database is down: start-up goes on, requests are 503 until it is back', async t => {
  const { database, set } = switchable(pgliteDatabase(db, false))
  const store = new SqlStore(database, { schema: 'failure_prepare', tables: {}, migrate: true, caseCollation: 'pg_unicode_fast', retryAfterSeconds: 5 })
  const { authors, books } = suiteModels(store)
  set(true)
  await store.prepare([authors, books])
  t.pass('prepare leaves an unreachable database to the first request')
  const app = await buildApp(t, { store })
  await expectUnavailable(t, app, { url: '/v1/books' }, '5')
  set(false)
  t.equal((await app.inject({ url: '/v1/books' })).statusCode, 200)
})

t.test('a connection without a current schema needs the schema option; the store closes what it opened', async t => {
  await db.exec('SET search_path TO no_such_schema')
  t.teardown(() => db.exec('SET search_path TO public'))
  await t.rejects(pgliteStore({ db }), { name: 'TypeError', message: /set the schema option/ })
  t.same((await db.query('SELECT 1 AS one')).rows, [{ one: 1 }], 'a given instance is not closed')
})

t.test('the pg Pool adapter: queries, upgrades in a transaction, rollback, pool errors, ownership (PGlite behind node-postgres)', async t => {
  const pool = new pg.Pool(createPgConfig(db))
  t.teardown(() => pool.end())
  // PGlite serves every connection in its one session, as a pooler would: named statements of
  // two connections would meet there.
  const store = await postgresStore({ pool, schema: 'failure_pool', pooler: 'transaction' })
  const { authors, books } = suiteModels(store)
  await store.create(authors, { id: 'a', name: 'A', born: '2000-02-29', country: null })
  await store.create(books, { id: 'b', title: 'B', authorId: 'a', editorId: null, year: 1, rating: null, published: null, meta: { x: [1] } })
  t.same((await store.list(books, listQuery(books, { filter: 'author/born eq 2000-02-29 and year eq 1' }))).items.map(r => r.data), [
    { id: 'b', title: 'B', authorId: 'a', editorId: null, year: 1, rating: null, published: null, meta: { x: [1] } }
  ], 'bigint, date and jsonb come back as the schema says through node-postgres')
  pool.emit('error', new Error('Connection terminated unexpectedly'), {})
  t.pass('a pool error event does not crash the process')
  await store.close()
  t.same((await pool.query('SELECT 1 AS one')).rows, [{ one: 1 }], 'a given pool is not ended')

  await db.exec("CREATE SCHEMA failure_rollback; CREATE VIEW failure_rollback.books AS SELECT 'x'::text AS id WHERE false")
  const failing = await postgresStore({ pool, schema: 'failure_rollback', pooler: 'transaction' })
  const models = suiteModels(failing)
  await t.rejects(failing.list(models.authors, listQuery(models.authors)))
  t.same((await db.query("SELECT tablename FROM pg_tables WHERE schemaname = 'failure_rollback'")).rows, [], 'rolled back')

  const owned = await postgresStore({ poolOptions: createPgConfig(db) as pg.PoolConfig, schema: 'failure_pool', pooler: 'transaction' })
  t.equal((await owned.get(authors, 'a'))?.data.name, 'A')
  await owned.close()
  t.same((await db.query('SELECT 1 AS one')).rows, [{ one: 1 }], 'ending its own pool leaves PGlite alone')
})

t.test('the demo store follows STORE; one that cannot open names the setting', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'apic-demo-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const memory = await createDemoStore(loadConfig({ STORE: 'memory' }), silent)
  t.same((await memory.list(suiteModels(memory).authors, listQuery(suiteModels(memory).authors))).items, [])
  await memory.close()
  await writeFile(join(dir, 'file'), 'not a directory')
  await t.rejects(createDemoStore(loadConfig({ STORE: 'pglite', DATA_DIR: join(dir, 'file', 'data') }), silent),
    { name: 'ConfigError', setting: 'DATA_DIR', message: /^Invalid setting DATA_DIR: cannot open the embedded database in '.*file\/data' \(Error: .*\)$/ })
  await t.rejects(createDemoStore(loadConfig({ DATABASE_URL: 'postgres://app:s3cret@127.0.0.1:1/db' }), silent),
    { name: 'ConfigError', setting: 'DATABASE_URL', message: /^Invalid setting DATABASE_URL: cannot connect to postgres:\/\/app:\*\*\*@127\.0\.0\.1:1\/db \(Error: connect ECONNREFUSED 127\.0\.0\.1:1\)$/ })
})

t.test('the demo store with DATABASE_READ_URL logs both URLs without passwords; an unreachable primary still names DATABASE_URL', async t => {
  const logged: unknown[][] = []
  const log = { info (...args: unknown[]) { logged.push(args) }, warn () {} } as never
  const config = loadConfig({ DATABASE_URL: 'postgres://app:s3cret@127.0.0.1:1/db', DATABASE_READ_URL: 'postgres://reader:hidden@127.0.0.1:2/db' })
  await t.rejects(createDemoStore(config, log),
    { name: 'ConfigError', setting: 'DATABASE_URL', message: /^Invalid setting DATABASE_URL: cannot connect to postgres:\/\/app:\*\*\*@127\.0\.0\.1:1\/db / })
  t.same(logged, [[{ url: 'postgres://app:***@127.0.0.1:1/db', readUrl: 'postgres://reader:***@127.0.0.1:2/db', pooler: 'none' }, 'store: PostgreSQL, reads on the replica at readUrl']])
})

t.test('npm start with an unreachable DATABASE_URL fails with one line naming it', async t => {
  const child = spawn(process.execPath, [...process.execArgv, 'demo/server.ts'], {
    env: { ...process.env, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/test', STORE: undefined, PORT: '0', REDIS_URL: '' },
    stdio: ['ignore', 'ignore', 'pipe']
  })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(stderr, /^Invalid setting DATABASE_URL: cannot connect to postgres:\/\/postgres@127\.0\.0\.1:1\/test \(.*ECONNREFUSED.*\)\n$/)
  t.equal(stderr.split('\n').length, 2, 'exactly one line')
})

// A TCP proxy between the pool and PostgreSQL: stopping it is the server going away.
function proxy (port: number, host: string) {
  const sockets = new Set<net.Socket>()
  const server = net.createServer(client => {
    const upstream = net.connect(port, host)
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on('error', () => {}).on('close', () => { sockets.delete(socket); client.destroy(); upstream.destroy() })
    }
    client.pipe(upstream).pipe(client)
  })
  return {
    async start (listenPort = 0): Promise<number> {
      server.listen(listenPort, '127.0.0.1')
      await once(server, 'listening')
      return (server.address() as net.AddressInfo).port
    },
    async stop () {
      const closed = once(server, 'close')
      server.close()
      for (const socket of sockets) socket.destroy()
      await closed
    }
  }
}

t.test('PostgreSQL going away and coming back, through a real pool', { skip: process.env.DATABASE_URL === undefined ? 'needs DATABASE_URL' : false }, async t => {
  const url = new URL(process.env.DATABASE_URL as string)
  const schema = `apic_test_failure_${process.pid}_${Date.now()}`
  const relay = proxy(Number(url.port || 5432), url.hostname)
  const port = await relay.start()
  const address = new URL(url)
  address.host = `127.0.0.1:${port}`
  const store = await postgresStore({ connectionString: address.href, schema, retryAfterSeconds: 3, poolOptions: { connectionTimeoutMillis: 1000 } })
  const admin = new pg.Pool({ connectionString: url.href })
  t.teardown(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await admin.end()
  })
  const app = await buildApp(t, { store })
  const author = await create(app, 'authors', { name: 'Pat' })
  t.equal((await app.inject({ url: '/v1/authors' })).statusCode, 200)
  await relay.stop()
  // The pool's idle connections die with the proxy: their 'error' events must not end the process.
  await new Promise(resolve => setTimeout(resolve, 100))
  await expectUnavailable(t, app, { url: '/v1/authors' }, '3')
  await expectUnavailable(t, app, { method: 'POST', url: '/v1/authors', headers: json, payload: { name: 'B' } }, '3')
  await relay.start(port)
  const res = await app.inject({ url: `/v1/authors/${author.id}` })
  t.equal(res.statusCode, 200, 'recovers once the server is back')
  t.match(res.json().data, { author: { name: 'Pat' } })
  await relay.stop()
})

t.test('PostgreSQL ending a connection between two statements of a transaction: that transaction fails with 503, the process lives on', { skip: process.env.DATABASE_URL === undefined ? 'needs DATABASE_URL' : false }, async t => {
  const schema = `apic_test_terminated_${process.pid}_${Date.now()}`
  // Its connections are found by their name, to end them from outside as a shutdown (57P01) would.
  const applicationName = `apic-terminated-${process.pid}`
  const store = await postgresStore({ connectionString: process.env.DATABASE_URL, schema, poolOptions: { application_name: applicationName } })
  const admin = new pg.Pool({ connectionString: process.env.DATABASE_URL })
  t.teardown(async () => {
    await store.close()
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await admin.end()
  })
  const { authors } = suiteModels(store)
  const failure = await store.transaction(async tx => {
    await tx.create(authors, { id: 'before', name: 'Before' })
    const { rowCount } = await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND state = 'idle in transaction'", [applicationName])
    t.equal(rowCount, 1, 'the transaction\'s connection was ended')
    // The server's notice arrives while the connection is idle in the transaction.
    await new Promise(resolve => setTimeout(resolve, 200))
    await tx.create(authors, { id: 'after', name: 'After' })
  }).then(() => null, (error: unknown) => error)
  t.match(failure, { statusCode: 503 }, 'the transaction fails as unavailable')
  t.same((await store.list(authors, listQuery(authors))).items, [], 'nothing of it was written')
  t.match(await store.create(authors, { id: 'again', name: 'Again' }), { data: { name: 'Again' } }, 'the next write finds a new connection')
})

// Last, since it closes the file's PGlite: the embedded database stopping under a running app.
t.test('PGlite closed under a running app: 503, not a crash', async t => {
  const store = await pgliteStore({ db, schema: 'failure_closed' })
  const app = await buildApp(t, { store })
  t.equal((await app.inject({ url: '/v1/authors' })).statusCode, 200)
  await db.close()
  await expectUnavailable(t, app, { url: '/v1/authors' }, '2')
})
