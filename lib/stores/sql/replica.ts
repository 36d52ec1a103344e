// Read replicas with read-your-writes (docs/stores.md "Read replicas"): which database a read
// runs on. A caller's reads go to the replica unless that caller has written something the replica
// has not replayed yet (WAL positions: pg_current_wal_lsn() on the primary after the write commits,
// pg_last_wal_replay_lsn() on the replica), or the replica is down or lags beyond a bound; then to
// the primary. Writers' positions are kept in Redis when given, so that every instance honours them.
import { createHash } from 'node:crypto'
import { isUnavailable } from './store.js'
import type { QueryFunction, SqlDatabase } from './store.js'
import type { PoolStats } from '../store.js'

/** The part of an ioredis client (`new Redis(…)`) the positions use. Declared here so that the package's types need no `ioredis`. */
export interface PositionsRedis {
  get (key: string): Promise<string | null>
  eval (script: string, keys: number, ...args: Array<string | number>): Promise<unknown>
}

/** The latest write position of each caller, kept until every replica has surely replayed it. */
interface WritePositions {
  /** A position as 16 hexadecimal digits, so that comparing the texts compares the positions. */
  get (caller: string): Promise<string | undefined>
  /** Keeps `position` unless a later one is kept already (another instance's write). */
  raise (caller: string, position: string): Promise<void>
}

/**
 * How long a writer's position is kept. A replica that has not replayed it by then lags by
 * more than this, far beyond any sensible `maxReplicaLagMillis`, and is skipped for that anyway.
 */
const POSITION_TTL_MILLIS = 5 * 60_000

function memoryPositions (): WritePositions {
  const kept = new Map<string, { position: string, until: number }>()
  return {
    async get (caller) {
      const entry = kept.get(caller)
      return entry === undefined || entry.until < Date.now() ? undefined : entry.position
    },
    async raise (caller, position) {
      const now = Date.now()
      // Expired entries go when the map grows, not on a timer: callers come and go.
      if (kept.size >= 10_000) for (const [key, entry] of kept) if (entry.until < now) kept.delete(key)
      const entry = kept.get(caller)
      kept.set(caller, { position: entry !== undefined && entry.until >= now && entry.position > position ? entry.position : position, until: now + POSITION_TTL_MILLIS })
    }
  }
}

// Sets the key unless it holds a later position already; either way it lives on for the TTL.
const raiseScript = `local current = redis.call('GET', KEYS[1])
if (not current) or current < ARGV[1] then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) else redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1`

function redisPositions (redis: PositionsRedis, prefix: string): WritePositions {
  // Callers' keys may be long or hold any character: the Redis key holds their digest.
  const keyOf = (caller: string) => prefix + createHash('sha256').update(caller).digest('base64url')
  return {
    async get (caller) {
      return (await redis.get(keyOf(caller))) ?? undefined
    },
    async raise (caller, position) {
      await redis.eval(raiseScript, 1, keyOf(caller), position, POSITION_TTL_MILLIS)
    }
  }
}

/** A WAL position (`16/B374D848`) as 16 hexadecimal digits. */
export function positionText (lsn: string): string {
  const [high, low] = lsn.split('/')
  return high.padStart(8, '0').toLowerCase() + low.padStart(8, '0').toLowerCase()
}

/** Past every position: a read server that is not a standby (a primary) has everything committed. */
const EVERYTHING = 'g'

interface ReplicaState {
  /** Reachable, and not lagging beyond the bound. */
  readonly usable: boolean
  /** What it has replayed, as positionText. */
  readonly replayed: string
  /** How far behind it was, in milliseconds; undefined when it could not be reached. */
  readonly lagMillis: number | undefined
  readonly checkedAt: number
}

export interface ReplicaSettings {
  readonly maxLagMillis: number
  /** How long a check of the replica is trusted; also how soon one found down is tried again. */
  readonly checkMillis: number
  readonly redis: PositionsRedis | undefined
  /** Keeps writers' positions of stores on different schemas apart in one Redis. */
  readonly schema: string
}

