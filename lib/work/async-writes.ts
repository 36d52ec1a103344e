// Asynchronous writes (docs/async.md; RFC 7240 `respond-async`): a CREATE, REPLACE, MODIFY or
// DELETE sent with `Prefer: respond-async` is checked as it would be synchronously up to the store
// (the route's steps before its handler: authentication, authorization, the body; then If-Match's
// syntax here), kept as a job of the store of its resource with its caller, and answered 202 with
// the status monitor's URL. A worker (work/queue.ts) later runs it through the operation core, as
// the synchronous request would have run, with the caller who made it; the monitor
// (`GET {prefix}/operations/{id}`) then holds the answer that request would have had.
import { randomUUID } from 'node:crypto'
import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify'
import type { ResourceModel } from '../registry/model.js'
import type { Store } from '../stores/store.js'
import type { Job } from '../stores/jobs.js'
import { NotFoundError, OptionsInvalidError } from '../errors.js'
import { knownKeys, positiveIntegerOr, switchableOptions } from '../options-check.js'
import { readPreconditions } from '../http/conditional.js'
import { prefersAsync, returnPreference } from '../http/prefer.js'
import { keyedTransaction } from '../idempotency.js'
import { kCaller } from '../symbols.js'
import type { OperationContext } from '../operations/context.js'
import type { Operations } from '../operations/index.js'
import { operationInput, outcomeResult } from '../operations/input.js'
import type { WriteOperation } from '../operations/table.js'
import { createWorkers, JobFailed } from './queue.js'
import type { JsonSchema } from '../registry/derive.js'
import { apiRoute } from '../route-spec.js'
import type { RouteSpec } from '../route-spec.js'
import { problems, requestId } from '../routes/http-prose.js'
import type { SchemaOptions } from '../routes/route-schema.js'
import type { WorkLog, Workers } from './queue.js'
import type { Batch } from '../routes/batch.js'

export interface AsyncOptions {
  /** Jobs one instance runs at once, per store. Default 4. */
  readonly concurrency?: number | undefined
  /** Seconds a claimed job is held before another instance may take it (its own presumed dead). Default 10. */
  readonly leaseSeconds?: number | undefined
  /** Milliseconds an idle worker waits before looking for work again. Default 500. */
  readonly pollMillis?: number | undefined
  /** Seconds a finished operation is kept for its monitor. Default 86400 (24 hours). */
  readonly keepSeconds?: number | undefined
  /** Seconds SIGTERM (the app's close) waits for the running jobs. Default 5. */
  readonly stopSeconds?: number | undefined
  /** Times a job is tried while the store is unavailable (or the work throws); then it is kept `failed` with the last problem. Default 5. */
  readonly maxAttempts?: number | undefined
  /** Whether a principal sees every caller's operations (an administrator). Default: none does. */
  readonly seesAll?: ((principal: unknown) => boolean) | undefined
}

export interface ResolvedAsync {
  readonly concurrency: number
  readonly leaseMillis: number
  readonly pollMillis: number
  readonly keepMillis: number
  readonly stopMillis: number
  readonly maxAttempts: number
  readonly seesAll: (principal: unknown) => boolean
}

const asyncKeys = knownKeys({ concurrency: true, leaseSeconds: true, pollMillis: true, keepSeconds: true, stopSeconds: true, maxAttempts: true, seesAll: true } satisfies Record<keyof AsyncOptions, true>)

