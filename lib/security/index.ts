// The security edge of the plugin (spec "Request headers", "Response headers", "Authentication",
// "Limits"), in one order for every request: headers → request id → CORS → query length → rate
// limit → auth → Accept (the steps of one onRequest hook, edge.ts) → (route: content type) → Date and audit
// headers → (route: authorization) → handler. CORS precedes STYLE §3's place so that every
// refusal after it is readable by the browser that asked.
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import type { ResolvedOptions } from '../options.js'
import type { ResourceModel } from '../registry/model.js'
import { authorizationHook, createAuthenticator } from './auth.js'
import type { Authentication, Authenticator, AuthorizedOperation } from './auth.js'
import { checkAuditHeaders, logAuditedWrite, writeMethods } from './audit-headers.js'
import type { AuditValues } from './audit-headers.js'
import { createCorsCheck, registerPreflightRoute } from './cors.js'
import type { MethodsOf } from './cors.js'
import { dateHeaderProblem } from './date-header.js'
import { addRouteHook } from '../route-hooks.js'
import { edgeHook, isPromise } from './edge.js'
import type { EdgeStep } from './edge.js'
import { createHeaderHooks } from './headers.js'
import { protocolCheck, queryStringCheck, routeUnmetExpectations } from './limits.js'
import { addressKey, createRateLimiter } from './rate-limit.js'
import type { RateLimiter } from './rate-limit.js'
import { stampRequestId } from './request-id.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** Who made the request, as the auth verifier answered; null on public routes or when `auth` is not configured. */
    principal: unknown
    /** The decoded audit headers; null when the request carried none. */
    audit: AuditValues | null
  }
  interface FastifyContextConfig {
    /** Served without authentication (problem pages, openapi.json, docs). */
    public?: boolean
    /** This route's Content-Security-Policy instead of `default-src 'none'; frame-ancestors 'none'`. */
    contentSecurityPolicy?: string
    /** Cache-Control of this route's successful GET/HEAD responses instead of the API's. */
    cacheControl?: string
  }
}

interface RouteTarget { readonly model: ResourceModel, readonly operation: AuthorizedOperation, readonly item: boolean }

/** Path pattern → method → the resource operation it serves, known at registration (never matched per request). */
function resourceRoutes (models: readonly ResourceModel[]) {
  const routes = new Map<string, Readonly<Record<string, RouteTarget>>>()
  const target = (model: ResourceModel, operation: AuthorizedOperation, item = false) => ({ model, operation, item })
  for (const model of models) {
    const list = target(model, 'list')
    const retrieve = target(model, 'retrieve', true)
    routes.set(`/${model.name}`, { GET: list, HEAD: list, POST: target(model, 'create'), OPTIONS: target(model, 'capabilities') })
    routes.set(`/${model.name}/:id`, {
      GET: retrieve,
      HEAD: retrieve,
      PUT: target(model, 'replace', true),
      PATCH: target(model, 'modify', true),
      DELETE: target(model, 'delete', true),
      OPTIONS: target(model, 'capabilities')
    })
    for (const relation of model.relations.values()) {
      if (relation.kind !== 'many') continue
      const nested = target(relation.target, 'list')
      routes.set(`/${model.name}/:id/${relation.name}`, { GET: nested, HEAD: nested, OPTIONS: target(relation.target, 'capabilities') })
    }
  }
  return routes
}

/**
 * The edge's admission step: the rate limit, keyed by principal when the credentials hold (else by
 * client address), then authentication (401 unless the route is public). Both need the
 * credentials, examined once; a preflight never gets here.
 */
function admission (authenticator: Authenticator | null, limit: RateLimiter | null): EdgeStep | undefined {
  if (authenticator === null) return limit === null ? undefined : (request, reply) => limit(request, reply, addressKey(request))
  const admit = (request: FastifyRequest, reply: FastifyReply, result: Authentication) => {
    const counted = limit?.(request, reply, result.kind === 'authenticated' ? `principal:${result.key}` : addressKey(request))
    if (isPromise(counted)) return counted.then(() => authenticator.requireAuthentication(request, result))
    authenticator.requireAuthentication(request, result)
  }
  return function admitRequest (request, reply) {
    const result = authenticator.authenticate(request)
    return isPromise(result) ? result.then(settled => admit(request, reply, settled)) : admit(request, reply, result)
  }
}

/**
 * `methodsOf`: the methods a route URL allows (filled as routes are added, read per preflight).
 * `negotiate`: the Accept check (406), the edge's last step.
 */
export function registerSecurity (app: FastifyInstance, options: ResolvedOptions, models: readonly ResourceModel[], methodsOf: MethodsOf, negotiate: EdgeStep) {
  app.decorateRequest('principal', null)
  app.decorateRequest('audit', null)
  const authenticator = options.auth === null ? null : createAuthenticator(options.auth)
  const authorize = options.auth?.authorize
  const routes = resourceRoutes(models)

  // Per-route settings, prepared as routes are added: limits, resource policies, authorization.
  app.addHook('onRoute', function applyRoutePolicies (route: RouteOptions & { routePath: string }) {
    if (options.bodyLimit !== undefined) route.bodyLimit ??= options.bodyLimit
    if (options.handlerTimeout !== undefined) route.handlerTimeout ??= options.handlerTimeout
    const target = routes.get(route.routePath)?.[String(route.method)]
    if (target === undefined) return
    const policy = options.resourcePolicies.get(target.model.name)
    if (policy !== undefined) route.config = { ...policy, ...route.config }
    if (authorize !== undefined) addRouteHook(route, 'preParsing', authorizationHook(authorize, target.model, target.operation, target.item))
  })
  app.addHook('onRoute', function addAuditLog (route: RouteOptions) {
    if ([route.method].flat().some(method => writeMethods.has(method))) addRouteHook(route, 'onResponse', logAuditedWrite)
  })

  const headers = createHeaderHooks(options.cacheControl, options.deprecation)
  app.addHook('onSend', headers.setRouteHeaders)

  // CORS comes before the refusals that follow (414, 429, 401) so that they carry
  // Access-Control-Allow-Origin: without it a browser hides the whole answer, Retry-After included.
  const steps: Array<EdgeStep | undefined> = [
    headers.setFixedHeaders,
    stampRequestId,
    createCorsCheck(options.cors, options.auth?.apiKey !== undefined, methodsOf),
    queryStringCheck(options.maxQueryLength),
    protocolCheck,
    admission(authenticator, options.rateLimit === null ? null : createRateLimiter(options.rateLimit)),
    negotiate
  ]
  app.addHook('onRequest', edgeHook(steps.filter(step => step !== undefined)))
  routeUnmetExpectations(app.server, app.prefix)
  registerPreflightRoute(app)

  // preParsing runs after every onRequest hook, the routes' 415 check included.
  app.addHook('preParsing', function checkRequestHeaders (request, _reply, payload, done) {
    try {
      const date = dateHeaderProblem(request)
      checkAuditHeaders(request, date === undefined ? [] : [date])
    } catch (error) {
      return done(error as Error)
    }
    done(null, payload)
  })
}
