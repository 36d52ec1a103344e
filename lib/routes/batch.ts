// Batch (docs/demo-contract.md "Safe retries and atomic writes"; JSON:API atomic operations,
// OData change sets): `POST {prefix}/batch` runs creates, replaces, modifies and deletes in order,
// all or nothing, in one transaction of the resources' store. Each operation is run by the operation
// core (operations/ `run`) as its HTTP request would be: the authorization check, the caller's view
// of the schema, the schema itself, then the operation, joining the batch's transaction.
// Local ids (`lid`) name what an earlier create made, wherever an id is expected.
import type { FastifyRequest, RouteHandlerMethod } from 'fastify'
import type { ErrorObject } from 'ajv'
import type { ResourceModel } from '../registry/model.js'
import type { JsonSchema } from '../registry/derive.js'
import type { Fields, Store } from '../stores/store.js'
import { BodyInvalidError, ResourceInvalidError, withInvalidParams } from '../errors.js'
import type { InvalidParam, ProblemExtras } from '../errors.js'
import { parseTagList } from '../http/conditional.js'
import { keyedTransaction } from '../idempotency.js'
import { knownKeys, positiveIntegerOr, switchableOptions } from '../options-check.js'
import { toInvalidParams } from '../validation.js'
import type { OperationContext } from '../operations/context.js'
import { operationInput } from '../operations/input.js'
import type { Outcome } from '../operations/input.js'
import type { Entry, Operations } from '../operations/index.js'
import { operationTable, writeOperations } from '../operations/table.js'
import type { WriteOperation } from '../operations/table.js'

export interface BatchOptions {
  /** The most operations one batch may hold. Default 100. */
  readonly maxOperations?: number | undefined
}

export interface ResolvedBatch { readonly maxOperations: number }

const batchKeys = knownKeys({ maxOperations: true } satisfies Record<keyof BatchOptions, true>)

/** `false` serves no batch endpoint; anything else is checked here. */
export function resolveBatch (value: unknown): ResolvedBatch | null {
  const given = switchableOptions(value, batchKeys, 'batch', '{ maxOperations? }')
  return given === null ? null : Object.freeze({ maxOperations: positiveIntegerOr(given.maxOperations, 'batch.maxOperations', 100) })
}

/** A batch holds the writes (operations/table.ts). */
export type BatchOp = WriteOperation

interface LocalId { readonly lid: string }
interface Operation {
  readonly op: BatchOp
  readonly resource: string
  readonly id?: string | LocalId
  readonly lid?: string
  readonly ifMatch?: string
  readonly data?: Fields
}

const maxLidLength = 255
/** A `lid`, and `{ "lid": … }` where an id is expected: checked here, documented by route-schema.ts. */
export const lidSchema: JsonSchema = { type: 'string', minLength: 1, maxLength: maxLidLength }
export const localIdSchema: JsonSchema = { type: 'object', properties: { lid: lidSchema }, required: ['lid'], additionalProperties: false }

/** The shape every operation has, whatever its resource; the operation's `data` is checked against its own schema. */
function shapeSchema (resources: readonly string[], maxOperations: number): JsonSchema {
  return {
    type: 'object',
    properties: {
      operations: {
        type: 'array',
        minItems: 1,
        maxItems: maxOperations,
        items: {
          type: 'object',
          properties: {
            op: { type: 'string', enum: [...writeOperations] },
            resource: { type: 'string', enum: [...resources] },
            id: { anyOf: [{ type: 'string', minLength: 1 }, localIdSchema] },
            lid: lidSchema,
            ifMatch: { type: 'string' },
            data: { type: 'object' }
          },
          required: ['op', 'resource'],
          additionalProperties: false
        }
      }
    },
    required: ['operations'],
    additionalProperties: false
  }
}

/** `operations.3.op` (Ajv's path) → `operations/3/op`, a JSON pointer without its leading slash, as the contract names members. */
const pointer = (param: InvalidParam): InvalidParam => ({ name: param.name.replaceAll('.', '/'), reason: param.reason })

