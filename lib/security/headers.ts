// Security and caching headers on every response, errors, 404s, 405s and 304s included (spec
// "Response headers": Cache-Control, Content-Security-Policy, Strict-Transport-Security,
// X-Content-Type-Options, X-Frame-Options, Referrer-Policy, and Feature-Policy under its current
// name, Permissions-Policy). An API's answers are not pages: helmet's browser-document headers
// are sent only by option (`headerProfile: 'document'`) and on routes that serve pages.
import type { IncomingMessage, ServerResponse } from 'node:http'
import helmet from 'helmet'
import type { HelmetOptions } from 'helmet'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { OptionsInvalidError } from '../errors.js'
import { applyDeprecation, resolveDeprecation } from './deprecation.js'
import type { DeprecationHeaders, DeprecationOptions } from './deprecation.js'
import { knownKeys, refuseUnknownKeys } from '../options-check.js'

/**
 * `api`: the spec's headers only; `document`: also helmet's headers for browser documents
 * (Cross-Origin-Opener-Policy, Cross-Origin-Resource-Policy, Origin-Agent-Cluster,
 * X-DNS-Prefetch-Control, X-Download-Options, X-Permitted-Cross-Domain-Policies, X-XSS-Protection).
 */
export type HeaderProfile = 'api' | 'document'
/** The name the feature policy goes under: the spec names Feature-Policy; browsers read its successor Permissions-Policy, and warn when both are sent. */
export type FeaturePolicyHeader = 'permissions-policy' | 'feature-policy'

/** helmet: the spec's values. */
export const helmetOptions = {
  // Set below as one prepared string: helmet rebuilds it per request and drops the space after `;`.
  contentSecurityPolicy: false,
  strictTransportSecurity: { maxAge: 31536000, includeSubDomains: true },
  xFrameOptions: { action: 'deny' },
  referrerPolicy: { policy: 'no-referrer' }
} satisfies HelmetOptions

// What helmet sets for browser documents only: none of it means anything to a client reading JSON.
const documentOnly = {
  crossOriginOpenerPolicy: false,
  crossOriginResourcePolicy: false,
  originAgentCluster: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false
} satisfies HelmetOptions

/**
 * The headers helmet sets for the profile, read once at registration. They depend on the
 * options only, so a prepared object replaces @fastify/helmet's two async hooks, which rebuild
 * helmet's middleware from the options on every request (benchmarks/README.md, "Choices").
 */
export function helmetHeaders (profile: HeaderProfile = 'api'): Readonly<Record<string, string>> {
  const headers: Record<string, string> = {}
  const collector = {
    setHeader (name: string, value: string) { headers[name.toLowerCase()] = value },
    removeHeader (name: string) { delete headers[name.toLowerCase()] }
  }
  const options = profile === 'api' ? { ...helmetOptions, ...documentOnly } : helmetOptions
  helmet(options)({} as IncomingMessage, collector as unknown as ServerResponse, () => {})
  return headers
}

// A page may run scripts, so a document is denied every browser feature it does not use. An API's
// answer runs none (its CSP is default-src 'none'): the features that reach a person's devices,
// location and money are named, and the header stays short.
const documentFeatures = ['accelerometer', 'autoplay', 'camera', 'display-capture', 'encrypted-media', 'fullscreen', 'geolocation',
  'gyroscope', 'magnetometer', 'microphone', 'midi', 'payment', 'picture-in-picture', 'publickey-credentials-get',
  'screen-wake-lock', 'sync-xhr', 'usb', 'xr-spatial-tracking']
const apiFeatures = ['camera', 'geolocation', 'microphone', 'payment']
const policyValue: Readonly<Record<FeaturePolicyHeader, (features: readonly string[]) => string>> = {
  'permissions-policy': features => features.map(f => `${f}=()`).join(', '),
  'feature-policy': features => features.map(f => `${f} 'none'`).join('; ')
}
export const contentSecurityPolicy = "default-src 'none'; frame-ancestors 'none'"

