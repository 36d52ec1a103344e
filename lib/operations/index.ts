// The operation core (STYLE "Operations are a core, entry points are adapters"): one function per
// operation of each resource (reads.ts, writes.ts), made once per registration, which the HTTP
// routes (routes/adapter.ts), the batch and any other way in all call. `perform` is the way in
// from outside a route: the body checked as the route checks it, the operation, and an error
// answered as the problem the route would answer.
import type { FastifyError } from 'fastify'
import type { ErrorObject, ValidateFunction } from 'ajv'
import type { ResourceModel } from '../registry/model.js'
import { createSchema, modifySchema, replaceSchema, schemaNames } from '../registry/derive.js'
import { BodyInvalidError, MethodNotAllowedError, NotFoundError, withHeaders, withInvalidParams } from '../errors.js'
import type { ProblemExtras } from '../errors.js'
import { describe, problemBodyBuilder, problemMediaType } from '../problem.js'
import type { ErrorLog } from '../problem.js'
import { callerBodyProblems } from '../rules/write.js'
import { toInvalidParams } from '../validation.js'
import { itemPath } from '../envelope/index.js'
import type { OperationContext } from './context.js'
import type { OperationInput, Outcome, Perform } from './input.js'
import { readOperations } from './reads.js'
import { writeOperations } from './writes.js'
import { allowedMethods, operationTable } from './table.js'
import type { BodyWrite, ResourceOperation } from './table.js'

export interface Operations {
  /** The function performing `operation` on `model`'s records; undefined when the resource does not serve it. */
  of (model: ResourceModel, operation: ResourceOperation): Perform | undefined
  /** Throws the 400 the route answers for a body the caller may not send, or that its schema refuses. */
  checkBody (model: ResourceModel, operation: BodyWrite, principal: unknown, body: unknown): void
  /**
   * Performs `operation` on `resource` (its plural name) from outside an HTTP route: the body
   * checked as the route checks it, then the operation; a refusal is the problem the route would
   * answer, as an outcome. The caller has already authenticated and authorized the principal.
   */
  perform (resource: string, operation: ResourceOperation, input: OperationInput): Promise<Outcome>
}

const bodySchemas = { create: createSchema, replace: replaceSchema, modify: modifySchema } as const

export function createOperations (context: OperationContext, log: ErrorLog, typeBase: string): Operations {
  const performs = new Map<ResourceModel, Partial<Record<ResourceOperation, Perform>>>()
  for (const model of context.models.values()) {
    const all = { ...readOperations(model, context), ...writeOperations(model, context) }
    performs.set(model, Object.fromEntries(Object.entries(all).filter(([name]) => model.operations.has(name as ResourceOperation))))
  }
  const of = (model: ResourceModel, operation: ResourceOperation) => performs.get(model)?.[operation]

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

  const problemBody = problemBodyBuilder({ errorFormat: context.options.errorFormat, typeBase })
  async function perform (resource: string, operation: ResourceOperation, input: OperationInput): Promise<Outcome> {
    const model = context.models.get(resource)
    // The path the HTTP request would name: the problem's `instance`.
    const instance = model === undefined ? `${context.envelope.prefix}/${resource}` : operationTable[operation].place === 'item' ? itemPath(context.envelope, model, input.id) : `${context.envelope.prefix}/${model.name}`
    try {
      if (model === undefined) throw new NotFoundError(instance)
      const run = of(model, operation)
      if (run === undefined) {
        const allow = allowedMethods(operationTable[operation].place, model.operations).join(', ')
        throw withHeaders(new MethodNotAllowedError(operationTable[operation].method, allow), { allow })
      }
      const body = operationTable[operation].body
      if (body !== null) checkBody(model, body, input.principal, input.body)
      return await run(input)
    } catch (error) {
      const problem = describe(error as FastifyError & ProblemExtras, log)
      return { status: problem.status, headers: { 'content-type': problemMediaType, ...problem.headers }, body: problemBody(problem, instance) as unknown as Record<string, unknown> }
    }
  }

  return { of, checkBody, perform }
}
