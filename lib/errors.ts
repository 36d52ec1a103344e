// The error catalogue (spec "Errors"): every error the plugin raises, boot and request alike.
// Codes are public API; the README lists each one (a test keeps the two in step).
import createError from '@fastify/error'

export interface InvalidParam { readonly name: string, readonly reason: string }

/** What request errors may carry beyond Fastify's `statusCode`/`code`. */
export interface ProblemExtras {
  invalidParams?: readonly InvalidParam[]
  headers?: Record<string, string>
}

/** Attaches `invalidParams` to a catalogue error, for the problem renderer. */
export function withInvalidParams<E extends Error> (error: E, invalidParams: readonly InvalidParam[]): E & ProblemExtras {
  return Object.assign(error, { invalidParams })
}

/** Attaches response headers (Allow, Retry-After, WWW-Authenticate …) to a catalogue error. */
export function withHeaders<E extends Error> (error: E, headers: Record<string, string>): E & ProblemExtras {
  return Object.assign(error, { headers })
}

// Boot errors: thrown while registering, they name the option path and the value received.
export const OptionsInvalidError = createError<[string]>('API_ERR_OPTIONS_INVALID', 'Invalid api-conventions options: %s', 500, TypeError)
export const ResourceInvalidError = createError<[string, string]>('API_ERR_RESOURCE_INVALID', 'Invalid resource %s: %s', 500, TypeError)

// Request errors. 4xx are answers, not faults: nothing reads their stack, and capturing it cost about
// a seventh of a 400's CPU (benchmarks/README.md), so they skip it; 5xx keep theirs for the log.
const noStack = false
export const QueryInvalidError = createError('API_ERR_QUERY_INVALID', 'One or more query parameters are invalid.', 400, Error, noStack)
export const BodyInvalidError = createError('API_ERR_BODY_INVALID', 'The request body does not match the resource schema.', 400, Error, noStack)
export const BodyMalformedError = createError<[string]>('API_ERR_BODY_MALFORMED', 'The request body could not be parsed: %s', 400, Error, noStack)
export const BadUrlError = createError('API_ERR_BAD_URL', 'The request URL cannot be decoded.', 400, Error, noStack)
export const HeaderInvalidError = createError('API_ERR_HEADER_INVALID', 'One or more request headers are invalid.', 400, Error, noStack)
export const IdMismatchError = createError<[string]>('API_ERR_ID_MISMATCH', 'The %s in the body differs from the one in the path.', 400, Error, noStack)
export const UnauthorizedError = createError('API_ERR_UNAUTHORIZED', 'Valid credentials are required.', 401, Error, noStack)
export const ForbiddenError = createError<[string]>('API_ERR_FORBIDDEN', '%s', 403, Error, noStack)
export const NotFoundError = createError<[string]>('API_ERR_NOT_FOUND', '%s was not found.', 404, Error, noStack)
export const MethodNotAllowedError = createError<[string, string]>('API_ERR_METHOD_NOT_ALLOWED', 'Method %s is not allowed here; allowed: %s.', 405, Error, noStack)
export const NotAcceptableError = createError<[string]>('API_ERR_NOT_ACCEPTABLE', 'None of the media types in Accept can be produced; available: %s.', 406, Error, noStack)
export const RequestTimeoutError = createError('API_ERR_REQUEST_TIMEOUT', 'The request took too long to arrive.', 408, Error, noStack)
export const ConflictError = createError<[string]>('API_ERR_CONFLICT', '%s', 409, Error, noStack)
export const PreconditionFailedError = createError<[string]>('API_ERR_PRECONDITION_FAILED', '%s', 412, Error, noStack)
export const BodyTooLargeError = createError<[number]>('API_ERR_BODY_TOO_LARGE', 'The request body is larger than %d bytes.', 413, Error, noStack)
export const UriTooLongError = createError<[number]>('API_ERR_URI_TOO_LONG', 'The request URL is longer than %d characters.', 414, Error, noStack)
export const UnsupportedMediaTypeError = createError<[string]>('API_ERR_UNSUPPORTED_MEDIA_TYPE', '%s', 415, Error, noStack)
export const ExpectationFailedError = createError('API_ERR_EXPECTATION_FAILED', 'The server cannot meet the expectation in the Expect header; only 100-continue is supported.', 417, Error, noStack)
export const UnprocessableError = createError<[string]>('API_ERR_UNPROCESSABLE', '%s', 422, Error, noStack)
export const PreconditionRequiredError = createError<[string]>('API_ERR_PRECONDITION_REQUIRED', '%s', 428, Error, noStack)
export const RateLimitedError = createError<[string]>('API_ERR_RATE_LIMITED', 'Too many requests; retry after %s seconds.', 429, Error, noStack)
export const HeadersTooLargeError = createError('API_ERR_HEADERS_TOO_LARGE', 'The request headers are too large.', 431, Error, noStack)
export const InternalError = createError('API_ERR_INTERNAL', 'An unexpected error occurred.', 500)
export const StoreUnavailableError = createError('API_ERR_STORE_UNAVAILABLE', 'The data store is unavailable; retry later.', 503)
export const HandlerTimeoutError = createError('API_ERR_HANDLER_TIMEOUT', 'The request took too long to process; retry later.', 503)
export const ServiceUnavailableError = createError('API_ERR_SERVICE_UNAVAILABLE', 'The service is unavailable (for example shutting down); retry later.', 503)

