// Tracing with OpenTelemetry (docs/metrics.md "Tracing"): a server span per request, continuing the
// client's W3C `traceparent`, and the context the SQL stores start their statement spans in
// (stores/sql/tracing.ts). Through `@opentelemetry/api`, an optional peer dependency, which does
// nothing until the host registers an SDK; the package's types declare what they take of it.
import type { FastifyReply, FastifyRequest, onRequestHookHandler, onResponseHookHandler } from 'fastify'
import { OptionsInvalidError } from './errors.js'
import { findOptional, importOptional } from './optional.js'
import { knownKeys, refuseUnknownKeys } from './options-check.js'
import type { RouteOperation } from './route-spec.js'
import { kSpan, kStatementTracer } from './symbols.js'

type OpenTelemetry = typeof import('@opentelemetry/api')
type Span = import('@opentelemetry/api').Span
type Tracer = import('@opentelemetry/api').Tracer

/** An OpenTelemetry `Tracer` (`provider.getTracer(name)`), as the `tracing` option takes it. */
export interface OpenTelemetryTracer {
  startSpan (name: string, options?: object, context?: object): object
}

export interface TracingOptions {
  /** The tracer the spans are started with. Default: the global provider's, `trace.getTracer('fastify-api-conventions')`. */
  readonly tracer?: OpenTelemetryTracer | undefined
  /** A span per SQL statement; `false` when the host traces its driver already (`@opentelemetry/instrumentation-pg`). Default true. */
  readonly statements?: boolean | undefined
}

/** Off (null), or on: `required` when asked for, so that registration fails without the API. */
export type ResolvedTracing = { readonly required: boolean, readonly tracer: OpenTelemetryTracer | undefined, readonly statements: boolean } | null

const tracingKeys = knownKeys({ tracer: true, statements: true } satisfies Record<keyof TracingOptions, true>)

/** The `tracing` option: undefined (on when @opentelemetry/api is installed), a boolean, or `{ tracer?, statements? }`. */
export function resolveTracing (value: unknown): ResolvedTracing {
  if (value === undefined) return { required: false, tracer: undefined, statements: true }
  if (value === false) return null
  if (value === true) return { required: true, tracer: undefined, statements: true }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new OptionsInvalidError(`tracing must be a boolean or an object { tracer?, statements? }, received ${JSON.stringify(value)}`)
  refuseUnknownKeys(value as Record<string, unknown>, tracingKeys, 'tracing')
  const { tracer, statements = true } = value as TracingOptions
  if (tracer !== undefined && typeof (tracer as { startSpan?: unknown } | null)?.startSpan !== 'function') {
    throw new OptionsInvalidError(`tracing.tracer must be an OpenTelemetry Tracer, received ${JSON.stringify(tracer)}`)
  }
  if (typeof statements !== 'boolean') throw new OptionsInvalidError(`tracing.statements must be a boolean, received ${JSON.stringify(statements)}`)
  return { required: true, tracer, statements }
}

/** The pipeline's two steps: the span starts before the request edge, so that a 401 or 429 has one too, and ends once answered. */
export interface RequestTracing {
  readonly startSpan: onRequestHookHandler
  readonly endSpan: onResponseHookHandler
}

interface TracedRequest { [kSpan]: Span | null }

// The spec's names of the operations (spec "Operations"); the plugin's own pages by what they serve.
const operationNames = {
  list: 'LIST',
  retrieve: 'RETRIEVE',
  create: 'CREATE',
  replace: 'REPLACE',
  modify: 'MODIFY',
  delete: 'DELETE',
  capabilities: 'QUERY CAPABILITIES',
  batch: 'BATCH',
  'operation-status': 'OPERATION STATUS',
  changes: 'CHANGES',
  'webhook-deliveries': 'WEBHOOK DELIVERIES',
  'webhook-retry': 'WEBHOOK RETRY',
  mcp: 'MCP',
  document: 'OPENAPI DOCUMENT',
  docs: 'DOCS PAGE',
  'problem-types': 'PROBLEM TYPES'
} as const satisfies Record<RouteOperation, string>

