// Webhooks (docs/changes.md "Webhooks"): callers subscribe a URL to the change log; every change a
// subscription's owner may see is POSTed to it, signed as Standard Webhooks says.
// - The subscriptions are an ordinary resource, `webhooks`, of the resources' store: its rules keep
//   each caller to its own, its server values set the owner and the secret, a hook checks the URL.
// - Deliveries are records of an internal model kept in the same store (no routes of their own but
//   the two below), made by a fan-out that tails the change log: it writes the deliveries of a batch
//   of changes and moves its cursor in one transaction, compare-and-set on the cursor's version, so
//   instances sharing the store never fan a change out twice, and a crash before the commit loses none.
// - A sender claims a due delivery (compare-and-set: one instance wins) under a lease, POSTs it
//   (webhook-http.ts: to the addresses it checked) and writes the outcome; a claim whose instance
//   died is claimed again when its lease ends. Finished deliveries are purged past the retention.
import { createHmac, randomBytes } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify'
import { NotFoundError, ConflictError, OptionsInvalidError, QueryInvalidError, UnprocessableError, withInvalidParams } from '../errors.js'
import { knownKeys, refuseUnknownKeys } from '../options-check.js'
import type { ResourceDefinition } from '../define.js'
import { buildRegistry } from '../registry/index.js'
import type { ResourceModel } from '../registry/model.js'
import { newUuidV7 } from '../registry/uuid.js'
import { readRecordOnce } from '../record-once.js'
import { parseFilter } from '../query/filter/parser.js'
import { checkFilter } from '../query/filter/check.js'
import { withTieBreaker } from '../query/list-query.js'
import { queryParameters } from '../query/parameters.js'
import type { OperationContext } from '../operations/context.js'
import { apiRoute } from '../route-spec.js'
import type { RouteSpec } from '../route-spec.js'
import { problems, requestId } from '../routes/http-prose.js'
import { checkAuthorization } from '../security/auth.js'
import type { SchemaOptions } from '../routes/route-schema.js'
import { kResolveHost } from '../symbols.js'
import { VERSION_MISMATCH } from '../stores/store.js'
import type { ChangeRecord, Fields, Store, StoredRecord } from '../stores/store.js'
import type { ShownChange } from './present.js'
import { purgeNowAndThen } from './purge.js'
import type { Wakeups } from './wakeups.js'
import { normalHost, resolveHost, urlRefusal, webhookPoster } from './webhook-http.js'
import type { ResolveHost } from './webhook-http.js'

export interface WebhooksOptions {
  /**
   * Host names or addresses webhook URLs may name (an array, or comma-separated); every other host is
   * refused with 422. A delivery to a name that resolves to an address not public (private,
   * loopback, link-local …) is refused unless that address is listed too (`localhost`'s loopback excepted).
   */
  readonly allowedHosts: readonly string[] | string
  /** The owner a subscription gets from its creator. Default: the principal's `user`, `sub` or `id`. */
  readonly ownerOf?: ((principal: any) => string | null | undefined) | undefined
  /** Whether a principal sees and changes every caller's subscriptions (an administrator). Default: none does. */
  readonly seesAll?: ((principal: any) => boolean) | undefined
  /** Milliseconds before each retry; a delivery is dead after `retrySchedule.length + 1` failed attempts. Default 1 s, 5 s, 30 s, 2 min, 10 min, 1 h, 4 h. */
  readonly retrySchedule?: readonly number[] | undefined
  /** Milliseconds a receiver has to answer. Default 10000. */
  readonly timeout?: number | undefined
}

export interface ResolvedWebhooks {
  readonly allowedHosts: ReadonlySet<string>
  readonly ownerOf: (principal: unknown) => string | null
  readonly seesAll: (principal: unknown) => boolean
  readonly retrySchedule: readonly number[]
  readonly timeout: number
  /** How deliveries resolve host names: dns.lookup, or what a test gives under kResolveHost. */
  readonly resolveHost: ResolveHost
}

