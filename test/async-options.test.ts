// The `async` option (docs/async.md "Options"): off by default, checked at registration; and the
// memory store's job queue (stores/jobs.ts) through its contract: claims, leases, holding, the
// completion undone with its transaction, purging.
import t from 'tap'
import { buildApp } from './helpers/app.js'
import { auth } from './helpers/auth.js'
import { buildSecureApp } from './helpers/secure-app.js'
import { memoryStore, pgliteStore } from '../lib/index.js'
import type { Store } from '../lib/index.js'

t.test('off by default: respond-async is ignored and no monitor is served', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ method: 'POST', url: '/v1/authors', headers: { prefer: 'respond-async' }, payload: { name: 'Now' } })
  t.equal(res.statusCode, 201)
  t.equal((await app.inject({ url: '/v1/operations/x' })).statusCode, 404)
})

t.test('async: true turns it on with the defaults', async t => {
  const app = await buildApp(t, { async: true })
  const res = await app.inject({ method: 'POST', url: '/v1/authors', headers: { prefer: 'respond-async' }, payload: { name: 'Later' } })
  t.equal(res.statusCode, 202)
  t.equal((await app.inject({ url: res.headers.location as string })).statusCode, 200, 'without auth, every anonymous caller is the same caller')
})

t.test('without seesAll, a caller sees only its own operations: another\'s is 404', async t => {
  const app = await buildSecureApp(t, { async: true })
  const res = await app.inject({ method: 'POST', url: '/v1/authors', headers: { ...auth.writeJson, prefer: 'respond-async' }, payload: { name: 'Later' } })
  t.equal(res.statusCode, 202)
  const location = res.headers.location as string
  t.equal((await app.inject({ url: location, headers: auth.write })).statusCode, 200, 'its own caller')
  const other = await app.inject({ url: location, headers: auth.read })
  t.equal(other.statusCode, 404, 'another caller, as for an operation that does not exist')
  t.match(other.headers['content-type'], /^application\/problem\+json/)
})

for (const [value, message] of [
  ['yes', 'async must be false or an object'],
  [{ colour: 1 }, 'async.colour is not a known key'],
  [{ seesAll: 5 }, 'async.seesAll must be a function'],
  [{ leaseSeconds: 0 }, 'async.leaseSeconds must be a positive integer']
] as const) {
  t.test(`a bad async option is refused: ${JSON.stringify(value)}`, async t => {
    await t.rejects(buildApp(t, { async: value as never }), { code: 'API_ERR_OPTIONS_INVALID', message: new RegExp(message.replaceAll('.', '\\.')) })
  })
}

/** Each store that keeps jobs, fresh: the memory store, and PGlite with its table of jobs made. */
const jobStores: Array<[string, (t: { teardown (fn: () => unknown): void }) => Promise<Store>]> = [
  ['the memory store', async () => memoryStore()],
  ['PGlite', async t => {
    const { PGlite } = await import('@electric-sql/pglite')
    const db = await PGlite.create()
    t.teardown(() => db.close())
    const store = await pgliteStore({ db, schema: 'jobs' })
    await store.prepare?.([], { idempotencyKeys: false, jobs: true })
    return store
  }]
]

