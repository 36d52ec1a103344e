// The request edge: the checks every request passes before its route (request id, fixed headers,
// CORS, query length, rate limit, authentication, Accept) run as steps of one onRequest hook. One
// hook instead of seven, and no promise unless a step really waits (an async verifier, Redis): Fastify's
// hook runner and the microtask of each async hook cost more than most of these checks do
// (benchmarks/README.md, "Where the plugin's time goes").
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'

export type MaybePromise<T> = T | Promise<T>

export function isPromise<T> (value: MaybePromise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function'
}

/**
 * A step throws to refuse the request, returns true when it has answered it (a preflight, which
 * never waits), and returns a promise when it must wait; the steps after it wait too.
 */
export type EdgeStep = (request: FastifyRequest, reply: FastifyReply) => boolean | void | Promise<void>

export function edgeHook (steps: readonly EdgeStep[]): onRequestHookHandler {
  return function requestEdge (request, reply, done) {
    let next = 0
    const run = (): void => {
      try {
        while (next < steps.length) {
          const outcome = steps[next++](request, reply)
          if (outcome === true) return
          if (isPromise(outcome)) {
            outcome.then(run, done)
            return
          }
        }
      } catch (error) {
        return done(error as Error)
      }
      done()
    }
    run()
  }
}