/** Off unless asked for: `true` or an object turns it on. */
export function resolveAsync (value: unknown): ResolvedAsync | null {
  if (value === undefined || value === false) return null
  const given = switchableOptions(value === true ? {} : value, asyncKeys, 'async', '{ concurrency?, leaseSeconds?, pollMillis?, keepSeconds?, stopSeconds?, maxAttempts?, seesAll? }') as AsyncOptions
  if (given.seesAll !== undefined && typeof given.seesAll !== 'function') throw new OptionsInvalidError('async.seesAll must be a function (principal) => boolean')
  return Object.freeze({
    concurrency: positiveIntegerOr(given.concurrency, 'async.concurrency', 4),
    leaseMillis: positiveIntegerOr(given.leaseSeconds, 'async.leaseSeconds', 10) * 1000,
    pollMillis: positiveIntegerOr(given.pollMillis, 'async.pollMillis', 500),
    keepMillis: positiveIntegerOr(given.keepSeconds, 'async.keepSeconds', 86400) * 1000,
    stopMillis: positiveIntegerOr(given.stopSeconds, 'async.stopSeconds', 5) * 1000,
    maxAttempts: positiveIntegerOr(given.maxAttempts, 'async.maxAttempts', 5),
    seesAll: given.seesAll ?? (() => false)
  })
}

/** The kinds of job a resource write and a batch are (work/queue.ts runs kinds). */
export const WRITE_JOB = 'write'
export const BATCH_JOB = 'batch'

/** The request as kept: what the operation reads, and what the monitor shows. The principal must be JSON. */
interface WritePayload {
  readonly method: string
  readonly path: string
  readonly principal: unknown
  readonly resource: string
  readonly operation: WriteOperation
  readonly id: string
  readonly body: Record<string, unknown> | null
  /** The request's conditional headers and Prefer, as sent. */
  readonly headers: Readonly<Record<string, string>>
}

/** A batch as kept: its body is checked again when it runs. The principal must be JSON. */
interface BatchPayload {
  readonly method: string
  readonly path: string
  readonly principal: unknown
  readonly body: unknown
}

type JobPayload = WritePayload | BatchPayload

/** The headers an operation reads besides its body: its conditions and `return`. */
const keptHeaders = ['if-match', 'if-none-match', 'if-modified-since', 'if-unmodified-since', 'prefer'] as const

/** The monitor's view of an operation. */
function operationView (job: Job) {
  const { method, path } = job.payload as WritePayload
  return {
    id: job.id,
    status: job.state,
    method,
    path,
    createdAt: job.createdAt.toISOString(),
    updatedAt: job.updatedAt.toISOString(),
    ...job.state === 'succeeded' && { result: job.outcome },
    ...job.state === 'failed' && { error: job.outcome }
  }
}

/** Store methods a job store has: only stores with them serve asynchronous work. */
const keepsJobs = (store: Store) => typeof store.addJob === 'function'

export interface AsyncWrites {
  /** The route's handler, answering 202 to a request that prefers it. */
  accepting (model: ResourceModel, operation: WriteOperation, handler: RouteHandlerMethod): RouteHandlerMethod
  /** The batch endpoint's handler, answering 202 to a request that prefers it. */
  acceptingBatch (batch: Batch, handler: RouteHandlerMethod): RouteHandlerMethod
  /** The monitor's handler: `GET {prefix}/operations/:id`. */
  readonly monitor: RouteHandlerMethod
  readonly workers: Workers
  readonly stopMillis: number
}

