// Following the change log in position order (docs/changes.md): what the NATS publisher and the
// `onChange` hook's consumer share. Reads a batch after the last position seen,
// and at the head waits for a wake-up (a commit on this instance, or another's found by polling).
import type { ChangeRecord, Store } from '../stores/store.js'
import type { Wakeups } from './wakeups.js'

const batchSize = 100
/** The longest wait for a wake-up before reading the log again anyway. */
const idleWait = 30_000
/** After a failure, a follower of the log pauses this long first, doubled after each one up to `last`. */
const retryPauses = { first: 1000, last: 30_000 }

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause (ms: number, signal: AbortSignal): Promise<void> {
  return new Promise(resolve => {
    const done = () => { clearTimeout(timer); signal.removeEventListener('abort', done); resolve() }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done)
  })
}

/** A loop that follows the log: `run` started when the app is ready, stopped (after the step in flight) as it closes. */
export interface Follower {
  readonly start: () => void
  readonly stop: () => Promise<void>
}

/** `run` as a Follower: its signal aborts on stop, which then waits for it to return. */
export function follower (run: (signal: AbortSignal) => Promise<void>): Follower {
  const stopping = new AbortController()
  let running: Promise<void> | null = null
  return {
    start () {
      running = run(stopping.signal)
    },
    async stop () {
      stopping.abort()
      await running
    }
  }
}

export interface TailOptions {
  /** The position to follow from; null: the oldest change kept. */
  readonly after: bigint | null
  /** Ends the tail (at the next read or wait). */
  readonly signal: AbortSignal
  /** Called each time the tail has caught up with the head. */
  readonly caughtUp?: () => void
}

/**
 * Runs `attempt` again and again until `signal` aborts: after each failure, `failed` is told the
 * error and the pause before the next attempt (1 s, doubling up to 30 s). `attempt` calls the
 * `healthy` it is given after each step that went well, which starts the pauses over.
 */
export async function retrying (signal: AbortSignal, attempt: (healthy: () => void) => Promise<void>, failed: (error: unknown, retryInMs: number) => Promise<void> | void): Promise<void> {
  let retry = retryPauses.first
  const healthy = () => { retry = retryPauses.first }
  while (!signal.aborted) {
    try {
      await attempt(healthy)
    } catch (error) {
      await failed(error, retry)
      await pause(retry, signal)
      retry = Math.min(retry * 2, retryPauses.last)
    }
  }
}

/** The changes after `after`, in order, waiting at the head for more, until `signal` aborts. */
export async function * tailLog (log: Required<Pick<Store, 'readChanges'>>, wakeups: Wakeups, options: TailOptions): AsyncGenerator<ChangeRecord, void, undefined> {
  const { signal, caughtUp } = options
  let after = options.after
  while (!signal.aborted) {
    const found = await log.readChanges({ after, limit: batchSize, resources: null })
    for (const change of found.changes) {
      yield change
      after = BigInt(change.position)
    }
    if (found.hasMore) continue
    caughtUp?.()
    // The read saw every change up to the head (one snapshot; none above the last one read, or it
    // was purged): go on from there.
    after = BigInt(found.head)
    await wakeups.next(found.head, Date.now() + idleWait, signal)
  }
}
