// What the rules add to a write (docs/rules.md): the fields a caller may send, the values the
// server sets, and the hooks with their transaction handle. The routes call these in order.
import type { ResourceModel, View } from '../registry/model.js'
import type { Fields, Store, StoredRecord } from '../stores/store.js'
import type { InvalidParam } from '../errors.js'
import { BodyInvalidError, withInvalidParams } from '../errors.js'
import { parseFilter } from '../query/filter/parser.js'
import { checkFilter } from '../query/filter/check.js'
import { queryParameters } from '../query/parameters.js'
import { withTieBreaker } from '../query/list-query.js'
import type { ModelRules } from './compile.js'
import { createSchema, modifySchema, replaceSchema } from '../registry/derive.js'
import { toInvalidParams } from '../validation.js'
import type { ValidateFunction } from '../validation.js'
import type { ErrorObject } from 'ajv'
import type { preValidationHookHandler } from 'fastify'
import type { Ajv } from 'ajv'
import type { Views } from './view.js'
import type { Transaction, WriteEvent, WriteOperation } from './types.js'

type Principal = unknown

const bodySchemas = { create: createSchema, replace: replaceSchema, modify: modifySchema } as const

/** What the caller's body check reads: the resource's rules, the callers' views, and the Ajv that compiles. */
export interface CallerBodyContext {
  readonly rules: ModelRules | null
  readonly views: Views
  readonly ajv: Ajv
}

/**
 * The body of a write, validated against the caller's view of the schema before the route's own
 * validation, for a resource with field rules: a field the caller may not read is then refused
 * exactly as a made-up name is, in the same list as every other problem (no oracle). Undefined
 * for a resource without field rules; the check answers null when the body passes.
 */
export function callerBodyProblems (model: ResourceModel, operation: keyof typeof bodySchemas, { rules, views, ajv }: CallerBodyContext): ((principal: Principal, body: unknown) => InvalidParam[] | null) | undefined {
  if ((rules?.fields.size ?? 0) === 0) return undefined
  const validators = new WeakMap<View, ValidateFunction>()
  return function callerBodyProblemsOf (principal, body) {
    const view = views.forCaller(principal)(model)
    if (view.hidden === undefined) return null
    let validate = validators.get(view)
    if (validate === undefined) validators.set(view, validate = ajv.compile(bodySchemas[operation](view)))
    // Ajv sets `errors` whenever validation fails.
    return validate(body) ? null : toInvalidParams(validate.errors as ErrorObject[])
  }
}

/** callerBodyProblems as a route step (pipeline.ts). */
export function callerBodyCheck (model: ResourceModel, operation: keyof typeof bodySchemas, context: CallerBodyContext): preValidationHookHandler | undefined {
  const problemsOf = callerBodyProblems(model, operation, context)
  if (problemsOf === undefined) return undefined
  return function checkCallerBody (request, _reply, done) {
    const problems = problemsOf(request.principal, request.body)
    done(problems === null ? undefined : withInvalidParams(new BodyInvalidError(), problems))
  }
}

/** A body naming a field the caller may read but not write is refused by name. */
export function checkWritableFields (rules: ModelRules | null, principal: Principal, body: Fields): void {
  if (rules === null || rules.fields.size === 0) return
  const problems: InvalidParam[] = []
  for (const name of Object.keys(body)) {
    if (rules.fields.get(name)?.write?.(principal) === false) problems.push({ name, reason: 'may not be written by this caller' })
  }
  if (problems.length > 0) throw withInvalidParams(new BodyInvalidError(), problems)
}

/** The fields a caller cannot write, which a REPLACE keeps as they are (it could not have sent them). */
export function unwritableFields (rules: ModelRules | null, principal: Principal): readonly string[] {
  if (rules === null) return []
  return [...rules.fields].filter(([, rule]) => rule.read?.(principal) === false || rule.write?.(principal) === false).map(([name]) => name)
}

/** The record with the values the server sets for this write (rules.serverValues). */
export function withServerValues (rules: ModelRules | null, data: Fields, operation: WriteOperation, principal: Principal, previous: Fields | null): Fields {
  if (rules === null || rules.serverValues.size === 0) return data
  const now = new Date()
  const result = { ...data }
  for (const [name, value] of rules.serverValues) {
    if (value.on === 'create' && operation !== 'create') continue
    result[name] = value.value === 'now' ? now.toISOString() : value.value({ principal, operation, previous, now })
  }
  return result
}

/** What a hook receives; `tx` is the write's own transaction. */
export function writeEvent (operation: WriteOperation, principal: Principal, id: string, record: Fields | null, previous: StoredRecord | null, tx: Transaction): WriteEvent<unknown, Principal> {
  return { operation, principal, id, record, previous: previous?.data ?? null, tx }
}

/** Hooks read with no page limit of their own; a limit they pass bounds it. */
const everything = Number.MAX_SAFE_INTEGER - 1

/**
 * The hooks' handle on the write's transaction: resources by name, unrestricted by rules, run no
 * hooks. A resource kept in another store is out of the transaction's reach, so it is refused.
 */
export function transactionHandle (tx: Store, store: Store, models: ReadonlyMap<string, ResourceModel>, storeOf: (model: ResourceModel) => Store, rulesOf: (model: ResourceModel) => ModelRules | null, principal: Principal): Transaction {
  const modelOf = (resource: string): ResourceModel => {
    const model = models.get(resource)
    if (model === undefined) throw new TypeError(`transaction: no resource '${resource}'`)
    if (storeOf(model) !== store) throw new TypeError(`transaction: ${resource} is kept in another store than this write, out of its transaction`)
    return model
  }
  const sortOf = (model: ResourceModel, value: string) => {
    const problems: InvalidParam[] = []
    const keys = queryParameters.sort.parse(model, value, problems)
    if (problems.length > 0) throw new TypeError(`transaction: ${model.name} sort '${value}': ${problems.map(p => p.reason).join('; ')}`)
    return keys
  }
  return {
    async get (resource, id, options) {
      return (await tx.get(modelOf(resource), id, options))?.data ?? null
    },
    async list (resource, options = {}) {
      const model = modelOf(resource)
      const filter = options.filter === undefined ? null : checkFilter(parseFilter(options.filter, { maxLength: Infinity }), model)
      const sort = withTieBreaker(model, options.sort === undefined ? [] : sortOf(model, options.sort))
      const page = await tx.list(model, { filter, sort, window: { kind: 'offset', offset: 0 }, limit: options.limit ?? everything, total: false })
      return page.items.map(record => record.data)
    },
    async create (resource, fields) {
      const model = modelOf(resource)
      const data = withServerValues(rulesOf(model), normalizeRecord(model, { [model.idField]: model.generateId(), ...fields }), 'create', principal, null)
      return (await tx.create(model, data)).data
    },
    async update (resource, id, changes) {
      const model = modelOf(resource)
      const current = await tx.get(model, id)
      if (current === null) throw new TypeError(`transaction: ${resource} ${id} does not exist`)
      const written = await tx.update(model, id, normalizeRecord(model, { ...current.data, ...changes, [model.idField]: id }))
      return (written as StoredRecord).data
    },
    async remove (resource, id) {
      return await tx.remove(modelOf(resource), id) === true
    }
  }
}

/** Optional nullable fields left out are stored as null, so every store returns the same shape. */
export function normalizeRecord (model: ResourceModel, data: Fields): Fields {
  const record: Fields = { ...data }
  for (const field of model.fields.values()) {
    if (record[field.name] === undefined && field.nullable) record[field.name] = null
  }
  return record
}
