// The body media types each write accepts, and the 415 for a Content-Type missing or not among
// them (spec "Request headers": Content-Type required on requests with a body; "Errors" 6),
// before the body is read.
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import { UnsupportedMediaTypeError, withInvalidParams } from '../errors.js'

// Every write takes the spec's four types (formats/ reads the three text forms); a PATCH in any
// of them is a merge patch of the fields it carries (RFC 7396).
const writeTypes = ['application/json', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data'] as const

/** The body media types each write accepts (spec "Request headers": Content-Type). */
export const bodyTypes = {
  create: writeTypes,
  replace: writeTypes,
  modify: ['application/json', 'application/merge-patch+json', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data']
} as const

export function requireBodyType (accepted: readonly string[]): onRequestHookHandler {
  const list = accepted.join(', ')
  const refuse = (detail: string, reason: string) => withInvalidParams(new UnsupportedMediaTypeError(detail), [{ name: 'Content-Type', reason }])
  return function checkBodyType (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) {
    const header = request.headers['content-type']
    const mediaType = header?.split(';', 1)[0].trim().toLowerCase()
    if (mediaType === undefined || mediaType === '') return done(refuse(`Content-Type is required; send one of: ${list}.`, 'is required with a body'))
    if (!accepted.includes(mediaType)) return done(refuse(`Content-Type ${mediaType} is not accepted here; send one of: ${list}.`, `${mediaType} is not accepted here`))
    done()
  }
}
