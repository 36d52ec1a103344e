// The request and response headers, and the problem responses, as the OpenAPI document describes
// them (spec "Request headers", "Response headers", "Errors"): shared by every route schema.
import { STATUS_CODES } from 'node:http'
import type { JsonSchema } from '../registry/derive.js'
import { problemTypes } from '../http/negotiation.js'
import { maxAuditHeaderLength } from '../security/audit-headers.js'
import type { ResolvedRateLimit } from '../security/rate-limit.js'
import { maxKeyLength } from '../idempotency.js'
import { errorTable } from '../errors.js'
import type { SchemaOptions } from './route-schema.js'

/** Shared component names (`$id`s) beside the per-resource ones of registry/derive.ts. */
export const componentNames = { problem: 'Problem', problemEnvelope: 'ProblemEnvelope', batch: 'Batch', localId: 'LocalId' } as const
/**
 * The name a parameter's schema gives its entry in the document's components.parameters, where the
 * parameter's own name would be ambiguous (`sort` of books and of authors); openapi/components.ts
 * reads and removes it.
 */
export const componentHint = 'x-component'

// Request headers of the spec that every operation accepts. Request headers carry no `examples`:
// a console (the docs page) would send them as prefilled values, a stale Date or a reused key.
// Each pattern admits only values the server takes (a generator building from it is never refused),
// which is at places narrower than what the server takes (said in the description).

// Base64 as security/base64.ts reads it (RFC 4648 §4: padded, canonical: no stray bits before the padding)…
const base64Pattern = '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$'
// …and of ASCII text, which is always UTF-8: each byte's high bit clear, which is, in each group of four,
// the first character below g, the second's 8-bit and the third's 2-bit clear.
const asciiBase64Pattern = '^(?:[A-Za-f][A-HQ-Xg-nw-z0-3][ABEFIJMNQRUVYZcdghklopstwx014589][A-Za-z0-9+/])*(?:[A-Za-f][AQgw]==|[A-Za-f][A-HQ-Xg-nw-z0-3][AEIMQUYcgkosw048]=)?$'
const auditBase64 = `at most ${maxAuditHeaderLength} characters of padded base64 (RFC 4648); otherwise 400 naming the header`
const auditHeader = (what: string): JsonSchema => ({
  type: 'string',
  minLength: 4,
  maxLength: maxAuditHeaderLength,
  pattern: asciiBase64Pattern,
  contentEncoding: 'base64',
  contentMediaType: 'text/plain; charset=utf-8',
  description: `${what}: base64 of its text, ${auditBase64}. The pattern admits ASCII text; other UTF-8 text is accepted too.`
})
const months = '(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)'
// A day each month has, and 29 Feb in leap years (every fourth, but not the centuries not divisible by 400).
const calendarDay = `(?:(?:0[1-9]|1\\d|2[0-8]) ${months}|(?:29|30) (?:Jan|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)|31 (?:Jan|Mar|May|Jul|Aug|Oct|Dec)) [1-9]\\d{3}|29 Feb (?:[1-9]\\d(?:0[48]|[2468][048]|[13579][26])|(?:[13579][26]|[2468][048])00)`
const commonRequestHeaders: Record<string, JsonSchema> = {
  'X-Request-Id': { type: 'string', description: 'Request identifier, echoed as Request-Id; when absent, unsafe or too long, the server generates one.' },
  Date: {
    type: 'string',
    // Without the day of the week, which must be the date's (RFC 5322 §3.3): a pattern cannot say which.
    pattern: `^(?:${calendarDay}) (?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d GMT$`,
    description: 'When the request was sent, as an RFC 5322 date-time such as 06 Nov 1994 08:49:37 GMT. Also accepted: an IMF-fixdate with its day of the week (Sun, 06 Nov 1994 08:49:37 GMT), which must be the date\'s, other zones (+0100), and the obsolete HTTP-date forms. A malformed date, or a day of the week the date does not fall on, is 400.'
  },
  'X-Audit-Consent': {
    ...auditHeader('A JSON-encoded FHIR Consent resource (an object with resourceType "Consent")'),
    pattern: base64Pattern,
    contentMediaType: 'application/json',
    contentSchema: { type: 'object', properties: { resourceType: { const: 'Consent' } }, required: ['resourceType'] },
    description: `A JSON-encoded FHIR Consent resource (an object with resourceType "Consent"): base64 of its JSON text, ${auditBase64}.`
  },
  'X-Audit-Device': auditHeader('A FHIR identifier of the client device'),
  'X-Audit-Organisation': auditHeader('A FHIR identifier of the client organisation'),
  'X-Audit-User': auditHeader('A FHIR identifier of the authenticated user'),
  // Free text, unlike the X-Audit-* headers: the spec asks base64 of those only. Without spaces at
  // either end, which a header loses on the way (RFC 9110 §5.5).
  'X-Authenticated_User': {
    type: 'string', maxLength: maxAuditHeaderLength, pattern: '^[\\x21-\\x7e](?:[\\x20-\\x7e]*[\\x21-\\x7e])?$', description: `The client system, for auditing, as plain text (visible ASCII and spaces) such as billing-service, at most ${maxAuditHeaderLength} characters; otherwise 400 naming the header.`
  }
}
const etagList = 'A list of entity tags, or *.'
// http/conditional.ts: * or a comma-separated list of entity tags (RFC 9110 §8.8.3); otherwise 400.
export const etagListPattern = '^(?:\\*|(?:W/)?"[\\x21\\x23-\\x7e]*"(?:, ?(?:W/)?"[\\x21\\x23-\\x7e]*")*)$'
// One If-None-Match for reads and writes, so the document holds it once.
const ifNoneMatch: JsonSchema = { type: 'string', pattern: etagListPattern, description: `${etagList} On a read, when one matches the current representation the answer is 304 without a body (RFC 9110 §13.1.2); on a write, a match is 412.` }
export const retrieveHeaders: Record<string, JsonSchema> = {
  'If-None-Match': ifNoneMatch,
  'If-Modified-Since': { type: 'string', description: 'An HTTP date: 304 when the resource has not changed since (ignored when If-None-Match is sent).' }
}

