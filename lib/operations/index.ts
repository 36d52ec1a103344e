// The operation core (STYLE "Operations are a core, entry points are adapters"): one function per
// operation of each resource (reads.ts, writes.ts), made once per registration, which the HTTP
// routes (routes/adapter.ts), the batch and any other way in all call. `run` and `perform` are the
// way in from outside a route: the authorization check and the body checked as the route checks
// them (the route makes both before its handler: the check before the body is read), then the
// operation; `perform` answers an error as the problem the route would answer.
import type { FastifyError, FastifyRequest } from 'fastify'
import type { ErrorObject, ValidateFunction } from 'ajv'
import type { ResourceModel } from '../registry/model.js'
import { createSchema, modifySchema, replaceSchema, schemaNames } from '../registry/derive.js'
import { BodyInvalidError, MethodNotAllowedError, NotFoundError, withHeaders, withInvalidParams } from '../errors.js'
import type { ProblemExtras } from '../errors.js'
import { describe, problemBodyBuilder, problemMediaType } from '../problem.js'
import type { ErrorLog } from '../problem.js'
import { callerBodyProblems } from '../rules/write.js'
import { checkAuthorization } from '../security/auth.js'
import { keptAnswer, keyedRunner } from '../idempotency.js'
import type { Keyed } from '../idempotency.js'
import { toInvalidParams } from '../validation.js'
import { itemPath } from '../envelope/index.js'
import type { OperationContext } from './context.js'
import type { OperationInput, Outcome, Perform } from './input.js'
import { readOperations } from './reads.js'
import { writeOperations } from './writes.js'
import { allowedMethods, operationTable } from './table.js'
import type { BodyWrite, ResourceOperation } from './table.js'

/**
 * How an operation performed from outside a route came in: in an HTTP request (a batch's, an MCP
 * call's), which the authorization check is shown; or already authorized when it was accepted
 * (asynchronous work, whose request was checked before it was answered 202).
 */
export type Entry = ({ readonly request: FastifyRequest } | { readonly authorized: true }) & {
  /** The Idempotency-Key it was sent with, scoped to its caller (idempotency.ts): a CREATE or MODIFY then runs as its route runs it under that key. */
  readonly idempotency?: Keyed | undefined
}

export interface Operations {
  /** The function performing `operation` on `model`'s records, as its route's handler calls it; undefined when the resource does not serve it. */
  of (model: ResourceModel, operation: ResourceOperation): Perform | undefined
  /**
   * Performs `operation` on `model`'s records from outside an HTTP route, as the route would: the
   * authorization check (`auth.authorize`), the body checked as the route checks it, then the
   * operation. A refusal is thrown: the error the route would answer. The principal is authenticated.
   */
  run (model: ResourceModel, operation: ResourceOperation, input: OperationInput, entry: Entry): Promise<Outcome>
  /** `run` on `resource` (its plural name), with a refusal (an unknown resource too) answered as the problem the route would answer. */
  perform (resource: string, operation: ResourceOperation, input: OperationInput, entry: Entry): Promise<Outcome>
  /** A refusal met before an operation (an MCP tool's arguments): the problem a route answers for it, at `instance`. */
  problem (error: unknown, instance: string): Outcome
  /** Only the authorization check `run` makes, for work accepted now and run later (`{ authorized: true }`); a refusal is thrown. */
  authorize (model: ResourceModel, operation: ResourceOperation, input: OperationInput, request: FastifyRequest): Promise<void>
}

const bodySchemas = { create: createSchema, replace: replaceSchema, modify: modifySchema } as const

