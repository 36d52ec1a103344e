// Plugin options: their types, defaults and checks. resolveOptions() runs once at registration
// and fails at boot with a coded error naming the option and the value received.
import type { TObject } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { ResourceDefinition } from './define.js'
import { OptionsInvalidError } from './errors.js'
import { knownKeys, refuseUnknownKeys } from './options-check.js'
import { randomCursorSecret } from './paging/cursor.js'
import { resolveAuth } from './security/auth.js'
import type { AuthOptions, ResolvedAuth } from './security/auth.js'
import { resolveCors } from './security/cors.js'
import type { CorsOptions, ResolvedCors } from './security/cors.js'
import { resolveRateLimit } from './security/rate-limit.js'
import type { RateLimitOptions, ResolvedRateLimit } from './security/rate-limit.js'
import { resolveDeprecation } from './security/deprecation.js'
import type { DeprecationHeaders, DeprecationOptions } from './security/deprecation.js'
import { resolveHeaderValue, resolveResourcePolicies } from './security/headers.js'
import type { FeaturePolicyHeader, HeaderProfile, ResolvedResourcePolicy, ResourcePolicy } from './security/headers.js'
import { positiveInteger } from './security/limits.js'
import { resolveIdempotency } from './idempotency.js'
import type { IdempotencyOptions, ResolvedIdempotency } from './idempotency.js'
import { resolveBatch } from './routes/batch.js'
import { resolveAsync } from './work/async-writes.js'
import type { AsyncOptions, ResolvedAsync } from './work/async-writes.js'
import { resolveChanges } from './changes/options.js'
import { webhooksResource } from './changes/webhooks.js'
import type { ChangesOptions, ResolvedChanges } from './changes/options.js'
import { resolveMcp } from './mcp/options.js'
import type { McpOptions, ResolvedMcp } from './mcp/options.js'
import type { BatchOptions, ResolvedBatch } from './routes/batch.js'
import { resolveMetrics } from './metrics.js'
import { resolveCompression } from './http/compression.js'
import type { CompressionOptions, ResolvedCompression } from './http/compression.js'
import type { Metrics, MetricsCollector } from './metrics.js'
import { resolveTracing } from './tracing.js'
import type { ResolvedTracing, TracingOptions } from './tracing.js'

