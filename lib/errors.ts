// The error table (spec "Errors"): one entry per code, boot and request alike, holding its status,
// title, description and class; the problem renderer, the problem pages and the OpenAPI document
// read it. Codes are public API; the README lists each one (test/catalogue.test.ts keeps them in step).
import { STATUS_CODES } from 'node:http'
import createError from '@fastify/error'
import type { FastifyErrorConstructor } from '@fastify/error'

export interface InvalidParam { readonly name: string, readonly reason: string }

/** What request errors may carry beyond Fastify's `statusCode`/`code`. */
export interface ProblemExtras {
  invalidParams?: readonly InvalidParam[]
  headers?: Record<string, string>
  /** The index of the batch operation that failed (routes/batch.ts). */
  operation?: number
  /** A 429: the names of the quota policies exceeded (the `quota-exceeded` problem type's member). */
  violatedPolicies?: readonly string[]
  /** Where to go on (a 410 of the change feed: its head). */
  links?: ReadonlyArray<{ readonly rel: string, readonly href: string }>
}

/** Attaches `invalidParams` to a catalogue error, for the problem renderer. */
export function withInvalidParams<E extends Error> (error: E, invalidParams: readonly InvalidParam[]): E & ProblemExtras {
  return Object.assign(error, { invalidParams })
}

/** Attaches response headers (Allow, Retry-After, WWW-Authenticate …) to a catalogue error. */
export function withHeaders<E extends Error> (error: E, headers: Record<string, string>): E & ProblemExtras {
  return Object.assign(error, { headers })
}

/** One code of the table. */
export interface ErrorEntry {
  readonly code: string
  /** The HTTP status it answers with; boot errors carry 500 but are never answered. */
  readonly status: number
  /** The problem `title` (RFC 9457 §3.1.3): the status's reason phrase. */
  readonly title: string
  /** When it is raised: the text of its problem page, and of the OpenAPI document where it alone has its status. */
  readonly description: string
  /** `not-found` for `API_ERR_NOT_FOUND`: the end of its problem `type` URL. */
  readonly slug: string
  /** A registered problem type (RFC 9457 §4.2, the IANA HTTP Problem Types registry) used instead of the plugin's own URL. */
  readonly type: string | undefined
  /** Thrown while registering, never answered: it has no problem type. */
  readonly boot: boolean
  /**
   * Where several codes share a status, the one a coded error of that status from elsewhere (a
   * plugin, the host) is answered with; a status with one code needs no mark.
   */
  readonly forStatus: boolean
  readonly ErrorClass: FastifyErrorConstructor<{ code: string }, any[]>
}

/** `API_ERR_NOT_FOUND` → `not-found`. */
export const problemSlug = (code: string) => code.replace(/^API_ERR_/, '').toLowerCase().replaceAll('_', '-')

const table = new Map<string, ErrorEntry>()
/** Every code, in the order declared below. */
export const errorTable: ReadonlyMap<string, ErrorEntry> = table

// A class is made by @fastify/error as ever, so its type stays what it was; its code and status are read off an instance.
function enter<C extends FastifyErrorConstructor<{ code: string }, any[]>> (ErrorClass: C, description: string, kind: { boot?: true, forStatus?: true, type?: string } = {}): C {
  const { code, statusCode } = new ErrorClass()
  const status = statusCode as number
  table.set(code, { code, status, title: STATUS_CODES[status] as string, description, slug: problemSlug(code), type: kind.type, boot: kind.boot === true, forStatus: kind.forStatus === true, ErrorClass })
  return ErrorClass
}

// Boot errors: thrown while registering, they name the option path and the value received.
const boot = { boot: true } as const
export const OptionsInvalidError = enter(createError<[string]>('API_ERR_OPTIONS_INVALID', 'Invalid api-conventions options: %s', 500, TypeError),
  'A plugin option is invalid (thrown at registration).', boot)
export const ResourceInvalidError = enter(createError<[string, string]>('API_ERR_RESOURCE_INVALID', 'Invalid resource %s: %s', 500, TypeError),
  'A resource definition is invalid (thrown at registration).', boot)

// Request errors. 4xx are answers, not faults: nothing reads their stack, and capturing it is a
// measurable share of a 400's CPU (benchmarks/README.md), so they skip it; 5xx keep theirs for
// the log.
const noStack = false
const forStatus = { forStatus: true } as const
export const QueryInvalidError = enter(createError('API_ERR_QUERY_INVALID', 'One or more query parameters are invalid.', 400, Error, noStack),
  'A query parameter is unknown, malformed or out of range (filter, sort, fields, paging, simple filters); invalidParams names each one.')
export const BodyInvalidError = enter(createError('API_ERR_BODY_INVALID', 'The request body does not match the resource schema.', 400, Error, noStack),
  'The body does not match the resource schema, sets a read-only field such as the id, or has unknown members; invalidParams names each field.')
export const BodyMalformedError = enter(createError<[string]>('API_ERR_BODY_MALFORMED', 'The request body could not be parsed: %s', 400, Error, noStack),
  'The body is not well-formed for its Content-Type (for example broken JSON, an empty JSON body, or JSON sent as a form).', forStatus)
export const BadUrlError = enter(createError('API_ERR_BAD_URL', 'The request URL cannot be decoded.', 400, Error, noStack),
  'The URL has a malformed percent-encoding or otherwise cannot be decoded.')
export const HeaderInvalidError = enter(createError('API_ERR_HEADER_INVALID', 'One or more request headers are invalid.', 400, Error, noStack),
  'A request header is malformed (Date, audit headers, conditional headers); invalidParams names it.')
export const IdMismatchError = enter(createError<[string]>('API_ERR_ID_MISMATCH', 'The %s in the body differs from the one in the path.', 400, Error, noStack),
  'A replace body carries an id that differs from the id in the path.')
