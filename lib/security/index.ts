// The security steps of the request pipeline (spec "Request headers", "Response headers",
// "Authentication", "Limits") that need more than one module: admission (rate limit, then
// authentication), the per-route policies, and the Date and audit header check. Their order
// among the other steps is pipeline.ts's.
import type { FastifyReply, FastifyRequest, RequestPayload, RouteOptions } from 'fastify'
import type { ResolvedOptions } from '../options.js'
import type { RouteSpec } from '../route-spec.js'
import type { Store } from '../stores/store.js'
import { authorizationHook, createAuthenticator } from './auth.js'
import type { Views } from '../rules/view.js'
import type { Authentication, Authenticator, AuthorizedOperation } from './auth.js'
import { checkAuditHeaders, logAuditedWrite, writeMethods } from './audit-headers.js'
import type { AuditValues } from './audit-headers.js'
import { dateHeaderProblem } from './date-header.js'
import { isPromise } from './edge.js'
import type { EdgeStep } from './edge.js'
import { addressKey, createRateLimiter } from './rate-limit.js'
import { setCaller } from '../idempotency.js'
import type { RateLimiter } from './rate-limit.js'

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
    /** A page (the docs page): helmet's browser-document headers too, whatever `headerProfile` says. */
    documentHeaders?: boolean
    /** Cache-Control of this route's successful GET/HEAD responses instead of the API's. */
    cacheControl?: string
  }
}

/** Route limits from the options, on every route of the plugin. */
export function routeLimits (options: ResolvedOptions) {
  return function applyRouteLimits (route: RouteOptions) {
    if (options.bodyLimit !== undefined) route.bodyLimit ??= options.bodyLimit
    if (options.handlerTimeout !== undefined) route.handlerTimeout ??= options.handlerTimeout
  }
}

/** A resource's own header policy (Cache-Control, deprecation) on the routes serving it. */
export function resourcePolicies (options: ResolvedOptions) {
  return function applyResourcePolicy (route: RouteOptions, spec: RouteSpec | undefined) {
    const policy = spec?.resource === null || spec === undefined ? undefined : options.resourcePolicies.get(spec.resource.name)
    if (policy !== undefined) route.config = { ...policy, ...route.config }
  }
}

/** The authorization check of a resource route, when the options have an `authorize` function. */
export function authorizationFor (options: ResolvedOptions) {
  const authorize = options.auth?.authorize
  return function authorizationOf (_route: RouteOptions, spec: RouteSpec | undefined) {
    if (authorize === undefined || spec === undefined || spec.resource === null) return undefined
    // A route with a resource has its store.
    return authorizationHook(authorize, spec.resource, spec.store as Store, spec.views as Views, spec.operation as AuthorizedOperation, spec.item)
  }
}

/** The audit log line of a write (spec "Request headers": audit headers), on routes that write. */
export function auditLogOf (_route: RouteOptions, spec: RouteSpec | undefined) {
  return spec !== undefined && writeMethods.has(spec.method) ? logAuditedWrite : undefined
}

/** Authentication, when the options configure it. */
export const authenticatorFor = (options: ResolvedOptions) => options.auth === null ? null : createAuthenticator(options.auth)

/** The rate limiter, when the options configure one. */
export const rateLimiterFor = (options: ResolvedOptions) => options.rateLimit === null ? null : createRateLimiter(options.rateLimit)

/**
 * The edge's admission step: the rate limit, keyed by principal when the credentials hold (else by
 * client address), then authentication (401 unless the route is public). Both need the
 * credentials, examined once; a preflight never gets here.
 */
export function admission (authenticator: Authenticator | null, limit: RateLimiter | null): EdgeStep | undefined {
  if (authenticator === null) return limit === null ? undefined : (request, reply) => limit(request, reply, addressKey(request))
  const admit = (request: FastifyRequest, reply: FastifyReply, result: Authentication) => {
    if (result.kind === 'authenticated') setCaller(request, result.key)
    const counted = limit?.(request, reply, result.kind === 'authenticated' ? `principal:${result.key}` : addressKey(request))
    if (isPromise(counted)) return counted.then(() => authenticator.requireAuthentication(request, result))
    authenticator.requireAuthentication(request, result)
  }
  return function admitRequest (request, reply) {
    const result = authenticator.authenticate(request)
    return isPromise(result) ? result.then(settled => admit(request, reply, settled)) : admit(request, reply, result)
  }
}

/** Date and audit headers, after the edge (which may refuse sooner) and before the body is read: one 400 names every bad one. */
export function checkRequestHeaders (request: FastifyRequest, _reply: FastifyReply, payload: RequestPayload, done: (error: Error | null, payload?: RequestPayload) => void) {
  try {
    const date = dateHeaderProblem(request)
    checkAuditHeaders(request, date === undefined ? [] : [date])
  } catch (error) {
    return done(error as Error)
  }
  done(null, payload)
}
