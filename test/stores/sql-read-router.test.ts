// The read router of the SQL store's read replicas (docs/stores.md "Read replicas"), white-box on
// fake databases and a fake Redis: where each caller's read runs as writes, the replica's replay,
// its lag and its failures change. The real replica is in sql-replica.test.ts.
import t from 'tap'
import type { Test } from 'tap'
import { ReadRouter, positionText } from '../../lib/stores/sql/replica.js'
import type { PositionsRedis, ReplicaSettings } from '../../lib/stores/sql/replica.js'
import type { QueryFunction, SqlDatabase } from '../../lib/stores/sql/store.js'

/** Date.now() under the test's control until it ends: positions expire and checks age without waiting. */
function clock (t: Test) {
  const real = Date.now
  let now = real()
  Date.now = () => now
  t.teardown(() => { Date.now = real })
  return { advance (millis: number) { now += millis } }
}

/** A primary whose write position is set by the test, and a replica whose replay, lag and errors are. */
function databases () {
  const served: string[] = []
  const state = {
    /** What pg_current_wal_lsn() answers on the primary (an Error: what it throws). */
    written: '0/1000' as string | Error,
    /** What the replica has replayed (null: not in recovery), and its lag in milliseconds. */
    replayed: '0/1000' as string | null,
    lag: 0,
    checkFails: false,
    /** What a read on the replica throws, if anything. */
    readError: undefined as unknown,
    checks: 0,
    closed: false
  }
  const primary: QueryFunction = async text => {
    if (text.includes('pg_current_wal_lsn')) {
      if (state.written instanceof Error) throw state.written
      return [[state.written]]
    }
    served.push('primary')
    return [['from primary']]
  }
  const replica: SqlDatabase = {
    async query (text) {
      if (text.includes('pg_last_wal_replay_lsn')) {
        state.checks++
        if (state.checkFails) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5433'), { code: 'ECONNREFUSED' })
        return [[state.replayed, state.lag]]
      }
      if (state.readError !== undefined) throw state.readError
      served.push('replica')
      return [['from replica']]
    },
    async transaction () { throw new Error('no transaction runs on the replica') },
    async close () { state.closed = true }
  }
  return { primary, replica, state, served }
}

const settings = (overrides: Partial<ReplicaSettings> = {}): ReplicaSettings =>
  ({ maxLagMillis: 1000, checkMillis: 500, redis: undefined, schema: 'public', ...overrides })

/** Runs one read as `caller` and says where it ran. */
async function readAs (router: ReadRouter, served: string[], caller: string): Promise<string> {
  const run = await router.queryFor(caller)
  await run('SELECT 1', [])
  return served.at(-1) as string
}

t.test('positions compare as text in WAL order', async t => {
  t.equal(positionText('16/B374D848'), '00000016b374d848')
  t.equal(positionText('0/3000060'), '0000000003000060')
  t.ok(positionText('1/0') > positionText('0/FFFFFFFF'))
})

t.test('a caller reads the replica until it writes, then the primary until the replica has replayed the write', async t => {
  const time = clock(t)
  const { primary, replica, state, served } = databases()
  const router = new ReadRouter(primary, replica, settings())
  t.teardown(() => router.close())
  t.equal(await readAs(router, served, 'ann'), 'replica', 'the first read waits for the first check')
  state.written = '0/2000'
  await router.wrote('ann')
  t.equal(await readAs(router, served, 'ann'), 'primary', 'the writer')
  t.equal(await readAs(router, served, 'bob'), 'replica', 'another caller')
  state.replayed = '0/2000'
  t.equal(await readAs(router, served, 'ann'), 'primary', 'a check younger than checkMillis is trusted')
  time.advance(500)
  t.equal(await readAs(router, served, 'ann'), 'primary', 'a stale check is renewed in the background: this read does not wait')
  t.equal(await readAs(router, served, 'ann'), 'replica', 'the renewed check has the write')
})

