// The one error path (spec "Errors" 1, 2): every error, not-found and 405 leaves as
// application/problem+json, flat (RFC 9457, which obsoletes the spec's RFC 7807) or under `errors`
// (or as application/problem+xml when Accept prefers XML), and 5xx never leak internals.
import { STATUS_CODES } from 'node:http'
import fastJson from 'fast-json-stringify'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { BodyInvalidError, InternalError, MethodNotAllowedError, NotFoundError, StoreUnavailableError, HandlerTimeoutError, ServiceUnavailableError, codeOfStatus, errorTable, problemSlug, withHeaders } from './errors.js'
import type { InvalidParam, ProblemExtras } from './errors.js'
import { toInvalidParams } from './validation.js'
import { addVary, wantsXmlProblem } from './http/negotiation.js'
import { createProblemXmlWriter, problemXmlMediaType } from './formats/xml.js'

export const problemMediaType = 'application/problem+json; charset=utf-8'

export const problemSchema: { type: 'object', properties: Record<string, Record<string, unknown>>, required: string[] } = {
  type: 'object',
  properties: {
    type: { type: 'string', format: 'uri-reference' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    instance: { type: 'string' },
    operation: { type: 'integer', description: 'A batch: the index of the operation that failed.' },
    invalidParams: {
      type: 'array',
      items: { type: 'object', properties: { name: { type: 'string' }, reason: { type: 'string' } }, required: ['name', 'reason'] }
    },
    'violated-policies': { type: 'array', items: { type: 'string' }, description: 'A 429 (quota-exceeded): the quota policies exceeded, as named in RateLimit-Policy.' },
    links: {
      type: 'array',
      items: { type: 'object', properties: { rel: { type: 'string' }, href: { type: 'string' } }, required: ['rel', 'href'] },
      description: 'Where to go on: a 410 of the change feed (changes-expired) links its head.'
    }
  },
  required: ['type', 'title', 'status', 'detail']
}

/** The problem body as the configured error form wants it. */
export function problemBodySchema (errorFormat: 'flat' | 'envelope') {
  return errorFormat === 'flat'
    ? problemSchema
    : { type: 'object' as const, properties: { errors: problemSchema }, required: ['errors'] }
}

// Fastify's own coded errors, as catalogue codes.
const fastifyCodes: Readonly<Record<string, string>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'API_ERR_BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'API_ERR_UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_JSON_BODY: 'API_ERR_BODY_MALFORMED',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'API_ERR_BODY_MALFORMED',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'API_ERR_BODY_MALFORMED',
  FST_ERR_CTP_INVALID_TYPE: 'API_ERR_UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_REQ_INVALID_VALIDATION_INVOCATION: 'API_ERR_INTERNAL',
  FST_ERR_HANDLER_TIMEOUT: 'API_ERR_HANDLER_TIMEOUT'
}
// What a refusal raised without invalidParams (by Fastify's body parsing, say) can only be about.
const impliedParams: Readonly<Record<string, readonly InvalidParam[]>> = {
  API_ERR_UNSUPPORTED_MEDIA_TYPE: [{ name: 'Content-Type', reason: 'no body of this media type is accepted here' }],
  API_ERR_EXPECTATION_FAILED: [{ name: 'Expect', reason: 'only 100-continue can be met' }]
}

// The 5xx whose catalogue text may be shown: they tell the client to retry, and name nothing internal.
const retryable: Readonly<Record<string, string>> = {
  API_ERR_STORE_UNAVAILABLE: new StoreUnavailableError().message,
  API_ERR_HANDLER_TIMEOUT: new HandlerTimeoutError().message,
  API_ERR_SERVICE_UNAVAILABLE: new ServiceUnavailableError().message
}

export interface ProblemOptions {
  readonly errorFormat: 'flat' | 'envelope'
  /** `/v1/problems/`, or a configured base. */
  readonly typeBase: string
  /** Methods allowed at a path known to the plugin; undefined for unknown paths. */
  readonly allowedMethods: (path: string) => readonly string[] | undefined
}

/** A problem to answer; `code` undefined: a status with no catalogue entry, typed `about:blank` (RFC 9457 §4.2.1). */
export interface Problem {
  readonly code: string | undefined
  readonly status: number
  readonly detail: string
  readonly invalidParams?: readonly InvalidParam[]
  readonly headers?: Record<string, string>
  readonly operation?: number
  readonly violatedPolicies?: readonly string[]
  readonly links?: ProblemExtras['links']
}

/** The members of a problem, as problemSchema lists them. */
export interface ProblemBody {
  readonly type: string
  readonly title: string
  readonly status: number
  readonly detail: string
  readonly instance: string | undefined
  readonly operation: number | undefined
  readonly invalidParams: readonly InvalidParam[] | undefined
  readonly 'violated-policies': readonly string[] | undefined
  readonly links: ProblemExtras['links']
}

/**
 * The one builder of problem bodies, for the renderer below and for the socket and
 * router handlers the host installs (security/limits.ts). `form` is `errorFormat` unless the body
 * is written as XML, whose one form is the flat <problem> (RFC 9457 Appendix B).
 */
