// Body validation: one Ajv per plugin instance, configured so that nothing a client sends is
// silently dropped or coerced (rule 2), and its errors as invalidParams (spec "Errors" 2).
import { Ajv } from 'ajv'
import type { ErrorObject, ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { InvalidParam } from './errors.js'

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

export function createAjv (): Ajv {
  // removeAdditional off: Fastify's default strips unknown members, so `id` would vanish instead of answering 400.
  const ajv = new Ajv({ allErrors: true, coerceTypes: false, useDefaults: true, removeAdditional: false, strict: false })
  addFormats(ajv)
  return ajv
}

function fieldName (error: ErrorObject): string {
  const path = error.instancePath.slice(1).replaceAll('/', '.')
  const member = error.keyword === 'required'
    ? String(error.params.missingProperty)
    : error.keyword === 'additionalProperties' ? String(error.params.additionalProperty) : ''
  return [path, member].filter(part => part !== '').join('.') || '(body)'
}

function reasonOf (error: ErrorObject): string {
  if (error.keyword === 'required') return 'is required'
  if (error.keyword === 'additionalProperties') return 'is not a field of this resource'
  if (error.keyword === 'not') return 'is read-only and set by the server'
  return String(error.message)
}

/** One entry per offending field; the branches of a nullable field's anyOf become one reason. */
export function toInvalidParams (errors: readonly ErrorObject[]): InvalidParam[] {
  const reasons = new Map<string, string[]>()
  for (const error of errors) {
    if (error.keyword === 'anyOf') continue
    const name = fieldName(error)
    const list = reasons.get(name) ?? []
    const reason = reasonOf(error)
    if (!list.includes(reason)) list.push(reason)
    reasons.set(name, list)
  }
  return [...reasons].map(([name, list]) => ({ name, reason: list.join(' or ') }))
}

export type { ValidateFunction }

// A \uD800–\uDFFF escape in JSON text is the only way a lone surrogate reaches us (strict UTF-8
// decoding refuses the raw bytes), so bodies without one skip the walk.
const surrogateEscape = /\\u[dD][89a-fA-F]/
// In Unicode mode a valid pair is one code point, so only a lone surrogate is in category Cs.
const loneSurrogate = /\p{Cs}/u

/**
 * The first string in a parsed JSON body that is not well-formed Unicode (a lone surrogate), as an
 * invalid param. No store can keep such a string faithfully: PostgreSQL would store U+FFFD.
 */
export function loneSurrogateParam (text: string, body: unknown): InvalidParam | undefined {
  if (!surrogateEscape.test(text)) return undefined
  const path = findIllFormed(body, [])
  return path === undefined ? undefined : { name: path.join('.') || '(body)', reason: 'contains a lone surrogate (\\uD800–\\uDFFF), which is not Unicode text' }
}

function findIllFormed (value: unknown, path: string[]): string[] | undefined {
  if (typeof value === 'string') return loneSurrogate.test(value) ? path : undefined
  if (typeof value !== 'object' || value === null) return undefined
  for (const [key, member] of Object.entries(value)) {
    if (loneSurrogate.test(key)) return [...path, key]
    const found = findIllFormed(member, [...path, key])
    if (found !== undefined) return found
  }
  return undefined
}
