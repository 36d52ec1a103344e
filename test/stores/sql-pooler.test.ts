// postgresStore behind a transaction-mode pooler (`pooler: 'transaction'`, docs/scaling.md), seen
// from the statements it sends, on a node-postgres pool faked over PGlite: no session state, the
// statement timeout set for each transaction alone. Through a real PgBouncer: test/cluster.test.ts.
import t from 'tap'
import type { Test } from 'tap'
import { postgresStore } from '../../lib/stores/sql/index.js'
import type { PostgresStoreOptions } from '../../lib/stores/sql/index.js'
import { suiteModels, AUTHORS } from './conformance.js'
import { openPglite } from './pglite-db.js'
import { fakePool } from './fake-pool.js'

const db = await openPglite()
t.teardown(() => db.close())
let schemas = 0

async function storeOn (t: Test, options: PostgresStoreOptions) {
  const pool = fakePool(db)
  const store = await postgresStore({ pool, schema: `pooler_${++schemas}`, ...options })
  t.teardown(() => store.close())
  const { authors } = suiteModels(store)
  await store.create(authors, AUTHORS[0])
  pool.served.length = 0
  await store.transaction(async tx => { await tx.update(authors, 'a1', { ...AUTHORS[0], name: 'Changed' }) })
  return pool.served
}

t.test('behind a transaction pooler, each transaction sets its own statement timeout, in the round trip of its BEGIN', async t => {
  const served = await storeOn(t, { pooler: 'transaction', queryTimeoutMillis: 4000 })
  t.equal(served[0], 'BEGIN; SET LOCAL statement_timeout = 4000')
  t.equal(served.at(-1), 'COMMIT')
  t.notOk(served.some(text => /^\s*(SET|RESET)\s(?!LOCAL)|PREPARE|LISTEN|pg_advisory_lock\(/i.test(text)), 'no session state')
})

t.test('without a pooler, the timeout is a setting of the connections the store makes', async t => {
  const served = await storeOn(t, {})
  t.equal(served[0], 'BEGIN')
  t.equal((await storeOn(t, { pooler: 'none' }))[0], 'BEGIN', 'the default said')
})

t.test('the pooler option is checked, and a store behind one makes its pool without session settings', async t => {
  await t.rejects(postgresStore({ pooler: 'session' as never }),
    { name: 'TypeError', message: 'postgresStore option pooler must be \'none\' or \'transaction\', received "session"' })
  // Nothing listens there: the pool is made, and connecting fails as it would without the option.
  await t.rejects(postgresStore({ connectionString: 'postgres://x@127.0.0.1:1/y', pooler: 'transaction' }), { code: 'ECONNREFUSED' })
})
