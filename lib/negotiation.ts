// Response format negotiation (spec "Request headers": Accept, default application/json):
// resource routes answer JSON or XML (formats/negotiate.ts); an Accept nothing we produce can
// satisfy is 406, and every answer varies on Accept.
import Negotiator from 'negotiator'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { NotAcceptableError } from './errors.js'
import { negotiateFormat, produced } from './formats/negotiate.js'
import type { ResponseFormats } from './formats/index.js'

// Offered with the charset we send, so `Accept: application/json; charset=utf-8` matches too.
const offered = new WeakMap<readonly string[], string[]>()
function offersOf (types: readonly string[]): string[] {
  let list = offered.get(types)
  if (list === undefined) offered.set(types, list = types.map(type => `${type}; charset=utf-8`))
  return list
}

/** Route `config` of a route that answers another media type (the HTML problem pages, docs). */
export interface ProducesConfig { readonly produces?: readonly string[] }

declare module 'fastify' {
  interface FastifyContextConfig extends ProducesConfig {}
}

export function createAcceptCheck (formats: ResponseFormats) {
  /** The request edge's last step (security/edge.ts): 406 when nothing we produce is acceptable. */
  return function checkAccept (request: FastifyRequest, reply: FastifyReply) {
    const accept = request.headers.accept
    const available = (request.routeOptions.config as ProducesConfig).produces
    // Vary: Accept is among the fixed headers the request edge has set (security/headers.ts).
    if (available === undefined) {
      const format = negotiateFormat(accept)
      if (format === undefined) throw new NotAcceptableError(produced.join(', '))
      if (format === 'xml') formats.useXml(request, reply)
      return
    }
    // Fast path for what nearly every client sends.
    if (accept === undefined || accept === '*/*') return
    if (new Negotiator({ headers: { accept } }).mediaType(offersOf(available)) === undefined) {
      throw new NotAcceptableError(available.join(', '))
    }
  }
}
