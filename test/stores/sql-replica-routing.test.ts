// Read replicas through postgresStore and the plugin, without a server (docs/stores.md "Read
// replicas"): two node-postgres pools faked over one PGlite, the replica's replay set by the test.
// Which pool answers each request shows where it was routed; the data is the same on both, so
// every answer is also checked as a client sees it. The real replica is in sql-replica.test.ts.
import t from 'tap'
import type { Test } from 'tap'
import { postgresStore } from '../../lib/stores/sql/index.js'
import type { PostgresStoreOptions } from '../../lib/stores/sql/index.js'
import { buildSecureApp, createAs } from '../helpers/secure-app.js'
import { buildApp } from '../helpers/app.js'
import { AUTHORS, suiteModels } from './conformance.js'
import { auth } from '../helpers/auth.js'
import { openPglite } from './pglite-db.js'
import { fakePool } from './fake-pool.js'
import type { FakePool } from './fake-pool.js'

const db = await openPglite()
t.teardown(() => db.close())
let schemas = 0

/** The primary's write position and the replica's replay, both set by the test. */
function replication () {
  const positions = { written: '0/1000', replayed: '0/1000' }
  const primary = fakePool(db, text => text.includes('pg_current_wal_lsn()') ? [[positions.written]] : undefined)
  const replica = fakePool(db, text => text.includes('pg_last_wal_replay_lsn()') ? [[positions.replayed, 0]] : undefined)
  return { positions, primary, replica }
}

async function replicatedStore (t: Test, options: PostgresStoreOptions = {}) {
  const { positions, primary, replica } = replication()
  // Checks of the replica are trusted for a minute: the test moves its replay by hand.
  const store = await postgresStore({ pool: primary, readPool: replica, schema: `routing_${++schemas}`, replicaCheckMillis: 60_000, ...options })
  t.teardown(() => store.close())
  return { store, positions, primary, replica }
}

/** Which pools served what one request read. */
async function servedBy (pools: { primary: FakePool, replica: FakePool }, work: () => Promise<unknown>) {
  const before = { primary: pools.primary.served.length, replica: pools.replica.served.length }
  await work()
  return { primary: pools.primary.served.length > before.primary, replica: pools.replica.served.length > before.replica }
}

for (const serverTiming of [false, true]) {
  t.test(`a writer reads its write on the primary while others read the replica${serverTiming ? ', with Server-Timing on' : ''}`, async t => {
    const { store, positions, primary, replica } = await replicatedStore(t)
    const app = await buildSecureApp(t, { store, serverTiming })
    const get = (url: string, headers: Record<string, string>) => app.inject({ url, headers })
    t.equal((await get('/v1/authors', auth.read)).statusCode, 200, 'tables made')
    t.same(await servedBy({ primary, replica }, () => get('/v1/authors?total=true', auth.read)), { primary: false, replica: true }, 'before any write, the replica')
    positions.written = '0/2000'
    const author = await createAs(app, 'authors', { name: 'Ann' })
    let res = await get(`/v1/authors/${author.id}`, auth.read)
    t.equal(res.statusCode, 200)
    t.same(await servedBy({ primary, replica }, () => get(`/v1/authors/${author.id}`, auth.read)), { primary: false, replica: true }, 'another caller reads the replica')
    res = await get(`/v1/authors/${author.id}`, auth.write)
    t.match(res.json(), { data: { author: { name: 'Ann' } } })
    t.same(await servedBy({ primary, replica }, () => get(`/v1/authors/${author.id}`, auth.write)), { primary: true, replica: false }, 'the writer reads the primary')
    // A write's own reads (the record it checks If-Match against, a PATCH's current fields) are on the primary.
    const patch = () => app.inject({ method: 'PATCH', url: `/v1/authors/${author.id}`, headers: { ...auth.write, 'content-type': 'application/merge-patch+json' }, payload: { name: 'Anne' } })
    t.same(await servedBy({ primary, replica }, async () => t.equal((await patch()).statusCode, 200)), { primary: true, replica: false })
  })
}