for (const [name, makeStore] of jobStores) {
  t.test(`${name} keeps jobs: claimed once under a lease, held by the attempt, finished with its transaction`, async t => {
    const store = await makeStore(t)
    const jobs = store as Required<Store>
    const createdAt = new Date()
    await jobs.addJob({ id: 'a', kind: 'write', owner: 'alice', payload: { n: 1 }, createdAt })
    // No payload, and later no outcome: both kept as JSON's null.
    await jobs.addJob({ id: 'b', kind: 'other', owner: null, payload: undefined, createdAt })
    t.same(await jobs.claimJobs(['write'], 0, 1000), [], 'a claim of none')
    const [claimed, ...rest] = await jobs.claimJobs(['write'], 5, 60_000)
    t.same(rest, [], 'only its kind')
    t.match(claimed, { id: 'a', state: 'running', attempt: 1, owner: 'alice', payload: { n: 1 } })
    t.same(await jobs.claimJobs(['write'], 5, 60_000), [], 'not claimed again while its lease runs')
    t.equal(await jobs.holdJob('a', 2), false, 'another attempt does not hold it')

    // A failed transaction undoes the completion.
    await t.rejects(store.transaction(async tx => {
      t.equal(await (tx as Required<Store>).holdJob('a', 1), true)
      await (tx as Required<Store>).finishJob('a', 'succeeded', { status: 201 }, new Date(Date.now() + 1000))
      throw new Error('rolled back')
    }), /rolled back/)
    t.equal((await jobs.getJob('a'))?.state, 'running', 'still running after the rollback')
    await store.transaction(async tx => { await (tx as Required<Store>).finishJob('a', 'succeeded', { status: 201 }, new Date(Date.now() - 1)) })
    t.match(await jobs.getJob('a'), { state: 'succeeded', outcome: { status: 201 } })
    t.equal(await jobs.holdJob('a', 1), false, 'a finished job is held by no attempt')
    await jobs.finishJob('missing', 'failed', null, new Date())

    // An expired lease returns the job to the queue: claimed again under a new attempt.
    const [other] = await jobs.claimJobs(['other'], 1, 1)
    await new Promise(resolve => setTimeout(resolve, 5))
    t.match(await jobs.claimJobs(['other'], 1, 60_000), [{ id: 'b', attempt: other.attempt + 1 }])
    await jobs.finishJob('b', 'failed', undefined, new Date(Date.now() + 60_000))
    const failed = await jobs.getJob('b')
    t.same([failed?.payload, failed?.outcome, failed?.state], [null, null, 'failed'])

    t.equal(await jobs.purgeJobs(new Date()), 1, 'the finished job past its time')
    t.equal(await jobs.getJob('a'), null)
    t.equal(await jobs.purgeJobs(new Date()), 0)
    await store.close()
  })
}

t.test('outside a transaction, the memory store\'s job writes wait for queued transactions', async t => {
  const store = memoryStore() as Required<Store>
  let release = () => {}
  const running = store.transaction(async () => await new Promise<void>(resolve => { release = resolve }))
  const added = store.addJob({ id: 'c', kind: 'write', owner: null, payload: {}, createdAt: new Date() })
  const claimed = store.claimJobs(['write'], 1, 1000)
  const finished = store.finishJob('c', 'failed', { status: 404 }, new Date(0))
  const purged = store.purgeJobs(new Date())
  // The transaction's work has begun once the queue turned.
  await new Promise(resolve => setImmediate(resolve))
  release()
  await running
  await added
  t.match(await claimed, [{ id: 'c' }])
  await finished
  t.equal(await purged, 1)
})

t.test('a store without the job methods serves no asynchronous work: its writes answer at once', async t => {
  const { addJob, claimJobs, holdJob, finishJob, getJob, purgeJobs, ...plain } = memoryStore()
  const app = await buildApp(t, { async: true, store: plain as Store })
  const res = await app.inject({ method: 'POST', url: '/v1/authors', headers: { prefer: 'respond-async' }, payload: { name: 'Now' } })
  t.equal(res.statusCode, 201)
})

t.test('PGlite with migrate: false and no table of jobs: start-up names its definition', async t => {
  const { PGlite } = await import('@electric-sql/pglite')
  const db = await PGlite.create()
  t.teardown(() => db.close())
  const store = await pgliteStore({ db, migrate: false })
  await t.rejects(store.prepare?.([], { idempotencyKeys: false, jobs: true }) as Promise<void>, { name: 'TypeError', message: /api_jobs", where asynchronous work is kept, does not exist, and option migrate is false; create it: CREATE TABLE/ })
})
