// Small pieces the collection and item routes share.
import { createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ResourceModel } from '../registry/model.js'
import type { Fields } from '../stores/store.js'

/** Optional nullable fields left out are stored as null, so every store returns the same shape. */
export function normalizeRecord (model: ResourceModel, data: Fields): Fields {
  const record: Fields = { ...data }
  for (const field of model.fields.values()) {
    if (record[field.name] === undefined && field.nullable) record[field.name] = null
  }
  return record
}

export function writeHeaders (reply: FastifyReply, etag: string, modifiedAt: Date) {
  reply.header('etag', etag).header('last-modified', modifiedAt.toUTCString())
}

/** A short, stable tag for a representation variant (ETags differ per representation: RFC 9110 §8.8.3). */
export function variantTag (text: string): string {
  return text === '' ? '' : createHash('sha256').update(text).digest('base64url').slice(0, 12)
}

/** QUERY CAPABILITIES: the allowed methods, in `Allow` and in the body. */
export function capabilitiesHandler (methods: readonly string[]) {
  const allow = methods.join(', ')
  const body = { data: { methods } }
  return function queryCapabilities (_request: FastifyRequest, reply: FastifyReply) {
    reply.header('allow', allow)
    return reply.send(body)
  }
}
