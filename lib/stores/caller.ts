// The request a store call is made for. The plugin runs each request's route steps and handler in
// a scope holding the request (request-scope.ts), when something needs it: stores that route reads
// by caller (read replicas with read-your-writes, docs/stores.md "Read replicas") ask
// `currentCaller()` when they read and when they write; Server-Timing finds the request's clock.
// One mechanism, and the Store contract's calls keep their signatures.
import { AsyncLocalStorage } from 'node:async_hooks'
import { kCaller } from '../symbols.js'

/** What a scope holds: the request, whose caller admission sets once the credentials hold. */
export interface ScopedRequest { readonly [kCaller]: string | null, readonly method: string }

const scopes = new AsyncLocalStorage<ScopedRequest>()

/** Runs `work` (and everything it starts, a body read later included) for `request`. */
export function inRequestScope<T> (request: ScopedRequest, work: () => T): T {
  return scopes.run(request, work)
}

/** The request being served, or undefined outside any (start-up, host code, background work). */
export function currentRequest (): ScopedRequest | undefined {
  return scopes.getStore()
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
