// The header table (spec "Request headers", "Response headers"): every header the plugin names
// for a client, once, with who sends it, what CORS does with it, whether an Idempotency-Key's
// replay repeats it, and how the OpenAPI document describes it. Derived from it: the preflight's
// Access-Control-Allow-Headers and every answer's Access-Control-Expose-Headers (security/cors.ts),
// the headers kept with a keyed answer (idempotency.ts), and the request and response headers of
// the route schemas (routes/http-prose.ts). The fixed security headers every answer carries
// (Content-Security-Policy …) are security/headers.ts's; the modules that read or send a header
// still name it in lower case where they do.
import type { JsonSchema } from './registry/derive.js'
import { bodyWrites, itemWrites, keyedOperations } from './operations/table.js'
import type { OperationName } from './operations/table.js'
import type { ResolvedRateLimit } from './security/rate-limit.js'
import { maxAuditHeaderLength } from './security/audit-headers.js'

/** What a header's description depends on beyond the table: route options, and limits of the modules that read this table. */
export interface HeaderContext {
  /** If-Match is required (428 without it). */
  readonly requireIfMatch: boolean
  /** The form of Retry-After on a 429 (a 503 always says seconds). */
  readonly retryAfter: ResolvedRateLimit['retryAfter']
  /** The longest Idempotency-Key (idempotency.ts, which reads this table, owns it). */
  readonly maxKeyLength: number
}

/** A Schema Object with its description, or one made from the context. */
type Documented = JsonSchema | ((context: HeaderContext) => JsonSchema)

/** Where a request header is taken: every operation, or the ones listed (`batch`: the batch route). */
export type Taker = OperationName | 'batch' | 'changes'

export interface RequestHeader {
  readonly sent: 'request'
  readonly on: 'every' | readonly Taker[]
  /** A CORS preflight allows it (Access-Control-Allow-Headers); `apiKeys` when the API takes keys. Browsers never let a script set Date. */
  readonly cors: boolean | 'apiKeys'
  /** Documented only where this option is on. */
  readonly only?: 'idempotency'
  /** Its header parameter in the document; absent: documented elsewhere (said beside it). */
  readonly schema?: Documented
}

export interface ResponseHeader {
  readonly sent: 'response'
  /** Which answers carry it (said for readers; the route schemas name the header where it applies). */
  readonly on: string
  /** A browser script may read it (Access-Control-Expose-Headers); the CORS-safelisted ones need no mention. */
  readonly exposed: boolean
  /** Part of the answer, kept and replayed with it under an Idempotency-Key (not the per-request ones: Request-Id, Date, rate-limit counts). */
  readonly kept: boolean
  /** Its Header Object in the document (schema and description); absent: not documented (said beside it). */
  readonly schema?: Documented
}

// Request headers carry no `examples`: a console (the docs page) would send them as prefilled
// values, a stale Date or a reused key. Each pattern admits only values the server takes (a
// generator building from it is never refused), which is at places narrower than what the server
// takes (said in the description).

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
const etagList = 'A list of entity tags, or *.'
/** http/conditional.ts: * or a comma-separated list of entity tags (RFC 9110 §8.8.3); otherwise 400. */
export const etagListPattern = '^(?:\\*|(?:W/)?"[\\x21\\x23-\\x7e]*"(?:, ?(?:W/)?"[\\x21\\x23-\\x7e]*")*)$'
const conditionalWrites = itemWrites
/** The operations that read a body. */
const bodyTakers = [...bodyWrites] as OperationName[]

/**
 * The table. Its order is the order of the CORS lists, and of the document's header parameters
 * (those of every operation first).
 */
