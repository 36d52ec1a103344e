// The request and response headers (from the header table, headers.ts), and the problem responses,
// as the OpenAPI document describes them (spec "Request headers", "Response headers", "Errors"):
// shared by every route schema.
import { STATUS_CODES } from 'node:http'
import type { JsonSchema } from '../registry/derive.js'
import { problemTypes } from '../http/negotiation.js'
import type { ResolvedRateLimit } from '../security/rate-limit.js'
import { maxKeyLength } from '../idempotency.js'
import { errorTable } from '../errors.js'
import { headerSchema, headerSchemas, requestHeaderSchemas } from '../headers.js'
import type { FixedHeaderName, HeaderContext, Taker } from '../headers.js'
import type { SchemaOptions } from './route-schema.js'

/** Shared component names (`$id`s) beside the per-resource ones of registry/derive.ts. */
export const componentNames = { problem: 'Problem', problemEnvelope: 'ProblemEnvelope', batch: 'Batch', localId: 'LocalId', batchId: 'BatchId', batchIfMatch: 'BatchIfMatch' } as const
/**
 * The name a parameter's schema gives its entry in the document's components.parameters, where the
 * parameter's own name would be ambiguous (`sort` of books and of authors); openapi/components.ts
 * reads and removes it.
 */
export const componentHint = 'x-component'

/** What the header table's descriptions depend on, for routes of these options. */
export function headerContext (options: SchemaOptions): HeaderContext {
  // A 503's Retry-After says seconds (problems below); the option is the 429's.
  return { requireIfMatch: options.requireIfMatch, retryAfter: options.rateLimit?.retryAfter ?? 'seconds', maxKeyLength }
}

/** The request headers `taker` accepts (the header table's), as a route schema's `headers`; If-Match required where the options say. */
export function requestHeaders (taker: Taker, options: SchemaOptions): JsonSchema {
  const properties = requestHeaderSchemas(taker, headerContext(options), options)
  return 'If-Match' in properties ? { type: 'object', properties, required: options.requireIfMatch ? ['If-Match'] : [] } : { type: 'object', properties }
}

// Response headers, as route schemas name them.
export const requestId = headerSchemas('Request-Id')
export const validators = headerSchemas('ETag', 'Last-Modified')
export const preferenceApplied = headerSchemas('Preference-Applied')
export const idempotentReplayed = headerSchemas('Idempotent-Replayed')

// Why each status can happen; operations refine the text where they know more. A status only one
// code answers with is told by that code's description in the error table (errors.ts), with what
// the document adds; the text is here where several codes share the status, or where the document
// can be more precise than the problem page.
const sharedReasons: Readonly<Record<number, string>> = {
  400: 'a query parameter, header or the body is invalid; invalidParams names each one.',
  412: 'a precondition (If-Match, If-None-Match, If-Unmodified-Since) does not hold; nothing changed.',
  414: 'the query string is longer than maxQueryLength.',
  415: 'Content-Type is missing, not accepted here, or names a charset other than UTF-8.',
  503: 'the data store is unavailable, or the handler ran out of time; retry later.'
}
const atConnection = 'Answered at the connection, before routing, when the host installs createClientErrorHandler.'
const documentNotes: Readonly<Record<number, string>> = { 405: 'Each operation of the path shows it.', 408: atConnection, 431: atConnection }
const requestErrors = [...errorTable.values()].filter(entry => !entry.boot)
const reasons: Record<number, string> = {}
for (const entry of requestErrors) {
  if (requestErrors.some(other => other !== entry && other.status === entry.status)) continue
  // "Unauthorized: credentials are missing …"; a description opening with a header name keeps its capital.
  const reason = entry.description.replace(/^[A-Z][a-z]*(?=[\s,;])/, word => word.toLowerCase())
  reasons[entry.status] = entry.status in documentNotes ? `${reason} ${documentNotes[entry.status]}` : reason
}
Object.assign(reasons, sharedReasons)
// The headers of a problem beside Request-Id, by status; a 503's Retry-After says seconds, a 429's as the options say.
const problemHeaders: Readonly<Record<number, readonly FixedHeaderName[]>> = { 401: ['WWW-Authenticate'], 405: ['Allow'] }
const serviceUnavailable = (context: HeaderContext) => ({ 'Retry-After': headerSchema('Retry-After', { ...context, retryAfter: 'seconds' }) })