/** When each request error is raised: served on its problem `type` page and listed in the README. */
export const problemDescriptions: Readonly<Record<string, string>> = {
  API_ERR_QUERY_INVALID: 'A query parameter is unknown, malformed or out of range (filter, sort, fields, paging, simple filters); invalidParams names each one.',
  API_ERR_BODY_INVALID: 'The body does not match the resource schema, sets a read-only field such as the id, or has unknown members; invalidParams names each field.',
  API_ERR_BODY_MALFORMED: 'The body is not well-formed for its Content-Type (for example broken JSON, or an empty JSON body).',
  API_ERR_BAD_URL: 'The URL has a malformed percent-encoding or otherwise cannot be decoded.',
  API_ERR_HEADER_INVALID: 'A request header is malformed (Date, audit headers, conditional headers); invalidParams names it.',
  API_ERR_ID_MISMATCH: 'A replace body carries an id that differs from the id in the path.',
  API_ERR_UNAUTHORIZED: 'Credentials are missing, malformed or not valid; WWW-Authenticate names the method.',
  API_ERR_FORBIDDEN: 'The credentials are valid but do not allow this operation, or the Origin is not allowed.',
  API_ERR_NOT_FOUND: 'No resource or route exists at this address.',
  API_ERR_METHOD_NOT_ALLOWED: 'The address exists but does not support this method; Allow lists those it does.',
  API_ERR_NOT_ACCEPTABLE: 'No representation matches the Accept header.',
  API_ERR_REQUEST_TIMEOUT: 'The request did not arrive in time.',
  API_ERR_CONFLICT: 'The request conflicts with the current state of the resource (for example deleting a parent that still has children, or a duplicate unique value).',
  API_ERR_PRECONDITION_FAILED: 'If-Match or If-Unmodified-Since did not hold; nothing was changed.',
  API_ERR_BODY_TOO_LARGE: 'The body exceeds the configured size limit.',
  API_ERR_URI_TOO_LONG: 'The request URL exceeds the configured length limit.',
  API_ERR_UNSUPPORTED_MEDIA_TYPE: 'Content-Type is missing on a request that needs a body, or names a type this operation does not accept.',
  API_ERR_EXPECTATION_FAILED: 'The Expect header names an expectation other than 100-continue, which is the only one this server meets.',
  API_ERR_UNPROCESSABLE: 'The body is well-formed but refers to something that does not exist (for example an unknown related id).',
  API_ERR_PRECONDITION_REQUIRED: 'This server requires If-Match on writes, so that updates are never lost.',
  API_ERR_RATE_LIMITED: 'Too many requests in the current window; Retry-After says when to try again.',
  API_ERR_HEADERS_TOO_LARGE: 'The request headers exceed the configured size limit.',
  API_ERR_INTERNAL: 'An unexpected error; the details are in the server log, never in the response.',
  API_ERR_STORE_UNAVAILABLE: 'The data store cannot be reached; Retry-After says when to try again.',
  API_ERR_HANDLER_TIMEOUT: 'Processing the request took longer than the configured handler timeout; nothing is known to have been written, retry later.',
  API_ERR_SERVICE_UNAVAILABLE: 'The service cannot answer now, for example while it shuts down; retry later.'
}