export function createAsyncWrites (context: OperationContext, core: Operations, settings: ResolvedAsync, log: WorkLog): AsyncWrites {
  const { prefix } = context.envelope
  const stores = [...new Set([...context.models.values()].map(context.storeOf))].filter(keepsJobs)

  /** A kept write, run as its request would have been: a failure it would have answered is kept as its problem. */
  async function runWrite (job: Job, tx: Store): Promise<unknown> {
    const { principal, resource, operation, id, body, headers } = job.payload as WritePayload
    const input = operationInput({ principal, id, body, preconditions: readPreconditions(headers), returnPreference: returnPreference(headers.prefer), joined: tx })
    const outcome = await core.perform(resource, operation, input, { authorized: true })
    // The store unavailable (503): not the request's fault, tried again once the lease ends (its problem kept after the last attempt).
    if (outcome.status === 503) throw Object.assign(new Error('the store is unavailable'), { outcome: outcome.body })
    if (outcome.status >= 400) throw new JobFailed(outcome.body)
    return outcomeResult(outcome)
  }

  /** The batch endpoint, once its route is built (acceptingBatch); a kept batch is checked again as it runs, against the resources then. */
  let batch: Batch | null = null
  async function runBatch (job: Job, tx: Store): Promise<unknown> {
    const { path, principal, body } = job.payload as BatchPayload
    try {
      if (batch === null) throw new NotFoundError(path)
      return { status: 200, ...await batch.perform(batch.check(body), principal, { authorized: true }, tx) }
    } catch (error) {
      const outcome = core.problem(error, path)
      // The store unavailable (503): tried again once the lease ends, as a write is.
      if (outcome.status === 503) throw Object.assign(new Error('the store is unavailable'), { outcome: outcome.body })
      throw new JobFailed(outcome.body)
    }
  }

  const workers = createWorkers(stores, { [WRITE_JOB]: runWrite, [BATCH_JOB]: runBatch }, settings, log)

  /** Keeps `payload` as a job of `kind` in `store` (under an Idempotency-Key, in the transaction that keeps this 202) and answers 202. */
  async function accept (request: FastifyRequest, reply: FastifyReply, store: Store, kind: string, payload: JobPayload) {
    const job = { id: randomUUID(), kind, owner: callerOf(request), payload, createdAt: new Date() }
    await ((keyedTransaction(request) ?? store).addJob as NonNullable<Store['addJob']>)(job)
    workers.wake()
    reply.code(202)
      .header('location', `${prefix}/operations/${job.id}`)
      .header('preference-applied', 'respond-async')
      .header('retry-after', '1')
    return { data: { operation: { id: job.id, status: 'pending', method: payload.method, path: payload.path, createdAt: job.createdAt.toISOString() } } }
  }

  function accepting (model: ResourceModel, operation: WriteOperation, handler: RouteHandlerMethod): RouteHandlerMethod {
    const store = context.storeOf(model)
    if (!keepsJobs(store)) return handler
    return async function acceptAsync (this: unknown, request: FastifyRequest, reply: FastifyReply) {
      if (!prefersAsync(request.headers.prefer)) return await handler.call(this as never, request, reply)
      // The conditions are read now, so a malformed one is refused now (400), as synchronously.
      readPreconditions(request.headers)
      const headers: Record<string, string> = {}
      for (const name of keptHeaders) {
        const value = request.headers[name]
        if (value !== undefined) headers[name] = [value].flat().join(', ')
      }
      return await accept(request, reply, store, WRITE_JOB, {
        method: request.method,
        path: request.url.split('?', 1)[0],
        principal: request.principal,
        resource: model.name,
        operation,
        id: (request.params as { id?: string }).id ?? '',
        body: (request.body ?? null) as Record<string, unknown> | null,
        headers
      } satisfies WritePayload)
    }
  }

  function acceptingBatch (given: Batch, handler: RouteHandlerMethod): RouteHandlerMethod {
    batch = given
    return async function acceptAsyncBatch (this: unknown, request: FastifyRequest, reply: FastifyReply) {
      if (!prefersAsync(request.headers.prefer)) return await handler.call(this as never, request, reply)
      // Checked now as the batch is synchronously, up to the store: its shape and plan (400), each operation's authorization (403).
      const checked = given.check(request.body)
      if (!keepsJobs(checked.store)) return await handler.call(this as never, request, reply)
      await given.authorize(checked, request.principal, request)
      return await accept(request, reply, checked.store, BATCH_JOB, { method: request.method, path: request.url.split('?', 1)[0], principal: request.principal, body: request.body } satisfies BatchPayload)
    }
  }

  async function monitor (request: FastifyRequest, reply: FastifyReply) {
    const { id } = request.params as { id: string }
    let job: Job | null = null
    for (const store of stores) {
      job = await (store.getJob as NonNullable<Store['getJob']>)(id)
      if (job !== null) break
    }
    // Another caller's operation is not found, as a record hidden by a row rule is not.
    if (job === null || (job.owner !== callerOf(request) && !settings.seesAll(request.principal))) throw new NotFoundError(request.url.split('?', 1)[0])
    if (job.state === 'pending' || job.state === 'running') reply.header('retry-after', '1')
    return { data: { operation: operationView(job) } }
  }

  return { accepting, acceptingBatch, monitor, workers, stopMillis: settings.stopMillis }
}

