// Rate limiting with @fastify/rate-limit (spec "Errors" 8, "Limits" 1): 429 problem+json with
// Retry-After (seconds) and the draft RateLimit-Limit/-Remaining/-Reset headers, keyed by
// principal when the credentials hold, else by client address; shared through Redis when given.
import rateLimit, { normalizeIP } from '@fastify/rate-limit'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Redis } from 'ioredis'
import { OptionsInvalidError, RateLimitedError } from '../errors.js'

export interface RateLimitOptions {
  /** Requests per key per window. */
  readonly max: number
  /** Window length: milliseconds, or a duration such as `1 minute`, `30 seconds`. */
  readonly timeWindow: number | string
  /** An ioredis client: counters then live in Redis, shared by every instance using it. The host closes it. */
  readonly redis?: Redis
  /** Prefix of the Redis keys. Default `api-conventions-rate-limit:`. */
  readonly nameSpace?: string
}

export interface ResolvedRateLimit {
  readonly max: number
  readonly timeWindow: number
  readonly redis: Redis | undefined
  readonly nameSpace: string
}

const units: Readonly<Record<string, number>> = { ms: 1, millisecond: 1, s: 1000, second: 1000, m: 60000, minute: 60000, h: 3600000, hour: 3600000, d: 86400000, day: 86400000 }
const durationPattern = /^(\d+)\s*(?:(ms|millisecond|s|second|m|minute|h|hour|d|day)s?)?$/

function milliseconds (value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) && value > 0 ? value : undefined
  const match = typeof value === 'string' ? durationPattern.exec(value.trim()) : null
  const ms = match === null ? 0 : Number(match[1]) * units[match[2] ?? 'ms']
  return ms > 0 ? ms : undefined
}

export function resolveRateLimit (value: unknown): ResolvedRateLimit | null {
  if (value === undefined || value === false) return null
  const given = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>
  const { max, redis, nameSpace = 'api-conventions-rate-limit:' } = given
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 1) throw new OptionsInvalidError(`rateLimit.max must be a positive integer, received ${JSON.stringify(max)}`)
  const timeWindow = milliseconds(given.timeWindow)
  if (timeWindow === undefined) throw new OptionsInvalidError(`rateLimit.timeWindow must be positive milliseconds or a duration such as '1 minute', received ${JSON.stringify(given.timeWindow)}`)
  if (redis !== undefined && typeof (redis as { defineCommand?: unknown } | null)?.defineCommand !== 'function') {
    throw new OptionsInvalidError('rateLimit.redis must be an ioredis client')
  }
  if (typeof nameSpace !== 'string' || nameSpace === '') throw new OptionsInvalidError(`rateLimit.nameSpace must be a non-empty string, received ${JSON.stringify(nameSpace)}`)
  return Object.freeze({ max, timeWindow, redis: redis as Redis | undefined, nameSpace })
}

/**
 * Registers the limiter and returns its onRequest hook, placed by the caller before CORS and
 * authentication (STYLE §3). `keyOf` answers the principal's key, or undefined when anonymous.
 */
export async function registerRateLimit (app: FastifyInstance, options: ResolvedRateLimit, keyOf: (request: FastifyRequest) => Promise<string | undefined>) {
  await app.register(rateLimit, {
    // Not per route: one hook for the whole plugin, so 404s and 405s are counted too.
    global: false,
    max: options.max,
    timeWindow: options.timeWindow,
    redis: options.redis,
    nameSpace: options.nameSpace,
    // RateLimit-Limit/-Remaining/-Reset (draft-ietf-httpapi-ratelimit-headers): no X- prefix (RFC 6648).
    enableDraftSpec: true,
    async keyGenerator (request: FastifyRequest) {
      const principal = await keyOf(request)
      return principal === undefined ? `ip:${normalizeIP(request.ip)}` : `principal:${principal}`
    },
    errorResponseBuilder (_request, context) {
      return new RateLimitedError(String(Math.ceil(context.ttl / 1000)))
    }
  })
  const limit = app.rateLimit()
  return async function applyRateLimit (request: FastifyRequest, reply: FastifyReply) {
    try {
      await limit.call(app, request, reply)
    } catch (error) {
      if ((error as { code?: unknown }).code === 'API_ERR_RATE_LIMITED') throw error
      // Fail open: a broken counter store must not take the API down; the log says so.
      request.log.warn({ err: error }, 'rate limit not applied: the counter store failed')
    }
  }
}