/** The tracing steps, or null when tracing is off, or left to the API's presence and it is not installed. */
export async function createRequestTracing (setting: ResolvedTracing): Promise<RequestTracing | null> {
  if (setting === null) return null
  const api = setting.required
    ? await importOptional<OpenTelemetry>('@opentelemetry/api', 'tracing')
    : await findOptional<OpenTelemetry>('@opentelemetry/api')
  if (api === null) return null
  const { context, isSpanContextValid, propagation, trace, SpanKind, SpanStatusCode } = api
  // The global provider's tracer follows an SDK registered later, when the host starts it after the plugin.
  const tracer = (setting.tracer ?? trace.getTracer('fastify-api-conventions')) as Tracer
  return {
    startSpan: function startRequestSpan (request: FastifyRequest, reply: FastifyReply, done: () => void) {
      // The API's default getter reads `headers[name]`: Node has lower-cased the names already.
      const parent = propagation.extract(context.active(), request.headers)
      const { method, url } = request
      // OpenTelemetry's HTTP conventions: `{method} {http.route}`, the route in Fastify's syntax; the method alone without one (an unknown path).
      // Fastify builds routeOptions on each read: read once.
      const { url: route, config, schema } = request.routeOptions
      const query = url.indexOf('?')
      const span = tracer.startSpan(route === undefined ? method : `${method} ${route}`, {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': method,
          'url.path': query === -1 ? url : url.slice(0, query),
          'url.scheme': request.protocol,
          ...route !== undefined && { 'http.route': route }
        }
      }, parent)
      if (span.isRecording()) {
        const spec = config.route
        const operationId = (schema as { operationId?: unknown } | undefined)?.operationId
        span.setAttributes({
          'network.protocol.version': request.raw.httpVersion,
          'client.address': request.ip,
          ...request.headers['user-agent'] !== undefined && { 'user_agent.original': request.headers['user-agent'] },
          ...spec !== undefined && { 'api_conventions.operation': method === 'HEAD' && spec.operation === 'retrieve' ? 'RETRIEVE HEADERS' : operationNames[spec.operation] },
          ...typeof operationId === 'string' && { 'api_conventions.operation_id': operationId },
          ...spec?.resource != null && { 'api_conventions.resource': spec.resource.name }
        })
        // A client that goes away before its answer: onResponse never comes, the span ends as the connection closes.
        reply.raw.once('close', () => { endOnce(request, undefined) })
      }
      ;(request as unknown as TracedRequest)[kSpan] = span
      // No SDK registered (the API's no-op tracer): no trace to continue, nothing to record below.
      if (!span.isRecording() && !isSpanContextValid(span.spanContext())) return done()
      // Everything after this hook runs in the span's context: the route's steps, the handler, and the store calls they make.
      const traced = trace.setSpan(parent, span)
      context.with(setting.statements ? traced.setValue(kStatementTracer, tracer) : traced, done)
    },
    endSpan: function endRequestSpan (request: FastifyRequest, reply: FastifyReply, done: () => void) {
      endOnce(request, reply)
      done()
    }
  }

  /** Ends the request's span once: answered (`reply`), or when its connection closed first. */
  function endOnce (request: FastifyRequest, reply: FastifyReply | undefined) {
    const span = (request as unknown as TracedRequest)[kSpan]
    // The host's own onRequest hooks run before the plugin's: one that answers leaves no span.
    if (span === null) return
    ;(request as unknown as TracedRequest)[kSpan] = null
    if (reply !== undefined) {
      const status = reply.statusCode
      if (span.isRecording()) {
        span.setAttribute('http.response.status_code', status)
        // Set by the request edge, after the span began.
        const requestId = reply.getHeader('request-id')
        if (typeof requestId === 'string') span.setAttribute('api_conventions.request_id', requestId)
      }
      // A server span is an error for a 5xx only: a 4xx is the client's (OpenTelemetry's HTTP span status).
      if (status >= 500) {
        span.setAttribute('error.type', String(status))
        span.setStatus({ code: SpanStatusCode.ERROR })
      }
    }
    span.end()
  }
}