export function problemBodyBuilder (options: Pick<ProblemOptions, 'errorFormat' | 'typeBase'>) {
  // The type URL of each code, made once: a registered type where the code has one, else the plugin's page.
  const typeUrls = new Map<string, string>()
  const typeOf = (code: string) => {
    let url = typeUrls.get(code)
    if (url === undefined) typeUrls.set(code, url = errorTable.get(code)?.type ?? options.typeBase + problemSlug(code))
    return url
  }
  return function problemBody (problem: Problem, instance: string | undefined, form = options.errorFormat): ProblemBody | { errors: ProblemBody } {
    const body: ProblemBody = {
      type: problem.code === undefined ? 'about:blank' : typeOf(problem.code),
      // The reason phrase of the status sent: a host may raise one of our codes with another status.
      title: STATUS_CODES[problem.status] ?? 'Error',
      status: problem.status,
      detail: problem.detail,
      instance,
      operation: problem.operation,
      invalidParams: problem.invalidParams,
      'violated-policies': problem.violatedPolicies,
      links: problem.links
    }
    return form === 'flat' ? body : { errors: body }
  }
}

/** Where a 5xx is logged in full (a request's logger, or a host's). */
export interface ErrorLog { error (details: { err: unknown }, message: string): void }

/** The problem an error answers: our catalogue's, a validation's, Fastify's coded ones, or a generic 500 (logged in full, never echoed). */
export function describe (error: FastifyError & ProblemExtras, log: ErrorLog): Problem {
  if (error.validation !== undefined) {
    return { code: 'API_ERR_BODY_INVALID', status: 400, detail: new BodyInvalidError().message, invalidParams: toInvalidParams(error.validation as never) }
  }
  // Anything thrown without an error status (a plain Error, or a stray 2xx/3xx) is an unexpected 500.
  const status = typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode <= 599 ? error.statusCode : 500
  const code = error.code?.startsWith('API_ERR_') === true ? error.code : fastifyCodes[error.code] ?? codeOfStatus.get(status)
  if (status >= 500) {
    log.error({ err: error }, 'request failed')
    // 5xx details are always the catalogue's words: a driver's message may name hosts or queries.
    return code !== undefined && code in retryable
      ? { code, status: 503, detail: retryable[code], headers: error.headers }
      : { code: 'API_ERR_INTERNAL', status: 500, detail: new InternalError().message }
  }
  // A 4xx from a dependency we do not map keeps its status; its message is the client's concern.
  return { code, status, detail: error.message, invalidParams: error.invalidParams ?? impliedParams[String(code)], headers: error.headers, operation: error.operation, violatedPolicies: error.violatedPolicies, links: error.links }
}

export function installProblemHandlers (app: FastifyInstance, options: ProblemOptions) {
  const serialize = fastJson(problemBodySchema(options.errorFormat) as Parameters<typeof fastJson>[0])
  const writeProblemXml = createProblemXmlWriter(problemSchema)
  const problemBody = problemBodyBuilder(options)

  function sendProblem (reply: FastifyReply, request: FastifyRequest, problem: Problem) {
    const instance = request.url.split('?', 1)[0]
    if (problem.headers !== undefined) reply.headers(problem.headers)
    // Accept picks the problem's form (on a route of one type, whether it is a 406), before its check too (RFC 9110 §12.5.5).
    addVary(reply, 'Accept')
    // Accept preferring XML gets RFC 9457 Appendix B, whose one form is <problem>, whatever errorFormat says.
    if (wantsXmlProblem(request)) {
      return reply.code(problem.status).type(problemXmlMediaType).serializer(writeProblemXml).send(problemBody(problem, instance, 'flat'))
    }
    reply.code(problem.status).type(problemMediaType).serializer(serialize)
    return reply.send(problemBody(problem, instance))
  }

  /** 404, or 405 with Allow where the path exists but not for this method. */
  function routingProblem (request: FastifyRequest): Problem {
    const path = request.url.split('?', 1)[0]
    const allowed = options.allowedMethods(path)
    const error = allowed === undefined
      ? new NotFoundError(path)
      : withHeaders(new MethodNotAllowedError(request.method, allowed.join(', ')), { allow: allowed.join(', ') })
    return describe(error as FastifyError & ProblemExtras, request.log)
  }

  app.setErrorHandler(function renderProblem (error: FastifyError & ProblemExtras, request, reply) {
    const problem = describe(error, request.log)
    // A request no route takes (or only the catch-all for OPTIONS, security/cors.ts) has its
    // headers and body checked (400, 413, 415; a QUERY without Content-Type) before the not-found
    // handler runs. That nothing is there, or not for this method, is the answer. The edge's
    // refusals (401, 403, 406, 414, 417, 429) stay: they come first everywhere.
    const routeLess = request.is404 || (request.routeOptions.config as { routeLess?: boolean }).routeLess === true
    if (routeLess && routeLessStatuses.has(problem.status)) return sendProblem(reply, request, routingProblem(request))
    return sendProblem(reply, request, problem)
  })

  app.setNotFoundHandler(function notFound (request, reply) {
    return sendProblem(reply, request, routingProblem(request))
  })
}

// The statuses of header and body checks, which only a routed request should hear.
const routeLessStatuses = new Set([400, 413, 415])