export interface ApiConventionsOptions {
  readonly resources: ReadonlyArray<ResourceDefinition<TObject>>
  /** `flat`: RFC 9457 members at the top level (default); `envelope`: the same members under `errors`. */
  readonly errorFormat?: 'flat' | 'envelope' | undefined
  /** `nested`: one resource as `data.{singular}` (default); `flat`: directly in `data`. */
  readonly singleResource?: 'nested' | 'flat' | undefined
  /** `array` of link objects (default), or an `object` keyed by relation. */
  readonly links?: 'array' | 'object' | undefined
  /** Also put `total` at the root of a collection response, as the spec's text does (it is always in `meta`). */
  readonly totalAtRoot?: boolean | undefined
  /**
   * `false`: list pages carry no `last` link, which the spec lets a server omit ("Page links" 3):
   * about 150 bytes less on a token page, and no end token to seal. Default true.
   */
  readonly lastLink?: boolean | undefined
  /** Paging used when a request names none: `token` (default, keyset) or `offset`. */
  readonly paging?: 'token' | 'offset' | undefined
  /** Key(s) for continuation tokens, newest first; instances sharing a store must share them. Default: random per process. */
  readonly cursorSecret?: string | readonly string[] | undefined
  /** Lifetime of a continuation token, in seconds. Default 86400. */
  readonly cursorTtlSeconds?: number | undefined
  /** Base of the problem `type` URLs; the code's slug is appended. Default `{prefix}/problems/`, served by the plugin. */
  readonly problemTypeBase?: string | undefined
  /** Writes (PUT, PATCH, DELETE) without If-Match get 428. Default false; resources may override. */
  readonly requireIfMatch?: boolean | undefined
  /** Authentication (Bearer required, Basic and x-api-key optional) and the authorization check. Default: none required. */
  readonly auth?: AuthOptions | undefined
  /** Origins allowed in `Origin`; any other Origin is 403. Default: none allowed. */
  readonly cors?: CorsOptions | undefined
  /** Requests per client per window, 429 beyond. Default: off (a gateway may limit instead). */
  readonly rateLimit?: RateLimitOptions | false | undefined
  /** Cache-Control of every response. Default `no-store`. */
  readonly cacheControl?: string | undefined
  /** `api` (default): the spec's security headers only; `document`: also helmet's browser-document headers, for an API that serves pages too. */
  readonly headerProfile?: HeaderProfile | undefined
  /** The name the feature policy goes under: `feature-policy` (default, the spec's name) or `permissions-policy` (its successor, what browsers read). */
  readonly featurePolicyHeader?: FeaturePolicyHeader | undefined
  /** Marks the whole API deprecated: Deprecation, Sunset and Link on every response. */
  readonly deprecation?: DeprecationOptions | undefined
  /** Per-resource Cache-Control and deprecation, keyed by resource name. */
  readonly resourcePolicies?: Readonly<Record<string, ResourcePolicy>> | undefined
  /** Longest query string, in characters; longer gets 414. Default 4096. */
  readonly maxQueryLength?: number | undefined
  /** Largest request body, in bytes, on the plugin's routes; larger gets 413. Default: Fastify's bodyLimit. */
  readonly bodyLimit?: number | undefined
  /** Longest time a handler may take, in milliseconds; longer gets 503. Default: no limit. */
  readonly handlerTimeout?: number | undefined
  /** Idempotency-Key on POST and PATCH: how long answers are kept for retries; `false` ignores the header. Default: on, 24 hours. */
  readonly idempotency?: IdempotencyOptions | false | undefined
  /** `POST {prefix}/batch`: how many operations one batch may hold; `false` serves no batch endpoint. Default: on, 100. */
  readonly batch?: BatchOptions | false | undefined
  /** `Prefer: respond-async` on every write and batch: 202 and a status monitor at `{prefix}/operations/{id}` (docs/async.md). Default: off. */
  readonly async?: AsyncOptions | boolean | undefined
  /**
   * `GET {prefix}/changes`, the change feed (docs/changes.md): every write records its changes in
   * its transaction. `true` or `{ retention, pollInterval, heartbeat }` serves it; the resources'
   * store must have a change log (the memory, PGlite and PostgreSQL stores do). Default: off.
   */
  readonly changes?: ChangesOptions | boolean | undefined
  /**
   * `POST {prefix}/mcp`, the Model Context Protocol endpoint (docs/mcp.md): tools an AI agent calls
   * with the caller's own credentials, each performed as its HTTP request would be. `true` or
   * `{ instructions }` serves it; needs `@modelcontextprotocol/sdk` (an optional peer dependency). Default: off.
   */
  readonly mcp?: McpOptions | boolean | undefined
  /**
   * The OpenAPI document's `info`. Default title `HTTP JSON API`, version `1.0.0`, a description of
   * the resources, no license. `license`: the API's terms, an SPDX `identifier` or a `url` (not both).
   * `detail`: `'full'` (the default) lists every problem status of each operation as a response of
   * its own; `'compact'` lists those every operation can answer (401, 403, 405 …) as one `default`
   * response per operation, and a HEAD's other problems only on its GET (docs/openapi.md "The document's size").
   */
  readonly openapi?: { readonly title?: string | undefined, readonly version?: string | undefined, readonly description?: string | undefined, readonly license?: OpenApiLicense | undefined, readonly detail?: OpenApiDetail | undefined } | undefined
  /**
   * The reference page at `{prefix}/docs`, rendered by `@scalar/fastify-api-reference` (an optional
   * peer dependency). `true` needs the package (registration fails without it); `false` serves no
   * page. Default: the page when the package is installed.
   */
  readonly docsPage?: boolean | undefined
  /** Prometheus metrics, from `createMetrics()` (needs prom-client); the host serves them, outside the API. Default: off. */
  readonly metrics?: Metrics | false | undefined
  /** `Server-Timing: store;dur=…` on every answer: the milliseconds it waited on its store. Default false. */
  readonly serverTiming?: boolean | undefined
  /** `br` / `gzip` bodies of `threshold` bytes or more when Accept-Encoding asks; `false` sends every body as it is. Default: on, 1024, `['br', 'gzip']`. */
  readonly compression?: CompressionOptions | false | undefined
  /**
   * OpenTelemetry spans (through `@opentelemetry/api`, an optional peer dependency): one per request,
   * and one per SQL statement. `true` or `{ tracer, statements }` needs the package (registration
   * fails without it); `false`: none. Default: on when the package is installed (it records nothing
   * until the host registers an SDK).
   */
  readonly tracing?: boolean | TracingOptions | undefined
}