export const UnauthorizedError = enter(createError('API_ERR_UNAUTHORIZED', 'Valid credentials are required.', 401, Error, noStack),
  'Credentials are missing, malformed or not valid; WWW-Authenticate names the method.')
export const ForbiddenError = enter(createError<[string]>('API_ERR_FORBIDDEN', '%s', 403, Error, noStack),
  'The credentials are valid but do not allow this operation, or the Origin is not allowed.')
export const NotFoundError = enter(createError<[string]>('API_ERR_NOT_FOUND', '%s was not found.', 404, Error, noStack),
  'No resource or route exists at this address.')
export const MethodNotAllowedError = enter(createError<[string, string]>('API_ERR_METHOD_NOT_ALLOWED', 'Method %s is not allowed here; allowed: %s.', 405, Error, noStack),
  'The address exists but does not support this method; Allow lists those it does.')
export const NotAcceptableError = enter(createError<[string]>('API_ERR_NOT_ACCEPTABLE', 'None of the media types in Accept can be produced; available: %s.', 406, Error, noStack),
  'No representation matches the Accept header.')
export const RequestTimeoutError = enter(createError('API_ERR_REQUEST_TIMEOUT', 'The request took too long to arrive.', 408, Error, noStack),
  'The request did not arrive in time.')
export const ConflictError = enter(createError<[string]>('API_ERR_CONFLICT', '%s', 409, Error, noStack),
  'The request conflicts with the current state of the resource (for example deleting a parent that still has children, or a duplicate unique value).')
export const ChangesExpiredError = enter(createError<[string]>('API_ERR_CHANGES_EXPIRED', '%s', 410, Error, noStack),
  'The change feed no longer keeps the changes after the position given (they are older than its retention): read the collections again, then resume the feed from its head, which the problem\'s links carry.')
export const PreconditionFailedError = enter(createError<[string]>('API_ERR_PRECONDITION_FAILED', '%s', 412, Error, noStack),
  'If-Match or If-Unmodified-Since did not hold; nothing was changed.')
export const BodyTooLargeError = enter(createError<[number]>('API_ERR_BODY_TOO_LARGE', 'The request body is larger than %d bytes.', 413, Error, noStack),
  'The body exceeds the configured size limit.')
export const UriTooLongError = enter(createError<[number]>('API_ERR_URI_TOO_LONG', 'The request URL is longer than %d characters.', 414, Error, noStack),
  'The request URL exceeds the configured length limit.')
export const UnsupportedMediaTypeError = enter(createError<[string]>('API_ERR_UNSUPPORTED_MEDIA_TYPE', '%s', 415, Error, noStack),
  'Content-Type is missing on a request that needs a body, or names a type this operation does not accept.')
export const ExpectationFailedError = enter(createError('API_ERR_EXPECTATION_FAILED', 'The server cannot meet the expectation in the Expect header; only 100-continue is supported.', 417, Error, noStack),
  'The Expect header names an expectation other than 100-continue, which is the only one this server meets.')
export const UnprocessableError = enter(createError<[string]>('API_ERR_UNPROCESSABLE', '%s', 422, Error, noStack),
  'The body is well-formed but refers to something that does not exist (for example an unknown related id).')
export const PreconditionRequiredError = enter(createError<[string]>('API_ERR_PRECONDITION_REQUIRED', '%s', 428, Error, noStack),
  'This server requires If-Match on writes, so that updates are never lost.')
/** The IANA HTTP Problem Types entry for a request over its quota (draft-ietf-httpapi-ratelimit-headers §5.1), with `violated-policies`. */
export const quotaExceededType = 'https://iana.org/assignments/http-problem-types#quota-exceeded'
export const RateLimitedError = enter(createError<[string]>('API_ERR_RATE_LIMITED', 'Too many requests; retry after %s seconds.', 429, Error, noStack),
  'Too many requests in the current window; Retry-After says when to try again, and violated-policies names the quota policy exceeded.', { type: quotaExceededType })
export const HeadersTooLargeError = enter(createError('API_ERR_HEADERS_TOO_LARGE', 'The request headers are too large.', 431, Error, noStack),
  'The request headers exceed the configured size limit.')
export const InternalError = enter(createError('API_ERR_INTERNAL', 'An unexpected error occurred.', 500),
  'An unexpected error; the details are in the server log, never in the response.')
export const StoreUnavailableError = enter(createError('API_ERR_STORE_UNAVAILABLE', 'The data store is unavailable; retry later.', 503),
  'The data store cannot be reached; Retry-After says when to try again.')
export const HandlerTimeoutError = enter(createError('API_ERR_HANDLER_TIMEOUT', 'The request took too long to process; retry later.', 503),
  'Processing the request took longer than the configured handler timeout; nothing is known to have been written, retry later.')
export const ServiceUnavailableError = enter(createError('API_ERR_SERVICE_UNAVAILABLE', 'The service is unavailable (for example shutting down); retry later.', 503),
  'The service cannot answer now, for example while it shuts down; retry later.', forStatus)

const requestErrors = [...table.values()].filter(entry => !entry.boot)

/** When each request error is raised, by code: served on its problem `type` page. */
export const problemDescriptions: Readonly<Record<string, string>> = Object.fromEntries(requestErrors.map(entry => [entry.code, entry.description]))

const byStatus = new Map<number, string>()
for (const entry of requestErrors) {
  if (entry.forStatus || !byStatus.has(entry.status)) byStatus.set(entry.status, entry.code)
}
/** The code a coded error from elsewhere (a 4xx from a plugin, say) gets by its status alone. */
export const codeOfStatus: ReadonlyMap<number, string> = byStatus
