// postgresStore behind a transaction-mode pooler (`pooler: 'transaction'`, docs/scaling.md), seen
// from the statements it sends, on a node-postgres pool faked over PGlite: no session state, the
// statement timeout set for each transaction alone. Through a real PgBouncer: test/cluster.test.ts.
import t from 'tap'
import type { Test } from 'tap'
import { postgresStore } from '../../lib/stores/sql/index.js'
import { statementNames } from '../../lib/stores/sql/pg.js'
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
  const served = [...pool.served]
  pool.names.length = 0
  for (let i = 0; i < 3; i++) await store.get(authors, 'a1')
  return { served, names: pool.names }
}

t.test('behind a transaction pooler, each transaction sets its own statement timeout, in the round trip of its BEGIN', async t => {
  const { served, names } = await storeOn(t, { pooler: 'transaction', queryTimeoutMillis: 4000 })
  t.equal(served[0], 'BEGIN; SET LOCAL statement_timeout = 4000')
  t.equal(served.at(-1), 'COMMIT')
  t.notOk(served.some(text => /^\s*(SET|RESET)\s(?!LOCAL)|PREPARE|LISTEN|pg_advisory_lock\(/i.test(text)), 'no session state')
  t.same(names, [undefined, undefined, undefined], 'no named statement, however often one is sent')
})

t.test('without a pooler, the timeout is a setting of the connections the store makes', async t => {
  const { served, names } = await storeOn(t, {})
  t.equal(served[0], 'BEGIN')
  t.equal((await storeOn(t, { pooler: 'none' })).served[0], 'BEGIN', 'the default said')
  t.equal(names[0], undefined, 'a statement sent for the first time is not named')
  t.match(names.slice(1), [/^s[\w-]{32}$/, names[1]], 'from its second time on it has a name, always the same')
})

t.test('statement names: one per text, for texts seen twice, at most 500; one-off texts forgotten in bulk', async t => {
  const nameOf = statementNames()
  t.equal(nameOf('a'), undefined)
  const a = nameOf('a')
  t.match(a, /^s[\w-]{32}$/)
  t.equal(nameOf('a'), a)
  t.not(nameOf('b') ?? nameOf('b'), a)
  // 5000 texts seen once: the 5001st clears them, so 'c' seen before them is new again.
  nameOf('c')
  for (let i = 0; i < 5000; i++) nameOf(`once ${i}`)
  t.equal(nameOf('c'), undefined, 'forgotten')
  t.match(nameOf('c'), /^s/)
  for (let i = 0; i < 497; i++) { nameOf(`twice ${i}`); nameOf(`twice ${i}`) }
  nameOf('late')
  t.equal(nameOf('late'), undefined, 'past 500 names, none more')
  t.equal(nameOf('a'), a, 'those given keep theirs')
})

t.test('the pooler option is checked, and a store behind one makes its pool without session settings', async t => {
  await t.rejects(postgresStore({ pooler: 'session' as never }),
    { code: 'API_ERR_OPTIONS_INVALID', message: 'Invalid api-conventions options: postgresStore.pooler must be \'none\' or \'transaction\', received "session"' })
  // Nothing listens there: the pool is made, and connecting fails as it would without the option.
  await t.rejects(postgresStore({ connectionString: 'postgres://x@127.0.0.1:1/y', pooler: 'transaction' }), { code: 'ECONNREFUSED' })
})
