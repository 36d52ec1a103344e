// The security edge of the plugin (spec "Request headers", "Response headers", "Authentication",
// "Limits"): sets helmet's headers, registers the rate limiter and CORS inside the plugin and orders every hook
// once: request id → headers → CORS → query length → rate limit → auth → (route: content type) →
// Date and audit headers → (route: authorization) → handler. CORS precedes STYLE §3's place so
// that every refusal after it is readable by the browser that asked.
import cors from '@fastify/cors'
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify'
import type { ResolvedOptions } from '../options.js'
import type { ResourceModel } from '../registry/model.js'
import { authorizationHook, createAuthenticator } from './auth.js'
import type { AuthorizedOperation } from './auth.js'
import { checkAuditHeaders, logAuditedWrite } from './audit-headers.js'
import type { AuditValues } from './audit-headers.js'
import { corsPluginOptions } from './cors.js'
import type { MethodsOf } from './cors.js'
import { checkDateHeader } from './date-header.js'
import { createHeaderHooks } from './headers.js'
import { queryLengthHook } from './limits.js'
import { registerRateLimit } from './rate-limit.js'
import { echoRequestId } from './request-id.js'

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

const asArray = <T>(value: T | T[] | undefined): T[] => value === undefined ? [] : Array.isArray(value) ? value : [value]

/** `methodsOf`: the methods a route URL allows (filled as routes are added, read per preflight). */
export async function registerSecurity (app: FastifyInstance, options: ResolvedOptions, models: readonly ResourceModel[], methodsOf: MethodsOf) {
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
    if (authorize !== undefined) route.preParsing = [...asArray(route.preParsing), authorizationHook(authorize, target.model, target.operation, target.item)]
  })

  app.addHook('onRequest', echoRequestId)
  const headers = createHeaderHooks(options.cacheControl, options.deprecation)
  app.addHook('onRequest', headers.setFixedHeaders)
  app.addHook('onSend', headers.setRouteHeaders)
  // CORS comes before the refusals that follow (414, 429, 401) so that they carry
  // Access-Control-Allow-Origin: without it a browser hides the whole answer, Retry-After included.
  // Preflights are answered inside this hook, so they never reach the rate limit or authentication.
  await app.register(cors, corsPluginOptions(options.cors, options.auth?.apiKey !== undefined, methodsOf))
  app.addHook('onRequest', queryLengthHook(options.maxQueryLength))

  if (options.rateLimit !== null) {
    const keyOf = async (request: FastifyRequest) => {
      const result = await authenticator?.authenticate(request)
      return result?.kind === 'authenticated' ? result.key : undefined
    }
    app.addHook('onRequest', await registerRateLimit(app, options.rateLimit, keyOf))
  }

  if (authenticator !== null) app.addHook('onRequest', authenticator.requireAuthentication)

  // preParsing runs after every onRequest hook, the routes' 415 check included.
  app.addHook('preParsing', checkDateHeader)
  app.addHook('preParsing', checkAuditHeaders)
  app.addHook('onResponse', logAuditedWrite)
}