export const headerTable = {
  // Request headers.
  Authorization: { sent: 'request', on: 'every', cors: true }, // documented by the security schemes (openapi/security-schemes.ts)
  'Content-Type': { sent: 'request', on: [...bodyTakers, 'batch'], cors: true }, // documented by each request body's media types
  'If-Match': {
    sent: 'request',
    on: conditionalWrites,
    cors: true,
    schema: ({ requireIfMatch }) => ({ type: 'string', pattern: etagListPattern, description: `${etagList} The write happens only if one names the current version, else 412 (optimistic concurrency).${requireIfMatch ? ' Required: without it the answer is 428.' : ''}` })
  },
  // One If-None-Match for reads and writes, so the document holds it once.
  'If-None-Match': {
    sent: 'request',
    on: ['retrieve', ...conditionalWrites],
    cors: true,
    schema: { type: 'string', pattern: etagListPattern, description: `${etagList} On a read, when one matches the current representation the answer is 304 without a body (RFC 9110 §13.1.2); on a write, a match is 412.` }
  },
  'If-Modified-Since': { sent: 'request', on: ['retrieve'], cors: true, schema: { type: 'string', description: 'An HTTP date: 304 when the resource has not changed since (ignored when If-None-Match is sent).' } },
  'If-Unmodified-Since': { sent: 'request', on: conditionalWrites, cors: true, schema: { type: 'string', description: 'An HTTP date: 412 when the resource changed since (ignored when If-Match is sent).' } },
  // RFC 7240; http/prefer.ts.
  Prefer: { sent: 'request', on: bodyTakers, cors: true, schema: { type: 'string', description: 'return=minimal: answer without the body (201 with Location, or 204), with the new ETag; return=representation (the default): with it. respond-async, where this operation documents a 202: answer 202 at once with a status monitor in Location, and do the write shortly. Other preferences are ignored.' } },
  'Idempotency-Key': {
    sent: 'request',
    on: [...keyedOperations, 'batch'],
    cors: true,
    only: 'idempotency',
    schema: ({ maxKeyLength }) => ({
      type: 'string',
      // idempotency.ts: a structured-field string of printable ASCII, or the same characters bare; 1 to 255 of them.
      pattern: `^(?:[\\x21\\x23-\\x5b\\x5d-\\x7e]{1,${maxKeyLength}}|"(?:[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]|\\\\["\\\\]){1,${maxKeyLength}}")$`,
      description: `A key of your choosing, unique per request you mean (a structured-field string such as "4f6b0d2e-5a1c-4e8b-9f3a-2c7d1e0b6a95", or bare), 1 to ${maxKeyLength} printable ASCII characters: the answer is kept, and a retry with the same key and body gets it again with Idempotent-Replayed: true, nothing written twice. The same key with another body is 422; while the first request still runs, 409. Keys are per caller, method and path.`
    })
  },
  // Server-Sent Events (changes/feed.ts); a browser's EventSource sends it when it reconnects.
  'Last-Event-ID': { sent: 'request', on: ['changes'], cors: true, schema: { type: 'string', description: 'With Accept: text/event-stream: the position of the last event received; the stream resumes after it.' } },
  'X-Request-Id': { sent: 'request', on: 'every', cors: true, schema: { type: 'string', description: 'Request identifier, echoed as Request-Id; when absent, unsafe or too long, the server generates one.' } },
  Date: {
    sent: 'request',
    on: 'every',
    cors: false,
    schema: {
      type: 'string',
      // Without the day of the week, which must be the date's (RFC 5322 §3.3): a pattern cannot say which.
      pattern: `^(?:${calendarDay}) (?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d GMT$`,
      description: 'When the request was sent, as an RFC 5322 date-time such as 06 Nov 1994 08:49:37 GMT. Also accepted: an IMF-fixdate with its day of the week (Sun, 06 Nov 1994 08:49:37 GMT), which must be the date\'s, other zones (+0100), and the obsolete HTTP-date forms. A malformed date, or a day of the week the date does not fall on, is 400.'
    }
  },
  // security/audit-headers.ts reads these.
  'X-Audit-Consent': {
    sent: 'request',
    on: 'every',
    cors: true,
    schema: {
      ...auditHeader('A JSON-encoded FHIR Consent resource (an object with resourceType "Consent")'),
      pattern: base64Pattern,
      contentMediaType: 'application/json',
      contentSchema: { type: 'object', properties: { resourceType: { const: 'Consent' } }, required: ['resourceType'] },
      description: `A JSON-encoded FHIR Consent resource (an object with resourceType "Consent"): base64 of its JSON text, ${auditBase64}.`
    }
  },
  'X-Audit-Device': { sent: 'request', on: 'every', cors: true, schema: auditHeader('A FHIR identifier of the client device') },
  'X-Audit-Organisation': { sent: 'request', on: 'every', cors: true, schema: auditHeader('A FHIR identifier of the client organisation') },
  'X-Audit-User': { sent: 'request', on: 'every', cors: true, schema: auditHeader('A FHIR identifier of the authenticated user') },
  // Free text, unlike the X-Audit-* headers: the spec asks base64 of those only. Without spaces at
  // either end, which a header loses on the way (RFC 9110 §5.5).
  'X-Authenticated_User': {
    sent: 'request',
    on: 'every',
    cors: true,
    schema: { type: 'string', maxLength: maxAuditHeaderLength, pattern: '^[\\x21-\\x7e](?:[\\x20-\\x7e]*[\\x21-\\x7e])?$', description: `The client system, for auditing, as plain text (visible ASCII and spaces) such as billing-service, at most ${maxAuditHeaderLength} characters; otherwise 400 naming the header.` }
  },
  'x-api-key': { sent: 'request', on: 'every', cors: 'apiKeys' }, // documented by the security schemes (openapi/security-schemes.ts)

  // Response headers.
  ETag: {
    sent: 'response',
    on: 'RETRIEVE (200, 304) and the writes\' successes',
    exposed: true,
    kept: true,
    schema: { type: 'string', description: 'Strong validator of this representation; send it in If-Match to update safely, or If-None-Match to revalidate.' }
  },
  Location: { sent: 'response', on: 'CREATE (201)', exposed: true, kept: true, schema: { type: 'string', description: 'Relative URL of the new record.' } },
  'Last-Modified': {
    sent: 'response',
    on: 'as ETag',
    exposed: false,
    kept: true,
    schema: { type: 'string', description: 'Time of the last write, as an HTTP date. Not sent with expand or include: related records change without moving it.' }
  },
  'Request-Id': { sent: 'response', on: 'every answer', exposed: true, kept: false, schema: { type: 'string', description: 'The request identifier (X-Request-Id when the client sent a safe one).' } },
  'Retry-After': {
    sent: 'response',
    on: '429 (its form by rateLimit.retryAfter), 503 (seconds), 202 and an unfinished status monitor (seconds)',
    exposed: true,
    // A replayed 202 says when to ask its monitor, as the first did.
    kept: true,
    schema: ({ retryAfter }) => retryAfter === 'date'
      ? { type: 'string', description: 'When to retry, as an HTTP date.', examples: ['Wed, 21 Oct 2015 07:28:00 GMT'] }
      : { type: 'string', description: 'Seconds to wait before retrying.' }
  },
  // Deprecation, Sunset and their Link (security/deprecation.ts) are not in the document, whose
  // deprecated operations say `deprecated: true`.
  Link: { sent: 'response', on: 'the answers of a deprecated API or resource', exposed: true, kept: false },
  Allow: { sent: 'response', on: '405, QUERY CAPABILITIES', exposed: true, kept: false, schema: { type: 'string', description: 'The methods this path allows.' } },
  'WWW-Authenticate': { sent: 'response', on: '401', exposed: true, kept: false, schema: { type: 'string', description: 'The authentication method and realm, e.g. Bearer realm="api".' } },
  Deprecation: { sent: 'response', on: 'the answers of a deprecated API or resource', exposed: true, kept: false },
  Sunset: { sent: 'response', on: 'the answers of a deprecated API or resource, when it has a sunset', exposed: true, kept: false },
  // The fields that tell the limit, in either form (security/rate-limit.ts).
  RateLimit: {
    sent: 'response',
    on: 'every answer, rateLimit.fields draft-11',
    exposed: true,
    kept: false,
    schema: { type: 'string', description: 'What is left of the quota: r requests, for t more seconds.', examples: ['"default";r=0;t=30'] }
  },
  'RateLimit-Policy': {
    sent: 'response',
    on: 'every answer, rateLimit.fields draft-11',
    exposed: true,
    kept: false,
    schema: { type: 'string', description: 'The quota policy (draft-ietf-httpapi-ratelimit-headers-11): its name, q requests per w seconds.', examples: ['"default";q=100;w=60'] }
  },
  'RateLimit-Limit': { sent: 'response', on: 'every answer, rateLimit.fields legacy', exposed: true, kept: false, schema: { type: 'string', description: 'Requests allowed per window.' } },
  'RateLimit-Remaining': { sent: 'response', on: 'every answer, rateLimit.fields legacy', exposed: true, kept: false, schema: { type: 'string', description: 'Requests left in the current window.' } },
  'RateLimit-Reset': { sent: 'response', on: 'every answer, rateLimit.fields legacy', exposed: true, kept: false, schema: { type: 'string', description: 'Seconds until the window resets.' } },
  'Preference-Applied': { sent: 'response', on: 'the writes\' successes (http/prefer.ts)', exposed: true, kept: true, schema: { type: 'string', description: 'The return preference applied, when the request sent one.' } },
  'Idempotent-Replayed': { sent: 'response', on: 'a replayed answer of CREATE, MODIFY or BATCH', exposed: true, kept: false, schema: { type: 'string', enum: ['true'], description: 'Sent with an answer kept for an earlier request with this Idempotency-Key.' } },
  // A CORS preflight's answer (security/cors.ts).
  'Access-Control-Allow-Origin': { sent: 'response', on: 'CORS preflights', exposed: false, kept: false, schema: { type: 'string', description: 'The Origin of the request, never *.' } },
  'Access-Control-Allow-Methods': { sent: 'response', on: 'CORS preflights', exposed: false, kept: false, schema: { type: 'string', description: 'The methods a browser may use.' } },
  'Access-Control-Allow-Headers': { sent: 'response', on: 'CORS preflights', exposed: false, kept: false, schema: { type: 'string', description: 'The request headers a browser may send.' } },
  'Access-Control-Max-Age': { sent: 'response', on: 'CORS preflights', exposed: false, kept: false, schema: { type: 'string', description: 'Seconds a browser may cache this answer.' } }
} as const satisfies Record<string, RequestHeader | ResponseHeader>