export function createOperations (context: OperationContext, log: ErrorLog, typeBase: string): Operations {
  const performs = new Map<ResourceModel, Partial<Record<ResourceOperation, Perform>>>()
  for (const model of context.models.values()) {
    const all = { ...readOperations(model, context), ...writeOperations(model, context) }
    performs.set(model, Object.fromEntries(Object.entries(all).filter(([name]) => model.operations.has(name as ResourceOperation))))
  }
  const of = (model: ResourceModel, operation: ResourceOperation) => performs.get(model)?.[operation]

  const authorize = context.options.auth?.authorize
  /** The route's authorization step (security/auth.ts), for an operation performed without the route. */
  const authorized = (model: ResourceModel, operation: ResourceOperation, input: OperationInput, entry: Entry) => authorize === undefined || !('request' in entry)
    ? undefined
    : new Promise<void>((resolve, reject) => {
      const id = operationTable[operation].place === 'item' ? input.id : undefined
      const ask = { principal: input.principal, model, operation, method: operationTable[operation].method, id, store: input.joined ?? context.storeOf(model), memo: input.memo, request: entry.request }
      checkAuthorization(authorize, context.views, ask, error => error === null ? resolve() : reject(error))
    })

  const callerChecks = new Map<string, ReturnType<typeof callerBodyProblems>>()
  /**
   * The route's own validator of the body, found in Ajv by the schema's $id: Fastify compiles every
   * route's body when the app starts; compiled here when no route did (operations without a server).
   */
  const validatorOf = (model: ResourceModel, operation: BodyWrite): ValidateFunction => {
    const name = schemaNames(model)[operation]
    return (context.ajv.getSchema(name) ?? context.ajv.compile({ $id: name, ...bodySchemas[operation](model) })) as ValidateFunction
  }
  function checkBody (model: ResourceModel, operation: BodyWrite, principal: unknown, body: unknown): void {
    const key = `${operation} ${model.name}`
    if (!callerChecks.has(key)) callerChecks.set(key, callerBodyProblems(model, operation, { rules: context.rulesOf(model), views: context.views, ajv: context.ajv }))
    const problems = callerChecks.get(key)?.(principal, body) ?? null
    if (problems !== null) throw withInvalidParams(new BodyInvalidError(), problems)
    const validate = validatorOf(model, operation)
    // Ajv sets `errors` whenever validation fails.
    if (!validate(body)) throw withInvalidParams(new BodyInvalidError(), toInvalidParams(validate.errors as ErrorObject[]))
  }

  const runKeyed = context.options.idempotency === null ? null : keyedRunner(context.options.idempotency)
  async function run (model: ResourceModel, operation: ResourceOperation, input: OperationInput, entry: Entry): Promise<Outcome> {
    const performs = of(model, operation)
    if (performs === undefined) {
      const allow = allowedMethods(operationTable[operation].place, model.operations).join(', ')
      throw withHeaders(new MethodNotAllowedError(operationTable[operation].method, allow), { allow })
    }
    await authorized(model, operation, input, entry)
    const { body, keyed } = operationTable[operation]
    if (body !== null) checkBody(model, body, input.principal, input.body)
    if (entry.idempotency === undefined || !keyed || runKeyed === null || input.joined !== null) return await performs(input)
    const result = await runKeyed(context.storeOf(model), entry.idempotency, async tx => {
      // A plain input (operationInput): a spread copies it. A route's lazy input never comes here:
      // its Idempotency-Key is the route's own (idempotency.ts `idempotent`).
      const outcome = await performs({ ...input, joined: tx })
      return { value: outcome, kept: keptAnswer(outcome.status, name => outcome.headers[name], outcome.body) }
    }, error => log.error({ err: error }, 'api-conventions: purging expired Idempotency-Keys failed'))
    if (!result.replayed) return result.value
    const { status, headers, body: kept } = result.response
    return { status, headers: { ...headers, 'idempotent-replayed': 'true' }, body: kept as Outcome['body'] }
  }

  const problemBody = problemBodyBuilder({ errorFormat: context.options.errorFormat, typeBase })
  function problem (error: unknown, instance: string): Outcome {
    const described = describe(error as FastifyError & ProblemExtras, log)
    return { status: described.status, headers: { 'content-type': problemMediaType, ...described.headers }, body: problemBody(described, instance) as unknown as Record<string, unknown> }
  }
  async function perform (resource: string, operation: ResourceOperation, input: OperationInput, entry: Entry): Promise<Outcome> {
    const model = context.models.get(resource)
    // The path the HTTP request would name: the problem's `instance`.
    const instance = model === undefined ? `${context.envelope.prefix}/${resource}` : operationTable[operation].place === 'item' ? itemPath(context.envelope, model, input.id) : `${context.envelope.prefix}/${model.name}`
    try {
      if (model === undefined) throw new NotFoundError(instance)
      return await run(model, operation, input, entry)
    } catch (error) {
      return problem(error, instance)
    }
  }

  return { of, run, perform, problem, authorize: async (model, operation, input, request) => { await authorized(model, operation, input, { request }) } }
}