export interface ResolvedOptions {
  readonly resources: ReadonlyArray<ResourceDefinition<TObject>>
  readonly errorFormat: 'flat' | 'envelope'
  readonly singleResource: 'nested' | 'flat'
  readonly links: 'array' | 'object'
  readonly totalAtRoot: boolean
  readonly lastLink: boolean
  readonly paging: 'token' | 'offset'
  readonly cursorSecrets: readonly string[]
  /** True when no secret was configured and a random one is in use. */
  readonly cursorSecretGenerated: boolean
  readonly cursorTtlSeconds: number
  readonly problemTypeBase: string | undefined
  readonly requireIfMatch: boolean
  readonly auth: ResolvedAuth | null
  readonly cors: ResolvedCors
  readonly rateLimit: ResolvedRateLimit | null
  readonly cacheControl: string
  readonly headerProfile: HeaderProfile
  readonly featurePolicyHeader: FeaturePolicyHeader
  readonly deprecation: DeprecationHeaders | undefined
  readonly resourcePolicies: ReadonlyMap<string, ResolvedResourcePolicy>
  readonly maxQueryLength: number
  readonly bodyLimit: number | undefined
  readonly handlerTimeout: number | undefined
  readonly idempotency: ResolvedIdempotency | null
  readonly batch: ResolvedBatch | null
  readonly async: ResolvedAsync | null
  readonly changes: ResolvedChanges | null
  readonly mcp: ResolvedMcp | null
  readonly openapi: { readonly title: string, readonly version: string, readonly description: string | undefined, readonly license: OpenApiLicense | undefined, readonly detail: OpenApiDetail }
  /** Undefined: the page when its package is installed. */
  readonly docsPage: boolean | undefined
  readonly metrics: MetricsCollector | null
  readonly serverTiming: boolean
  readonly compression: ResolvedCompression | null
  readonly tracing: ResolvedTracing
}

const optionKeys = knownKeys({
  resources: true,
  errorFormat: true,
  singleResource: true,
  links: true,
  totalAtRoot: true,
  lastLink: true,
  paging: true,
  cursorSecret: true,
  cursorTtlSeconds: true,
  problemTypeBase: true,
  requireIfMatch: true,
  auth: true,
  cors: true,
  rateLimit: true,
  cacheControl: true,
  headerProfile: true,
  featurePolicyHeader: true,
  deprecation: true,
  resourcePolicies: true,
  maxQueryLength: true,
  bodyLimit: true,
  handlerTimeout: true,
  idempotency: true,
  batch: true,
  async: true,
  changes: true,
  mcp: true,
  openapi: true,
  docsPage: true,
  metrics: true,
  serverTiming: true,
  compression: true,
  tracing: true,
  // Fastify's own register options, which reach the plugin with its options.
  prefix: true,
  logLevel: true,
  logSerializers: true
} satisfies Record<keyof ApiConventionsOptions | 'prefix' | 'logLevel' | 'logSerializers', true>)