/**
 * An error of operation `index` as the batch's answer: its problem, with `operation` and the
 * names in invalidParams prefixed `operations/<index>/`. Server errors stay as they are.
 */
function inOperation (error: unknown, index: number): unknown {
  const failed = error as Error & ProblemExtras & { statusCode?: number }
  if (typeof failed?.statusCode !== 'number' || failed.statusCode >= 500) return error
  failed.operation = index
  if (failed.invalidParams !== undefined) failed.invalidParams = failed.invalidParams.map(param => ({ name: `operations/${index}/${param.name}`, reason: param.reason }))
  return failed
}

/**
 * The checks that need no store, before anything is written: each operation names what its op
 * needs and nothing else, every resource is served with that op and kept in the first one's
 * store, every local id is made by an earlier create of the resource where it is used.
 */
function checkPlan (operations: readonly Operation[], context: OperationContext, core: Operations): Store {
  const made = new Map<string, ResourceModel>()
  const first = context.storeOf(context.models.get(operations[0].resource) as ResourceModel)
  operations.forEach((operation, index) => {
    const refuse = (member: string, reason: string) => inOperation(withInvalidParams(new BodyInvalidError(), [{ name: member, reason }]), index)
    const model = context.models.get(operation.resource) as ResourceModel
    const localId = (member: string, value: unknown, target: ResourceModel) => {
      if (typeof value !== 'object' || value === null || !('lid' in value)) return
      const maker = made.get((value as LocalId).lid)
      if (maker === undefined) throw refuse(member, `names no record an earlier create of this batch made (lid '${(value as LocalId).lid}')`)
      if (maker !== target) throw refuse(member, `names one of ${maker.name} (lid '${(value as LocalId).lid}'), where one of ${target.name} is expected`)
    }
    if (core.of(model, operation.op) === undefined) throw refuse('op', `${model.name} cannot be ${operationTable[operation.op].past} here`)
    if (context.storeOf(model) !== first) throw refuse('resource', `is kept in another store than ${operations[0].resource}; a batch is one transaction of one store`)
    if (operation.op === 'create') {
      if (operation.id !== undefined) throw refuse('id', 'is set by the server; name the new record with lid')
    } else {
      if (operation.id === undefined) throw refuse('id', `is required by ${operation.op}`)
      if (operation.lid !== undefined) throw refuse('lid', 'names the record a create makes; use it in id')
      localId('id', operation.id, model)
    }
    if (operation.op === 'delete' && operation.data !== undefined) throw refuse('data', 'is not taken by delete')
    if (operation.op !== 'delete' && operation.data === undefined) throw refuse('data', `is required by ${operation.op}`)
    for (const relation of model.relations.values()) {
      if (relation.kind === 'one') localId(relation.field, operation.data?.[relation.field], relation.target)
    }
    if (operation.lid !== undefined) {
      if (made.has(operation.lid)) throw refuse('lid', `'${operation.lid}' names an earlier create's record already`)
      made.set(operation.lid, model)
    }
  })
  return first
}

/** A batch's operations, checked against its shape and plan, and the store they are kept in. */
export interface CheckedBatch {
  readonly operations: readonly Operation[]
  readonly store: Store
}

/** The batch endpoint's work, apart from its route: asynchronous work (work/async-writes.ts) accepts a batch now and performs it later. */
export interface Batch {
  /** The body against the shape and then the plan (400): nothing is read or written. */
  check (body: unknown): CheckedBatch
  /** The authorization check of each operation, as `perform` with `{ request }` makes it; an id that is a local id is not known yet. */
  authorize (batch: CheckedBatch, principal: unknown, request: FastifyRequest): Promise<void>
  /** Performs the operations in order in `joined`, or else in one transaction of their store: every one or none. */
  perform (batch: CheckedBatch, principal: unknown, entry: Entry, joined: Store | null): Promise<{ data: { results: unknown[] } }>
}