export function writeHeaders (options: SchemaOptions, extra: Record<string, JsonSchema> = {}): JsonSchema {
  return {
    type: 'object',
    properties: {
      ...commonRequestHeaders,
      ...extra,
      'If-Match': { type: 'string', pattern: etagListPattern, description: `${etagList} The write happens only if one names the current version, else 412 (optimistic concurrency).${options.requireIfMatch ? ' Required: without it the answer is 428.' : ''}` },
      'If-None-Match': ifNoneMatch,
      'If-Unmodified-Since': { type: 'string', description: 'An HTTP date: 412 when the resource changed since (ignored when If-Match is sent).' }
    },
    required: options.requireIfMatch ? ['If-Match'] : []
  }
}

/** Prefer on the writes that answer with the resource (RFC 7240; http/prefer.ts). */
export const preferHeader: Record<string, JsonSchema> = {
  Prefer: { type: 'string', description: 'return=minimal: answer without the body (201 with Location, or 204), with the new ETag; return=representation (the default): with it. respond-async, where this operation documents a 202: answer 202 at once with a status monitor in Location, and do the write shortly. Other preferences are ignored.' }
}
/** Idempotency-Key on POST and PATCH (idempotency.ts). */
export const idempotencyKeyHeader: Record<string, JsonSchema> = {
  'Idempotency-Key': {
    type: 'string',
    // idempotency.ts: a structured-field string of printable ASCII, or the same characters bare; 1 to 255 of them.
    pattern: `^(?:[\\x21\\x23-\\x5b\\x5d-\\x7e]{1,${maxKeyLength}}|"(?:[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]|\\\\["\\\\]){1,${maxKeyLength}}")$`,
    description: `A key of your choosing, unique per request you mean (a structured-field string such as "4f6b0d2e-5a1c-4e8b-9f3a-2c7d1e0b6a95", or bare), 1 to ${maxKeyLength} printable ASCII characters: the answer is kept, and a retry with the same key and body gets it again with Idempotent-Replayed: true, nothing written twice. The same key with another body is 422; while the first request still runs, 409. Keys are per caller, method and path.`
  }
}
export const idempotentReplayed = { 'Idempotent-Replayed': { type: 'string', enum: ['true'], description: 'Sent with an answer kept for an earlier request with this Idempotency-Key.' } }
export const preferenceApplied = { 'Preference-Applied': { type: 'string', description: 'The return preference applied, when the request sent one.' } }

export const requestHeaders = (extra: Record<string, JsonSchema> = {}): JsonSchema =>
  ({ type: 'object', properties: { ...commonRequestHeaders, ...extra } })