const openApiKeys = knownKeys({ title: true, version: true, description: true, license: true, detail: true } satisfies Record<keyof NonNullable<ApiConventionsOptions['openapi']>, true>)
const licenseKeys = knownKeys({ name: true, identifier: true, url: true } satisfies Record<keyof OpenApiLicense, true>)

/** OpenAPI 3.1's License Object: a name, and an SPDX identifier or a URL. */
export interface OpenApiLicense { readonly name: string, readonly identifier?: string | undefined, readonly url?: string | undefined }

/** How the document lists the problems every operation can answer: one response each (`full`), or one `default` (`compact`). */
export type OpenApiDetail = 'full' | 'compact'

/**
 * The prefix every route of the plugin begins with. Fastify registers `/v1/` + `/books` as
 * `/v1/books`, one slash dropped, but keeps `/v1/` as the instance's prefix: URLs built from that
 * would read `/v1//books`, a path no route serves.
 */
export const routePrefix = (app: FastifyInstance): string => app.prefix.endsWith('/') ? app.prefix.slice(0, -1) : app.prefix

/** `options[name]`, one of `allowed`; `path` names the object it is in (`openapi.`), for the error. */
function oneOf<T extends string> (options: Record<string, unknown>, name: string, allowed: readonly T[], fallback: T, path = ''): T {
  const value = options[name]
  if (value === undefined) return fallback
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T
  throw new OptionsInvalidError(`${path}${name} must be one of ${allowed.map(a => `'${a}'`).join(', ')}, received ${JSON.stringify(value)}`)
}

function flag (options: Record<string, unknown>, name: string, fallback = false): boolean {
  const value = options[name]
  if (value === undefined) return fallback
  if (typeof value === 'boolean') return value
  throw new OptionsInvalidError(`${name} must be a boolean, received ${JSON.stringify(value)}`)
}

export function resolveOptions (given: ApiConventionsOptions): ResolvedOptions {
  const options = given as unknown as Record<string, unknown>
  refuseUnknownKeys(options, optionKeys, '')
  if (!Array.isArray(options.resources)) {
    throw new OptionsInvalidError(`resources must be a non-empty array of defineResource() results, received ${typeof options.resources}`)
  }
  if (options.resources.length === 0) throw new OptionsInvalidError('resources must list at least one resource, received an empty array')
  const secret = options.cursorSecret
  const secrets = secret === undefined ? [randomCursorSecret()] : typeof secret === 'string' ? [secret] : secret
  if (!Array.isArray(secrets) || secrets.some(s => typeof s !== 'string' || s.length < 16)) {
    throw new OptionsInvalidError('cursorSecret must be a string of at least 16 characters, or an array of them (newest first)')
  }
  const ttl = options.cursorTtlSeconds ?? 86400
  if (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl <= 0) throw new OptionsInvalidError(`cursorTtlSeconds must be a positive number, received ${JSON.stringify(ttl)}`)
  const typeBase = options.problemTypeBase
  if (typeBase !== undefined && typeof typeBase !== 'string') throw new OptionsInvalidError(`problemTypeBase must be a string, received ${JSON.stringify(typeBase)}`)
  const changes = resolveChanges(options.changes)
  // Webhook subscriptions are a resource of their own, kept with the others (changes/webhooks.ts).
  const served = options.resources.map(resource => resource.name)
  const resources = changes?.webhooks == null ? options.resources : [...options.resources, webhooksResource(changes.webhooks, options.resources[0].store, () => served)]
  return Object.freeze({
    resources,
    errorFormat: oneOf(options, 'errorFormat', ['flat', 'envelope'], 'flat'),
    singleResource: oneOf(options, 'singleResource', ['nested', 'flat'], 'nested'),
    links: oneOf(options, 'links', ['array', 'object'], 'array'),
    totalAtRoot: flag(options, 'totalAtRoot'),
    lastLink: flag(options, 'lastLink', true),
    paging: oneOf(options, 'paging', ['token', 'offset'], 'token'),
    cursorSecrets: Object.freeze([...secrets]),
    cursorSecretGenerated: secret === undefined,
    cursorTtlSeconds: ttl,
    problemTypeBase: typeBase,
    requireIfMatch: flag(options, 'requireIfMatch'),
    auth: resolveAuth(options.auth),
    cors: resolveCors(options.cors),
    rateLimit: resolveRateLimit(options.rateLimit),
    cacheControl: resolveHeaderValue(options.cacheControl, 'cacheControl') ?? 'no-store',
    headerProfile: oneOf(options, 'headerProfile', ['api', 'document'], 'api'),
    featurePolicyHeader: oneOf(options, 'featurePolicyHeader', ['feature-policy', 'permissions-policy'], 'feature-policy'),
    deprecation: resolveDeprecation(options.deprecation, 'deprecation'),
    resourcePolicies: resolveResourcePolicies(options.resourcePolicies, (resources as Array<{ name: string } | null>).map(r => String(r?.name))),
    maxQueryLength: positiveInteger(options.maxQueryLength, 'maxQueryLength') ?? 4096,
    bodyLimit: positiveInteger(options.bodyLimit, 'bodyLimit'),
    handlerTimeout: positiveInteger(options.handlerTimeout, 'handlerTimeout'),
    idempotency: resolveIdempotency(options.idempotency),
    batch: resolveBatch(options.batch),
    async: resolveAsync(options.async),
    changes,
    mcp: resolveMcp(options.mcp),
    openapi: resolveOpenApiInfo(options.openapi),
    docsPage: options.docsPage === undefined ? undefined : flag(options, 'docsPage'),
    metrics: resolveMetrics(options.metrics),
    serverTiming: flag(options, 'serverTiming'),
    compression: resolveCompression(options.compression),
    tracing: resolveTracing(options.tracing)
  })
}

