// Form bodies (spec "Request headers": Content-Type allows application/x-www-form-urlencoded and
// multipart/form-data): fields only, read into an object of text values for coerce.ts.
// Multipart uses busboy, the parser @fastify/multipart is built on, inside a content-type parser:
// registering @fastify/multipart itself adds hooks to every request of the scope (JSON included).
import { Busboy } from '@fastify/busboy'
import type { FastifyRequest } from 'fastify'
import { BodyInvalidError, BodyMalformedError, BodyTooLargeError, withInvalidParams } from '../errors.js'

/** Adds one field; a repeated name becomes an array, for the validator to judge. */
function addField (fields: Record<string, unknown>, name: string, value: string) {
  if (!Object.hasOwn(fields, name)) {
    // defineProperty: a field named __proto__ stays an own member the validator refuses by name.
    Object.defineProperty(fields, name, { value, enumerable: true, writable: true, configurable: true })
    return
  }
  const existing = fields[name]
  if (Array.isArray(existing)) existing.push(value)
  else fields[name] = [existing, value]
}

/**
 * application/x-www-form-urlencoded, as browsers encode it (WHATWG URL, the same rules as
 * @fastify/formbody's querystring parser).
 * @example
 * parseUrlEncoded('title=Solaris&year=1961') // { title: 'Solaris', year: '1961' }
 */
export function parseUrlEncoded (text: string): Record<string, unknown> {
  refuseJsonText(text)
  const fields: Record<string, unknown> = {}
  for (const [name, value] of new URLSearchParams(text)) addField(fields, name, value)
  return fields
}

/**
 * A JSON object or array sent as a form: what `curl -d '{"name":"X"}'` sends without
 * `-H 'Content-Type: application/json'`. Read as a form it is one field named by the whole text,
 * which a client would hear of as an unknown field; it is told what happened instead (400: the
 * format is one the operation takes, the body is not in it). A form never starts so: its encoding
 * percent-encodes `{` and `[`.
 */
function refuseJsonText (text: string) {
  const first = text.trimStart()[0]
  if (first !== '{' && first !== '[') return
  try {
    JSON.parse(text)
  } catch {
    return
  }
  throw withInvalidParams(new BodyMalformedError('it is JSON, sent as a form (Content-Type: application/x-www-form-urlencoded, what curl -d sends unless told otherwise); send it with Content-Type: application/json'),
    [{ name: 'body', reason: 'is JSON text, not form fields; send Content-Type: application/json' }])
}

/**
 * multipart/form-data with fields only: a file part is refused naming it (no resource field is
 * binary), and the whole body is held to the route's bodyLimit (413), as Fastify does for others.
 */
export function parseMultipart (request: FastifyRequest, payload: NodeJS.ReadableStream): Promise<Record<string, unknown>> {
  const limit = request.routeOptions.bodyLimit as number
  return new Promise((resolve, reject) => {
    if (Number(request.headers['content-length']) > limit) return reject(new BodyTooLargeError(limit))
    let busboy: ReturnType<typeof Busboy>
    try {
      // fieldSize: a longer value would be cut short silently; the byte count below stops it first.
      busboy = Busboy({ headers: request.headers as Parameters<typeof Busboy>[0]['headers'], limits: { fieldSize: limit } })
    } catch (error) {
      return reject(new BodyMalformedError((error as Error).message))
    }
    const fields: Record<string, unknown> = {}
    let settled = false
    let received = 0
    function fail (error: Error) {
      if (settled) return
      settled = true
      payload.unpipe(busboy)
      // Discard the rest, as Node does with a body nobody reads.
      payload.resume()
      reject(error)
    }
    payload.on('data', (chunk: Buffer) => {
      received += chunk.length
      if (received > limit) fail(new BodyTooLargeError(limit))
    })
    payload.on('error', fail)
    busboy.on('field', (name: string, value: string) => addField(fields, name, value))
    busboy.on('file', (name: string, file: NodeJS.ReadableStream) => {
      file.resume()
      fail(withInvalidParams(new BodyInvalidError(), [{ name, reason: 'is a file part; this resource accepts plain fields only' }]))
    })
    busboy.on('error', (error: Error) => fail(new BodyMalformedError(error.message)))
    busboy.on('finish', () => {
      if (settled) return
      settled = true
      resolve(fields)
    })
    payload.pipe(busboy)
  })
}
