// The default id (lib/registry/uuid.ts): RFC 9562 version 7, increasing within the process, also
// many within one millisecond and across refills of the random pool.
import t from 'tap'
import { validate, version } from 'uuid'
import { newUuidV7 } from '../../lib/registry/uuid.js'

t.test('ids are UUIDv7, strictly increasing, distinct, and carry the clock', async t => {
  const before = Date.now()
  // More than the pool's 256 ids, most of them within one millisecond.
  const ids = Array.from({ length: 1000 }, () => newUuidV7())
  const after = Date.now()
  t.ok(ids.every(id => validate(id) && version(id) === 7), 'version 7')
  t.ok(ids.every((id, i) => i === 0 || ids[i - 1] < id), 'each sorts after the one before')
  t.equal(new Set(ids).size, ids.length, 'distinct')
  const millis = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16)
  t.ok(millis(ids[0]) >= before && millis(ids[ids.length - 1]) <= after, 'the timestamp is the creation time')
  // Random bits differ past the counter: the pool is not one value repeated.
  t.ok(new Set(ids.map(id => id.slice(-12))).size > 990, 'random tails')
})

t.test('a clock that goes back keeps the order', async t => {
  const real = Date.now
  t.teardown(() => { Date.now = real })
  const first = newUuidV7()
  Date.now = () => real() - 60_000
  const second = newUuidV7()
  t.ok(first < second)
})
