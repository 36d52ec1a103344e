// Wire formats beyond JSON (spec "Request headers": Content-Type, Accept; issue 8): the XML, form
// and multipart body parsers and the XML response serializer, wired once at registration. The
// JSON path is untouched: these parsers run only for their media types, XML only when negotiated.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ResourceModel } from '../registry/model.js'
import { UnsupportedMediaTypeError } from '../errors.js'
import { coerceBody } from './coerce.js'
import { parseMultipart, parseUrlEncoded } from './form.js'
import { kFormat, markFormat } from './negotiate.js'
import { createXmlWriter, parseXml, xmlMediaType } from './xml.js'

export interface ResponseFormats {
  /** Sends this reply as XML: called by the Accept check when XML wins. */
  readonly useXml: (request: FastifyRequest, reply: FastifyReply) => void
}

/** The body schema of the route a request matched, for the coercion of text values. */
const bodySchemaOf = (request: FastifyRequest): unknown => request.routeOptions.schema?.body

/** Fastify decodes string bodies as UTF-8 whatever the charset says: any other charset is refused. */
function checkCharset (request: FastifyRequest) {
  // The parser runs only for a request that named its type, so the header is there.
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(request.headers['content-type'] as string)?.[1].toLowerCase()
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8' && charset !== 'us-ascii') {
    throw new UnsupportedMediaTypeError(`Request bodies must be UTF-8; received charset=${charset}.`)
  }
}

export function installFormats (app: FastifyInstance, models: readonly ResourceModel[]): ResponseFormats {
  // parseAs 'string' holds XML and urlencoded bodies to bodyLimit (413) like JSON.
  app.addContentTypeParser('application/xml', { parseAs: 'string' }, async function parseXmlBody (request: FastifyRequest, body: string | Buffer) {
    checkCharset(request)
    return coerceBody(parseXml(body as string), bodySchemaOf(request), false)
  })
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, async function parseFormBody (request: FastifyRequest, body: string | Buffer) {
    return coerceBody(parseUrlEncoded(body as string), bodySchemaOf(request), true)
  })
  app.addContentTypeParser('multipart/form-data', async function parseMultipartBody (request: FastifyRequest, payload: NodeJS.ReadableStream) {
    return coerceBody(await parseMultipart(request, payload), bodySchemaOf(request), true)
  })
  // Initialised on the prototype, so a JSON request never writes it.
  app.decorateRequest(kFormat, null)

  const writeXml = createXmlWriter(itemNamesOf(models))
  return {
    useXml (request, reply) {
      markFormat(request, 'xml')
      reply.serializer(function serializeXml (payload: unknown) {
        // A handler that sends text (an HTML page) keeps its own type.
        if (typeof payload === 'string') return payload
        reply.type(xmlMediaType)
        return writeXml(asJson(reply, payload))
      })
    }
  }
}

/**
 * The payload as the route's JSON serializer shapes it (members, their order, integer and date
 * formats), so XML carries exactly what JSON would. XML pays for the detour; JSON never does.
 */
function asJson (reply: FastifyReply, payload: unknown): unknown {
  const status = String(reply.statusCode)
  // A response schema per content type gives an object keyed by type: take the JSON one.
  const byStatus = reply.getSerializationFunction(status)
  const serialize = typeof byStatus === 'function' ? byStatus : reply.getSerializationFunction(status, 'application/json')
  return typeof serialize === 'function' ? JSON.parse(serialize(payload as Record<string, unknown>)) : payload
}

/** `books` → `book`: collections and embedded to-many relations name their items by the resource. */
function itemNamesOf (models: readonly ResourceModel[]): ReadonlyMap<string, string> {
  const names = new Map<string, string>()
  for (const model of models) {
    if (!names.has(model.name)) names.set(model.name, model.singular)
    for (const relation of model.relations.values()) {
      if (relation.kind === 'many' && !names.has(relation.name)) names.set(relation.name, relation.target.singular)
    }
  }
  return names
}
