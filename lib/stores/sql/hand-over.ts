// A read that lives inside a callback (a transaction's: stores/sql/store.ts) consumed as an async
// iterable, one batch at a time: the producer waits at each hand-over until the consumer asks for
// more, so nothing piles up between the two (docs/export.md), and a consumer that stops early
// makes the producer's wait throw, which ends its callback (the transaction rolls back).

/** What the producer's `hand` throws once the consumer has stopped. */
export class ConsumerStopped extends Error {
  constructor () { super('the consumer stopped reading') }
}

interface Deferred<T> { readonly promise: Promise<T>, resolve (value: T): void, reject (error: unknown): void }

function deferred<T> (): Deferred<T> {
  let resolve!: (value: T) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<T>((_resolve, _reject) => { resolve = _resolve; reject = _reject })
  // Settled with no one waiting (a rejection after the consumer left) is not an unhandled rejection.
  promise.catch(() => {})
  return { promise, resolve, reject }
}

interface Offer<T> { readonly batch: readonly T[], readonly taken: Deferred<void> }

/**
 * The items `produce` hands over, in order. `produce` receives `hand`, which resolves when the
 * consumer has read the batch through and asks for the next, and rejects with ConsumerStopped
 * when it stopped instead. Errors of `produce` reach the consumer; the iterable ends when
 * `produce` has returned (and, if the consumer stopped, once it has finished failing).
 */
export async function * handedOver<T> (produce: (hand: (batch: readonly T[]) => Promise<void>) => Promise<void>): AsyncGenerator<T> {
  let slot = deferred<Offer<T> | null>()
  let stopped = false
  const hand = async (batch: readonly T[]) => {
    if (stopped) throw new ConsumerStopped()
    const taken = deferred<void>()
    slot.resolve({ batch, taken })
    await taken.promise
  }
  const finished = produce(hand).then(() => slot.resolve(null), (error: unknown) => slot.reject(error))
  let reading: Offer<T> | undefined
  try {
    for (;;) {
      const offer = await slot.promise
      if (offer === null) return
      slot = deferred()
      reading = offer
      yield * offer.batch
      reading = undefined
      offer.taken.resolve()
    }
  } finally {
    stopped = true
    reading?.taken.reject(new ConsumerStopped())
    await finished
  }
}