t.test('once the replica has replayed a write, the writer reads the replica again', async t => {
  const { store, positions, primary, replica } = await replicatedStore(t, { replicaCheckMillis: 1 })
  const app = await buildSecureApp(t, { store })
  positions.written = '0/2000'
  const author = await createAs(app, 'authors', { name: 'Ann' })
  positions.replayed = '0/2000'
  const read = () => app.inject({ url: `/v1/authors/${author.id}`, headers: auth.write })
  // The first read after a check grew stale starts a new one and does not wait for it.
  for (let tries = 0; tries < 100; tries++) {
    const served = await servedBy({ primary, replica }, read)
    if (served.replica) break
    await new Promise(resolve => setTimeout(resolve, 2))
  }
  t.same(await servedBy({ primary, replica }, read), { primary: false, replica: true })
  t.equal((await read()).statusCode, 200)
})

t.test('requests without a caller share one: an anonymous write sends every anonymous read to the primary', async t => {
  const { store, positions, primary, replica } = await replicatedStore(t)
  const app = await buildApp(t, { store })
  const read = () => app.inject({ url: '/v1/authors' })
  t.same(await servedBy({ primary, replica }, read), { primary: false, replica: true })
  positions.written = '0/2000'
  const res = await app.inject({ method: 'POST', url: '/v1/authors', payload: { name: 'Ann' } })
  t.equal(res.statusCode, 201)
  t.same(await servedBy({ primary, replica }, read), { primary: true, replica: false })
  t.match((await read()).json(), { data: { authors: [{ name: 'Ann' }] } })
})

t.test('host code outside any request reads what it wrote; the pools given are left open', async t => {
  const { store, positions, primary, replica } = await replicatedStore(t)
  const { authors } = suiteModels(store)
  await store.prepare?.([authors])
  t.same(await servedBy({ primary, replica }, () => store.get(authors, 'a1')), { primary: false, replica: true })
  positions.written = '0/2000'
  await store.create(authors, AUTHORS[0])
  t.same(await servedBy({ primary, replica }, async () => t.match(await store.get(authors, 'a1'), { data: { name: 'Ann' } })), { primary: true, replica: false })
  await store.close()
  t.same([primary.ended, replica.ended], [false, false])
})

t.test('postgresStore refuses conflicting or malformed replica options before connecting', async t => {
  const { primary, replica } = replication()
  await t.rejects(postgresStore({ pool: primary, readPool: replica, readConnectionString: 'postgres://x@127.0.0.1/y' }),
    { code: 'API_ERR_OPTIONS_INVALID', message: 'Invalid api-conventions options: postgresStore: give either readPool or readConnectionString, not both' })
  for (const redis of [{}, null, { get () {} }]) {
    await t.rejects(postgresStore({ pool: primary, readPool: replica, redis: redis as never }),
      { code: 'API_ERR_OPTIONS_INVALID', message: 'Invalid api-conventions options: postgresStore.redis must be an ioredis client' })
  }
  for (const name of ['maxReplicaLagMillis', 'replicaCheckMillis'] as const) {
    await t.rejects(postgresStore({ pool: primary, readPool: replica, [name]: 0 }),
      { code: 'API_ERR_OPTIONS_INVALID', message: `Invalid api-conventions options: postgresStore.${name} must be a positive integer, received 0` })
  }
  t.same([primary.served, replica.served], [[], []], 'nothing was sent')
})

t.test('the store reports both pools, the replica with its lag and use', async t => {
  const { store } = await replicatedStore(t)
  t.equal(await store.get(suiteModels(store).authors, 'none'), null, 'a read, after the first check')
  t.same(store.poolStats?.(), { primary: { total: 1, idle: 1, waiting: 0 }, replica: { total: 1, idle: 1, waiting: 0, lagMillis: 0, usable: true } })
})

t.test('a store that cannot be opened closes the replica it made, and leaves a given one open', async t => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' })
  const down = fakePool(db, () => { throw refused })
  const given = fakePool(db)
  await t.rejects(postgresStore({ pool: down, readPool: given }), refused)
  t.equal(given.ended, false)
  // The replica the store made from a URL is ended (it never connected: nothing waits on it).
  await t.rejects(postgresStore({ pool: down, readConnectionString: 'postgres://x@127.0.0.1:1/y' }), refused)
})
