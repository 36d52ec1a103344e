// Who a store call is made for, for stores that route reads by caller (read replicas with
// read-your-writes, docs/stores.md "Read replicas"). The plugin runs each request's hooks and
// handler in a scope holding the request; such a store asks `currentCaller()` when it reads and
// when it writes. One mechanism, and the Store contract's calls keep their signatures.
import { AsyncLocalStorage } from 'node:async_hooks'
import { kCaller } from '../symbols.js'

/** What a scope holds: the request, whose caller admission sets once the credentials hold. */
export interface CallerHolder { readonly [kCaller]: string | null, readonly method: string }

const scopes = new AsyncLocalStorage<CallerHolder>()

/** Runs `work` (and everything it starts) as `holder`'s caller. */
export function inCallerScope<T> (holder: CallerHolder, work: () => T): T {
  return scopes.run(holder, work)
}

/**
 * The caller of the request being served: its principal key, or '' for a request without one
 * and for calls made outside any request (start-up seeding, host code). Those share one
 * identity, so they too read what they wrote.
 */
export function currentCaller (): string {
  return scopes.getStore()?.[kCaller] ?? ''
}

const reading = new Set(['GET', 'HEAD', 'OPTIONS'])

/** Whether the request being served writes: what it reads to decide (authorization), it reads where it writes. */
export function isWriting (): boolean {
  const method = scopes.getStore()?.method
  return method !== undefined && !reading.has(method)
}
