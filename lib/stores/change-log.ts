// The memory store's change log (docs/changes.md): changes in an array, positions from a counter
// taken when a transaction appends them, which is as it commits (memory transactions run one at a
// time and cannot fail after their work), so position order is commit order.
import type { ChangeQuery, ChangeRead, ChangeRecord, NewChange } from './store.js'

export interface ChangeLog {
  append (changes: readonly NewChange[]): void
  read (query: ChangeQuery): ChangeRead
  purge (before: Date): number
}

export function memoryChangeLog (): ChangeLog {
  const kept: ChangeRecord[] = []
  let last = 0n
  let purgedThrough = 0n

  /** The index of the first change after `position` (positions ascend). */
  function firstAfter (position: bigint): number {
    let low = 0
    let high = kept.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (BigInt(kept[middle].position) <= position) low = middle + 1
      else high = middle
    }
    return low
  }

  return {
    append (changes) {
      for (const change of changes) kept.push(Object.freeze({ ...change, position: String(++last) }))
    },
    read ({ after, limit, resources }) {
      const changes: ChangeRecord[] = []
      let hasMore = false
      for (let at = after === null ? 0 : firstAfter(after); at < kept.length; at++) {
        const change = kept[at]
        if (resources !== null && !resources.includes(change.resource)) continue
        if (changes.length === limit) {
          hasMore = true
          break
        }
        changes.push(change)
      }
      return { changes, hasMore, purgedThrough: String(purgedThrough), head: String(last) }
    },
    purge (before) {
      // A prefix: positions up to the last change made before `before`, so purgedThrough is exact.
      let count = 0
      for (let at = 0; at < kept.length; at++) if (kept[at].at < before) count = at + 1
      if (count > 0) purgedThrough = BigInt(kept[count - 1].position)
      kept.splice(0, count)
      return count
    }
  }
}
