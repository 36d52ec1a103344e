// The request pipeline: every hook and body parser the plugin adds, by phase, each step named.
// Each list is in the order requests meet its steps. Fastify runs a phase's hooks for every
// request before a route's own, so the steps only some routes take (`routeSteps`) come after the
// others of their phase. Adding a step is one line here plus its module.
import type { FastifyInstance, onRequestHookHandler, onResponseHookHandler, onSendHookHandler, preParsingHookHandler, preValidationHookHandler, RouteOptions } from 'fastify'
import { enterRequestScope, routesReadsByCaller } from './request-scope.js'
import type { ResolvedOptions } from './options.js'
import type { ResourceModel } from './registry/model.js'
import { namesRecord, refuseEmptyId } from './routes/table.js'
import { routeSpecIn } from './route-spec.js'
import type { RouteSpec } from './route-spec.js'
import { requireBodyType } from './http/body-types.js'
import { checkCharset, createResponseFormats, formatParsers } from './formats/index.js'
import type { BodyParser } from './formats/index.js'
import { checkStorableText, jsonParser } from './formats/json.js'
import { createAcceptCheck } from './http/negotiation.js'
import { edgeHook } from './security/edge.js'
import type { EdgeStep } from './security/edge.js'
import { createHeaderHooks } from './security/headers.js'
import { stampRequestId } from './security/request-id.js'
import { createCorsCheck } from './security/cors.js'
import { protocolCheck, queryStringCheck } from './security/limits.js'
import {
  admission, auditLogOf, authenticatorFor, authorizationFor, checkRequestHeaders, rateLimiterFor,
  resourcePolicies, routeLimits
} from './security/index.js'
import { kCaller, kFormat, kKeyedTransaction, kPlainJson, kRecordRead, kSpan, kStoreTime } from './symbols.js'
import { callerBodyCheck } from './rules/write.js'
import type { OperationContext } from './operations/context.js'
import type { StoreTiming } from './store-timing.js'
import type { RequestTracing } from './tracing.js'
import { bodyWrites } from './operations/table.js'
import type { BodyWrite } from './operations/table.js'

interface Step<F> { readonly name: string, readonly run: F }

interface RouteHooks {
  onRequest: onRequestHookHandler
  preParsing: preParsingHookHandler
  preValidation: preValidationHookHandler
  onResponse: onResponseHookHandler
}

/** A step only some routes take: its hook for one route, or undefined when the route needs none. */
type RouteStep = { [P in keyof RouteHooks]: { readonly name: string, readonly phase: P, readonly hookFor: (route: RouteOptions, spec: RouteSpec | undefined) => RouteHooks[P] | undefined } }[keyof RouteHooks]

export interface Pipeline {
  /** Request fields, initialised on the prototype so that requests never add them. */
  readonly requestFields: ReadonlyArray<readonly [string | symbol, null | false]>
  /** Body parsers by media type; every other type is a 415. */
  readonly parsers: readonly BodyParser[]
  /** Route settings, applied as each route is added. */
  readonly onRoute: ReadonlyArray<Step<(route: RouteOptions, spec: RouteSpec | undefined) => void>>
  /** Before the edge: what must see every request the plugin answers, refusals included. */
  readonly onRequest: ReadonlyArray<Step<onRequestHookHandler>>
  /** Every request's first steps, run as one onRequest hook (security/edge.ts). */
  readonly edge: ReadonlyArray<Step<EdgeStep | undefined>>
  readonly preParsing: ReadonlyArray<Step<preParsingHookHandler>>
  readonly onSend: ReadonlyArray<Step<onSendHookHandler>>
  /** Every answered request's, unknown paths' included. */
  readonly onResponse: ReadonlyArray<Step<onResponseHookHandler>>
  /** Added to the routes that need them, after the steps above of their phase. */
  readonly routeSteps: readonly RouteStep[]
}

const bodiless = new Set(['GET', 'HEAD'])

/** Whether requests to the route may carry a body (every method but GET and HEAD may). */
const mayHaveBody = (route: RouteOptions) => ![route.method].flat().every(method => bodiless.has(method))

/**
 * The plugin's pipeline for these options; `storeTiming` when Server-Timing is on (its stores are
 * then in `context`), `tracing` when requests are traced.
 */
