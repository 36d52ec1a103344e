// The SQL store's transactions beyond the contract suite: serialization failures and deadlocks
// are run again (three attempts, then 503), other failures are not; what work throws comes out
// as it was; a table first met inside a transaction is prepared outside it; a view's read is one
// statement. On a real server (DATABASE_URL): a deadlock between two transactions resolves by
// itself, and a transaction whose connection failed is discarded without a ROLLBACK.
import t from 'tap'
import { pgliteDatabase } from '../../lib/stores/sql/pglite.js'
import { postgresStore } from '../../lib/stores/sql/index.js'
import { SqlStore } from '../../lib/stores/sql/store.js'
import type { SqlDatabase } from '../../lib/stores/sql/store.js'
import type { StoredRecord } from '../../lib/stores/store.js'
import { AUTHORS, BOOKS, listQuery, seed, suiteModels, viewOf } from './conformance.js'
import { openPglite } from './pglite-db.js'
import { runSchemas } from './run-schemas.js'

const db = await openPglite()
t.teardown(() => db.close())
let schemas = 0

/**
 * PGlite behind a database whose transactions can be made to fail before they begin (`failBegin`,
 * per attempt) and whose transaction statements can fail (`failStatement`, per statement); it
 * counts attempts and the statements run outside transactions.
 */
function faulty () {
  const inner = pgliteDatabase(db, false)
  const state = {
    attempts: 0,
    statements: [] as string[],
    failBegin: (_attempt: number): unknown => undefined,
    failStatement: (_text: string): unknown => undefined
  }
  const database: SqlDatabase = {
    query: async (text, values) => {
      state.statements.push(text)
      return await inner.query(text, values)
    },
    dropsLeadingBom: inner.dropsLeadingBom,
    transaction: async work => {
      const failure = state.failBegin(++state.attempts)
      if (failure !== undefined) throw failure
      return await inner.transaction(async query => await work(async (text, values) => {
        const failed = state.failStatement(text)
        if (failed !== undefined) throw failed
        return await query(text, values)
      }))
    },
    close: async () => await inner.close()
  }
  return { database, state }
}

/** A seeded store over a faulty database, its failures switched on only once its tables are ready. */
async function setup () {
  const { database, state } = faulty()
  const store = new SqlStore(database, { schema: `tx_${++schemas}`, tables: {}, migrate: true, caseCollation: 'pg_unicode_fast', retryAfterSeconds: 4 })
  const models = suiteModels(store)
  await seed(store, models)
  state.attempts = 0
  state.statements.length = 0
  return { store, state, ...models }
}

const code = (sqlstate: string) => Object.assign(new Error(`SQLSTATE ${sqlstate}`), { code: sqlstate })

t.test('a serialization failure or deadlock runs the transaction again, up to three attempts, then is a 503', async t => {
  const { store, state, authors } = await setup()
  state.failBegin = attempt => attempt <= 2 ? code('40001') : undefined
  let runs = 0
  const made = await store.transaction(async tx => {
    runs++
    return await tx.create(authors, { id: 'a5', name: 'Third time', born: null, country: null })
  })
  t.equal(made.data.name, 'Third time')
  t.same({ attempts: state.attempts, runs }, { attempts: 3, runs: 1 }, 'two failed to begin, the third ran')

  state.attempts = 0
  state.failBegin = () => code('40P01')
  const error = await store.transaction(async () => 'never').catch((error: unknown) => error)
  t.match(error, { statusCode: 503, code: 'API_ERR_STORE_UNAVAILABLE', headers: { 'retry-after': '4' }, cause: { code: '40P01' } })
  t.equal(state.attempts, 3, 'three attempts in all')
})

t.test('a statement of the transaction failing with 40001 runs the whole transaction again', async t => {
  const { store, state, authors, books } = await setup()
  let failures = 0
  state.failStatement = text => text.startsWith('UPDATE') && failures++ === 0 ? code('40001') : undefined
  let runs = 0
  await store.transaction(async tx => {
    runs++
    await tx.create(authors, { id: 'a5', name: 'Once', born: null, country: null })
    await tx.update(books, 'b01', { ...BOOKS[0], authorId: 'a5' })
  })
  t.equal(runs, 2)
  t.equal(state.attempts, 2)
  t.equal((await store.get(books, 'b01'))?.data.authorId, 'a5')
  t.equal((await store.list(authors, listQuery(authors, { total: true }))).total, 5, 'the first attempt\'s create was rolled back')
})

