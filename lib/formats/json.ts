// JSON bodies (spec "Request headers": Content-Type): parsed safely (prototype poisoning is a
// 400, not a polluted object) from strict UTF-8 (RFC 8259 §8.1), and refused with a 400 naming the
// field when they hold text or numbers no store keeps as sent.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { BodyInvalidError, withInvalidParams } from '../errors.js'
import { unstorableTextParam } from '../validation.js'
import { decodeBody } from './index.js'
import type { BodyParser } from './index.js'
import { kPlainJson } from '../symbols.js'

// JSON text can hold NUL or a lone surrogate only as an escape (raw control characters are not
// JSON, and strict UTF-8 has no surrogates), and a number too large for a double only with an
// exponent of three digits or with over 308 digits: bodies without one skip the walk below.
const mayHoldUnstorable = /\\u(?:0000|[dD][89a-fA-F])|[eE]\+?\d{3}|\d{309}/

/** The JSON and merge-patch parser, with Fastify's own safe parse behind the UTF-8 check. */
export function jsonParser (app: FastifyInstance): BodyParser {
  const parseJson = app.getDefaultJsonParser('error', 'error')
  return {
    types: ['application/json', 'application/merge-patch+json'],
    parseAs: 'buffer',
    parse: function parseJsonBody (request, body, done) {
      let text: string
      try {
        text = decodeBody(body)
      } catch (error) {
        return done(error as Error, undefined)
      }
      if (!mayHoldUnstorable.test(text)) (request as unknown as Record<symbol, boolean>)[kPlainJson] = true
      parseJson(request, text, done)
    }
  }
}

/** Whatever the format: text no store keeps as sent is a 400 naming the field, before the schema. */
export function checkStorableText (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) {
  const unstorable = request.body === undefined || request.body === null || (request as unknown as Record<symbol, boolean>)[kPlainJson] ? undefined : unstorableTextParam(request.body)
  done(unstorable === undefined ? undefined : withInvalidParams(new BodyInvalidError(), [unstorable]))
}
