// Body validation: one Ajv per plugin instance, configured so that nothing a client sends is
// silently dropped or coerced (rule 2), and its errors as invalidParams (spec "Errors" 2).
import { Ajv } from 'ajv'
import type { ErrorObject, ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { InvalidParam } from './errors.js'
import { findUnstorable } from './stores/values.js'

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
  const names = errors.map(fieldName)
  for (const [i, error] of errors.entries()) {
    if (error.keyword === 'anyOf') continue
    const name = names[i]
    // `meta: { x: 'a' }` against `object | null` fails both branches: the entry for `meta.x` says
    // what is wrong; `meta: must be null`, from the branch the client did not mean, would mislead.
    if (error.schemaPath.includes('/anyOf/') && names.some(other => other.startsWith(`${name}.`))) continue
    const list = reasons.get(name) ?? []
    const reason = reasonOf(error)
    if (!list.includes(reason)) list.push(reason)
    reasons.set(name, list)
  }
  return [...reasons].map(([name, list]) => ({ name, reason: list.join(' or ') }))
}

export type { ValidateFunction }

const nul = '\u0000'

/**
 * The first member or value of a parsed body, in any format, holding text no store can keep
 * exactly, as an invalid param; refused for every store alike, so they all answer the same.
 */
export function unstorableTextParam (body: unknown): InvalidParam | undefined {
  const found = findUnstorable(body)
  if (found === undefined) return undefined
  const [path, text] = found
  return {
    name: path.join('.') || '(body)',
    reason: text.includes(nul) ? 'contains NUL (U+0000), which cannot be stored' : 'contains a lone surrogate (\\uD800–\\uDFFF), which is not Unicode text'
  }
}
