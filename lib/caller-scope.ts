// The caller scope around each request, for stores that route reads by caller (read replicas with
// read-your-writes, stores/caller.ts): entered before the route's own steps, entered again once the
// body has been read, so that the handler and every store call it makes run in it.
import type { FastifyReply, FastifyRequest, RequestPayload } from 'fastify'
import { inCallerScope } from './stores/caller.js'
import type { CallerHolder } from './stores/caller.js'
import type { Store } from './stores/store.js'

/** Whether any of these stores asks for the scope. */
export function routesReadsByCaller (stores: readonly Store[]): boolean {
  return stores.some(store => store.routesReadsByCaller === true)
}

// The request is the holder: admission sets its caller (idempotency.ts setCaller), read when the store asks.
export function enterCallerScope (request: FastifyRequest, _reply: FastifyReply, payload: RequestPayload, done: (error: Error | null, payload?: RequestPayload) => void) {
  inCallerScope(request as unknown as CallerHolder, () => done(null, payload))
}

export function reenterCallerScope (request: FastifyRequest, _reply: FastifyReply, done: () => void) {
  inCallerScope(request as unknown as CallerHolder, done)
}
