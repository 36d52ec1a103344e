// Idempotency keys on the SQL store beyond the contract suite: the table of kept responses,
// created by prepare or (with migrate: false) only checked; a transaction that meets it unprepared;
// an unreachable database; kept responses outliving the store (a PGlite data directory reopened).
// On PostgreSQL (DATABASE_URL): two instances sharing a schema hold each other's keys, and a
// restarted one finds what the others kept.
import t from 'tap'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { pgliteStore, postgresStore } from '../../lib/stores/sql/index.js'
import { pgliteDatabase } from '../../lib/stores/sql/pglite.js'
import { SqlStore } from '../../lib/stores/sql/store.js'
import type { SqlDatabase } from '../../lib/stores/sql/store.js'
import type { KeptResponse, Store } from '../../lib/stores/store.js'
import { CREATED, listQuery, MINIMAL, suiteModels } from './conformance.js'
import { openPglite, template } from './pglite-db.js'
import { runSchemas } from './run-schemas.js'

const db = await openPglite()
t.teardown(() => db.close())
const inAnHour = () => new Date(Date.now() + 3600_000)

async function rows (text: string, values: unknown[] = []) {
  return (await db.query<Record<string, unknown>>(text, values)).rows
}

t.test('prepare creates the table of kept responses with its index, before any request', async t => {
  const store = await pgliteStore({ db, schema: 'keys_prepare' })
  t.teardown(() => store.close())
  await store.prepare?.([...Object.values(suiteModels(store))])
  t.same(await rows(`SELECT column_name, data_type, is_nullable FROM information_schema.columns
    WHERE table_schema = 'keys_prepare' AND table_name = 'api_idempotency_keys' ORDER BY ordinal_position`), [
    { column_name: 'key', data_type: 'text', is_nullable: 'NO' },
    { column_name: 'fingerprint', data_type: 'text', is_nullable: 'NO' },
    { column_name: 'response', data_type: 'json', is_nullable: 'NO' },
    { column_name: 'expires_at', data_type: 'timestamp with time zone', is_nullable: 'NO' }
  ])
  t.same((await rows("SELECT indexname FROM pg_indexes WHERE schemaname = 'keys_prepare' AND tablename = 'api_idempotency_keys' ORDER BY 1")).map(row => row.indexname),
    ['api_idempotency_keys_expires_at', 'api_idempotency_keys_pkey'])
  const again = await pgliteStore({ db, schema: 'keys_prepare' })
  t.teardown(() => again.close())
  await again.prepare?.([])
  t.same(await again.claimKey('k1'), { kind: 'free' }, 'another store finds it there')
})

t.test('with migrate: false a missing table stops start-up, naming it and giving its definition; made so, it serves', async t => {
  await rows('CREATE SCHEMA keys_managed')
  const store = await pgliteStore({ db, schema: 'keys_managed', migrate: false })
  t.teardown(() => store.close())
  const message = /^SQL store: table "keys_managed"\."api_idempotency_keys", where responses to requests with an Idempotency-Key are kept, does not exist, and option migrate is false; create it: (CREATE TABLE .*)$/
  await t.rejects(store.prepare?.([]) as Promise<void>, { name: 'TypeError', message })
  await store.prepare?.([], { idempotencyKeys: false })
  t.pass('without Idempotency-Key the plugin does not ask for the table, and start-up goes on')
  await t.rejects(store.claimKey('k1'), { name: 'TypeError', message }, 'and so does first use, where nothing called prepare')
  await t.rejects(store.purgeKeys(new Date()), { name: 'TypeError', message })
  const definition = (await store.prepare?.([]).catch((error: Error) => error) as Error).message.match(message)?.[1] as string
  await db.exec(definition)
  await store.prepare?.([])
  await store.transaction(async tx => {
    t.same(await tx.claimKey('k1'), { kind: 'free' })
    await tx.keepResponse('k1', 'fp', MINIMAL, inAnHour())
  })
  t.same(await store.claimKey('k1'), { kind: 'kept', fingerprint: 'fp', response: MINIMAL })
  t.equal((await rows("SELECT count(*)::int AS n FROM pg_indexes WHERE schemaname = 'keys_managed'"))[0].n, 2, 'the definition given, nothing more')
})

