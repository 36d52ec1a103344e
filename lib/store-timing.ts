// Server-Timing (W3C Server Timing) with the time a request spent on its store: `store;dur=1.2`,
// in milliseconds, on every answer of the API when the `serverTiming` option is on. Off, nothing
// here runs: no hook is added and the stores are not wrapped.
import { performance } from 'node:perf_hooks'
import type { FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify'
import { currentRequest } from './stores/caller.js'
import type { Store } from './stores/store.js'
import type { StoreOf } from './operations/stores.js'
import { kStoreTime } from './symbols.js'

/**
 * A request's time on the store: while at least one call is pending, the clock runs; calls that
 * overlap (a LIST and its count, expand's lookups) count once, so `millis` is wall time waited.
 */
interface StoreClock { pending: number, since: number, millis: number }

interface TimedRequest { [kStoreTime]: StoreClock | null }

// The calls of the Store contract a request waits for. A transaction's own calls run inside
// `transaction`, whose time they are part of: the connection is held for the whole of it.
const timedCalls = ['list', 'aggregate', 'get', 'getMany', 'create', 'update', 'remove', 'transaction', 'claimKey', 'keepResponse'] as const
// The others: the purge of expired keys, which no request awaits, start-up, metrics, shutdown, and
// an export's read, which goes on after the answer's headers (and Server-Timing) have left.
const untimedCalls = ['purgeKeys', 'prepare', 'poolStats', 'close', 'exportList'] as const

export interface StoreTiming {
  /** The stores the routes use, each wrapped once so that its calls are timed. */
  readonly timedStores: (storeOf: StoreOf) => StoreOf
  /** onSend: the Server-Timing field. */
  readonly setHeader: onSendHookHandler
}

/**
 * The handlers hold their store from registration, so a call finds its request through the
 * request scope (request-scope.ts), which the pipeline enters while Server-Timing is on.
 */
export function createStoreTiming (): StoreTiming {
  const wrapped = new Map<Store, Store>()
  const timed = (store: Store): Store => {
    let wrapper = wrapped.get(store)
    if (wrapper === undefined) {
      wrapper = timedStore(store)
      wrapped.set(store, wrapper)
    }
    return wrapper
  }
  return {
    timedStores: storeOf => model => timed(storeOf(model)),
    setHeader: function setServerTiming (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error: null, payload: unknown) => void) {
      // A request refused before its route's steps (401, 429) never waited on the store.
      const millis = (request as unknown as TimedRequest)[kStoreTime]?.millis ?? 0
      reply.header('server-timing', `store;dur=${millis.toFixed(1)}`)
      done(null, payload)
    } as onSendHookHandler
  }
}

function timedStore (store: Store): Store {
  // Every call is made on the store itself, which may keep private fields.
  const wrapper: Record<string, unknown> = {}
  for (const name of untimedCalls) wrapper[name] = store[name]?.bind(store)
  // Not a call: the plugin reads it from the wrapper to decide on the request scope (request-scope.ts).
  wrapper.routesReadsByCaller = store.routesReadsByCaller
  for (const name of timedCalls) {
    const call = store[name] as ((...args: unknown[]) => Promise<unknown>) | undefined
    // An optional call the store lacks stays absent.
    if (call === undefined) continue
    wrapper[name] = (...args: unknown[]) => {
      const request = currentRequest() as unknown as TimedRequest | undefined
      // Outside a request (start-up, the purge of expired keys): nothing to time.
      if (request === undefined) return call.apply(store, args)
      const clock = request[kStoreTime] ??= { pending: 0, since: 0, millis: 0 }
      if (clock.pending++ === 0) clock.since = performance.now()
      return call.apply(store, args).finally(() => {
        if (--clock.pending === 0) clock.millis += performance.now() - clock.since
      })
    }
  }
  return wrapper as unknown as Store
}