type Table = typeof headerTable
export type HeaderName = keyof Table
export type RequestHeaderName = { [N in HeaderName]: Table[N]['sent'] extends 'request' ? N : never }[HeaderName]
export type ResponseHeaderName = { [N in HeaderName]: Table[N]['sent'] extends 'response' ? N : never }[HeaderName]
/** The headers the document describes… */
export type DocumentedHeaderName = { [N in HeaderName]: Table[N] extends { schema: Documented } ? N : never }[HeaderName]
/** …and those of them whose description depends on nothing (HeaderContext). */
export type FixedHeaderName = { [N in HeaderName]: Table[N] extends { schema: JsonSchema } ? N : never }[HeaderName]

const entries = Object.entries(headerTable) as Array<[HeaderName, RequestHeader | ResponseHeader]>
const requestEntries = entries.filter((entry): entry is [RequestHeaderName, RequestHeader] => entry[1].sent === 'request')
const responseEntries = entries.filter((entry): entry is [ResponseHeaderName, ResponseHeader] => entry[1].sent === 'response')

/** Access-Control-Allow-Headers: the request headers a preflight allows, with `x-api-key` when the API takes keys. */
export const corsAllowedHeaders = (apiKeys: boolean): string[] =>
  requestEntries.filter(([, entry]) => entry.cors === true || (entry.cors === 'apiKeys' && apiKeys)).map(([name]) => name)
