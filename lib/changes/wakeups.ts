// Wake-ups of readers waiting at the head of the change feed (docs/changes.md "Waiting"): a commit on
// this instance wakes them at once; commits on other instances are found by reading the head every
// `pollInterval` while someone waits, which needs nothing of the database but reads, so it works
// behind a transaction pooler too (LISTEN does not).
export interface Wakeups {
  /** A transaction that recorded changes committed on this instance. */
  readonly committed: () => void
  /** Resolves once a change after `head` may have committed, or at `deadline` (epoch ms), or when `signal` aborts. */
  readonly next: (head: string, deadline: number, signal?: AbortSignal) => Promise<void>
  /** Wakes every waiter and stops looking. */
  readonly close: () => void
  /**
   * A count that moves with every commit known here (on this instance, or a head seen to have
   * moved by a look): two reads begun at the same count could not tell a commit apart.
   */
  readonly generation: () => number
}

interface Waiter { readonly head: bigint, readonly wake: () => void }

export function createWakeups (readHead: () => Promise<string>, pollInterval: number): Wakeups {
  const waiters = new Set<Waiter>()
  let timer: NodeJS.Timeout | undefined
  let polling = false
  let generation = 0
  let headSeen = -1n

  const wakeAll = () => {
    generation++
    for (const waiter of [...waiters]) waiter.wake()
  }

  async function poll () {
    if (polling) return
    polling = true
    try {
      const head = BigInt(await readHead())
      if (head > headSeen) {
        headSeen = head
        generation++
      }
      for (const waiter of [...waiters]) if (head > waiter.head) waiter.wake()
    } catch {
      // An unreachable store: the waiters wait on, until their deadline or the next look.
    } finally {
      polling = false
    }
  }

  function next (head: string, deadline: number, signal?: AbortSignal): Promise<void> {
    return new Promise(resolve => {
      const timeout = setTimeout(() => waiter.wake(), Math.max(0, deadline - Date.now()))
      const waiter: Waiter = {
        head: BigInt(head),
        wake () {
          clearTimeout(timeout)
          signal?.removeEventListener('abort', waiter.wake)
          waiters.delete(waiter)
          if (waiters.size === 0 && timer !== undefined) {
            clearInterval(timer)
            timer = undefined
          }
          resolve()
        }
      }
      if (signal?.aborted === true) return waiter.wake()
      signal?.addEventListener('abort', waiter.wake)
      waiters.add(waiter)
      if (timer === undefined) timer = setInterval(poll, pollInterval).unref()
    })
  }

  return { committed: wakeAll, next, close: wakeAll, generation: () => generation }
}
