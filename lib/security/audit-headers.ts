// Audit headers (spec "Request headers" and "Authentication" 5; "Limits": the X-Audit-* headers
// at most 8KB each, base64; X-Authenticated_User free text): each is checked (and decoded) once,
// kept on `request.audit`, and logged with every write.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { HeaderInvalidError, withInvalidParams } from '../errors.js'
import type { InvalidParam } from '../errors.js'
import { decodeBase64 } from './base64.js'
import type { RequestHeaderName } from '../headers.js'

/** The decoded audit headers of a request; members are absent when their header is. */
export interface AuditValues {
  /** X-Audit-Consent: a FHIR Consent resource. */
  consent?: Record<string, unknown> & { resourceType: 'Consent' }
  /** X-Audit-Device: FHIR identifier of the client device, as sent (decoded text). */
  device?: string
  /** X-Audit-Organisation: FHIR identifier of the client organisation. */
  organisation?: string
  /** X-Audit-User: FHIR identifier of the authenticated user. */
  user?: string
  /** X-Authenticated_User: the client system, as sent (plain text, not base64). */
  authenticatedUser?: string
}

// The encoding of each: the spec asks base64 of the X-Audit-* headers only. Each is a request
// header of the header table (headers.ts), which documents it and lets CORS preflights allow it.
const headers = [
  ['X-Audit-Consent', 'consent', 'base64'],
  ['X-Audit-Device', 'device', 'base64'],
  ['X-Audit-Organisation', 'organisation', 'base64'],
  ['X-Audit-User', 'user', 'base64'],
  ['X-Authenticated_User', 'authenticatedUser', 'text']
] as const satisfies ReadonlyArray<readonly [RequestHeaderName, keyof AuditValues, 'base64' | 'text']>
const lowerCase = headers.map(([name, key, encoding]) => [name, name.toLowerCase(), key, encoding] as const)

/** 8 KB of base64 text (spec "Limits"); free text is held to the same. */
export const maxAuditHeaderLength = 8192
// Free text as a header carries it: visible ASCII and spaces (RFC 9110 §5.5; Node has trimmed the ends).
const freeText = /^[\x20-\x7e]+$/

function consentOf (text: string): AuditValues['consent'] | undefined {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  const isConsent = typeof value === 'object' && value !== null && !Array.isArray(value) && (value as { resourceType?: unknown }).resourceType === 'Consent'
  return isConsent ? value as AuditValues['consent'] : undefined
}

/** Before the body is read (pipeline.ts): 400 naming each bad header; the decoded values on `request.audit`. */
export function checkAuditHeaders (request: FastifyRequest, earlier: readonly InvalidParam[] = []) {
  let audit: AuditValues | null = null
  // With the other headers' problems (Date), so that one 400 names them all.
  const invalid: InvalidParam[] = [...earlier]
  for (const [name, lower, key, encoding] of lowerCase) {
    const value = request.headers[lower]
    if (value === undefined) continue
    if (encoding === 'text') {
      // Node joins a repeated custom header with ", ", which reads as one text: only its length counts.
      if (typeof value !== 'string' || value.length > maxAuditHeaderLength || !freeText.test(value)) invalid.push({ name, reason: `must be 1 to ${maxAuditHeaderLength} characters of visible ASCII text` })
      else (audit ??= {}).authenticatedUser = value
      continue
    }
    // Node joins a repeated custom header with ", ", which is not base64: one value per header.
    if (typeof value !== 'string' || value.length > maxAuditHeaderLength) {
      invalid.push({ name, reason: `must be at most ${maxAuditHeaderLength} characters of base64` })
      continue
    }
    const text = decodeBase64(value)
    if (text === null) {
      invalid.push({ name, reason: 'must be base64 (RFC 4648, padded) of UTF-8 text' })
      continue
    }
    audit ??= {}
    if (key === 'consent') {
      const consent = consentOf(text)
      if (consent === undefined) invalid.push({ name, reason: 'must decode to a JSON FHIR Consent resource (resourceType "Consent")' })
      else audit.consent = consent
    } else {
      audit[key] = text
    }
  }
  if (invalid.length > 0) throw withInvalidParams(new HeaderInvalidError(), invalid)
  request.audit = audit
}

export const writeMethods: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** onResponse: every write that carried audit headers leaves one structured log line with their values. */
export function logAuditedWrite (request: FastifyRequest, reply: FastifyReply, done: () => void) {
  if (request.audit !== null && writeMethods.has(request.method)) {
    request.log.info({ audit: request.audit, statusCode: reply.statusCode }, 'audited write')
  }
  done()
}