t.test('a primary lost right after the commit: the write stands, the writer reads the primary until its position expires', async t => {
  const time = clock(t)
  const { primary, replica, state, served } = databases()
  const router = new ReadRouter(primary, replica, settings())
  t.teardown(() => router.close())
  state.written = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })
  await t.resolves(router.wrote('ann'), 'no error for a write that was made')
  state.replayed = 'FF/0'
  time.advance(500)
  await readAs(router, served, 'bob')
  t.equal(await readAs(router, served, 'ann'), 'primary', 'whatever the replica has replayed')
  time.advance(5 * 60_000)
  t.equal(await readAs(router, served, 'ann'), 'replica', 'until the position expires')
})

t.test('a read server not in recovery (a primary) has every write: callers read it', async t => {
  const { primary, replica, state, served } = databases()
  state.replayed = null
  const router = new ReadRouter(primary, replica, settings())
  t.teardown(() => router.close())
  state.written = 'FF/0'
  await router.wrote('ann')
  t.equal(await readAs(router, served, 'ann'), 'replica')
})

t.test('a replica lagging beyond maxLagMillis is skipped by every caller', async t => {
  const { primary, replica, state, served } = databases()
  state.lag = 1001
  const router = new ReadRouter(primary, replica, settings())
  t.teardown(() => router.close())
  t.equal(await readAs(router, served, 'bob'), 'primary')
})

t.test('a replica whose check fails is skipped until a later check finds it', async t => {
  const time = clock(t)
  const { primary, replica, state, served } = databases()
  state.checkFails = true
  const router = new ReadRouter(primary, replica, settings())
  t.teardown(() => router.close())
  t.equal(await readAs(router, served, 'bob'), 'primary')
  state.checkFails = false
  time.advance(500)
  await readAs(router, served, 'bob')
  t.equal(await readAs(router, served, 'bob'), 'replica')
})

t.test('a read the replica cannot serve runs on the primary', async t => {
  t.test('the replica down: the read, and the reads after it until a check, go to the primary', async t => {
    const { primary, replica, state, served } = databases()
    const router = new ReadRouter(primary, replica, settings())
    t.teardown(() => router.close())
    t.equal(await readAs(router, served, 'bob'), 'replica')
    state.readError = Object.assign(new Error('Connection terminated unexpectedly'), { code: undefined })
    t.equal(await readAs(router, served, 'bob'), 'primary', 'the failed read is run again on the primary')
    state.readError = undefined
    t.equal(await readAs(router, served, 'bob'), 'primary', 'the replica is marked down')
    t.equal(state.checks, 1, 'no check was made in between')
  })
  for (const code of ['42P01', '42703']) {
    t.test(`a table or column not replayed yet (${code}): that read goes to the primary, the replica stays in use`, async t => {
      const { primary, replica, state, served } = databases()
      const router = new ReadRouter(primary, replica, settings())
      t.teardown(() => router.close())
      state.readError = Object.assign(new Error('relation does not exist'), { code })
      t.equal(await readAs(router, served, 'bob'), 'primary')
      state.readError = undefined
      t.equal(await readAs(router, served, 'bob'), 'replica')
    })
  }
})

t.test('a replica error that is not a connection failure reaches the caller', async t => {
  const { primary, replica, state, served } = databases()
  const router = new ReadRouter(primary, replica, settings())
  t.teardown(() => router.close())
  for (const error of [Object.assign(new Error('invalid input syntax for type uuid'), { code: '22P02' }), new Error('no code')]) {
    state.readError = error
    await t.rejects(readAs(router, served, 'bob'), error)
  }
  t.same(served, [], 'the primary ran none of them')
})

t.test('in this process, a writer keeps its later position, and positions expire', async t => {
  const time = clock(t)
  const { primary, replica, state, served } = databases()
  const router = new ReadRouter(primary, replica, settings({ checkMillis: 10 * 60_000 }))
  t.teardown(() => router.close())
  state.replayed = '0/2000'
  await readAs(router, served, 'ann')
  // Two writes whose positions are read in the other order (concurrent requests of one caller).
  state.written = '0/3000'
  await router.wrote('ann')
  state.written = '0/1500'
  await router.wrote('ann')
  t.equal(await readAs(router, served, 'ann'), 'primary', 'the later position holds')
  time.advance(5 * 60_000 + 1)
  t.equal(await readAs(router, served, 'ann'), 'replica', 'an expired position holds no more')
})

