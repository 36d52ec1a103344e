// Which format a response takes (spec "Request headers": Accept, default application/json;
// "Response headers": Content-Type application/json or application/xml): JSON unless Accept
// prefers XML by its q-values (RFC 9110 §12.5.1); at equal q the type Accept lists first wins,
// and a wildcard gives JSON.
import Negotiator from 'negotiator'
import type { FastifyReply, FastifyRequest } from 'fastify'

export type Format = 'json' | 'xml'

/** What resource routes produce; the order breaks ties (`*∕*` → JSON, and with JSON refused, XML). */
export const produced: readonly string[] = ['application/json', 'application/xml']
/**
 * The problem types, which only errors take: an Accept naming nothing else is satisfied by no
 * success response, so it is 406 (RFC 9110 §12.5.1; issue 8, point 4), answered in the problem
 * type it names.
 */
export const problemTypes: readonly string[] = ['application/problem+json', 'application/problem+xml']
// Offered with the charset we send, so `Accept: application/xml; charset=utf-8` matches too.
const offered = produced.map(type => `${type}; charset=utf-8`)
// Problems in either form, the problem types first, so `*∕*` and `application/*` keep JSON.
const problemOffered = [...problemTypes, ...produced].map(type => `${type}; charset=utf-8`)
const formatOf: Readonly<Record<string, Format>> = Object.fromEntries(problemOffered.map(type => [type, type.includes('xml') ? 'xml' : 'json']))

/**
 * The format Accept asks for, or undefined when it accepts neither (406).
 * @example
 * negotiateFormat('application/xml;q=0.9, application/json;q=0.8') // 'xml'
 */
export function negotiateFormat (accept: string | undefined): Format | undefined {
  // Fast path for what nearly every client sends.
  if (accept === undefined || accept === '*/*' || accept === 'application/json') return 'json'
  if (accept === 'application/xml') return 'xml'
  const type = new Negotiator({ headers: { accept } }).mediaType(offered)
  return type === undefined ? undefined : formatOf[type]
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
  if ((request.routeOptions.config as { produces?: unknown }).produces !== undefined) return false
  const type = new Negotiator({ headers: { accept } }).mediaType(problemOffered)
  return type !== undefined && formatOf[type] === 'xml'
}

// The chosen format, on the request for the ETag (an XML body is another representation).
export const kFormat = Symbol('api-conventions.format')
interface Negotiated { [kFormat]: Format | null }

export function markFormat (request: FastifyRequest, format: Format) {
  (request as unknown as Negotiated)[kFormat] = format
}

/** The representation variant for ETags: the JSON variant, or it marked as XML (RFC 9110 §8.8.3). */
export function formatVariant (request: FastifyRequest, variant: string): string {
  return (request as unknown as Negotiated)[kFormat] === 'xml' ? `${variant}\u0000xml` : variant
}

/** Adds a field name to Vary, keeping what others (CORS: Origin) put there. */
export function addVary (reply: FastifyReply, name: string) {
  const current = reply.getHeader('vary')
  if (current === undefined) reply.header('vary', name)
  else if (!String(current).toLowerCase().split(/\s*,\s*/).includes(name.toLowerCase())) reply.header('vary', `${String(current)}, ${name}`)
}