/** Access-Control-Expose-Headers. */
export const exposedHeaders: readonly string[] = responseEntries.filter(([, entry]) => entry.exposed).map(([name]) => name)
/** What a keyed answer keeps, in lower case as Fastify reads them. */
export const keptHeaders: readonly string[] = responseEntries.filter(([, entry]) => entry.kept).map(([name]) => name.toLowerCase())

/** One header's Schema Object, with its description. */
export function headerSchema (name: DocumentedHeaderName, context: HeaderContext): JsonSchema {
  const schema = (headerTable[name] as { schema: Documented }).schema
  return typeof schema === 'function' ? schema(context) : schema
}

/** The named headers' Schema Objects, in that order (a route schema's response `headers`): those whose description depends on nothing. */
export function headerSchemas (...names: FixedHeaderName[]): Record<string, JsonSchema> {
  return Object.fromEntries(names.map(name => [name, headerTable[name].schema]))
}

/**
 * The documented request headers `taker` accepts, as a route schema's `headers` properties: those
 * every operation takes first, then its own; a header `only` an option gives where `on` holds it.
 */
export function requestHeaderSchemas (taker: Taker, context: HeaderContext, on: { readonly idempotency: boolean }): Record<string, JsonSchema> {
  const documented = requestEntries.filter(([, entry]) => entry.schema !== undefined && (entry.only === undefined || on[entry.only]))
  const every = documented.filter(([, entry]) => entry.on === 'every')
  const own = documented.filter(([, entry]) => entry.on !== 'every' && entry.on.includes(taker))
  return Object.fromEntries([...every, ...own].map(([name]) => [name, headerSchema(name as DocumentedHeaderName, context)]))
}