export function createBatch (context: OperationContext, settings: ResolvedBatch, core: Operations): Batch {
  const models = [...context.models.values()]
  if (context.models.has('batch')) throw new ResourceInvalidError('batch', 'its path /batch is the batch endpoint\'s; rename the resource or set batch: false')
  const validateShape = context.ajv.compile(shapeSchema(models.map(model => model.name), settings.maxOperations))
  /** `data` with every local id replaced by the id it stands for. */
  function dataOf (operation: Operation, model: ResourceModel, idOf: (value: unknown) => unknown): Fields | null {
    if (operation.op === 'delete') return null
    const data: Fields = { ...operation.data }
    for (const relation of model.relations.values()) {
      if (relation.kind === 'one' && data[relation.field] !== undefined) data[relation.field] = idOf(data[relation.field])
    }
    return data
  }

  /** One operation's result, as the contract words it, from the outcome its HTTP request would get. */
  function resultOf (op: BatchOp, { status, headers, body }: Outcome) {
    if (status === 204) return { status }
    const { data } = body as { data: Fields }
    return op === 'create' ? { status, location: headers.location, etag: headers.etag, data } : { status, etag: headers.etag, data }
  }

  function check (body: unknown): CheckedBatch {
    if (!validateShape(body)) throw withInvalidParams(new BodyInvalidError(), toInvalidParams(validateShape.errors as ErrorObject[]).map(pointer))
    const operations = (body as { operations: Operation[] }).operations
    return { operations, store: checkPlan(operations, context, core) }
  }

  async function authorize ({ operations }: CheckedBatch, principal: unknown, request: FastifyRequest): Promise<void> {
    for (const [index, operation] of operations.entries()) {
      const id = typeof operation.id === 'string' ? operation.id : ''
      const input = operationInput({ principal, id, body: operation.data ?? null, preconditions: {}, joined: null })
      await core.authorize(context.models.get(operation.resource) as ResourceModel, operation.op, input, request).catch((error: unknown) => { throw inOperation(error, index) })
    }
  }

  async function perform ({ operations, store }: CheckedBatch, principal: unknown, entry: Entry, joined: Store | null) {
    const work = async (tx: Store) => {
      const ids = new Map<string, string>()
      const idOf = (value: unknown) => typeof value === 'object' && value !== null ? ids.get((value as LocalId).lid) : value
      const results = []
      for (const [index, operation] of operations.entries()) {
        try {
          const model = context.models.get(operation.resource) as ResourceModel
          const id = String(idOf(operation.id) ?? '')
          const preconditions = { ifMatch: parseTagList(operation.ifMatch, 'ifMatch') }
          const body = dataOf(operation, model, idOf)
          const outcome = await core.run(model, operation.op, operationInput({ principal, id, body, preconditions, joined: tx }), entry)
          if (operation.lid !== undefined) ids.set(operation.lid, outcome.created as string)
          results.push(resultOf(operation.op, outcome))
        } catch (error) {
          throw inOperation(error, index)
        }
      }
      return results
    }
    return { data: { results: await (joined === null ? store.transaction(work) : work(joined)) } }
  }

  return { check, authorize, perform }
}

/** The route handler of `POST {prefix}/batch`: the body checked, then each operation authorized and performed as its own request. */
export function batchHandler (batch: Batch): RouteHandlerMethod {
  return async function runBatch (request: FastifyRequest) {
    return await batch.perform(batch.check(request.body), request.principal, { request }, keyedTransaction(request))
  }
}

/** Where a batch runs its Idempotency-Key: in the store of its operations (the first one's; checkPlan refuses others). */
export function batchStoreOf (context: OperationContext) {
  return (request: FastifyRequest): Store => {
    const operations = (request.body as { operations?: Array<{ resource?: unknown }> } | null)?.operations
    const model = context.models.get(String(operations?.[0]?.resource))
    return context.storeOf(model ?? [...context.models.values()][0])
  }
}
