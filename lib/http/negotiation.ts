// Content negotiation (spec "Request headers": Accept, default application/json; "Response
// headers": Content-Type application/json or application/xml): resource routes answer JSON unless
// Accept prefers XML by its q-values (RFC 9110 §12.5.1), at equal q the type Accept lists first
// wins and a wildcard gives JSON; an Accept nothing we produce can satisfy is 406, and every
// answer varies on Accept. One Negotiator wrapper serves every choice.
import Negotiator from 'negotiator'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { NotAcceptableError } from '../errors.js'
import type { ResponseFormats } from '../formats/index.js'
import { kFormat } from '../symbols.js'

/** How a response is written: JSON, XML, or a LIST's export (NDJSON, CSV: operations/export.ts). */
export type Format = 'json' | 'xml' | 'ndjson' | 'csv'

/**
 * Route `config` of a route that answers another media type (the HTML problem pages, docs);
 * `exports`: a LIST, which also answers its exports' types.
 */
export interface ProducesConfig { readonly produces?: readonly string[], readonly exports?: boolean }

declare module 'fastify' {
  interface FastifyContextConfig extends ProducesConfig {}
}

/** What resource routes produce; the order breaks ties (`*∕*` → JSON, and with JSON refused, XML). */
export const produced: readonly string[] = ['application/json', 'application/xml']
/** What a LIST produces: after JSON and XML, so that a wildcard still gets JSON. */
export const listProduced: readonly string[] = [...produced, 'application/x-ndjson', 'text/csv']
/**
 * The problem types, which only errors take: an Accept naming nothing else is satisfied by no
 * success response, so it is 406 (RFC 9110 §12.5.1), answered in the problem
 * type it names.
 */
export const problemTypes: readonly string[] = ['application/problem+json', 'application/problem+xml']
// Problems in either form, the problem types first, so `*∕*` and `application/*` keep JSON.
const problemOffered: readonly string[] = [...problemTypes, ...produced]

// Offered with the charset we send, so `Accept: application/json; charset=utf-8` matches too.
const offered = new WeakMap<readonly string[], string[]>()

/** The type of `types` Accept prefers (RFC 9110 §12.5.1; the order of `types` breaks ties), or undefined when it accepts none. */
function preferredType (accept: string, types: readonly string[]): string | undefined {
  let offers = offered.get(types)
  if (offers === undefined) offered.set(types, offers = types.map(type => `${type}; charset=utf-8`))
  const chosen = new Negotiator({ headers: { accept } }).mediaType(offers)
  return chosen === undefined ? undefined : types[offers.indexOf(chosen)]
}

const formats: Readonly<Record<string, Format>> = { 'application/x-ndjson': 'ndjson', 'text/csv': 'csv' }
const formatOf = (type: string): Format => formats[type] ?? (type.endsWith('xml') ? 'xml' : 'json')

/**
 * The format Accept asks for, or undefined when it accepts neither (406).
 * @example
 * negotiateFormat('application/xml;q=0.9, application/json;q=0.8') // 'xml'
 */
export function negotiateFormat (accept: string | undefined, types: readonly string[] = produced): Format | undefined {
  // Fast path for what nearly every client sends.
  if (accept === undefined || accept === '*/*' || accept === 'application/json') return 'json'
  if (accept === 'application/xml') return 'xml'
  const type = preferredType(accept, types)
  return type === undefined ? undefined : formatOf(type)
}

/**
 * Whether an error is rendered as application/problem+xml: on routes that offer XML (resource
 * routes and unknown paths) when Accept prefers XML or problem+xml. Routes with one fixed type
 * (`produces`: openapi.json, the docs and problem pages) answer problems in JSON.
 */
export function wantsXmlProblem (request: FastifyRequest): boolean {
  const accept = request.headers.accept
  // Fast path for what nearly every client sends.
  if (accept === undefined || accept === '*/*' || accept === 'application/json' || accept === 'application/problem+json') return false
  if ((request.routeOptions.config as ProducesConfig).produces !== undefined) return false
  const type = preferredType(accept, problemOffered)
  return type !== undefined && formatOf(type) === 'xml'
}

// The chosen format, on the request for the ETag (an XML body is another representation).
interface Negotiated { [kFormat]: Format | null }

export function markFormat (request: FastifyRequest, format: Format) {
  (request as unknown as Negotiated)[kFormat] = format
}

/** The format the response is written in: the one the Accept check chose, else JSON. */
export function requestFormat (request: FastifyRequest): Format {
  return (request as unknown as Negotiated)[kFormat] ?? 'json'
}

export function createAcceptCheck (formats: ResponseFormats) {
  /** The request edge's last step (security/edge.ts): 406 when nothing we produce is acceptable. */
  return function checkAccept (request: FastifyRequest, reply: FastifyReply) {
    const accept = request.headers.accept
    const config = request.routeOptions.config as ProducesConfig
    const available = config.produces
    // Vary: Accept is among the fixed headers the request edge has set (security/headers.ts).
    if (available === undefined) {
      const types = config.exports === true ? listProduced : produced
      const format = negotiateFormat(accept, types)
      if (format === undefined) throw new NotAcceptableError(types.join(', '))
      if (format === 'xml') formats.useXml(request, reply)
      else if (format !== 'json') markFormat(request, format)
      return
    }
    // Fast path for what nearly every client sends.
    if (accept === undefined || accept === '*/*') return
    if (preferredType(accept, available) === undefined) throw new NotAcceptableError(available.join(', '))
  }
}

/** Adds a field name to Vary, keeping what others (CORS: Origin) put there. */
export function addVary (reply: FastifyReply, name: string) {
  const current = reply.getHeader('vary')
  if (current === undefined) reply.header('vary', name)
  else if (!String(current).toLowerCase().split(/\s*,\s*/).includes(name.toLowerCase())) reply.header('vary', `${String(current)}, ${name}`)
}
