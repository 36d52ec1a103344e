// The purges of what the changes keep past their retention (docs/changes.md "Retention"): the
// change log's, and the webhooks' finished deliveries. Each runs at most once a minute, started by
// what passes by (a commit, a read of the feed, the sender's loop) and never awaited by it; a purge
// that fails is logged at warn, and the next one comes a minute later.
import type { FastifyBaseLogger } from 'fastify'

const purgeInterval = 60_000

export interface Purge {
  /** Starts the purge unless one started less than a minute ago. */
  readonly nowAndThen: () => void
  /** Settles once the last purge started has (for a close that must not pull the store from under it). */
  readonly settled: () => Promise<void>
}

export function purgeNowAndThen (purge: () => Promise<unknown>, logger: FastifyBaseLogger, failure: string): Purge {
  let last = 0
  let running: Promise<void> = Promise.resolve()
  return {
    nowAndThen () {
      const now = Date.now()
      if (now - last < purgeInterval) return
      last = now
      running = purge().then(() => {}, (error: unknown) => { logger.warn({ err: error }, failure) })
    },
    settled: async () => { await running }
  }
}