/** Who the request's caller is (its admission key, security/auth.ts principalKey); null without credentials. */
const callerOf = (request: FastifyRequest): string | null => (request as unknown as { [kCaller]: string | null })[kCaller]

/** The monitor's answer and the 202's body (its `operation` then `pending`, without result or error): one component, `OperationStatus`. */
export const operationStatusSchema: JsonSchema = {
  $id: 'OperationStatus',
  type: 'object',
  properties: {
    data: {
      type: 'object',
      properties: {
        operation: {
          type: 'object',
          properties: {
            id: { type: 'string' },
            status: { type: 'string', enum: ['pending', 'running', 'succeeded', 'failed'] },
            method: { type: 'string' },
            path: { type: 'string' },
            createdAt: { type: 'string', format: 'date-time' },
            updatedAt: { type: 'string', format: 'date-time' },
            result: {
              type: 'object',
              description: 'succeeded: the synchronous answer\'s status, Location, ETag and data.',
              properties: { status: { type: 'integer' }, location: { type: 'string' }, etag: { type: 'string' }, data: { type: 'object' } },
              required: ['status']
            },
            error: { $ref: 'Problem#', description: 'failed: the synchronous answer\'s problem.' }
          },
          required: ['id', 'status', 'method', 'path', 'createdAt']
        }
      },
      required: ['operation']
    }
  },
  required: ['data']
}

const retryAfter = { 'Retry-After': { type: 'integer', description: 'While the operation is not finished: seconds to wait before asking again.' } }

/** The 202 every write answers to `Prefer: respond-async`, as documented on each (route schemas' documentedResponses). */
export const acceptedResponse: JsonSchema = {
  $ref: 'OperationStatus#',
  description: 'Accepted (Prefer: respond-async): checked and kept; it runs once, on any instance. Its status monitor is at Location.',
  headers: {
    Location: { type: 'string', description: 'The status monitor.' },
    'Preference-Applied': { type: 'string', enum: ['respond-async'] },
    ...retryAfter,
    ...requestId
  }
}

/** `GET {prefix}/operations/:id`: the status monitor of an operation accepted with 202. */
export function monitorRouteSpec (writes: AsyncWrites, options: SchemaOptions): RouteSpec {
  const json = ['application/json']
  const schema = {
    operationId: 'getOperation',
    summary: 'The status of an operation accepted with 202',
    description: 'The status monitor of a write sent with `Prefer: respond-async`: `pending` or `running` (with Retry-After), then `succeeded` with `result`, what the request would have answered synchronously, or `failed` with `error`, the problem it would have answered. Only its caller sees it (and those who see every caller\'s); kept for a day after it finishes.',
    tags: ['operations'],
    params: { type: 'object', properties: { id: { type: 'string', description: 'The operation\'s id, from the Location of its 202.' } }, required: ['id'] },
    produces: json,
    documentedResponses: {
      200: {
        $ref: 'OperationStatus#',
        description: 'The operation.',
        headers: { ...retryAfter, ...requestId }
      },
      ...problems(options, [404], { 404: 'no operation has this id, it was removed (a day after it finished), or it is another caller\'s.' }, false)
    }
  }
  return apiRoute({
    method: 'GET',
    path: '/operations/:id',
    allow: ['GET', 'HEAD'],
    operation: 'operation-status',
    responseTypes: json,
    schema,
    handler: writes.monitor
  })
}
