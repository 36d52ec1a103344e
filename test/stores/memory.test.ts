// The store contract suite (test/stores/conformance.ts) on the memory store, the reference the SQL
// store is held to: every query-language result must be the same on both.
import t from 'tap'
import { memoryStore } from '../../lib/stores/memory.js'
import type { Store } from '../../lib/stores/store.js'
import { storeSuite } from './conformance.js'

storeSuite(t, async () => memoryStore())

t.test('an unknown option is refused at the factory call, naming the key meant', async t => {
  t.throws(() => memoryStore({ Now: () => new Date() } as never), { code: 'API_ERR_OPTIONS_INVALID', message: 'Invalid api-conventions options: memoryStore.Now is not a known key; did you mean "now"?' })
  t.throws(() => memoryStore({ clock: () => new Date() } as never), { code: 'API_ERR_OPTIONS_INVALID', message: /memoryStore\.clock is not a known key; known: now$/ })
  // A clock that is not a function would fail at the first write, as a 500.
  t.throws(() => memoryStore({ now: new Date(0) as never }), { code: 'API_ERR_OPTIONS_INVALID', message: /^Invalid api-conventions options: memoryStore\.now must be a function returning a Date, received / })
  t.throws(() => memoryStore({ now: null as never }), { code: 'API_ERR_OPTIONS_INVALID', message: /memoryStore\.now must be a function returning a Date, received null$/ })
})

// Memory transactions run one at a time, so a claim meets another transaction's only from outside one.
t.test('idempotency keys: a key held by a running transaction is busy to a claim outside it, until it ends', async t => {
  const store = memoryStore()
  const response = { status: 201, headers: { location: '/v1/things/1' }, body: { id: '1' } }
  const expiresAt = new Date(Date.now() + 60_000)
  const hold = async (ending: (tx: Store) => Promise<void>) => {
    let release!: () => void
    const gate = new Promise<void>(resolve => { release = resolve })
    let claimed!: () => void
    const started = new Promise<void>(resolve => { claimed = resolve })
    const running = store.transaction(async tx => {
      await tx.claimKey('k1')
      claimed()
      await gate
      await ending(tx)
    })
    await started
    t.same(await store.claimKey('k1'), { kind: 'busy' })
    t.same(await store.claimKey('k2'), { kind: 'free' }, 'another key is not held')
    // Writes outside wait for the transaction: they never land between its steps.
    const writes = Promise.all([store.keepResponse('k3', 'fp', response, expiresAt), store.purgeKeys(new Date(expiresAt.getTime() + 1))])
    release()
    return { running, writes }
  }
  const kept = await hold(async tx => { await tx.keepResponse('k1', 'fp', response, expiresAt) })
  await kept.running
  t.same(await kept.writes, [undefined, 2], 'in order after the transaction: the purge found its response and the one kept outside')
  t.same(await store.claimKey('k1'), { kind: 'free' })
  const undone = await hold(async () => { throw new Error('undone') })
  await t.rejects(undone.running, { message: 'undone' })
  t.same(await undone.writes, [undefined, 1])
  t.same(await store.claimKey('k1'), { kind: 'free' }, 'not busy once the transaction is undone')
})

t.test('idempotency keys: a kept response expires by the store\'s clock, at its expiry time', async t => {
  let clock = Date.parse('2026-01-01T00:00:00Z')
  const store = memoryStore({ now: () => new Date(clock) })
  const response = { status: 204, headers: {}, body: null }
  await store.keepResponse('k1', 'fp', response, new Date(clock + 1000))
  t.same(await store.claimKey('k1'), { kind: 'kept', fingerprint: 'fp', response })
  clock += 999
  t.equal((await store.claimKey('k1')).kind, 'kept')
  clock += 1
  t.same(await store.claimKey('k1'), { kind: 'free' })
  t.equal(await store.purgeKeys(new Date(clock)), 0, 'purged only once expired before the time given')
  t.equal(await store.purgeKeys(new Date(clock + 1)), 1)
})