function resolveOpenApiInfo (value: unknown): ResolvedOptions['openapi'] {
  const given = (value ?? {}) as Record<string, unknown>
  if (typeof given !== 'object') throw new OptionsInvalidError(`openapi must be an object { title?, version?, description?, license?, detail? }, received ${JSON.stringify(value)}`)
  refuseUnknownKeys(given, openApiKeys, 'openapi')
  const text = (from: Record<string, unknown>, path: string, name: string, fallback?: string) => {
    const field = from[name] ?? fallback
    if (field !== undefined && (typeof field !== 'string' || field.trim() === '')) throw new OptionsInvalidError(`${path}.${name} must be a non-empty string, received ${JSON.stringify(field)}`)
    return field as string
  }
  const license = given.license as Record<string, unknown> | undefined
  if (license !== undefined) {
    if (typeof license !== 'object' || license === null) throw new OptionsInvalidError(`openapi.license must be an object { name, identifier? or url? }, received ${JSON.stringify(license)}`)
    refuseUnknownKeys(license, licenseKeys, 'openapi.license')
    if (text(license, 'openapi.license', 'name') === undefined) throw new OptionsInvalidError('openapi.license.name must be a non-empty string, received undefined')
    text(license, 'openapi.license', 'identifier')
    text(license, 'openapi.license', 'url')
    // OpenAPI 3.1 §4.8.4: identifier and url are mutually exclusive.
    if (license.identifier !== undefined && license.url !== undefined) throw new OptionsInvalidError('openapi.license takes an identifier or a url, not both')
  }
  return Object.freeze({
    title: text(given, 'openapi', 'title', 'HTTP JSON API'),
    version: text(given, 'openapi', 'version', '1.0.0'),
    description: text(given, 'openapi', 'description'),
    license: license === undefined ? undefined : Object.freeze({ ...license }) as unknown as OpenApiLicense,
    detail: oneOf(given, 'detail', ['full', 'compact'], 'full', 'openapi.')
  })
}
