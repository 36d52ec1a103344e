// Body validation: one Ajv per plugin instance, configured so that nothing a client sends is
// silently dropped or coerced (rule 2), and its errors as invalidParams (spec "Errors" 2).
import { Ajv } from 'ajv'
import type { ErrorObject, ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { InvalidParam } from './errors.js'
import { findUnstorable, nonFinite } from './values/storable.js'

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

export function createAjv (): Ajv {
  // removeAdditional off: Fastify's default strips unknown members, so `id` would vanish instead of answering 400.
  const ajv = new Ajv({ allErrors: true, coerceTypes: false, useDefaults: true, removeAdditional: false, strict: false })
  addFormats(ajv)
  return ajv
}

/** A missing or unknown member, which Ajv reports at its object. */
function memberOf (error: ErrorObject): string | undefined {
  if (error.keyword === 'required') return String(error.params.missingProperty)
  if (error.keyword === 'additionalProperties') return String(error.params.additionalProperty)
  return undefined
}

function fieldName (error: ErrorObject): string {
  const path = error.instancePath.slice(1).replaceAll('/', '.')
  return [path, memberOf(error) ?? ''].filter(part => part !== '').join('.') || '(body)'
}

/** Whether an error is about something inside the value at `pointer`. */
const isBelow = (error: ErrorObject, pointer: string) => error.instancePath.startsWith(`${pointer}/`) ||
  (error.instancePath === pointer && memberOf(error) !== undefined)

function reasonOf (error: ErrorObject): string {
  if (error.keyword === 'required') return 'is required'
  if (error.keyword === 'additionalProperties') return 'is not a field of this resource'
  if (error.keyword === 'not') return 'is read-only and set by the server'
  return String(error.message)
}

/**
 * `meta: { x: 'a' }` against `object | null` fails both branches: `meta.x: must be integer` says
 * what is wrong, and `meta: must be null`, from the branch the client did not mean, would mislead.
 * True for an error of one anyOf branch when another branch of the same anyOf failed deeper inside
 * the same value.
 */
function failsOtherBranch (error: ErrorObject, errors: readonly ErrorObject[]): boolean {
  const at = error.schemaPath.lastIndexOf('/anyOf/')
  if (at === -1) return false
  const anyOf = error.schemaPath.slice(0, at + 7)
  const branch = error.schemaPath.slice(at + 7).split('/', 1)[0]
  return errors.some(other => isBelow(other, error.instancePath) &&
    other.schemaPath.startsWith(anyOf) && other.schemaPath.slice(anyOf.length).split('/', 1)[0] !== branch)
}

/** One entry per offending field; the branches of a nullable field's anyOf become one reason. */
export function toInvalidParams (errors: readonly ErrorObject[]): InvalidParam[] {
  const reasons = new Map<string, string[]>()
  for (const error of errors) {
    if (error.keyword === 'anyOf' || failsOtherBranch(error, errors)) continue
    const name = fieldName(error)
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
 * exactly, or a number JSON cannot write (1e400 parses as Infinity, which Ajv takes for an
 * integer), as an invalid param; refused for every store alike, so they all answer the same.
 */
export function unstorableTextParam (body: unknown): InvalidParam | undefined {
  const found = findUnstorable(body)
  if (found === undefined) return undefined
  const [path, value] = found
  return {
    name: path.join('.') || '(body)',
    reason: typeof value === 'number'
      ? nonFinite
      : value.includes(nul) ? 'contains NUL (U+0000), which cannot be stored' : 'contains a lone surrogate (\\uD800–\\uDFFF), which is not Unicode text'
  }
}