t.test('other failures are not run again: what work throws comes out as it was, a database that is down is a 503', async t => {
  const { store, state, authors } = await setup()
  // Worded as a connection failure, but the application's: not a 503.
  const own = new Error('the account is closed')
  await t.rejects(store.transaction(async tx => {
    await tx.create(authors, { id: 'a5', name: 'Undone', born: null, country: null })
    throw own
  }), own)
  t.equal(state.attempts, 1)
  t.equal(await store.get(authors, 'a5'), null)

  state.attempts = 0
  state.failBegin = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })
  await t.rejects(store.transaction(async () => 'never'), { statusCode: 503, headers: { 'retry-after': '4' }, cause: { code: 'ECONNREFUSED' } })
  t.equal(state.attempts, 1)

  state.failBegin = () => undefined
  // eslint-disable-next-line no-throw-literal
  const thrown = await store.transaction(async () => { throw null }).then(() => 'resolved', (error: unknown) => error)
  t.equal(thrown, null, 'nor is what is not an Error')

  state.attempts = 0
  const odd = code('XX000')
  state.failBegin = () => odd
  await t.rejects(store.transaction(async () => 'never'), odd, 'an error that is no unavailability passes unchanged')
  t.equal(state.attempts, 1)
})

t.test('a table first met inside a transaction is prepared outside it, and the work run again', async t => {
  const { database } = faulty()
  const store = new SqlStore(database, { schema: `tx_${++schemas}`, tables: {}, migrate: true, caseCollation: 'pg_unicode_fast', retryAfterSeconds: 4 })
  const { authors, books } = suiteModels(store)
  let runs = 0
  // Work that catches the store's errors and goes on is undone and run again all the same.
  const result = await store.transaction(async tx => {
    runs++
    await tx.create(authors, AUTHORS[0]).catch(() => {})
    return await tx.get(authors, 'a1').catch(() => null)
  })
  t.same({ runs, read: result?.data }, { runs: 2, read: AUTHORS[0] })
  t.same((await store.get(authors, 'a1'))?.data, AUTHORS[0], 'written once the tables were ready')
  t.same(await store.transaction(async tx => await tx.list(books, listQuery(books, { total: true }))), { items: [], hasMore: false, total: 0 })
})

t.test("a view's read is one statement: its visible filter is part of it", async t => {
  const { store, state, books } = await setup()
  const view = viewOf(books, "available eq true and author/country eq 'NZ'")
  const once = async <T> (read: () => Promise<T>): Promise<T> => {
    state.statements.length = 0
    const result = await read()
    t.equal(state.statements.length, 1, 'one statement')
    return result
  }
  t.same((await once(async () => await store.get(view, 'b01')))?.data, BOOKS[0])
  t.equal(await once(async () => await store.get(view, 'b03')), null)
  t.match(state.statements[0], / AND .*EXISTS/)
  t.same((await once(async () => await store.getMany(view, 'authorId', ['a1', 'a2']))).map(record => record.data.id).sort(), ['b01', 'b07'])
  t.same((await once(async () => await store.list(view, listQuery(view, { limit: 5 })))).items.map(record => record.data.id), ['b01', 'b07'])
  await once(async () => await store.get(books, 'b01', { lock: true }))
  t.match(state.statements[0], / FOR UPDATE OF t0$/)
})

const connectionString = process.env.DATABASE_URL
t.test('on PostgreSQL', { skip: connectionString === undefined ? 'needs DATABASE_URL' : false }, async t => {
  const { prefix } = runSchemas(t, connectionString)
  const store = await postgresStore({ connectionString, schema: `${prefix}_tx` })
  t.teardown(() => store.close())
  const models = suiteModels(store)
  const { authors, books } = models
  await seed(store, models)

  t.test('two transactions locking two records in opposite orders: the deadlock is broken and both run', async t => {
    let arrived = 0
    let bothLocked!: () => void
    const barrier = new Promise<void>(resolve => { bothLocked = resolve })
    const runs = [0, 0]
    const swap = async (i: number, first: string, second: string) => await store.transaction(async tx => {
      runs[i]++
      await tx.get(books, first, { lock: true })
      if (++arrived === 2) bothLocked()
      await barrier
      const record = await tx.get(books, second, { lock: true }) as StoredRecord
      return await tx.update(books, second, { ...record.data, title: `${record.data.title as string}+` })
    })
    await Promise.all([swap(0, 'b01', 'b02'), swap(1, 'b02', 'b01')])
    t.equal(runs[0] + runs[1], 3, 'the transaction PostgreSQL chose as the victim ran again')
    t.equal((await store.get(books, 'b01'))?.data.title, 'Alpha+')
    t.equal((await store.get(books, 'b02'))?.data.title, 'beta+')
  })

  t.test('work failing on a connection that failed: the connection is discarded, nothing is kept', async t => {
    const lost = Object.assign(new Error('The data store is unavailable'), { cause: new Error('Connection terminated unexpectedly') })
    await t.rejects(store.transaction(async tx => {
      await tx.create(authors, { id: 'a9', name: 'Lost', born: null, country: null })
      throw lost
    }), lost)
    t.equal(await store.get(authors, 'a9'), null)
    t.equal((await store.list(authors, listQuery(authors, { total: true }))).total, 4, 'the pool goes on')
  })
})
