// The default id: a UUIDv7 (RFC 9562), time-ordered and increasing within this process, laid out
// by the uuid package from random bytes drawn from a pool. uuid asks the system's random source for
// 16 bytes per id, and that call was 17 % of a memory CREATE's CPU (profiled under load): the
// pool is refilled 256 ids at a time, as Node does for randomUUID. Ids made within one millisecond
// count on from a random start (RFC 9562 6.2, method 1), as uuid does for the ids it draws itself;
// 2^31 ids in one millisecond, which would wrap the counter, are out of reach.
import { randomFillSync } from 'node:crypto'
import { v7 } from 'uuid'

const pool = new Uint8Array(16 * 256)
let used = pool.length
let msecs = -Infinity
let seq = 0

export function newUuidV7 (): string {
  if (used === pool.length) {
    randomFillSync(pool)
    used = 0
  }
  const random = pool.subarray(used, used += 16)
  const now = Date.now()
  if (now > msecs) {
    msecs = now
    seq = ((random[6] & 0x7f) << 24) | (random[7] << 16) | (random[8] << 8) | random[9]
  } else {
    seq = (seq + 1) | 0
  }
  return v7({ random, msecs, seq })
}