const webhooksKeys = knownKeys({ allowedHosts: true, ownerOf: true, seesAll: true, retrySchedule: true, timeout: true } satisfies Record<keyof WebhooksOptions, true>)
const defaultSchedule = [1000, 5000, 30_000, 120_000, 600_000, 3_600_000, 14_400_000]

function defaultOwner (principal: unknown): string | null {
  const given = (principal ?? {}) as Record<string, unknown>
  const owner = given.user ?? given.sub ?? given.id
  return typeof owner === 'string' && owner !== '' ? owner : null
}

export function resolveWebhooks (value: unknown): ResolvedWebhooks | null {
  if (value === undefined) return null
  if (typeof value !== 'object' || value === null) throw new OptionsInvalidError(`changes.webhooks must be an object { allowedHosts, ownerOf?, seesAll?, retrySchedule?, timeout? }, received ${JSON.stringify(value)}`)
  const given = value as Record<string, unknown>
  refuseUnknownKeys(given, webhooksKeys, 'changes.webhooks')
  const hosts = typeof given.allowedHosts === 'string' ? given.allowedHosts.split(',') : given.allowedHosts
  if (!Array.isArray(hosts) || hosts.some(host => typeof host !== 'string')) throw new OptionsInvalidError(`changes.webhooks.allowedHosts must be host names or addresses, received ${JSON.stringify(given.allowedHosts)}`)
  for (const name of ['ownerOf', 'seesAll'] as const) {
    if (given[name] !== undefined && typeof given[name] !== 'function') throw new OptionsInvalidError(`changes.webhooks.${name} must be a function of the principal`)
  }
  const schedule = given.retrySchedule ?? defaultSchedule
  if (!Array.isArray(schedule) || schedule.some(ms => !Number.isInteger(ms) || ms < 0)) throw new OptionsInvalidError(`changes.webhooks.retrySchedule must be milliseconds (integers), received ${JSON.stringify(given.retrySchedule)}`)
  const timeout = given.timeout ?? 10_000
  if (!Number.isInteger(timeout) || (timeout as number) <= 0) throw new OptionsInvalidError(`changes.webhooks.timeout must be positive milliseconds, received ${JSON.stringify(given.timeout)}`)
  const ownerOf = (given.ownerOf ?? defaultOwner) as (principal: unknown) => string | null | undefined
  return Object.freeze({
    allowedHosts: new Set(hosts.map(normalHost).filter(host => host !== '')),
    ownerOf: (principal: unknown) => ownerOf(principal) ?? null,
    seesAll: (given.seesAll ?? (() => false)) as (principal: unknown) => boolean,
    retrySchedule: Object.freeze([...schedule]),
    timeout: timeout as number,
    resolveHost: ((given as Record<symbol, unknown>)[kResolveHost] as ResolveHost | undefined) ?? resolveHost
  })
}

export const WEBHOOKS = 'webhooks'

const Webhook = Type.Object({
  id: Type.Readonly(Type.String({ description: 'Server-assigned identifier (UUIDv7).' })),
  url: Type.String({ maxLength: 2000, description: 'Where changes are POSTed: an http: or https: URL whose host the server allows.', examples: ['http://127.0.0.1:8080/hooks'] }),
  resources: Type.Optional(Type.Union([Type.Array(Type.String(), { maxItems: 100 }), Type.Null()], { description: 'The resources (plural names) whose changes are sent; null: every one.', examples: [null] })),
  active: Type.Optional(Type.Boolean({ default: true, description: 'An inactive subscription receives nothing.' })),
  secret: Type.ReadonlyOptional(Type.String({ description: 'The signing secret, `whsec_` and base64: in the CREATE answer only.' })),
  ownerId: Type.Readonly(Type.String({ description: 'The caller who created it (set by the server).' })),
  createdAt: Type.ReadonlyOptional(Type.String({ format: 'date-time', description: 'Set by the server on CREATE.' })),
  principal: Type.ReadonlyOptional(Type.String({ description: 'Internal: the creator, whose view of the changes is sent. Never shown.' }))
}, { additionalProperties: false })

