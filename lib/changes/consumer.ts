// The `changes.onChange` hook (docs/changes.md "In-process consumers"): each instance follows the
// log from the head it finds when the app is ready, and calls the hook with every change after it,
// its own instance's and the others', in commit order, one call at a time. A call that throws is
// logged and made again with the same change after a pause, so a change is never skipped.
import type { FastifyBaseLogger } from 'fastify'
import type { ChangeRecord, Store } from '../stores/store.js'
import type { ShownChange } from './present.js'
import { follower, retrying, tailLog } from './tail.js'
import type { Follower } from './tail.js'
import type { Wakeups } from './wakeups.js'

export function changeConsumer (onChange: (change: ShownChange) => void | Promise<void>, log: Required<Pick<Store, 'readChanges'>>, wakeups: Wakeups,
  present: (change: ChangeRecord) => ShownChange | null, logger: FastifyBaseLogger): Follower {
  return follower(async signal => {
    // Null until the head is read: a store unreachable at start is retried like a failing call.
    let after: bigint | null = null
    await retrying(signal, async healthy => {
      after ??= BigInt((await log.readChanges({ after: null, limit: 0, resources: null })).head)
      for await (const change of tailLog(log, wakeups, { after, signal })) {
        const shown = present(change)
        if (shown !== null) await onChange(shown)
        after = BigInt(change.position)
        healthy()
      }
    }, (error, retryInMs) => {
      logger.warn({ err: error, after: after === null ? null : String(after), retryInMs }, 'api-conventions: the changes.onChange hook (or reading the change log) failed; trying again')
    })
  })
}