/** What `securityHeaders` is made from; each has the default of the plugin's option of that name. */
export interface SecurityHeaderOptions {
  /** Default `no-store`. */
  readonly cacheControl?: string
  /** Default `api`. */
  readonly headerProfile?: HeaderProfile
  /** Default `feature-policy`, the spec's name. */
  readonly featurePolicyHeader?: FeaturePolicyHeader
}

/** Route config keys read here (set by the routes, or by the plugin from `resourcePolicies`). */
export interface HeaderRouteConfig {
  /** Replaces the CSP on this route only, e.g. for an HTML documentation page. */
  readonly contentSecurityPolicy?: string
  /** This route serves a page (the docs page): it gets the `document` profile's headers whatever the API's profile. */
  readonly documentHeaders?: boolean
  /** Cache-Control of this route's successful GET/HEAD responses (200, 304); others keep the default. */
  readonly cacheControl?: string
  /** Prepared Deprecation/Sunset/Link values (from `resourcePolicies`). */
  readonly deprecation?: DeprecationHeaders
}

// A header value: visible ASCII and spaces, so nothing can split or smuggle a header.
const headerValue = /^[\x20-\x7e]+$/

/** Checks a header value given as an option, e.g. `cacheControl`. */
export function resolveHeaderValue (value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string' || !headerValue.test(value)) throw new OptionsInvalidError(`${name} must be a header value of visible ASCII characters, received ${JSON.stringify(value)}`)
  return value
}

/** What one resource changes about its responses' headers (option `resourcePolicies`). */
export interface ResourcePolicy {
  /** Cache-Control of the resource's successful GET/HEAD responses, e.g. `private, max-age=60`. Default: the API's. */
  readonly cacheControl?: string | undefined
  /** Marks the resource deprecated: Deprecation, Sunset and Link on each of its responses. */
  readonly deprecation?: DeprecationOptions | undefined
}

const policyKeys = knownKeys({ cacheControl: true, deprecation: true } satisfies Record<keyof ResourcePolicy, true>)

export type ResolvedResourcePolicy = Pick<HeaderRouteConfig, 'cacheControl' | 'deprecation'>

export function resolveResourcePolicies (value: unknown, resourceNames: readonly string[]): ReadonlyMap<string, ResolvedResourcePolicy> {
  const policies = new Map<string, ResolvedResourcePolicy>()
  if (value === undefined) return policies
  if (typeof value !== 'object' || value === null) throw new OptionsInvalidError(`resourcePolicies must be an object keyed by resource name, received ${JSON.stringify(value)}`)
  for (const [name, policy] of Object.entries(value)) {
    if (!resourceNames.includes(name)) throw new OptionsInvalidError(`resourcePolicies.${name} names no resource; known: ${resourceNames.join(', ')}`)
    const given = (typeof policy === 'object' && policy !== null ? policy : {}) as Record<string, unknown>
    refuseUnknownKeys(given, policyKeys, `resourcePolicies.${name}`)
    policies.set(name, Object.freeze({
      cacheControl: resolveHeaderValue(given.cacheControl, `resourcePolicies.${name}.cacheControl`),
      deprecation: resolveDeprecation(given.deprecation, `resourcePolicies.${name}.deprecation`)
    }))
  }
  return policies
}

/**
 * The headers every response carries whatever its route or outcome: helmet's, the CSP, Cache-Control
 * and the feature policy. Also for answers made outside the plugin's routes (socket and router
 * errors, a host's own routes), so that none goes without them.
 * @example
 * const headers = securityHeaders()
 * app.get('/health', (request, reply) => reply.headers(headers).send({ status: 'ok' }))
 */
export function securityHeaders (options: SecurityHeaderOptions = {}): Readonly<Record<string, string>> {
  const { cacheControl = 'no-store', headerProfile = 'api', featurePolicyHeader = 'feature-policy' } = options
  return Object.freeze({
    ...helmetHeaders(headerProfile),
    'content-security-policy': contentSecurityPolicy,
    'cache-control': cacheControl,
    [featurePolicyHeader]: policyValue[featurePolicyHeader](headerProfile === 'api' ? apiFeatures : documentFeatures)
  })
}