/** A string literal of the filter language. */
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`
const never = () => false

function refusedUrl (reason: string): Error {
  return withInvalidParams(new UnprocessableError('This webhook URL cannot be used.'), [{ name: 'url', reason }])
}

/** The `webhooks` resource, kept in `store`; `resourceNames` lists the others (read when a subscription is written). */
export function webhooksResource (settings: ResolvedWebhooks, store: Store, resourceNames: () => readonly string[]): ResourceDefinition {
  // Without an owner, nothing is one's own (every subscription has one): CREATE is refused.
  const mine = (principal: unknown) => {
    if (settings.seesAll(principal)) return null
    const owner = settings.ownerOf(principal)
    return owner === null ? 'ownerId eq null' : `ownerId eq ${literal(owner)}`
  }
  return {
    name: WEBHOOKS,
    singular: 'webhook',
    schema: Webhook,
    store,
    defaultPageSize: 20,
    maxPageSize: 100,
    rules: {
      read: mine,
      write: mine,
      fields: { secret: { read: never, write: never, shownOnCreate: true }, principal: { read: never, write: never } }
    },
    serverValues: {
      secret: { on: 'create', value: () => `whsec_${randomBytes(32).toString('base64')}` },
      ownerId: { on: 'create', value: ({ principal }) => settings.ownerOf(principal) ?? '' },
      createdAt: { on: 'create', value: 'now' },
      principal: { on: 'create', value: ({ principal }) => JSON.stringify(principal ?? null) }
    },
    hooks: {
      async beforeWrite ({ record }) {
        if (record === null) return
        const refusal = urlRefusal(record.url, settings.allowedHosts)
        if (refusal !== null) throw refusedUrl(refusal)
        const known = resourceNames()
        const unknown = ((record.resources ?? []) as string[]).filter(name => !known.includes(name))
        if (unknown.length > 0) throw withInvalidParams(new UnprocessableError('This webhook names resources that are not served.'), [{ name: 'resources', reason: `no resource is named ${unknown.map(name => `'${name}'`).join(', ')}` }])
      }
    }
  }
}

// The internal models: deliveries, and the fan-out's cursor (one record).
const Delivery = Type.Object({
  id: Type.Readonly(Type.String()),
  webhookId: Type.String(),
  changeId: Type.String(),
  /** The change's position, zero-padded so that text order is log order. */
  seq: Type.String(),
  resource: Type.String(),
  recordId: Type.String(),
  status: Type.String(),
  attempts: Type.Integer(),
  lastStatus: Type.Union([Type.Integer(), Type.Null()]),
  lastError: Type.Union([Type.String(), Type.Null()]),
  nextAttemptAt: Type.Union([Type.String(), Type.Null()]),
  leaseUntil: Type.Union([Type.String(), Type.Null()]),
  /** When it was delivered or made dead: it is purged once that is older than the retention. */
  finishedAt: Type.Union([Type.String(), Type.Null()]),
  /** The JSON body, as the owner sees the change (fixed when fanned out: every attempt sends the same). */
  body: Type.String()
}, { additionalProperties: false })

const Cursor = Type.Object({ id: Type.Readonly(Type.String()), position: Type.String() }, { additionalProperties: false })

const [deliveriesModel, cursorsModel] = buildRegistry([
  { name: 'apiWebhookDeliveries', singular: 'apiWebhookDelivery', schema: Delivery },
  { name: 'apiWebhookCursors', singular: 'apiWebhookCursor', schema: Cursor }
])

/** The models the store keeps besides the resources (passed to its `prepare`). */
export const webhookModels: readonly ResourceModel[] = [deliveriesModel, cursorsModel]

const CURSOR = 'fanout'
/** How long the fan-out gathers commits after the one that woke it, in milliseconds. */
const fanOutGathering = 50
const seqOf = (position: string) => position.padStart(20, '0')
const batchSize = 100
const purgeBatch = 500
const idleWait = 30_000

async function listWhere (store: Store, model: ResourceModel, filter: string, sort: string, limit: number): Promise<readonly StoredRecord[]> {
  const keys = queryParameters.sort.parse(model, sort, [])
  const page = await store.list(model, { filter: checkFilter(parseFilter(filter, { maxLength: Infinity }), model), sort: withTieBreaker(model, keys), window: { kind: 'offset', offset: 0 }, limit, total: false })
  return page.items
}

/** The Standard Webhooks signature of a body. */
export function sign (secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64')
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`
}