// Response headers.
export const requestId = { 'Request-Id': { type: 'string', description: 'The request identifier (X-Request-Id when the client sent a safe one).' } }
export const validators = {
  ETag: { type: 'string', description: 'Strong validator of this representation; send it in If-Match to update safely, or If-None-Match to revalidate.' },
  'Last-Modified': { type: 'string', description: 'Time of the last write, as an HTTP date. Not sent with expand or include: related records change without moving it.' }
}

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
const problemHeaders: Readonly<Record<number, Record<string, JsonSchema>>> = {
  401: { 'WWW-Authenticate': { type: 'string', description: 'The authentication method and realm, e.g. Bearer realm="api".' } },
  405: { Allow: { type: 'string', description: 'The methods this path allows.' } },
  503: { 'Retry-After': { type: 'string', description: 'Seconds to wait before retrying.' } }
}

// The fields that tell the limit, in either form (security/rate-limit.ts).
const limitFields: Readonly<Record<ResolvedRateLimit['fields'], Record<string, JsonSchema>>> = {
  'draft-11': {
    'RateLimit-Policy': { type: 'string', description: 'The quota policy (draft-ietf-httpapi-ratelimit-headers-11): its name, q requests per w seconds.', examples: ['"default";q=100;w=60'] },
    RateLimit: { type: 'string', description: 'What is left of the quota: r requests, for t more seconds.', examples: ['"default";r=0;t=30'] }
  },
  legacy: {
    'RateLimit-Limit': { type: 'string', description: 'Requests allowed per window.' },
    'RateLimit-Remaining': { type: 'string', description: 'Requests left in the current window.' },
    'RateLimit-Reset': { type: 'string', description: 'Seconds until the window resets.' }
  }
}
const retryAfter: Readonly<Record<ResolvedRateLimit['retryAfter'], JsonSchema>> = {
  date: { type: 'string', description: 'When to retry, as an HTTP date.', examples: ['Wed, 21 Oct 2015 07:28:00 GMT'] },
  seconds: { type: 'string', description: 'Seconds to wait before retrying.' }
}
const rateLimitHeaders = (rateLimit: Pick<ResolvedRateLimit, 'fields' | 'retryAfter'>) => ({ 'Retry-After': retryAfter[rateLimit.retryAfter], ...limitFields[rateLimit.fields] })

/** The fields that tell the limit, as OpenAPI Header Objects: on every answer of a rate-limited API. */
export function limitFieldHeaders (rateLimit: Pick<ResolvedRateLimit, 'fields'>): Record<string, { schema: JsonSchema, description: string }> {
  return Object.fromEntries(Object.entries(limitFields[rateLimit.fields]).map(([name, { description, ...schema }]) => [name, { schema, description: String(description) }]))
}

// Answered at the socket by createClientErrorHandler, in JSON only (security/limits.ts).
export const connectionStatuses: ReadonlySet<number> = new Set([408, 431])

/**
 * The problem responses of an operation, for the statuses it can answer. Routes that offer XML
 * answer problems in either type by Accept; others (`offersXml` false) in application/problem+json only.
 * The XML form is RFC 9457 Appendix B's bare <problem> whatever errorFormat says (problem.ts).
 */
export function problems (options: SchemaOptions, statuses: readonly number[], refine: Readonly<Record<number, string>> = {}, offersXml = true): Record<number, JsonSchema> {
  // Every route: date and audit headers (400), Origin checks (403), other methods (405), Accept
  // (406), the connection limits (408, 431), the query length (414), Expect (417), the unexpected (500).
  const all = [...statuses, 400, 403, 405, 406, 408, 414, 417, 431, 500]
  if (options.authenticated) all.push(401)
  if (options.rateLimit !== null) all.push(429)
  if (options.timeLimited) all.push(503)
  const asJson = { schema: { $ref: `${options.errorFormat === 'flat' ? componentNames.problem : componentNames.problemEnvelope}#` } }
  const asXml = { schema: { $ref: `${componentNames.problem}#` } }
  const responses: Record<number, JsonSchema> = {}
  for (const status of [...new Set(all)].sort((a, b) => a - b)) {
    const xml = offersXml && !connectionStatuses.has(status)
    responses[status] = {
      description: `${STATUS_CODES[status]}: ${refine[status] ?? reasons[status]}`,
      // 429 is listed only when requests are rate limited.
      headers: { ...requestId, ...(status === 429 ? rateLimitHeaders(options.rateLimit as NonNullable<SchemaOptions['rateLimit']>) : problemHeaders[status]) },
      content: { [problemTypes[0]]: asJson, ...(xml ? { [problemTypes[1]]: asXml } : {}) }
    }
  }
  return responses
}
