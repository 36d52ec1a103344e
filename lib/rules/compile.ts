// A resource's application rules (types.ts) checked at registration and turned into what requests
// use: row rules bound to a caller as checked filters, field rules, server values and hooks.
import type { FilterNode } from '../query/filter/ast.js'
import { parseFilter } from '../query/filter/parser.js'
import { checkFilter } from '../query/filter/check.js'
import type { ResourceModel } from '../registry/model.js'
import { ResourceInvalidError } from '../errors.js'
import { knownKeys, refuseUnknownKeys } from '../options-check.js'
import type { ApplicationRules, FieldRule, ResourceRules, RowRule, ServerValue, WriteHooks } from './types.js'
import { keepBounded } from '../bounded.js'

type Principal = unknown

const ruleKeys = knownKeys({ read: true, write: true, fields: true } satisfies Record<keyof ResourceRules<unknown, unknown>, true>)
const fieldRuleKeys = knownKeys({ read: true, write: true, shownOnCreate: true } satisfies Record<keyof FieldRule<unknown>, true>)
const serverValueKeys = knownKeys({ on: true, value: true } satisfies Record<keyof ServerValue<unknown, unknown, unknown>, true>)
const hookKeys = knownKeys({ beforeWrite: true, afterWrite: true } satisfies Record<keyof WriteHooks<unknown, unknown>, true>)

/** A row rule for one caller: the filter text with its placeholders filled in, and that text checked. */
export interface BoundRule { readonly text: string, readonly filter: FilterNode }

export interface ModelRules {
  /** Null when every record is visible to everyone. */
  readonly read: ((principal: Principal) => BoundRule | null) | null
  readonly write: ((principal: Principal) => BoundRule | null) | null
  readonly fields: ReadonlyMap<string, FieldRule<Principal>>
  readonly serverValues: ReadonlyMap<string, ServerValue<unknown, unknown, Principal>>
  readonly hooks: WriteHooks<unknown, Principal>
  /** Writes run in a transaction: a rule must be checked, or a hook may read and write. */
  readonly transactional: boolean
}

// `@principal.user` outside a string literal; a literal is matched whole so that one holding
// `@principal.x` stays text.
const placeholders = /'(?:[^']|'')*'|@principal\.([A-Za-z_]\w*)/g

/** A principal's value as a filter literal: quoted text (quotes doubled), or a number, boolean or null. */
function literalOf (value: unknown): string {
  if (value === null || value === undefined) return 'null'
  if (typeof value === 'number' && Number.isFinite(value)) return String(value)
  if (typeof value === 'boolean') return String(value)
  return `'${String(value).replaceAll("'", "''")}'`
}

/** The rule text with every placeholder replaced by the caller's value. */
export function fillPlaceholders (text: string, principal: Principal): string {
  return text.replace(placeholders, (match: string, name: string | undefined) => {
    if (name === undefined) return match
    return literalOf(principal === null || typeof principal !== 'object' ? undefined : (principal as Record<string, unknown>)[name])
  })
}

const boundCacheLimit = 500

/**
 * Parses and checks each distinct filled-in text once (bounded cache), so a caller's rule costs a
 * string replacement and a lookup per request. A text that fails is the application's fault: it
 * throws, and the request answers 500.
 */
function binder (model: ResourceModel, rule: RowRule<Principal>, where: string): (principal: Principal) => BoundRule | null {
  const cache = new Map<string, BoundRule>()
  const bind = (text: string): BoundRule => {
    let bound = cache.get(text)
    if (bound === undefined) {
      bound = keepBounded(cache, boundCacheLimit, text, { text, filter: checkRule(model, text, where) })
    }
    return bound
  }
  if (typeof rule === 'string') {
    // Checked now with every placeholder null (null compares with anything): a wrong field or a
    // syntax error stops registration rather than a request.
    checkRule(model, fillPlaceholders(rule, null), where, error => new ResourceInvalidError(where, error))
    return principal => bind(fillPlaceholders(rule, principal))
  }
  return principal => {
    const text = rule(principal)
    return text === null || text === '' ? null : bind(fillPlaceholders(text, principal))
  }
}

