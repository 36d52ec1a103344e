// Wire formats beyond JSON (spec "Request headers": Content-Type, Accept): the XML, form
// and multipart body parsers and the XML response serializer, wired once at registration. The
// JSON path is untouched: these parsers run only for their media types, XML only when negotiated.
import type { FastifyBodyParser, FastifyContentTypeParser, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { JsonSchema } from '../registry/derive.js'
import { schemaNames } from '../registry/derive.js'
import type { ResourceModel } from '../registry/model.js'
import { BodyMalformedError, UnsupportedMediaTypeError, withInvalidParams } from '../errors.js'
import { coerceBody } from './coerce.js'
import { parseMultipart, parseUrlEncoded } from './form.js'
import { markFormat, requestFormat } from '../http/negotiation.js'
import { createXmlWriter, parseXml, xmlMediaType } from './xml.js'
import type { RefResolver } from './xml-shape.js'

export interface ResponseFormats {
  /** Sends this reply as XML: called by the Accept check when XML wins. */
  readonly useXml: (request: FastifyRequest, reply: FastifyReply) => void
}

/** The body schema of the route a request matched, for reading text values by their types. */
const bodySchemaOf = (request: FastifyRequest) => request.routeOptions.schema?.body as JsonSchema | undefined

const utf8 = new Set(['utf-8', 'utf8', 'us-ascii'])
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * A body's text, or a 400 when its bytes are not UTF-8: never U+FFFD in place of what was sent
 * (Buffer#toString, Fastify's `parseAs: 'string'`, would put one there silently).
 */
export function decodeBody (body: Buffer): string {
  try {
    return strictUtf8.decode(body)
  } catch {
    throw new BodyMalformedError('it is not valid UTF-8')
  }
}

/**
 * Bodies are decoded as UTF-8 (JSON: RFC 8259 §8.1) whatever the charset says: a Content-Type
 * naming another charset is refused (415, spec "Errors" 6) before the body is read.
 */
export function checkCharset (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(request.headers['content-type'] ?? '')?.[1].toLowerCase()
  if (charset === undefined || utf8.has(charset)) return done()
  done(withInvalidParams(new UnsupportedMediaTypeError(`Request bodies must be UTF-8; received charset=${charset}.`), [{ name: 'Content-Type', reason: `charset ${charset} is not accepted; send UTF-8` }]))
}

/** A body parser: the media types it reads, buffered (held to bodyLimit: 413, like JSON) or as the stream itself. */
export type BodyParser =
  | { readonly types: readonly string[], readonly parseAs: 'buffer', readonly parse: FastifyBodyParser<Buffer> }
  | { readonly types: readonly string[], readonly parseAs: 'stream', readonly parse: FastifyContentTypeParser }

/** The XML, form and multipart parsers. */
export const formatParsers: readonly BodyParser[] = [
  {
    types: ['application/xml'],
    parseAs: 'buffer',
    parse: async function parseXmlBody (request: FastifyRequest, body: Buffer) {
      return parseXml(decodeBody(body), bodySchemaOf(request))
    }
  },
  {
    types: ['application/x-www-form-urlencoded'],
    parseAs: 'buffer',
    parse: async function parseFormBody (request: FastifyRequest, body: Buffer) {
      return coerceBody(parseUrlEncoded(decodeBody(body)), bodySchemaOf(request), true)
    }
  },
  {
    types: ['multipart/form-data'],
    parseAs: 'stream',
    parse: async function parseMultipartBody (request: FastifyRequest, payload: NodeJS.ReadableStream) {
      return coerceBody(await parseMultipart(request, payload), bodySchemaOf(request), true)
    }
  }
]

const freeForm = new WeakSet<FastifyReply>()

/**
 * A reply whose body follows no response schema (the groups `apply=` answers with): JSON as it
 * is rather than through the route's serializer, which keeps only a record's members; XML free-form.
 */
export function sendFreeForm (reply: FastifyReply): void {
  freeForm.add(reply)
  if (requestFormat(reply.request) === 'json') reply.type('application/json; charset=utf-8').serializer(JSON.stringify)
}

/** XML responses, when Accept asks for them. */
export function createResponseFormats (app: FastifyInstance, models: readonly ResourceModel[]): ResponseFormats {
  // The shared schemas (`Book`, `BookList` …) are added after this; they are looked up when first written.
  const writeXml = createXmlWriter(sharedSchemas(app, models))
  return {
    useXml (request, reply) {
      markFormat(request, 'xml')
      reply.serializer(function serializeXml (payload: unknown) {
        // A handler that sends text (an HTML page) keeps its own type.
        if (typeof payload === 'string') return payload
        reply.type(xmlMediaType)
        return freeForm.has(reply) ? writeXml(payload, undefined) : writeXml(asJson(reply, payload), responseSchemaOf(reply))
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

type ResponseSchemas = Record<string, JsonSchema & { content?: Record<string, { schema: JsonSchema }> }>

/** The schema of this response: the serialized one, else the documented one (OPTIONS), else none (free-form). */
function responseSchemaOf (reply: FastifyReply): JsonSchema | undefined {
  const status = String(reply.statusCode)
  const schema = reply.request.routeOptions.schema as { response?: ResponseSchemas, documentedResponses?: ResponseSchemas } | undefined
  const response = schema?.response?.[status] ?? schema?.documentedResponses?.[status]
  return response?.content?.['application/json']?.schema ?? response
}

/** `Book#` → the shared schema; arrays of a resource name their items by its singular (`books` → <book>). */
function sharedSchemas (app: FastifyInstance, models: readonly ResourceModel[]): RefResolver {
  const singulars = new Map(models.map(model => [schemaNames(model).resource, model.singular]))
  const idOf = (ref: string) => ref.replace(/#.*$/, '')
  return {
    schema: ref => app.getSchema(idOf(ref)) as JsonSchema | undefined,
    itemName: ref => singulars.get(idOf(ref))
  }
}
