// Idempotency-Key (draft-ietf-httpapi-idempotency-key-header) on POST and PATCH: the first request
// with a key runs, and its answer is kept in the same store transaction as its write; a retry with
// the same key and body gets that answer again with `Idempotent-Replayed: true`, another body a
// 422, a retry while the first still runs a 409. Keys belong to a caller, a method and a path.
import { createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify'
import { ConflictError, HeaderInvalidError, UnprocessableError, withInvalidParams } from './errors.js'
import { knownKeys, positiveIntegerOr, switchableOptions } from './options-check.js'
import type { KeptResponse, Store } from './stores/store.js'
import { kCaller, kKeyedTransaction } from './symbols.js'
// The headers that are part of the answer, kept and replayed with it (the header table says which).
import { keptHeaders } from './headers.js'

export interface IdempotencyOptions {
  /** How long an answer is kept for retries, in seconds. Default 86400 (24 hours). */
  readonly ttlSeconds?: number | undefined
}

export interface ResolvedIdempotency { readonly ttlMillis: number }

const idempotencyKeys = knownKeys({ ttlSeconds: true } satisfies Record<keyof IdempotencyOptions, true>)

/** `false` turns the header off (it is then ignored); anything else is checked here. */
export function resolveIdempotency (value: unknown): ResolvedIdempotency | null {
  const given = switchableOptions(value, idempotencyKeys, 'idempotency', '{ ttlSeconds? }')
  return given === null ? null : Object.freeze({ ttlMillis: positiveIntegerOr(given.ttlSeconds, 'idempotency.ttlSeconds', 86400) * 1000 })
}

export const maxKeyLength = 255
// An sf-string (RFC 8941 §3.3.3): printable ASCII in quotes, `\"` and `\\` escaped; or, as the
// contract allows, the same characters bare, without quotes or spaces.
const quoted = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/
const bare = /^[\x21\x23-\x5b\x5d-\x7e]+$/

/** The key a request sends, unescaped; undefined without the header. Malformed, empty or too long: 400. */
export function readIdempotencyKey (header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined
  const refuse = (reason: string) => withInvalidParams(new HeaderInvalidError(), [{ name: 'Idempotency-Key', reason }])
  if (Array.isArray(header)) throw refuse('must be sent once')
  const text = header.trim()
  const match = quoted.exec(text)
  const key = match !== null ? match[1].replace(/\\(["\\])/g, '$1') : bare.test(text) ? text : undefined
  if (key === undefined) throw refuse('must be a structured-field string ("…") of printable ASCII characters')
  if (key.length === 0) throw refuse('must not be empty')
  if (key.length > maxKeyLength) throw refuse(`must be at most ${maxKeyLength} characters`)
  return key
}

const digest = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex')

/** What a request holds for keyed writes; declared on every request by the pipeline. */
interface KeyedRequest { [kCaller]: string | null, [kKeyedTransaction]: Store | null }

/** Admission records who called, once the credentials hold. */
export function setCaller (request: FastifyRequest, key: string): void {
  (request as unknown as KeyedRequest)[kCaller] = key
}

/** The transaction a keyed request's write must run in, if it is keyed. */
export function keyedTransaction (request: FastifyRequest): Store | null {
  return (request as unknown as KeyedRequest)[kKeyedTransaction]
}

/** Stands for "no body" in a keyed handler's answer, sent once its transaction commits. */
export const noBody = Symbol('no body')

/**
 * An answer without a body (201, 204). Under a key, the handler must not send before the
 * transaction that keeps the answer commits: it returns a mark the keyed handler sends.
 */
export function sendEmpty (reply: FastifyReply): FastifyReply | typeof noBody {
  return keyedTransaction(reply.request) === null ? reply.send() : noBody
}

/** A digest of the key a caller sent, scoped to that caller (its admission key), the method and the path. */
export const scopedKey = (caller: string | null, method: string, path: string, given: string) => digest([caller, method, path, given])

/**
 * What must be the same for a retry: the body's media type (without parameters) and its parsed
 * value with members in one order, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are one request.
 */
export function fingerprintOf (mediaType: string, body: unknown): string {
  return digest([mediaType.split(';', 1)[0].trim().toLowerCase(), canonical(body)])
}

function canonical (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical)
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(Object.keys(value).sort().map(name => [name, canonical((value as Record<string, unknown>)[name])]))
}

/** A keyed request: its scoped key (`scopedKey`) and what a retry must match (`fingerprintOf`). */
export interface Keyed { readonly key: string, readonly fingerprint: string }

/**
 * The key `given` as sent by the caller of `request` (admission recorded who) for `method path`
 * with a body of `mediaType`: an MCP tool call's key is the one its HTTP request would send.
 */
export function keyedAs (request: FastifyRequest, method: string, path: string, given: string, mediaType: string, body: unknown): Keyed {
  return { key: scopedKey((request as unknown as KeyedRequest)[kCaller], method, path, given), fingerprint: fingerprintOf(mediaType, body) }
}

/**
 * The answer to keep for retries, with the headers that are part of it. Only a success gets here:
 * an error is thrown, which rolls the key's transaction back (nothing kept; a retry runs again).
 */
export function keptAnswer (status: number, headerOf: (name: string) => unknown, body: unknown): KeptResponse {
  const headers: Record<string, string> = {}
  for (const name of keptHeaders) {
    const value = headerOf(name)
    if (value !== undefined) headers[name] = String(value)
  }
  return { status, headers, body }
}

/** What a keyed run gives: the answer kept for an earlier request with the key, or the work's own result. */
export type KeyedResult<T> = { readonly replayed: true, readonly response: KeptResponse } | { readonly replayed: false, readonly value: T }

/** The work of a keyed run, in the transaction that claims the key: its result, and the answer to keep. */
export type KeyedWork<T> = (tx: Store) => Promise<{ readonly value: T, readonly kept: KeptResponse }>

/**
 * Runs work under an Idempotency-Key, for any way in (an HTTP route below; the operation core for
 * the others): one transaction of `store` claims the key, runs the work (whose writes join it) and
 * keeps its answer. An error is not kept: the transaction rolls back, and a retry runs again.
 */
export function keyedRunner (settings: ResolvedIdempotency) {
  // Keys whose first request runs through this runner in this process: a second one is 409 before
  // it opens a transaction (instances sharing a database learn it from the store's claim). Replays
  // of a kept answer are not in it: any number run at once.
  const running = new Set<string>()
  /** `warn`: told when purging the store's expired keys afterwards fails. */
  return async function runKeyed<T> (store: Store, { key, fingerprint }: Keyed, work: KeyedWork<T>, warn: (error: unknown) => void): Promise<KeyedResult<T>> {
    if (running.has(key)) throw busy()
    let first = false
    try {
      const result = await store.transaction(async (tx): Promise<KeyedResult<T>> => {
        const claim = await tx.claimKey(key)
        if (claim.kind === 'busy') throw busy()
        if (claim.kind === 'kept') {
          if (claim.fingerprint !== fingerprint) throw new UnprocessableError('This Idempotency-Key was used with another request body; use a new key for a new request.')
          return { replayed: true, response: claim.response }
        }
        first = true
        running.add(key)
        const { value, kept } = await work(tx)
        await tx.keepResponse(key, fingerprint, kept, new Date(Date.now() + settings.ttlMillis))
        return { replayed: false, value }
      })
      purgeNowAndThen(store, warn)
      return result
    } finally {
      if (first) running.delete(key)
    }
  }
}

/**
 * The handler, run under the request's Idempotency-Key when it sends one (`keyedRunner`), its
 * writes joining the transaction that keeps its 2xx answer.
 */
export function idempotent (handler: RouteHandlerMethod, storeOf: (request: FastifyRequest) => Store, settings: ResolvedIdempotency | null): RouteHandlerMethod {
  if (settings === null) return handler
  const runKeyed = keyedRunner(settings)
  return async function keyedHandler (this: unknown, request: FastifyRequest, reply: FastifyReply) {
    const given = readIdempotencyKey(request.headers['idempotency-key'])
    if (given === undefined) return await handler.call(this as never, request, reply)
    const slots = request as unknown as KeyedRequest
    const keyed = keyedAs(request, request.method, request.url.split('?', 1)[0], given, String(request.headers['content-type']), request.body)
    try {
      const outcome = await runKeyed(storeOf(request), keyed, async tx => {
        slots[kKeyedTransaction] = tx
        const answer: unknown = await handler.call(this as never, request, reply)
        const body = answer === noBody ? null : answer
        return { value: body, kept: keptAnswer(reply.statusCode, name => reply.getHeader(name), body) }
      }, error => request.log.warn({ err: error }, 'api-conventions: purging expired Idempotency-Keys failed'))
      if (outcome.replayed) return replay(reply, outcome.response)
      return outcome.value === null ? reply.send() : outcome.value
    } finally {
      slots[kKeyedTransaction] = null
    }
  }
}

/** How often a store's expired keys are purged, at most. */
const purgeInterval = 60_000
const lastPurge = new WeakMap<Store, number>()

/** Expired keys deleted at most once a minute per store, after a keyed request, never awaited by one. */
function purgeNowAndThen (store: Store, warn: (error: unknown) => void) {
  const now = Date.now()
  if (now - (lastPurge.get(store) ?? 0) < purgeInterval) return
  lastPurge.set(store, now)
  store.purgeKeys(new Date(now)).catch(warn)
}

function busy () {
  return new ConflictError('A request with this Idempotency-Key is still being processed; retry later.')
}

function replay (reply: FastifyReply, kept: KeptResponse) {
  reply.code(kept.status).headers(kept.headers).header('idempotent-replayed', 'true')
  return kept.body === null ? reply.send() : kept.body
}
