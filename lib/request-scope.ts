// The scope around each request (stores/caller.ts), entered by the first of the route's steps, so
// that authorization's reads, the handler and every store call they make run in it. Fastify's body
// parser resumes in the context it was started in, so a body that arrives later stays inside.
// Only when something reads it: a scope has a cost on each of the request's promises.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { inRequestScope } from './stores/caller.js'
import type { ScopedRequest } from './stores/caller.js'
import type { Store } from './stores/store.js'

/** Whether any of these stores routes its reads by caller, which needs the scope. */
export function routesReadsByCaller (stores: readonly Store[]): boolean {
  return stores.some(store => store.routesReadsByCaller === true)
}

// The request is what the scope holds: admission sets its caller (idempotency.ts setCaller) before, read when the store asks.
export function enterRequestScope (request: FastifyRequest, _reply: FastifyReply, done: () => void) {
  inRequestScope(request as unknown as ScopedRequest, done)
}