// The fields that tell the limit, in either form (security/rate-limit.ts).
const limitFields: Readonly<Record<ResolvedRateLimit['fields'], readonly FixedHeaderName[]>> = {
  'draft-11': ['RateLimit-Policy', 'RateLimit'],
  legacy: ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']
}
const rateLimitHeaders = (context: HeaderContext, rateLimit: Pick<ResolvedRateLimit, 'fields'>) => ({ 'Retry-After': headerSchema('Retry-After', context), ...headerSchemas(...limitFields[rateLimit.fields]) })

/** The fields that tell the limit, as OpenAPI Header Objects: on every answer of a rate-limited API. */
export function limitFieldHeaders (rateLimit: Pick<ResolvedRateLimit, 'fields'>): Record<string, { schema: JsonSchema, description: string }> {
  return Object.fromEntries(Object.entries(headerSchemas(...limitFields[rateLimit.fields])).map(([name, { description, ...schema }]) => [name, { schema, description: String(description) }]))
}

// Answered at the socket by createClientErrorHandler, in JSON only (security/limits.ts).
export const connectionStatuses: ReadonlySet<number> = new Set([408, 431])

/**
 * The problems every route can answer, whatever it does, answered at the edge or by the framework:
 * Origin checks (403), other methods (405), Accept (406), the connection limits (408, 431), the
 * query length (414), Expect (417), the unexpected (500); credentials (401) where they are
 * checked, the rate limit (429) and the handler's time limit (503) where they are set. A public
 * route is given them without 401 (openapi/docs-routes.ts).
 */
export function everyRouteProblems (options: Pick<SchemaOptions, 'authenticated' | 'rateLimit' | 'timeLimited'>): number[] {
  return [
    ...options.authenticated ? [401] : [],
    403, 405, 406, 408, 414, 417,
    ...options.rateLimit === null ? [] : [429],
    431, 500,
    ...options.timeLimited ? [503] : []
  ]
}

/** A problem response's description: the status's reason, or what the operation says instead. */
export const problemDescription = (status: number, reason = reasons[status]): string => `${STATUS_CODES[status] as string}: ${reason}`

/**
 * The problem responses of an operation, for the statuses it can answer. Routes that offer XML
 * answer problems in either type by Accept; others (`offersXml` false) in application/problem+json only.
 * The XML form is RFC 9457 Appendix B's bare <problem> whatever errorFormat says (problem.ts).
 */
export function problems (options: SchemaOptions, statuses: readonly number[], refine: Readonly<Record<number, string>> = {}, offersXml = true): Record<number, JsonSchema> {
  // Every route: date and audit headers (400, which each operation words its own way), and the rest.
  const all = [...statuses, 400, ...everyRouteProblems(options)]
  const context = headerContext(options)
  const asJson = { schema: { $ref: `${options.errorFormat === 'flat' ? componentNames.problem : componentNames.problemEnvelope}#` } }
  const asXml = { schema: { $ref: `${componentNames.problem}#` } }
  const responses: Record<number, JsonSchema> = {}
  for (const status of [...new Set(all)].sort((a, b) => a - b)) {
    const xml = offersXml && !connectionStatuses.has(status)
    responses[status] = {
      description: problemDescription(status, refine[status]),
      // 429 is listed only when requests are rate limited.
      headers: { ...requestId, ...(status === 429 ? rateLimitHeaders(context, options.rateLimit as NonNullable<SchemaOptions['rateLimit']>) : status === 503 ? serviceUnavailable(context) : headerSchemas(...problemHeaders[status] ?? [])) },
      content: { [problemTypes[0]]: asJson, ...(xml ? { [problemTypes[1]]: asXml } : {}) }
    }
  }
  return responses
}
