// Request ids (spec "Request headers": X-Request-Id; "Response headers": Request-Id): the client's
// id is echoed when it is safe, else one is generated; never is an unsafe value reflected.
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { kOwnId } from '../symbols.js'

const safeId = /^[A-Za-z0-9._:-]{1,128}$/

// genReqId marks the raw requests whose Fastify id it made (kOwnId), so the log's reqId and
// Request-Id agree. A property rather than a WeakSet: a WeakSet entry per request costs the
// garbage collector more than the whole lookup (benchmarks/README.md).

/** The client's X-Request-Id when it is at most 128 characters of [A-Za-z0-9._:-], else undefined. */
export function acceptedRequestId (value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' && safeId.test(value) ? value : undefined
}

/**
 * Fastify's `genReqId` server option: logs then carry the client's X-Request-Id (when safe) or a
 * generated UUID, the same value the plugin echoes in Request-Id. The plugin cannot set server
 * options itself; pass this to `Fastify()`.
 * @example
 * const app = Fastify({ logger: true, genReqId })
 */
export function genReqId (raw: IncomingMessage): string {
  ;(raw as unknown as Record<symbol, boolean>)[kOwnId] = true
  return acceptedRequestId(raw.headers['x-request-id']) ?? randomUUID()
}

/** First of all (the request edge's first step): Request-Id on every response, errors included. */
export function stampRequestId (request: FastifyRequest, reply: FastifyReply) {
  const id = (request.raw as unknown as Record<symbol, boolean | undefined>)[kOwnId] === true ? request.id : acceptedRequestId(request.headers['x-request-id']) ?? randomUUID()
  reply.header('request-id', id)
}