/**
 * Where Fastify keeps a reply's headers, and what it holds. Fastify fills a plain object one key at
 * a time; past about twenty keys V8 turns such an object into a hash table, and every later header
 * write, and Node's serialisation of them, slows down; every answer carries more headers than that
 * (benchmarks/README.md measured the cost). Starting the object as a copy of the fixed headers
 * made the right way keeps its fast shape. Undefined (and the plain
 * `reply.headers()` instead) should a Fastify version keep them elsewhere.
 */
let headersKey: symbol | undefined
function replyHeaders (reply: FastifyReply): [symbol, object] | undefined {
  headersKey ??= Object.getOwnPropertySymbols(reply).find(key => key.description === 'fastify.reply.headers')
  const current = headersKey === undefined ? undefined : (reply as unknown as Record<symbol, object | undefined>)[headersKey]
  return current === undefined ? undefined : [headersKey as symbol, current]
}

const isEmpty = (object: object) => Object.keys(object).length === 0

/**
 * A reply's headers, starting with the fixed ones. Objects made by a constructor get room for
 * their fields inside themselves (V8's slack tracking), so the headers added later keep the fast
 * shape; a copy made by spread or Object.assign({}, …) would not.
 */
class ReplyHeaders {}

/**
 * `compressed`: whether bodies may be compressed (http/compression.ts), so that every answer
 * depends on Accept-Encoding too: the small and uncompressed ones, since the choice was made for them.
 */
export function createHeaderHooks (options: Required<SecurityHeaderOptions>, apiDeprecation: DeprecationHeaders | undefined, compressed = false) {
  const fixedHeaders = securityHeaders(options)
  // Every answer depends on Origin (CORS, or a 403), and on Accept (JSON or XML, or a 406): RFC 9110 §12.5.5.
  const fixed = Object.freeze({ ...fixedHeaders, vary: compressed ? 'Origin, Accept, Accept-Encoding' : 'Origin, Accept' })
  // What a page's answer adds to, or changes in, the fixed headers; nothing when they are a document's already.
  const pageHeaders = Object.freeze(Object.fromEntries(Object.entries(securityHeaders({ ...options, headerProfile: 'document' }))
    .filter(([name, value]) => fixedHeaders[name] !== value)))

  const names = Object.keys(fixed)
  const fixedCopy = () => {
    const headers = new ReplyHeaders() as Record<string, unknown>
    for (const name of names) headers[name] = fixed[name as keyof typeof fixed]
    return headers
  }

  /** The edge's first step, before anything can fail: the headers that do not depend on the outcome. */
  function setFixedHeaders (_request: FastifyRequest, reply: FastifyReply) {
    const store = replyHeaders(reply)
    if (store === undefined) {
      reply.headers(fixed)
      return
    }
    const [key, current] = store
    // A host's own onRequest hooks, which run first, may have set some already: those are kept.
    ;(reply as unknown as Record<symbol, object>)[key] = isEmpty(current) ? fixedCopy() : Object.assign(fixedCopy(), current)
  }

  /** onSend: what depends on the route or the outcome. */
  function setRouteHeaders (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error: null, payload: unknown) => void) {
    const config = request.routeOptions.config as HeaderRouteConfig
    if (config.documentHeaders === true) reply.headers(pageHeaders)
    if (config.contentSecurityPolicy !== undefined) reply.header('content-security-policy', config.contentSecurityPolicy)
    if (config.cacheControl !== undefined && (request.method === 'GET' || request.method === 'HEAD') && (reply.statusCode === 200 || reply.statusCode === 304)) {
      reply.header('cache-control', config.cacheControl)
    }
    const deprecation = config.deprecation ?? apiDeprecation
    if (deprecation !== undefined) applyDeprecation(reply, deprecation)
    done(null, payload)
  }

  return { setFixedHeaders, setRouteHeaders }
}
