// Origin checks and CORS (spec "Request headers": Origin,
// Access-Control-Request-Method; "Response headers": Access-Control-Allow-Origin, never `*`):
// a request whose Origin is not on the allow-list is 403; preflights answer before authentication.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ForbiddenError, OptionsInvalidError, withInvalidParams } from '../errors.js'
import { corsAllowedHeaders, exposedHeaders } from '../headers.js'
import { knownKeys, refuseUnknownKeys } from '../options-check.js'
import { routeSpecOf } from '../route-spec.js'

export interface CorsOptions {
  /** Origins allowed in `Origin`, e.g. `https://app.example.com`; `*` is refused. Default: none. */
  readonly origins: readonly string[]
  /** Access-Control-Max-Age of preflight answers, in seconds. Default 600. */
  readonly maxAge?: number | undefined
  /**
   * Also accept the server's own origin (scheme and Host) without listing it, e.g. for the docs
   * page's "Test Request" wherever the API is reached. Default false: the spec validates Origin
   * against a list, and a Host-derived origin is one a DNS-rebinding page could match.
   */
  readonly ownOrigin?: boolean | undefined
}

export interface ResolvedCors {
  readonly origins: readonly string[]
  readonly maxAge: number
  readonly ownOrigin: boolean
}

const corsKeys = knownKeys({ origins: true, maxAge: true, ownOrigin: true } satisfies Record<keyof CorsOptions, true>)

export function resolveCors (value: unknown): ResolvedCors {
  if (value === undefined) return { origins: [], maxAge: 600, ownOrigin: false }
  const given = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>
  refuseUnknownKeys(given, corsKeys, 'cors')
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
  const ownOrigin = given.ownOrigin ?? false
  if (typeof ownOrigin !== 'boolean') throw new OptionsInvalidError(`cors.ownOrigin must be true or false, received ${JSON.stringify(ownOrigin)}`)
  return Object.freeze({ origins: Object.freeze([...given.origins as string[]]), maxAge, ownOrigin })
}

function isOrigin (text: string): boolean {
  try {
    return new URL(text).origin === text
  } catch {
    return false
  }
}

// The CORS catch-all (paths with no OPTIONS route of their own) is read-only.
const readMethods = ['GET', 'HEAD', 'OPTIONS']

// Each route's list, joined once (the lists are complete once the server is ready).
const methodLists = new WeakMap<readonly string[], string>()
function methodList (methods: readonly string[]): string {
  let list = methodLists.get(methods)
  if (list === undefined) methodLists.set(methods, list = methods.join(', '))
  return list
}

/**
 * Whether `origin` is this server's own, as the request reached it (scheme and Host, or the
 * forwarded ones under `trustProxy`): a browser sends Origin on its same-origin POST, PUT, PATCH
 * and DELETE too (Fetch §3.1), the docs page's "Test Request" among them, and a page may always
 * call its own origin (CORS does not apply). Compared as URL origins, which drop a default port.
 */
function isOwnOrigin (request: FastifyRequest, origin: string): boolean {
  try {
    return new URL(`${request.protocol}://${request.host}`).origin === origin
  } catch {
    // A Host no URL can hold names no origin.
    return false
  }
}

/**
 * The CORS step of the request edge (pipeline.ts), per request a Set lookup; what it sends
 * is prepared here. Written here rather than with @fastify/cors: its per-request options delegator
 * (needed for the 403 and the per-route methods) re-normalised its options on every request
 * (benchmarks/README.md measured what that cost).
 * No Origin, or the server's own where `ownOrigin` accepts it: nothing to do (Vary: Origin is
 * among the fixed headers). Any other Origin off the list: 403.
 * A preflight (OPTIONS with Access-Control-Request-Method) is answered here, 204, before the rate
 * limit and authentication, since browsers send no credentials with it; any other OPTIONS is QUERY
 * CAPABILITIES. Other requests get Access-Control-Allow-Origin and -Expose-Headers.
 */
export function createCorsCheck (cors: ResolvedCors, apiKeys: boolean) {
  const allowed = new Set(cors.origins)
  // The header table (headers.ts) says which.
  const allowedHeaders = corsAllowedHeaders(apiKeys).join(', ')
  const exposed = exposedHeaders.join(', ')
  const maxAge = String(cors.maxAge)

  /** True when it answered the request (a preflight). */
  return function checkOrigin (request: FastifyRequest, reply: FastifyReply): boolean {
    const origin = request.headers.origin
    if (origin === undefined) return false
    if (!allowed.has(origin)) {
      if (cors.ownOrigin && isOwnOrigin(request, origin)) return false
      throw withInvalidParams(new ForbiddenError('The Origin of this request is not allowed.'), [{ name: 'Origin', reason: 'is not on the list of allowed origins' }])
    }
    reply.header('access-control-allow-origin', origin).header('access-control-expose-headers', exposed)
    if (request.method !== 'OPTIONS' || request.headers['access-control-request-method'] === undefined) return false
    // A preflight lists the methods of the route it asks about, as that route's Allow does.
    reply.header('access-control-allow-methods', methodList(routeSpecOf(request)?.allow ?? readMethods))
      .header('access-control-allow-headers', allowedHeaders)
      .header('access-control-max-age', maxAge)
      // Safari waits for a body after a 204 without Content-Length.
      .code(204).header('content-length', '0').send()
    return true
  }
}

/**
 * Preflights must match a route for the edge to answer them: paths with no OPTIONS route of their
 * own (openapi.json, docs, unknown paths) get this hidden one, which only ever says 404.
 */
export function registerPreflightRoute (app: FastifyInstance) {
  app.options('*', { schema: { hide: true }, config: { routeLess: true } }, function noSuchResource (_request, reply) {
    reply.callNotFound()
  })
}
