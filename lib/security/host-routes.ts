// A host's own routes outside the plugin (/health, paths outside its prefix) answered the way the
// plugin answers its own: the spec's "Response headers", Request-Id, the Origin and Host checks,
// and problem+json errors.
import type { FastifyInstance } from 'fastify'
import { ForbiddenError } from '../errors.js'
import { installProblemHandlers } from '../problem.js'
import { securityHeaders } from './headers.js'
import { hostProblemTypeBase, protocolCheck } from './limits.js'
import { stampRequestId } from './request-id.js'

/** Options of `guardHostRoutes`; the first three as the plugin's options of the same names. */
export interface HostRouteOptions {
  /** The plugin's prefix: problem `type`s point at its problem pages (`/v1/problems/not-found`). */
  readonly prefix?: string | undefined
  /** Where problem `type`s point instead of `${prefix}/problems/`. */
  readonly problemTypeBase?: string | undefined
  /** `flat` (default): the problem is the body; `envelope`: it is wrapped in `errors`. */
  readonly errorFormat?: 'flat' | 'envelope' | undefined
  /** Origins accepted in `Origin`; a request naming another is 403. Default: Origin is not checked. */
  readonly allowedOrigins?: readonly string[] | undefined
  /** The methods a path has, for 405 with Allow; a path it gives none for is 404. Default: every path 404. */
  readonly allowedMethods?: (path: string) => readonly string[] | undefined
}

/**
 * Gives a Fastify scope what the plugin gives its routes: the security headers and a Request-Id on
 * every answer, 403 for an Origin not allowed, 400 naming Host for an HTTP/1.1 request without one
 * (with `http: { requireHostHeader: false }`, else Node answers a bare 400 first), and
 * problem+json for errors and unknown paths (404, or 405 with Allow). Call it first thing in a
 * scope of its own, registered beside the plugin, not around it (its hook would run twice on the
 * plugin's routes), and add the scope's routes after it: a route keeps the error handler in force
 * when it is added.
 * @example
 * await app.register(async function outsideTheApi (scope) {
 *   guardHostRoutes(scope, { prefix: '/v1', allowedMethods: path => path === '/health' ? ['GET', 'HEAD'] : undefined })
 *   scope.get('/health', async () => ({ status: 'ok' }))
 * })
 * await app.register(apiConventions, { prefix: '/v1', resources })
 */
export function guardHostRoutes (scope: FastifyInstance, options: HostRouteOptions = {}): void {
  const headers = securityHeaders()
  const allowed = options.allowedOrigins === undefined ? undefined : new Set(options.allowedOrigins)
  scope.addHook('onRequest', function guardHostRoute (request, reply, done) {
    reply.headers(headers)
    stampRequestId(request, reply)
    const origin = request.headers.origin
    if (origin !== undefined && allowed !== undefined && !allowed.has(origin)) return done(new ForbiddenError('The Origin of this request is not allowed.'))
    try {
      protocolCheck(request)
    } catch (error) {
      return done(error as Error)
    }
    done()
  })
  installProblemHandlers(scope, {
    errorFormat: options.errorFormat ?? 'flat',
    typeBase: hostProblemTypeBase(options),
    allowedMethods: options.allowedMethods ?? (() => undefined)
  })
}
