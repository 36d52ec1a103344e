// Deprecation of the whole API or of one resource (spec "Versioning" 2): `Deprecation` (RFC 9745,
// a structured-field date `@<epoch seconds>`), `Sunset` (RFC 8594, an HTTP date) and
// `Link: <…>; rel="deprecation"` (RFC 9745 §3), prepared once at registration.
import type { FastifyReply } from 'fastify'
import { OptionsInvalidError } from '../errors.js'
import { knownKeys, refuseUnknownKeys } from '../options-check.js'

export interface DeprecationOptions {
  /** When the API or resource is (or will be) deprecated: a Date or an ISO 8601 string. */
  readonly date: Date | string
  /** When it stops answering; not before `date`. */
  readonly sunset?: Date | string | undefined
  /** A page describing the deprecation and what to use instead. */
  readonly link?: string | undefined
}

export interface DeprecationHeaders {
  readonly deprecation: string
  readonly sunset?: string
  readonly link?: string
}

const deprecationKeys = knownKeys({ date: true, sunset: true, link: true } satisfies Record<keyof DeprecationOptions, true>)

function dateOf (value: unknown, name: string): Date {
  const date = value instanceof Date ? value : typeof value === 'string' ? new Date(value) : undefined
  if (date === undefined || Number.isNaN(date.getTime())) throw new OptionsInvalidError(`${name} must be a Date or an ISO 8601 date string, received ${JSON.stringify(value)}`)
  return date
}

export function resolveDeprecation (value: unknown, name: string): DeprecationHeaders | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'object' || value === null) throw new OptionsInvalidError(`${name} must be an object { date, sunset?, link? }, received ${JSON.stringify(value)}`)
  const given = value as Record<string, unknown>
  refuseUnknownKeys(given, deprecationKeys, name)
  const date = dateOf(given.date, `${name}.date`)
  const sunset = given.sunset === undefined ? undefined : dateOf(given.sunset, `${name}.sunset`)
  if (sunset !== undefined && sunset < date) throw new OptionsInvalidError(`${name}.sunset must not be earlier than ${name}.date (RFC 9745 §4)`)
  const link = given.link
  if (link !== undefined && (typeof link !== 'string' || !/^[\x21-\x7e]+$/.test(link) || /[<>"]/.test(link))) {
    throw new OptionsInvalidError(`${name}.link must be a URI, received ${JSON.stringify(link)}`)
  }
  return Object.freeze({
    deprecation: `@${Math.floor(date.getTime() / 1000)}`,
    sunset: sunset?.toUTCString(),
    link: link === undefined ? undefined : `<${link}>; rel="deprecation"`
  })
}

export function applyDeprecation (reply: FastifyReply, headers: DeprecationHeaders) {
  reply.header('deprecation', headers.deprecation)
  if (headers.sunset !== undefined) reply.header('sunset', headers.sunset)
  if (headers.link !== undefined) {
    const existing = reply.getHeader('link')
    reply.header('link', existing === undefined ? headers.link : `${String(existing)}, ${headers.link}`)
  }
}
