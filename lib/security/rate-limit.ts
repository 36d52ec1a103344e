// Rate limiting with @fastify/rate-limit's counter stores (spec "Errors" 8, "Limits" 1): the
// RateLimit-Policy and RateLimit fields of draft-ietf-httpapi-ratelimit-headers-11 on every answer,
// and over the limit a 429 of the IANA `quota-exceeded` problem type with Retry-After (an HTTP date
// by default, as the spec recommends); keyed by principal when the credentials hold, else by client
// address; shared through Redis when given.
import { createRequire } from 'node:module'
import { normalizeIP } from '@fastify/rate-limit'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { OptionsInvalidError, RateLimitedError, withHeaders } from '../errors.js'
import type { ProblemExtras } from '../errors.js'
import type { MaybePromise } from './edge.js'
import { knownKeys, refuseUnknownKeys } from '../options-check.js'

/**
 * An ioredis client (`new Redis(…)`), as the counters use it: they define one Lua command on it.
 * Declared here so that the package's types need no `ioredis`.
 */
export interface RedisClient {
  defineCommand (name: string, definition: { lua: string, numberOfKeys?: number }): void
}

export interface RateLimitOptions {
  /** Requests per key per window. */
  readonly max: number
  /** Window length: milliseconds, or a duration such as `1 minute`, `30 seconds`. */
  readonly timeWindow: number | string
  /** An ioredis client: counters then live in Redis, shared by every instance using it. The host closes it. */
  readonly redis?: RedisClient | undefined
  /** Prefix of the Redis keys. Default `api-conventions-rate-limit:`. */
  readonly nameSpace?: string | undefined
  /**
   * The form of Retry-After on a 429 (spec "Response headers": seconds or an RFC 5322 date).
   * Default `date`, the form the spec recommends; `seconds` means the same to a client whose clock is off.
   */
  readonly retryAfter?: 'date' | 'seconds' | undefined
  /**
   * The fields that tell the limit. Default `draft-11`: `RateLimit-Policy: "default";q=100;w=60` and
   * `RateLimit: "default";r=50;t=30` (draft-ietf-httpapi-ratelimit-headers-11); `legacy`:
   * `RateLimit-Limit`, `-Remaining` and `-Reset` of the draft's earlier revisions, for clients that read only those.
   */
  readonly fields?: 'draft-11' | 'legacy' | undefined
}

export interface ResolvedRateLimit {
  readonly max: number
  readonly timeWindow: number
  readonly redis: RedisClient | undefined
  readonly nameSpace: string
  readonly retryAfter: 'date' | 'seconds'
  readonly fields: 'draft-11' | 'legacy'
}

const units: Readonly<Record<string, number>> = { ms: 1, millisecond: 1, s: 1000, second: 1000, m: 60000, minute: 60000, h: 3600000, hour: 3600000, d: 86400000, day: 86400000 }
const durationPattern = /^(\d+)\s*(?:(ms|millisecond|s|second|m|minute|h|hour|d|day)s?)?$/

/** Positive whole milliseconds, or a duration such as `1 minute` or `7 days`; undefined for anything else. */
export function milliseconds (value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) && value > 0 ? value : undefined
  const match = typeof value === 'string' ? durationPattern.exec(value.trim()) : null
  const ms = match === null ? 0 : Number(match[1]) * units[match[2] ?? 'ms']
  return ms > 0 ? ms : undefined
}

const rateLimitKeys = knownKeys({ max: true, timeWindow: true, redis: true, nameSpace: true, retryAfter: true, fields: true } satisfies Record<keyof RateLimitOptions, true>)

export function resolveRateLimit (value: unknown): ResolvedRateLimit | null {
  if (value === undefined || value === false) return null
  const given = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>
  refuseUnknownKeys(given, rateLimitKeys, 'rateLimit')
  const { max, redis, nameSpace = 'api-conventions-rate-limit:', retryAfter = 'date', fields = 'draft-11' } = given
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 1) throw new OptionsInvalidError(`rateLimit.max must be a positive integer, received ${JSON.stringify(max)}`)
  const timeWindow = milliseconds(given.timeWindow)
  if (timeWindow === undefined) throw new OptionsInvalidError(`rateLimit.timeWindow must be positive milliseconds or a duration such as '1 minute', received ${JSON.stringify(given.timeWindow)}`)
  if (redis !== undefined && typeof (redis as { defineCommand?: unknown } | null)?.defineCommand !== 'function') {
    throw new OptionsInvalidError('rateLimit.redis must be an ioredis client')
  }
  if (typeof nameSpace !== 'string' || nameSpace === '') throw new OptionsInvalidError(`rateLimit.nameSpace must be a non-empty string, received ${JSON.stringify(nameSpace)}`)
  if (retryAfter !== 'date' && retryAfter !== 'seconds') throw new OptionsInvalidError(`rateLimit.retryAfter must be 'date' or 'seconds', received ${JSON.stringify(retryAfter)}`)
  if (fields !== 'draft-11' && fields !== 'legacy') throw new OptionsInvalidError(`rateLimit.fields must be 'draft-11' or 'legacy', received ${JSON.stringify(fields)}`)
  return Object.freeze({ max, timeWindow, redis: redis as RedisClient | undefined, nameSpace, retryAfter, fields })
}