export function buildPipeline (app: FastifyInstance, options: ResolvedOptions, models: readonly ResourceModel[], context: OperationContext, storeTiming: StoreTiming | null = null, tracing: RequestTracing | null = null): Pipeline {
  const headers = createHeaderHooks(options, options.deprecation, options.compression !== null)
  const formats = createResponseFormats(app, models)
  // Only when read: by a store that routes by caller, or by Server-Timing's clock.
  const requestScoped = storeTiming !== null || routesReadsByCaller(models.map(context.storeOf))
  return {
    requestFields: [['principal', null], ['audit', null], [kPlainJson, false], [kRecordRead, null], [kFormat, null], [kCaller, null], [kKeyedTransaction, null], [kStoreTime, null], [kSpan, null]],
    parsers: [jsonParser(app), ...formatParsers],
    onRoute: [
      { name: 'routeLimits', run: routeLimits(options) },
      { name: 'resourcePolicy', run: resourcePolicies(options) }
    ],
    // First of all: the span of a request the edge refuses (401, 429) ends with its status too.
    onRequest: tracing === null ? [] : [{ name: 'tracing', run: tracing.startSpan }],
    edge: [
      { name: 'fixedHeaders', run: headers.setFixedHeaders },
      { name: 'requestId', run: stampRequestId },
      // Before every refusal that follows (414, 429, 401): without Access-Control-Allow-Origin a
      // browser hides the whole answer, Retry-After included.
      { name: 'cors', run: createCorsCheck(options.cors, options.auth?.apiKey !== undefined) },
      { name: 'queryLength', run: queryStringCheck(options.maxQueryLength) },
      { name: 'protocol', run: protocolCheck },
      // The rate limit, then authentication: both read the credentials, once.
      { name: 'admission', run: admission(authenticatorFor(options), rateLimiterFor(options)) },
      { name: 'accept', run: createAcceptCheck(formats) }
    ],
    preParsing: [
      { name: 'requestHeaders', run: checkRequestHeaders }
    ],
    onSend: [
      { name: 'routeHeaders', run: headers.setRouteHeaders },
      ...(storeTiming === null ? [] : [{ name: 'serverTiming', run: storeTiming.setHeader }])
    ],
    onResponse: tracing === null ? [] : [{ name: 'tracing', run: tracing.endSpan }],
    routeSteps: [
      // First of the route's steps: a path with an empty id is not found, whatever its body.
      { name: 'emptyId', phase: 'onRequest', hookFor: (_route, spec) => namesRecord(spec) ? refuseEmptyId : undefined },
      { name: 'contentType', phase: 'onRequest', hookFor: (_route, spec) => spec === undefined || spec.bodyTypes.length === 0 ? undefined : requireBodyType(spec.bodyTypes) },
      { name: 'charset', phase: 'onRequest', hookFor: route => mayHaveBody(route) ? checkCharset : undefined },
      // Before authorization, which may read the record: the store calls after it are the request's.
      { name: 'requestScope', phase: 'onRequest', hookFor: () => requestScoped ? enterRequestScope : undefined },
      // Before the body is read: a refused caller's body is never parsed.
      { name: 'authorization', phase: 'preParsing', hookFor: authorizationFor(options) },
      { name: 'storableText', phase: 'preValidation', hookFor: route => mayHaveBody(route) ? checkStorableText : undefined },
      // Before the route's validation: fields the caller may not read are unknown names to it.
      { name: 'callerBody', phase: 'preValidation', hookFor: (_route, spec) => spec?.resource == null || !bodyWrites.has(spec.operation) ? undefined : callerBodyCheck(spec.resource, spec.operation as BodyWrite, { rules: context.rulesOf(spec.resource), views: context.views, ajv: context.ajv }) },
      { name: 'auditLog', phase: 'onResponse', hookFor: auditLogOf },
      { name: 'metrics', phase: 'onResponse', hookFor: route => options.metrics?.observerFor(route) }
    ]
  }
}

/** Adds the pipeline's hooks and parsers to the plugin's instance, before any route. */
export function installPipeline (app: FastifyInstance, pipeline: Pipeline) {
  for (const [name, initial] of pipeline.requestFields) app.decorateRequest(name, initial)
  app.removeAllContentTypeParsers()
  for (const parser of pipeline.parsers) {
    if (parser.parseAs === 'buffer') app.addContentTypeParser([...parser.types], { parseAs: 'buffer' }, parser.parse)
    else app.addContentTypeParser([...parser.types], parser.parse)
  }
  app.addHook('onRoute', function applyPipeline (route: RouteOptions) {
    const spec = routeSpecIn(route)
    for (const step of pipeline.onRoute) step.run(route, spec)
    for (const step of pipeline.routeSteps) {
      const hook = step.hookFor(route, spec)
      if (hook !== undefined) addRouteHook(route, step.phase, hook)
    }
  })
  for (const step of pipeline.onRequest) app.addHook('onRequest', step.run)
  app.addHook('onRequest', edgeHook(pipeline.edge.flatMap(step => step.run === undefined ? [] : [step.run])))
  for (const step of pipeline.preParsing) app.addHook('preParsing', step.run)
  for (const step of pipeline.onSend) app.addHook('onSend', step.run)
  for (const step of pipeline.onResponse) app.addHook('onResponse', step.run)
}

/** Appends `hook` to the route's own `phase` hooks. */
function addRouteHook (route: RouteOptions, phase: keyof RouteHooks, hook: RouteHooks[keyof RouteHooks]) {
  const current = route[phase] as unknown
  const hooks = current === undefined ? [] : Array.isArray(current) ? current : [current]
  ;(route as unknown as Record<string, unknown[]>)[phase] = [...hooks, hook]
}