// Standby functions (PostgreSQL "System Administration Functions", recovery information): what the
// replica has replayed, and how far behind it is: zero when it has replayed all it received, else
// the age of the last transaction it replayed.
const CHECK = `SELECT pg_last_wal_replay_lsn()::text, CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
  ELSE COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000, 0) END`

// A table or column the primary has just made may not have reached the replica yet.
const notYetReplayed = new Set(['42P01', '42703'])

export class ReadRouter {
  readonly #primary: QueryFunction
  readonly #replica: SqlDatabase
  readonly #settings: ReplicaSettings
  readonly #positions: WritePositions
  #state: ReplicaState | undefined
  #checking: Promise<ReplicaState> | undefined
  /** A read on the replica that falls back to the primary when the replica cannot answer. */
  readonly #onReplica: QueryFunction

  constructor (primary: QueryFunction, replica: SqlDatabase, settings: ReplicaSettings) {
    this.#primary = primary
    this.#replica = replica
    this.#settings = settings
    this.#positions = settings.redis === undefined ? memoryPositions() : redisPositions(settings.redis, `api-conventions-wal:${settings.schema}:`)
    this.#onReplica = (text, values) => replica.query(text, values).catch((error: unknown) => {
      const { code } = error as { code?: unknown }
      if (isUnavailable(error)) this.#state = { usable: false, replayed: '', lagMillis: undefined, checkedAt: Date.now() }
      else if (typeof code !== 'string' || !notYetReplayed.has(code)) throw error
      // Reads are safe to run again: this one costs the caller no failed request.
      return primary(text, values)
    })
    // Started now, so that the first read rarely waits for it; it never rejects.
    this.#check()
  }

  /** Where `caller`'s read runs now. */
  async queryFor (caller: string): Promise<QueryFunction> {
    const state = await this.#current()
    if (!state.usable) return this.#primary
    const written = await this.#positions.get(caller).catch(() => EVERYTHING)
    return written === undefined || written <= state.replayed ? this.#onReplica : this.#primary
  }

  /**
   * After `caller`'s write committed on the primary: its reads stay there until the replica has it.
   * Never fails: the write is made, and its answer must say so (a failure here would invite a retry
   * that writes twice). A primary lost right after the commit leaves the position unknown: the
   * caller reads the primary until the position expires. A Redis that cannot keep the position
   * cannot be read either, and reads whose position cannot be read go to the primary.
   */
  async wrote (caller: string): Promise<void> {
    const position = await this.#primary('SELECT pg_current_wal_lsn()::text', []).then(([[lsn]]) => positionText(String(lsn)), () => EVERYTHING)
    await this.#positions.raise(caller, position).catch(() => {})
  }

  /**
   * The last check's answer; one older than checkMillis is renewed in the background, so a read
   * never waits for a replica that does not answer (only the very first read waits for a check).
   */
  async #current (): Promise<ReplicaState> {
    const state = this.#state
    if (state === undefined) return await this.#check()
    if (Date.now() - state.checkedAt >= this.#settings.checkMillis) this.#check()
    return state
  }

  #check (): Promise<ReplicaState> {
    this.#checking ??= this.#replica.query(CHECK, []).then(([[lsn, lag]]) => {
      const replayed = lsn === null ? EVERYTHING : positionText(String(lsn))
      return { usable: Number(lag) <= this.#settings.maxLagMillis, replayed, lagMillis: Number(lag), checkedAt: Date.now() }
    }, () => ({ usable: false, replayed: '', lagMillis: undefined, checkedAt: Date.now() })).then(state => {
      this.#state = state
      this.#checking = undefined
      return state
    })
    return this.#checking
  }

  /** The replica's pool, with what the last check found (read when metrics are scraped). */
  poolStats (): PoolStats | undefined {
    const stats = this.#replica.poolStats?.()
    return stats === undefined ? undefined : { ...stats, lagMillis: this.#state?.lagMillis, usable: this.#state?.usable ?? false }
  }

  async close (): Promise<void> {
    await this.#checking
    await this.#replica.close()
  }
}
