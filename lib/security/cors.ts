// Origin checks and CORS with @fastify/cors (spec "Request headers": Origin,
// Access-Control-Request-Method; "Response headers": Access-Control-Allow-Origin, never `*`):
// a request whose Origin is not on the allow-list is 403; preflights answer before authentication.
import type { FastifyCorsOptions } from '@fastify/cors'
import type { FastifyRequest } from 'fastify'
import { ForbiddenError, OptionsInvalidError, withInvalidParams } from '../errors.js'
import { auditHeaderNames } from './audit-headers.js'

export interface CorsOptions {
  /** Origins allowed in `Origin`, e.g. `https://app.example.com`; `*` is refused. Default: none. */
  readonly origins: readonly string[]
  /** Access-Control-Max-Age of preflight answers, in seconds. Default 600. */
  readonly maxAge?: number
}

export interface ResolvedCors {
  readonly origins: readonly string[]
  readonly maxAge: number
}

export function resolveCors (value: unknown): ResolvedCors {
  if (value === undefined) return { origins: [], maxAge: 600 }
  const given = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>
  if (!Array.isArray(given.origins)) throw new OptionsInvalidError(`cors.origins must be an array of origins, received ${JSON.stringify(given.origins)}`)
  for (const origin of given.origins) {
    // The spec forbids `*` in Access-Control-Allow-Origin: an allow-list names each origin.
    if (origin === '*') throw new OptionsInvalidError('cors.origins must not contain *: list each allowed origin')
    if (typeof origin !== 'string' || !isOrigin(origin)) {
      throw new OptionsInvalidError(`cors.origins entries must be origins such as https://app.example.com (scheme, host, port; no path), received ${JSON.stringify(origin)}`)
    }
  }
  const maxAge = given.maxAge ?? 600
  if (typeof maxAge !== 'number' || !Number.isInteger(maxAge) || maxAge < 0) throw new OptionsInvalidError(`cors.maxAge must be a non-negative integer of seconds, received ${JSON.stringify(maxAge)}`)
  return Object.freeze({ origins: Object.freeze([...given.origins as string[]]), maxAge })
}

function isOrigin (text: string): boolean {
  try {
    return new URL(text).origin === text
  } catch {
    return false
  }
}

/** Response headers a browser script may read (the CORS-safelisted ones need no mention). */
export const exposedHeaders = ['ETag', 'Location', 'Request-Id', 'Retry-After', 'Link', 'Allow', 'WWW-Authenticate',
  'Deprecation', 'Sunset', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']

/** The methods a route URL allows, as its Allow header lists them; undefined for routes that are not the plugin's resources. */
export type MethodsOf = (routeUrl: string) => readonly string[] | undefined

// Routes without a list of their own (openapi.json, docs, problem pages) are read-only.
const readMethods = ['GET', 'HEAD', 'OPTIONS']

/** The @fastify/cors registration: one decision per request, from options prepared here. */
export function corsPluginOptions (cors: ResolvedCors, apiKeys: boolean, methodsOf: MethodsOf): FastifyCorsOptions {
  const allowed = new Set(cors.origins)
  const allowedHeaders = ['Authorization', 'Content-Type', 'If-Match', 'If-None-Match', 'If-Modified-Since',
    'If-Unmodified-Since', 'X-Request-Id', ...auditHeaderNames, ...(apiKeys ? ['x-api-key'] : [])]
  const common = { origin: cors.origins as string[], allowedHeaders, exposedHeaders, maxAge: cors.maxAge, strictPreflight: false }
  // Only OPTIONS with Access-Control-Request-Method is a preflight; any other OPTIONS is QUERY CAPABILITIES.
  // A preflight lists the methods of the route it asks about, as that route's Allow does; one options object per list.
  // Every preflight matches a route: @fastify/cors adds `OPTIONS *` (hidden) for paths without one.
  const preflights = new Map<string, FastifyCorsOptions>()
  function preflightFor (routeUrl: string): FastifyCorsOptions {
    const methods = methodsOf(routeUrl) ?? readMethods
    const key = methods.join()
    let options = preflights.get(key)
    if (options === undefined) preflights.set(key, options = { ...common, methods: [...methods], preflight: true })
    return options
  }
  const actual: FastifyCorsOptions = { ...common, preflight: false }
  const none: FastifyCorsOptions = { origin: false }
  return {
    hideOptionsRoute: true,
    delegator: function checkOrigin (request: FastifyRequest, callback: (error: Error | null, options?: FastifyCorsOptions) => void) {
      const origin = request.headers.origin
      if (origin === undefined) return callback(null, none)
      if (!allowed.has(origin)) {
        return callback(withInvalidParams(new ForbiddenError('The Origin of this request is not allowed.'), [{ name: 'Origin', reason: 'is not on the list of allowed origins' }]))
      }
      callback(null, request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined ? preflightFor(String(request.routeOptions.url)) : actual)
    }
  }
}
