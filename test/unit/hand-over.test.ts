// stores/sql/hand-over.ts: a producer inside a callback handing batches to an async iterable.
// The consumer reads them in order; one that stops early makes the producer's wait throw, and a
// producer that goes on handing anyway is refused again instead of waiting forever.
import t from 'tap'
import { ConsumerStopped, handedOver } from '../../lib/stores/sql/hand-over.js'

t.test('every batch, in order, each handed once the one before is read through', async t => {
  const handed: number[] = []
  const items = handedOver<number>(async hand => {
    for (const batch of [[1, 2], [3], [4, 5, 6]]) {
      handed.push(batch[0])
      await hand(batch)
    }
  })
  const read: number[] = []
  for await (const item of items) {
    read.push(item)
    // The producer is never more than one batch ahead.
    t.ok(handed.length <= (read.length <= 2 ? 1 : read.length <= 3 ? 2 : 3), `after ${item}: ${handed.length} batches handed`)
  }
  t.same(read, [1, 2, 3, 4, 5, 6])
})

t.test('a consumer that stops: the hand it waits at throws ConsumerStopped, and so does any later hand', async t => {
  const refusals: unknown[] = []
  const items = handedOver<number>(async hand => {
    try {
      await hand([1, 2])
    } catch (error) {
      refusals.push(error)
    }
    // A producer that ignores the first refusal and hands more is refused at once.
    await hand([3]).catch(error => refusals.push(error))
  })
  // The consumer reads one item, then leaves (as `for await … break` does).
  t.same(await items.next(), { value: 1, done: false })
  await items.return(undefined)
  t.equal(refusals.length, 2)
  for (const refusal of refusals) t.type(refusal, ConsumerStopped)
})

t.test('a producer that fails: the consumer gets its error after the batches handed before', async t => {
  const items = handedOver<number>(async hand => {
    await hand([1])
    throw new Error('the read failed')
  })
  const read: number[] = []
  await t.rejects((async () => { for await (const item of items) read.push(item) })(), { message: 'the read failed' })
  t.same(read, [1])
})
