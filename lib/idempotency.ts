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

// The headers that are part of the answer, kept and replayed with it (not the per-request ones:
// Request-Id, Date, rate-limit counts).
const keptHeaders = ['location', 'etag', 'last-modified', 'preference-applied'] as const

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

/**
 * What must be the same for a retry: the body's media type (without parameters) and its parsed
 * value with members in one order, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are one request.
 */
function fingerprintOf (request: FastifyRequest): string {
  const mediaType = String(request.headers['content-type']).split(';', 1)[0].trim().toLowerCase()
  return digest([mediaType, canonical(request.body)])
}

function canonical (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical)
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(Object.keys(value).sort().map(name => [name, canonical((value as Record<string, unknown>)[name])]))
}

/**
 * The handler, run under the request's Idempotency-Key when it sends one: in one transaction of
 * the request's store that claims the key, runs the handler (whose writes join it) and keeps its 2xx answer.
 * An error answer is not kept: the transaction rolls back, and a retry runs again.
 */
export function idempotent (handler: RouteHandlerMethod, storeOf: (request: FastifyRequest) => Store, settings: ResolvedIdempotency | null): RouteHandlerMethod {
  if (settings === null) return handler
  // Keys whose first request runs on this route in this process: a second one is 409 before it
  // opens a transaction (instances sharing a database learn it from the store's claim). Replays
  // of a kept answer are not in it: any number run at once.
  const running = new Set<string>()
  return async function keyedHandler (this: unknown, request: FastifyRequest, reply: FastifyReply) {
    const given = readIdempotencyKey(request.headers['idempotency-key'])
    if (given === undefined) return await handler.call(this as never, request, reply)
    const slots = request as unknown as KeyedRequest
    const key = digest([slots[kCaller], request.method, request.url.split('?', 1)[0], given])
    if (running.has(key)) throw busy()
    let first = false
    try {
      const fingerprint = fingerprintOf(request)
      const store = storeOf(request)
      const outcome = await store.transaction(async tx => {
        const claim = await tx.claimKey(key)
        if (claim.kind === 'busy') throw busy()
        if (claim.kind === 'kept') {
          if (claim.fingerprint !== fingerprint) throw new UnprocessableError('This Idempotency-Key was used with another request body; use a new key for a new request.')
          return { replayed: true, response: claim.response } as const
        }
        first = true
        running.add(key)
        slots[kKeyedTransaction] = tx
        const answer: unknown = await handler.call(this as never, request, reply)
        const body = answer === noBody ? null : answer
        if (reply.statusCode < 300) {
          const headers: Record<string, string> = {}
          for (const name of keptHeaders) {
            const value = reply.getHeader(name)
            if (value !== undefined) headers[name] = String(value)
          }
          await tx.keepResponse(key, fingerprint, { status: reply.statusCode, headers, body }, new Date(Date.now() + settings.ttlMillis))
        }
        return { replayed: false, body } as const
      })
      purgeNowAndThen(store, request)
      if (outcome.replayed) return replay(reply, outcome.response)
      return outcome.body === null ? reply.send() : outcome.body
    } finally {
      slots[kKeyedTransaction] = null
      if (first) running.delete(key)
    }
  }
}

/** How often a store's expired keys are purged, at most. */
const purgeInterval = 60_000
const lastPurge = new WeakMap<Store, number>()

/** Expired keys deleted at most once a minute per store, after a keyed request, never awaited by one. */
function purgeNowAndThen (store: Store, request: FastifyRequest) {
  const now = Date.now()
  if (now - (lastPurge.get(store) ?? 0) < purgeInterval) return
  lastPurge.set(store, now)
  store.purgeKeys(new Date(now)).catch((error: unknown) => request.log.warn({ err: error }, 'api-conventions: purging expired Idempotency-Keys failed'))
}

function busy () {
  return new ConflictError('A request with this Idempotency-Key is still being processed; retry later.')
}

function replay (reply: FastifyReply, kept: KeptResponse) {
  reply.code(kept.status).headers(kept.headers).header('idempotent-replayed', 'true')
  return kept.body === null ? reply.send() : kept.body
}