function checkRule (model: ResourceModel, text: string, where: string, fail = (message: string): Error => new TypeError(`${where}: ${message}`)): FilterNode {
  try {
    return checkFilter(parseFilter(text, { maxLength: Infinity }), model)
  } catch (error) {
    // Parsing and checking throw FilterSyntaxError or FilterTypeError, whose message says what is wrong.
    throw fail(`${(error as Error).message} in '${text}'`)
  }
}

/** The resource's writes run hooks, which may refuse them. */
export const hasHooks = (rules: ModelRules | null): boolean => rules !== null && (rules.hooks.beforeWrite !== undefined || rules.hooks.afterWrite !== undefined)

/** Checks a definition's rules, server values and hooks against its model; null when it has none. */
export function compileRules (model: ResourceModel, definition: ApplicationRules<unknown, Principal>): ModelRules | null {
  const { rules = {}, serverValues = {}, hooks = {} } = definition
  if (definition.rules === undefined && definition.serverValues === undefined && definition.hooks === undefined) return null
  const where = `${model.name}`
  refuseUnknownKeys(rules, ruleKeys, `${where}.rules`, message => new ResourceInvalidError(where, message))
  const rowRule = (rule: RowRule<Principal> | undefined, name: string) => {
    if (rule === undefined || rule === '') return null
    if (typeof rule !== 'string' && typeof rule !== 'function') throw new ResourceInvalidError(`${where}.rules.${name}`, 'must be a filter string or a function of the principal returning one')
    return binder(model, rule, `${where}.rules.${name}`)
  }
  const fields = new Map<string, FieldRule<Principal>>()
  for (const [name, rule] of Object.entries(rules.fields ?? {}) as Array<[string, FieldRule<Principal>]>) {
    const at = `${where}.rules.fields.${name}`
    if (!model.fields.has(name)) throw new ResourceInvalidError(at, 'names no field of the schema')
    if (name === model.idField || model.mandatory.includes(name)) throw new ResourceInvalidError(at, 'the id and required fields are always returned, so they cannot be hidden')
    refuseUnknownKeys(rule, fieldRuleKeys, at, message => new ResourceInvalidError(at, message))
    if (rule.shownOnCreate !== undefined && typeof rule.shownOnCreate !== 'boolean') throw new ResourceInvalidError(`${at}.shownOnCreate`, 'must be a boolean')
    fields.set(name, rule)
  }
  const values = new Map<string, ServerValue<unknown, unknown, Principal>>()
  for (const [name, value] of Object.entries(serverValues) as Array<[string, ServerValue<unknown, unknown, Principal>]>) {
    const at = `${where}.serverValues.${name}`
    const field = model.fields.get(name)
    if (field === undefined || name === model.idField || !field.readOnly) throw new ResourceInvalidError(at, 'must name a read-only field of the schema other than the id (Type.Readonly)')
    refuseUnknownKeys(value, serverValueKeys, at, message => new ResourceInvalidError(at, message))
    if (value.on !== 'create' && value.on !== 'write') throw new ResourceInvalidError(at, `on must be 'create' or 'write', received ${JSON.stringify(value.on)}`)
    if (value.value === 'now' ? field.type !== 'datetime' : typeof value.value !== 'function') {
      throw new ResourceInvalidError(at, "value must be a function of the write, or 'now' for a date-time field")
    }
    values.set(name, value)
  }
  refuseUnknownKeys(hooks, hookKeys, `${where}.hooks`, message => new ResourceInvalidError(`${where}.hooks`, message))
  for (const [name, hook] of Object.entries(hooks)) {
    if (typeof hook !== 'function') throw new ResourceInvalidError(`${where}.hooks.${name}`, 'hooks are beforeWrite and afterWrite, each a function of the write')
  }
  const read = rowRule(rules.read, 'read')
  const write = rowRule(rules.write, 'write')
  return {
    read,
    write,
    fields,
    serverValues: values,
    hooks,
    transactional: read !== null || write !== null || hooks.beforeWrite !== undefined || hooks.afterWrite !== undefined
  }
}
