// Small pieces the collection and item routes share.
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

// Formatting a date costs more than the rest of writeHeaders: a stored record's time (the memory
// store hands out the same Date on every read) is formatted once.
const httpDates = new WeakMap<Date, string>()
function httpDate (date: Date): string {
  let text = httpDates.get(date)
  if (text === undefined) httpDates.set(date, text = date.toUTCString())
  return text
}

export function writeHeaders (reply: FastifyReply, etag: string, modifiedAt: Date) {
  reply.header('etag', etag).header('last-modified', httpDate(modifiedAt))
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