t.test('in this process, expired positions are dropped once 10000 callers are kept; current ones stay', async t => {
  const time = clock(t)
  const { primary, replica, state, served } = databases()
  const router = new ReadRouter(primary, replica, settings({ checkMillis: 10 * 60_000 }))
  t.teardown(() => router.close())
  state.replayed = '0/1000'
  await readAs(router, served, 'someone')
  state.written = '0/2000'
  for (let i = 0; i < 9999; i++) await router.wrote(`old-${i}`)
  time.advance(5 * 60_000 + 1)
  await router.wrote('current')
  await router.wrote('next')
  t.equal(await readAs(router, served, 'current'), 'primary', 'a position still current survives the clean-up')
  t.equal(await readAs(router, served, 'next'), 'primary')
  t.equal(await readAs(router, served, 'old-0'), 'replica')
})

/** An in-memory Redis answering the router's GET and its raise script as Redis would. */
function fakeRedis () {
  const keys = new Map<string, string>()
  const calls: unknown[][] = []
  let failing = false
  const redis: PositionsRedis = {
    async get (key) {
      if (failing) throw new Error('Connection is closed.')
      return keys.get(key) ?? null
    },
    async eval (script, count, key, position) {
      if (failing) throw new Error('Connection is closed.')
      calls.push([count, key, position])
      const current = keys.get(String(key))
      if (current === undefined || current < String(position)) keys.set(String(key), String(position))
      return 1
    }
  }
  return { redis, keys, calls, fail () { failing = true } }
}

t.test('with Redis, positions are kept there under the schema and a digest of the caller', async t => {
  const { primary, replica, state, served } = databases()
  const { redis, keys, calls } = fakeRedis()
  const router = new ReadRouter(primary, replica, settings({ redis, schema: 'shop' }))
  t.teardown(() => router.close())
  t.equal(await readAs(router, served, 'ann'), 'replica', 'no position kept')
  state.written = '0/2000'
  await router.wrote('ann')
  t.match(calls, [[1, /^api-conventions-wal:shop:[\w-]{43}$/, '0000000000002000']])
  t.same([...keys.values()], ['0000000000002000'])
  t.equal(await readAs(router, served, 'ann'), 'primary')
  // Another instance's router on the same Redis honours the position.
  const other = databases()
  other.state.replayed = '0/1000'
  const elsewhere = new ReadRouter(other.primary, other.replica, settings({ redis, schema: 'shop' }))
  t.teardown(() => elsewhere.close())
  t.equal(await readAs(elsewhere, other.served, 'ann'), 'primary')
  t.equal(await readAs(elsewhere, other.served, 'bob'), 'replica')
})

t.test('a Redis that cannot be read sends reads to the primary; one that cannot keep a position fails no write', async t => {
  const { primary, replica, state, served } = databases()
  const { redis, fail } = fakeRedis()
  const router = new ReadRouter(primary, replica, settings({ redis }))
  t.teardown(() => router.close())
  fail()
  t.equal(await readAs(router, served, 'bob'), 'primary')
  state.written = '0/2000'
  await t.resolves(router.wrote('ann'))
})

t.test('the replica\'s pool is reported with what its last check found', async t => {
  const { primary, replica, state } = databases()
  t.equal(new ReadRouter(primary, replica, settings()).poolStats(), undefined, 'a replica without a pool reports none')
  const pooled = { ...replica, poolStats: () => ({ total: 2, idle: 1, waiting: 0 }) }
  state.lag = 300
  const router = new ReadRouter(primary, pooled, settings())
  t.teardown(() => router.close())
  t.same(router.poolStats(), { total: 2, idle: 1, waiting: 0, lagMillis: undefined, usable: false }, 'before the first check: not in use')
  await router.queryFor('ann')
  t.same(router.poolStats(), { total: 2, idle: 1, waiting: 0, lagMillis: 300, usable: true })
  state.checkFails = true
  clock(t).advance(500)
  await router.queryFor('ann')
  await router.queryFor('ann')
  t.same(router.poolStats(), { total: 2, idle: 1, waiting: 0, lagMillis: undefined, usable: false }, 'down')
})

t.test('closing waits for a check under way, then closes the replica', async t => {
  const { primary, replica, state } = databases()
  const router = new ReadRouter(primary, replica, settings())
  await router.close()
  t.equal(state.checks, 1)
  t.ok(state.closed)
})