t.test('a transaction that meets the table unprepared is undone, the table made, and its work run again', async t => {
  const store = await pgliteStore({ db, schema: 'keys_unprepared' })
  t.teardown(() => store.close())
  const { authors } = suiteModels(store)
  await store.create(authors, { id: 'a1', name: 'Ann', born: null, country: null })
  let runs = 0
  const claim = await store.transaction(async tx => {
    runs++
    await tx.update(authors, 'a1', { id: 'a1', name: `Ann ${runs}`, born: null, country: null })
    // Work that catches the store's error and goes on is run again all the same.
    await tx.keepResponse('k1', 'fp', CREATED, inAnHour()).catch(() => {})
    return await tx.claimKey('k1')
  })
  t.equal(runs, 2)
  t.same(claim, { kind: 'kept', fingerprint: 'fp', response: CREATED })
  t.match(await store.get(authors, 'a1'), { data: { name: 'Ann 2' }, version: 2 }, 'the first run is undone')
})

/** A database that can be switched off: every call fails as a refused connection would. */
function switchable (inner: SqlDatabase) {
  let down = false
  const refuse = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })
  const database: SqlDatabase = {
    query: async (text, values) => { if (down) throw refuse(); return await inner.query(text, values) },
    transaction: async work => {
      if (down) throw refuse()
      return await inner.transaction(async query => await work(async (text, values) => { if (down) throw refuse(); return await query(text, values) }))
    },
    close: async () => await inner.close()
  }
  return { database, set: (isDown: boolean) => { down = isDown } }
}

t.test('an unreachable database: prepare leaves the table to the first use, and every call is a 503 until it is back', async t => {
  const { database, set } = switchable(pgliteDatabase(db, false))
  const store = new SqlStore(database, { schema: 'keys_down', tables: {}, migrate: true, caseCollation: 'pg_unicode_fast', retryAfterSeconds: 6 })
  const unavailable = { statusCode: 503, code: 'API_ERR_STORE_UNAVAILABLE', headers: { 'retry-after': '6' } }
  set(true)
  await store.prepare([])
  t.pass('start-up goes on')
  await t.rejects(store.claimKey('k1'), unavailable)
  await t.rejects(store.keepResponse('k1', 'fp', MINIMAL, inAnHour()), unavailable)
  set(false)
  await store.keepResponse('k1', 'fp', MINIMAL, inAnHour())
  set(true)
  // The table is there now: the statements themselves fail.
  await t.rejects(store.keepResponse('k2', 'fp', MINIMAL, inAnHour()), unavailable)
  await t.rejects(store.purgeKeys(new Date()), unavailable)
  await t.rejects(store.transaction(async tx => await tx.claimKey('k1')), unavailable)
  set(false)
  t.same(await store.claimKey('k1'), { kind: 'kept', fingerprint: 'fp', response: MINIMAL })
})

t.test('kept responses outlive the store: PGlite reopened on the same data directory finds them', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'apic-keys-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  // From the initialised template openPglite saved, rather than a fresh initdb (seconds).
  const first = await PGlite.create({ dataDir: dir, loadDataDir: new Blob([await readFile(template)]) })
  const before = await pgliteStore({ db: first, schema: 'keys_kept' })
  await before.transaction(async tx => {
    await tx.claimKey('k1')
    await tx.keepResponse('k1', 'fp', CREATED, inAnHour())
  })
  await before.close()
  await first.close()
  const after = await pgliteStore({ dataDir: dir, schema: 'keys_kept' })
  t.teardown(() => after.close())
  t.same(await after.claimKey('k1'), { kind: 'kept', fingerprint: 'fp', response: CREATED })
})