/** Resolves after `ms`, or at once when `signal` aborts or `wake` is called. */
function pause (ms: number, signal: AbortSignal, wakers: Set<() => void>): Promise<void> {
  return new Promise(resolve => {
    const done = () => { clearTimeout(timer); signal.removeEventListener('abort', done); wakers.delete(done); resolve() }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done)
    wakers.add(done)
  })
}

export interface Webhooks {
  readonly start: () => void
  readonly stop: () => Promise<void>
  /** The routes of a subscription's deliveries. */
  readonly specs: (context: OperationContext, schemaOptions: SchemaOptions) => RouteSpec[]
}

/**
 * The fan-out and the sender over `store` (the resources' store, unrecorded: the deliveries'
 * writes are no changes), the log's `wakeups`, and `present`, a change as a principal sees it;
 * finished deliveries are kept for `retention` (the change log's) milliseconds.
 */
export function createWebhooks (settings: ResolvedWebhooks, retention: number, store: Store, wakeups: Wakeups, present: (principal: unknown, change: ChangeRecord) => ShownChange | null, logger: FastifyBaseLogger, webhooksModel: ResourceModel): Webhooks {
  const stopping = new AbortController()
  const poster = webhookPoster(settings, stopping.signal)
  const senderWakers = new Set<() => void>()
  const wakeSender = () => { for (const wake of [...senderWakers]) wake() }
  let running: Array<Promise<void>> = []
  const log = store as Required<Pick<Store, 'readChanges'>>

  /**
   * The cursor, made at the log's start when missing: the first instance with webhooks on reads the
   * log through before anyone can subscribe, and from then on a subscription gets the changes
   * fanned out after it was made.
   */
  async function cursor (): Promise<StoredRecord> {
    const found = await store.get(cursorsModel, CURSOR)
    if (found !== null) return found
    // Another instance may make it first: then its cursor is read.
    return await store.create(cursorsModel, { id: CURSOR, position: '0' }).catch(async () => await store.get(cursorsModel, CURSOR) as StoredRecord)
  }

  /**
   * Fans out one batch: `found` false when there was nothing after the cursor, `full` when there
   * is more right behind it.
   */
  async function fanOut (): Promise<{ head: string, found: boolean, full: boolean }> {
    const at = await cursor()
    const moveCursor = async (on: Store, last: string) => {
      const moved = await on.update(cursorsModel, CURSOR, { id: CURSOR, position: last }, { ifVersion: at.version })
      // Another instance fanned this batch out first: this one's deliveries roll back. (The cursor,
      // an internal record no route reaches, is never removed: the update finds it.)
      if (moved === VERSION_MISMATCH) throw new CursorMoved()
    }
    const after = BigInt(at.data.position as string)
    // The head, then the subscriptions, then the changes up to that head only: each of those
    // committed before the subscriptions were listed, so every subscription made before one of
    // them is in the list (and one made after the list is owed only changes after the head).
    const { head } = await log.readChanges({ after: null, limit: 0, resources: null })
    if (BigInt(head) <= after) return { head, found: false, full: false }
    const subscriptions = (await listWhere(store, webhooksModel, 'active eq true', 'id', Number.MAX_SAFE_INTEGER - 1)).map(record => record.data)
    const read = subscriptions.length === 0 ? null : await log.readChanges({ after, limit: batchSize, resources: null })
    const changes = read?.changes.filter(change => BigInt(change.position) <= BigInt(head)) ?? []
    if (read === null || changes.length === 0) {
      // No one to deliver to, or what lay after the cursor was purged unread: the cursor moves to the head.
      await moveCursor(store, head).catch(ignoreCursorMoved)
      return { head, found: true, full: false }
    }
    const deliveries: Fields[] = []
    for (const change of changes) {
      for (const subscription of subscriptions) {
        const resources = subscription.resources as string[] | null
        if (resources !== null && !resources.includes(change.resource)) continue
        const shown = present(JSON.parse(subscription.principal as string), change)
        if (shown === null) continue
        deliveries.push({
          id: newUuidV7(),
          webhookId: subscription.id,
          changeId: change.id,
          seq: seqOf(change.position),
          resource: change.resource,
          recordId: change.recordId,
          status: 'pending',
          attempts: 0,
          lastStatus: null,
          lastError: null,
          nextAttemptAt: new Date().toISOString(),
          leaseUntil: null,
          finishedAt: null,
          body: JSON.stringify(shown)
        })
      }
    }
    const last = changes[changes.length - 1].position
    // Nothing to deliver (no subscription wants these changes): the cursor moves alone, in one statement.
    const fannedOut = deliveries.length === 0
      ? moveCursor(store, last)
      : store.transaction(async tx => {
        for (const delivery of deliveries) await tx.create(deliveriesModel, delivery)
        await moveCursor(tx, last)
      })
    await fannedOut.catch(ignoreCursorMoved)
    if (deliveries.length > 0) wakeSender()
    return { head, found: true, full: read.hasMore || changes.length < read.changes.length }
  }

  async function fanOutLoop () {
    while (!stopping.signal.aborted) {
      try {
        const { head, found, full } = await fanOut()
        if (full) continue
        if (!found) await wakeups.next(head, Date.now() + idleWait, stopping.signal)
        // A moment for the commits right behind, so that a busy log is fanned out in batches
        // rather than read again after every commit (each look is five statements or more).
        await pause(fanOutGathering, stopping.signal, new Set())
      } catch (error) {
        logger.warn({ err: error }, 'api-conventions: fanning changes out to webhooks failed; retrying')
        await pause(1000, stopping.signal, new Set())
      }
    }
  }

  /** One attempt, signed as Standard Webhooks say: the receiver's status, or what kept it from answering. */
  async function post (url: string, secret: string, delivery: Fields): Promise<{ status: number | null, error: string | null }> {
    const timestamp = Math.floor(Date.now() / 1000)
    const body = delivery.body as string
    return await poster.post(url, {
      'content-type': 'application/json',
      'webhook-id': delivery.changeId as string,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': sign(secret, delivery.changeId as string, timestamp, body)
    }, body)
  }

  /** Claims, sends and records one delivery; nothing when another instance claimed it first. */
  async function send (claimable: StoredRecord): Promise<void> {
    const now = Date.now()
    const lease = new Date(now + settings.timeout + 5000).toISOString()
    const claimed = await store.update(deliveriesModel, claimable.data.id as string, { ...claimable.data, leaseUntil: lease }, { ifVersion: claimable.version })
    if (claimed === null || claimed === VERSION_MISMATCH) return
    const delivery = claimed.data
    const subscription = await store.get(webhooksModel, delivery.webhookId as string)
    let outcome: Fields
    if (subscription === null || subscription.data.active !== true) {
      // Not attempted: its attempts stay as they were.
      outcome = { status: 'dead', lastStatus: null, lastError: subscription === null ? 'the subscription was deleted' : 'the subscription is inactive', nextAttemptAt: null, finishedAt: new Date().toISOString() }
    } else {
      const { status, error } = await post(subscription.data.url as string, subscription.data.secret as string, delivery)
      // Cut short by the app's close: handed back at once, the attempt not counted (after kill -9, the lease runs out instead).
      if (stopping.signal.aborted && error !== null) {
        await store.update(deliveriesModel, delivery.id as string, { ...delivery, leaseUntil: null }, { ifVersion: claimed.version })
        return
      }
      const attempts = (delivery.attempts as number) + 1
      const dead = attempts > settings.retrySchedule.length
      const wait = dead ? 0 : settings.retrySchedule[attempts - 1] * (0.9 + Math.random() * 0.2)
      const finishedAt = error === null || dead ? new Date().toISOString() : null
      outcome = error === null
        ? { status: 'delivered', attempts, lastStatus: status, lastError: null, nextAttemptAt: null, finishedAt }
        : { status: dead ? 'dead' : 'pending', attempts, lastStatus: status, lastError: error, nextAttemptAt: dead ? null : new Date(Date.now() + wait).toISOString(), finishedAt }
    }
    // Under the claim's version: a lease that ran out meanwhile lost the delivery to another claim.
    const written = await store.update(deliveriesModel, delivery.id as string, { ...delivery, ...outcome, leaseUntil: null }, { ifVersion: claimed.version })
    if (written === VERSION_MISMATCH) logger.warn({ delivery: delivery.id }, 'api-conventions: a webhook delivery outlived its lease; another claim records it')
  }

  /** One look at the pending deliveries: sends the due ones (one per subscription and record); answers how long to wait. */
  async function sendDue (): Promise<number> {
    const pending = await listWhere(store, deliveriesModel, "status eq 'pending'", 'seq', 1000)
    const now = Date.now()
    const seen = new Set<string>()
    const due: StoredRecord[] = []
    let wait = idleWait
    for (const record of pending) {
      const { webhookId, resource, recordId, nextAttemptAt, leaseUntil } = record.data
      // In log order: a record's later change waits for its earliest pending one.
      const key = JSON.stringify([webhookId, resource, recordId])
      if (seen.has(key)) continue
      seen.add(key)
      const at = Math.max(Date.parse(nextAttemptAt as string), leaseUntil === null ? 0 : Date.parse(leaseUntil as string))
      if (at <= now) due.push(record)
      else wait = Math.min(wait, at - now)
    }
    await Promise.all(due.slice(0, 16).map(async record => await send(record).catch((error: unknown) => logger.warn({ err: error, delivery: record.data.id }, 'api-conventions: a webhook delivery could not be recorded; it is sent again when its lease ends'))))
    return due.length > 0 ? 0 : wait
  }

  /** Removes the deliveries finished before the retention, a batch at a time; one retried meanwhile (its version moved) stays. */
  async function purgeFinished (): Promise<void> {
    const filter = `status ne 'pending' and finishedAt lt ${literal(new Date(Date.now() - retention).toISOString())}`
    for (;;) {
      const finished = await listWhere(store, deliveriesModel, filter, 'id', purgeBatch)
      for (const record of finished) await store.remove(deliveriesModel, record.data.id as string, { ifVersion: record.version })
      if (finished.length < purgeBatch || stopping.signal.aborted) return
    }
  }
  const purge = purgeNowAndThen(purgeFinished, logger, 'api-conventions: purging finished webhook deliveries failed')

  async function sendLoop () {
    while (!stopping.signal.aborted) {
      purge.nowAndThen()
      let wait: number
      try {
        wait = await sendDue()
      } catch (error) {
        logger.warn({ err: error }, 'api-conventions: reading webhook deliveries failed; retrying')
        wait = 1000
      }
      // Other instances' fan-outs are found by looking again now and then.
      if (wait > 0) await pause(Math.min(wait, 1000), stopping.signal, senderWakers)
    }
  }

  /**
   * The subscription `id` as the caller sees it; 404 otherwise. First the check the subscription's
   * own routes make (RETRIEVE for a read of its deliveries, MODIFY for a retry): a caller `authorize`
   * refuses the subscriptions gets 403 here too.
   */
  async function subscriptionOf (context: OperationContext, request: FastifyRequest): Promise<StoredRecord> {
    const { id } = request.params as { id: string }
    const authorize = context.options.auth?.authorize
    if (authorize !== undefined) {
      const ask = { principal: request.principal, model: webhooksModel, operation: request.method === 'POST' ? 'modify' : 'retrieve', method: request.method, id, store, memo: request, request } as const
      await new Promise<void>((resolve, reject) => { checkAuthorization(authorize, context.views, ask, error => { if (error === null) resolve(); else reject(error) }) })
    }
    // The record the check read, read once (record-once.ts): the check and the answer see the same.
    const view = context.views.forCaller(request.principal)(webhooksModel)
    const found = await readRecordOnce(request, store, view, id)
    if (found === null) throw new NotFoundError(request.url.split('?', 1)[0])
    return found
  }

  const deliveryView = (data: Fields) => ({
    id: data.id,
    changeId: data.changeId,
    resource: data.resource,
    recordId: data.recordId,
    status: data.status,
    attempts: data.attempts,
    lastStatus: data.lastStatus,
    lastError: data.lastError,
    nextAttemptAt: data.status === 'pending' ? data.nextAttemptAt : null
  })

  function specs (context: OperationContext, schemaOptions: SchemaOptions): RouteSpec[] {
    const { prefix } = context.envelope
    const json = ['application/json']
    const deliveryProperties = {
      id: { type: 'string' },
      changeId: { type: 'string' },
      resource: { type: 'string' },
      recordId: { type: 'string' },
      status: { type: 'string', enum: ['pending', 'delivered', 'dead'] },
      attempts: { type: 'integer' },
      lastStatus: { type: ['integer', 'null'] },
      lastError: { type: ['string', 'null'] },
      nextAttemptAt: { type: ['string', 'null'], format: 'date-time', description: 'A pending delivery: when it is sent next.' }
    }
    const delivery = { type: 'object', properties: deliveryProperties, required: Object.keys(deliveryProperties) }
    const link = { type: 'object', properties: { rel: { type: 'string' }, href: { type: 'string' } }, required: ['rel', 'href'] }
    const list = apiRoute({
      method: 'GET',
      path: '/webhooks/:id/deliveries',
      allow: ['GET', 'HEAD'],
      operation: 'webhook-deliveries',
      responseTypes: json,
      schema: {
        operationId: 'listWebhookDeliveries',
        summary: 'The deliveries of a webhook subscription',
        description: 'In the order of the changes: each with its status (`pending`, `delivered`, `dead`), attempts, the last answer\'s status or error, and the next attempt. Paged by `pageSize` and `after` (a `next` link).',
        tags: ['webhooks'],
        params: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
        querystring: { type: 'object', properties: { pageSize: { type: 'integer', minimum: 1, maximum: 100, default: 20 }, after: { type: 'string', pattern: '^[0-9]{0,20}$', description: 'From a `next` link.' } } },
        produces: json,
        documentedResponses: {
          200: {
            description: 'A page of the deliveries.',
            type: 'object',
            properties: {
              meta: { type: 'object', properties: { pageSize: { type: 'integer' } } },
              data: { type: 'object', properties: { deliveries: { type: 'array', items: delivery } }, required: ['deliveries'] },
              links: { type: 'array', items: link }
            },
            headers: requestId
          },
          ...problems(schemaOptions, [400, 404], { 404: 'no webhook has this id, or it is another caller\'s.' }, false)
        }
      } as never,
      handler: async function listDeliveries (request: FastifyRequest) {
        const subscription = await subscriptionOf(context, request)
        const query = request.query as { pageSize?: string, after?: string }
        const pageSize = query.pageSize === undefined ? 20 : Number(query.pageSize)
        const after = query.after ?? ''
        // A query parameter out of range is the API's 400 query-invalid, both named at once.
        const invalid = [
          ...Number.isInteger(pageSize) && pageSize >= 1 && pageSize <= 100 ? [] : [{ name: 'pageSize', reason: 'must be an integer from 1 to 100' }],
          ...(/^[0-9]{0,20}$/.test(after) ? [] : [{ name: 'after', reason: 'must be the after of a next link' }])
        ]
        if (invalid.length > 0) throw withInvalidParams(new QueryInvalidError(), invalid)
        const filter = `webhookId eq ${literal(subscription.data.id as string)}${after === '' ? '' : ` and seq gt ${literal(after)}`}`
        const found = await listWhere(store, deliveriesModel, filter, 'seq', pageSize + 1)
        const page = found.slice(0, pageSize)
        const path = `${prefix}/webhooks/${encodeURIComponent(subscription.data.id as string)}/deliveries`
        const links = [{ rel: 'self', href: `${path}?pageSize=${pageSize}${after === '' ? '' : `&after=${after}`}` }]
        if (found.length > pageSize) links.push({ rel: 'next', href: `${path}?pageSize=${pageSize}&after=${page[page.length - 1].data.seq as string}` })
        return { meta: { pageSize }, data: { deliveries: page.map(record => deliveryView(record.data)) }, links }
      }
    })
    const retry = apiRoute({
      method: 'POST',
      path: '/webhooks/:id/deliveries/:deliveryId/retry',
      allow: ['POST'],
      operation: 'webhook-retry',
      responseTypes: json,
      schema: {
        operationId: 'retryWebhookDelivery',
        summary: 'Sends a dead delivery again',
        description: 'Puts a `dead` delivery back to `pending`, with a full set of attempts: 202.',
        tags: ['webhooks'],
        params: { type: 'object', properties: { id: { type: 'string' }, deliveryId: { type: 'string' } }, required: ['id', 'deliveryId'] },
        produces: json,
        documentedResponses: {
          202: { description: 'Pending again.', type: 'object', properties: { data: { type: 'object', properties: { delivery } } }, headers: requestId },
          ...problems(schemaOptions, [404, 409], { 404: 'no such webhook or delivery, or another caller\'s.', 409: 'the delivery is not dead.' }, false)
        }
      } as never,
      handler: async function retryDelivery (request: FastifyRequest, reply: FastifyReply) {
        const subscription = await subscriptionOf(context, request)
        const { deliveryId } = request.params as { deliveryId: string }
        const found = await store.get(deliveriesModel, deliveryId)
        if (found === null || found.data.webhookId !== subscription.data.id) throw new NotFoundError(request.url.split('?', 1)[0])
        if (found.data.status !== 'dead') throw new ConflictError(`This delivery is ${found.data.status as string}, not dead.`)
        const again = { ...found.data, status: 'pending', attempts: 0, nextAttemptAt: new Date().toISOString(), leaseUntil: null, finishedAt: null }
        const written = await store.update(deliveriesModel, deliveryId, again, { ifVersion: found.version })
        if (written === null || written === VERSION_MISMATCH) throw new ConflictError('This delivery changed meanwhile; read it again.')
        wakeSender()
        reply.code(202)
        return { data: { delivery: deliveryView(again) } }
      }
    })
    return [list, retry]
  }

  return {
    start () {
      running = [fanOutLoop(), sendLoop()]
    },
    async stop () {
      stopping.abort()
      await Promise.all([...running, purge.settled()])
      poster.close()
    },
    specs
  }
}

class CursorMoved extends Error {}

/** Another instance moved the cursor first: its fan-out stands, this one's is undone. */
function ignoreCursorMoved (error: unknown): void {
  if (!(error instanceof CursorMoved)) throw error
}
