// 415 for writes whose Content-Type is missing or not one the operation accepts (spec "Request
// headers": Content-Type required on requests with a body; "Errors" 6), before the body is read.
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import { UnsupportedMediaTypeError, withInvalidParams } from '../errors.js'

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