interface Count { readonly current: number, readonly ttl: number }
/** @fastify/rate-limit's counter stores: an LRU of windows in memory, or one Lua script call in Redis. */
interface CounterStore { incr (key: string, callback: (error: Error | null, count: Count | null) => void, timeWindow: number, max: number): void }
type StoreClass<A extends unknown[]> = new (continueExceeding: boolean, exponentialBackoff: boolean, ...rest: A) => CounterStore
const require = createRequire(import.meta.url)
const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as StoreClass<[cache: number]>
const RedisStore = require('@fastify/rate-limit/store/RedisStore.js') as StoreClass<[redis: RedisClient, nameSpace: string]>

/** The key of a request without a principal: its client address (an IPv6 client by its /64). */
export const addressKey = (request: FastifyRequest) => `ip:${normalizeIP(request.ip)}`

/** The name of the one quota policy, in RateLimit-Policy, RateLimit and a 429's `violated-policies`. */
export const quotaPolicyName = 'default'
const violatedPolicies: readonly string[] = Object.freeze([quotaPolicyName])

type TellLimit = (reply: FastifyReply, remaining: number, seconds: string) => void

/** Sets the fields that tell the limit, in the configured form. */
function limitFields ({ fields, max, timeWindow }: ResolvedRateLimit): TellLimit {
  if (fields === 'legacy') {
    const limit = String(max)
    return (reply, remaining, seconds) => { reply.header('ratelimit-limit', limit).header('ratelimit-remaining', String(remaining)).header('ratelimit-reset', seconds) }
  }
  // Structured fields (RFC 9651): the policy's name is a String, q and w Integers; w is in whole seconds.
  const policy = `"${quotaPolicyName}"`
  const policyField = `${policy};q=${max};w=${Math.ceil(timeWindow / 1000)}`
  return (reply, remaining, seconds) => { reply.header('ratelimit-policy', policyField).header('ratelimit', `${policy};r=${remaining};t=${seconds}`) }
}

/**
 * The limiter, a step of the request edge (pipeline.ts): counts the request under `key` and
 * tells the limit (no X- prefix, RFC 6648), or throws the 429 with Retry-After. The counters are
 * the library's stores; the policy around them is here rather than in @fastify/rate-limit's hook
 * so that the in-memory count stays synchronous: its promise chain cost more than the count
 * (benchmarks/README.md).
 */
export function createRateLimiter (options: ResolvedRateLimit): RateLimiter {
  const { max, timeWindow } = options
  const tell = limitFields(options)

  function judge (reply: FastifyReply, { current, ttl }: Count) {
    const seconds = String(Math.ceil(ttl / 1000))
    tell(reply, Math.max(0, max - current), seconds)
    if (current > max) {
      // An HTTP date has whole seconds: rounded up, so a client that waits until it is not early.
      const retryAfter = options.retryAfter === 'date' ? new Date(Math.ceil((Date.now() + ttl) / 1000) * 1000).toUTCString() : seconds
      throw Object.assign(withHeaders(new RateLimitedError(seconds), { 'retry-after': retryAfter }), { violatedPolicies } satisfies ProblemExtras)
    }
  }

  if (options.redis === undefined) {
    const store = new LocalStore(false, false, 5000)
    return function countLocally (_request: FastifyRequest, reply: FastifyReply, key: string): void {
      let count: Count | null = null
      // The LRU answers before incr returns, and never with an error.
      store.incr(key, (_error, result) => { count = result }, timeWindow, max)
      judge(reply, count as unknown as Count)
    }
  }
  const store = new RedisStore(false, false, options.redis, options.nameSpace)
  return function countInRedis (request: FastifyRequest, reply: FastifyReply, key: string): Promise<void> {
    return new Promise<Count>((resolve, reject) => store.incr(key, (error, count) => error === null ? resolve(count as Count) : reject(error), timeWindow, max))
      .then(count => judge(reply, count), error => {
        // Fail open: a broken counter store must not take the API down; the log says so.
        request.log.warn({ err: error }, 'rate limit not applied: the counter store failed')
      })
  }
}

/** Counts the request under `key`: throws (or rejects with) the 429 when over the limit. */
export type RateLimiter = (request: FastifyRequest, reply: FastifyReply, key: string) => MaybePromise<void>
