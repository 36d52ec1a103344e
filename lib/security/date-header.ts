// The `Date` request header (spec "Request headers": Date, RFC 5322 date format): when present it
// must be an RFC 5322 date-time (IMF-fixdate is one) or one of the obsolete HTTP-date forms a
// recipient must still accept (RFC 9110 §5.6.7), else 400 naming Date.
import type { FastifyRequest } from 'fastify'
import type { InvalidParam } from '../errors.js'
import { parseDateHeader } from '../http/dates.js'

/** Checked before the body is read (pipeline.ts): a present Date that does not parse, as an invalid param naming Date. */
export function dateHeaderProblem (request: FastifyRequest): InvalidParam | undefined {
  const date = request.headers.date
  if (date !== undefined && parseDateHeader(date) === null) return { name: 'Date', reason: 'must be an RFC 5322 date such as Sun, 06 Nov 1994 08:49:37 GMT' }
  return undefined
}