t.test('PostgreSQL: instances sharing a schema', { skip: process.env.DATABASE_URL === undefined ? 'needs DATABASE_URL' : false }, async t => {
  const connectionString = process.env.DATABASE_URL as string
  const { prefix } = runSchemas(t, connectionString)
  const open = async (schema: string): Promise<Store> => {
    const store = await postgresStore({ connectionString, schema: `${prefix}_${schema}` })
    t.teardown(() => store.close())
    return store
  }
  const response: KeptResponse = { status: 201, headers: { location: '/v1/authors/a1', etag: '"1"' }, body: { data: { author: { id: 'a1' } } } }

  t.test('both prepare the new schema at once; while one holds a key the other finds it busy; once it commits, kept; one started later finds it too', async t => {
    const [a, b] = [await open('shared'), await open('shared')]
    await Promise.all([a.prepare?.([]), b.prepare?.([])])
    let release!: () => void
    const gate = new Promise<void>(resolve => { release = resolve })
    let claimed!: () => void
    const holding = new Promise<void>(resolve => { claimed = resolve })
    const running = a.transaction(async tx => {
      t.same(await tx.claimKey('k1'), { kind: 'free' })
      claimed()
      await gate
      await tx.keepResponse('k1', 'fp', response, inAnHour())
    })
    await holding
    t.same(await b.transaction(async tx => await tx.claimKey('k1')), { kind: 'busy' }, 'in a transaction of the other instance')
    t.same(await b.claimKey('k1'), { kind: 'busy' }, 'outside one')
    t.same(await a.claimKey('k1'), { kind: 'busy' }, 'another transaction of the same instance')
    t.same(await b.claimKey('k2'), { kind: 'free' }, 'another key is not held')
    const elsewhere = await open('elsewhere')
    t.same(await elsewhere.claimKey('k1'), { kind: 'free' }, 'the same key in another schema is another key')
    release()
    await running
    t.same(await b.transaction(async tx => await tx.claimKey('k1')), { kind: 'kept', fingerprint: 'fp', response })
    const started = await open('shared')
    t.same(await started.claimKey('k1'), { kind: 'kept', fingerprint: 'fp', response }, 'an instance started later')
  })

  t.test('a transaction that held a key and failed leaves it free to the other instance', async t => {
    const [a, b] = [await open('undone'), await open('undone')]
    let release!: () => void
    const gate = new Promise<void>(resolve => { release = resolve })
    let claimed!: () => void
    const holding = new Promise<void>(resolve => { claimed = resolve })
    const running = a.transaction(async tx => {
      await tx.claimKey('k1')
      await tx.keepResponse('k1', 'fp', response, inAnHour())
      claimed()
      await gate
      throw new Error('undone')
    })
    await holding
    t.same(await b.claimKey('k1'), { kind: 'busy' })
    release()
    await t.rejects(running, { message: 'undone' })
    t.same(await b.claimKey('k1'), { kind: 'free' })
  })

  t.test('40 concurrent keyed writes through two instances: the write runs once; every other finds it busy or kept', async t => {
    const [a, b] = [await open('race'), await open('race')]
    const { authors } = suiteModels(a)
    await a.prepare?.([authors])
    await b.prepare?.([])
    const claims = await Promise.all(Array.from({ length: 40 }, async (_, i) => await (i % 2 === 0 ? a : b).transaction(async tx => {
      const claim = await tx.claimKey('k1')
      if (claim.kind !== 'free') return claim.kind
      await tx.create(authors, { id: `a${i}`, name: 'once', born: null, country: null })
      await tx.keepResponse('k1', 'fp', response, inAnHour())
      return 'ran'
    })))
    t.equal(claims.filter(kind => kind === 'ran').length, 1, claims.join(' '))
    t.equal((await a.list(authors, listQuery(authors, { total: true }))).total, 1, 'one record written')
  })
})
