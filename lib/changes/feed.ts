// The change feed, `GET {prefix}/changes` (docs/changes.md; docs/demo-contract.md "Changes"): the
// store's change log paged by position, as each caller may see it (present.ts), with a wait at the
// head (wakeups.ts), Server-Sent Events, 410 past retention, and final pages cacheable.
import { createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify'
import { ChangesExpiredError, QueryInvalidError, withInvalidParams } from '../errors.js'
import type { InvalidParam } from '../errors.js'
import { formatLinks } from '../envelope/index.js'
import type { Link } from '../envelope/index.js'
import type { OperationContext } from '../operations/context.js'
import type { ChangeRead, Store } from '../stores/store.js'
import type { ResolvedChanges } from './options.js'
import { changePresenter } from './present.js'
import type { ShownChange } from './present.js'
import type { Wakeups } from './wakeups.js'

const defaultPageSize = 100
const maxPageSize = 1000
const maxWaitSeconds = 30
/** How long a final page may be kept by the caller's cache: it never changes until it expires. */
const finalPageMaxAge = 3600
const positionPattern = /^(0|[1-9][0-9]{0,18})$/

interface FeedQuery {
  readonly after: bigint | null
  readonly pageSize: number
  readonly resources: readonly string[] | null
  readonly wait: number
}

type Store$ = Required<Pick<Store, 'readChanges'>>

/** A query parameter's single text; a repeated one is a problem of its own. */
function single (query: Record<string, unknown>, name: string, problems: InvalidParam[]): string | undefined {
  const value = query[name]
  if (Array.isArray(value)) {
    problems.push({ name, reason: 'must be given once' })
    return undefined
  }
  return value as string | undefined
}

/** The feed's parameters, every bad one named (400): `after` (or Last-Event-ID), `pageSize`, `resource`, `wait`. */
export function parseFeedQuery (query: Record<string, unknown>, lastEventId: string | undefined, resourceNames: ReadonlySet<string>): FeedQuery {
  const problems: InvalidParam[] = []
  const position = (name: string, text: string | undefined): bigint | null => {
    if (text === undefined) return null
    if (positionPattern.test(text) && BigInt(text) <= 9223372036854775807n) return BigInt(text)
    problems.push({ name, reason: 'is not a position of this feed' })
    return null
  }
  const integer = (name: string, text: string | undefined, low: number, high: number, fallback: number): number => {
    if (text === undefined) return fallback
    const value = /^[0-9]{1,4}$/.test(text) ? Number(text) : NaN
    if (value >= low && value <= high) return value
    problems.push({ name, reason: `must be an integer from ${low} to ${high}` })
    return fallback
  }
  // A reconnecting event stream names the last event it received: that wins over the URL it reuses.
  const after = lastEventId === undefined ? position('after', single(query, 'after', problems)) : position('Last-Event-ID', lastEventId)
  const pageSize = integer('pageSize', single(query, 'pageSize', problems), 1, maxPageSize, defaultPageSize)
  const wait = integer('wait', single(query, 'wait', problems), 1, maxWaitSeconds, 0)
  const resourceText = single(query, 'resource', problems)
  let resources: string[] | null = null
  if (resourceText !== undefined) {
    resources = resourceText.split(',')
    const unknown = resources.filter(name => !resourceNames.has(name))
    if (unknown.length > 0) problems.push({ name: 'resource', reason: `names no resource of this API: ${unknown.map(name => `'${name}'`).join(', ')}` })
  }
  if (problems.length > 0) throw withInvalidParams(new QueryInvalidError(), problems)
  return { after, pageSize, resources, wait }
}

export interface Feed {
  readonly handler: RouteHandlerMethod
  /** Ends the open event streams (the server is closing). */
  readonly close: () => void
}

/** The route handler of the feed over `log`, the store's change log. */
export function changeFeed (context: OperationContext, log: Store$, settings: ResolvedChanges, wakeups: Wakeups): Feed {
  const present = changePresenter(context.models, context.views)
  const resourceNames = new Set(context.models.keys())
  const base = `${context.envelope.prefix}/changes`
  const streams = new Set<AbortController>()
  let closing = false

  const hrefOf = (after: string | null, query: FeedQuery) => {
    const params = [
      ...after === null ? [] : [`after=${after}`],
      ...query.pageSize === defaultPageSize ? [] : [`pageSize=${query.pageSize}`],
      ...query.resources === null ? [] : [`resource=${query.resources.map(encodeURIComponent).join(',')}`]
    ]
    return params.length === 0 ? base : `${base}?${params.join('&')}`
  }

  /**
   * Reads of the log in flight, by what they ask. A commit wakes every stream waiting at the head
   * at once, and each asks for the same changes: they share one read instead of each making its
   * own (a thousand streams, a thousand reads per commit). A read is shared only until it settles,
   * and only while no commit known here followed its start (Wakeups.generation), so none is
   * answered by a read begun before a commit it was woken by.
   */
  const readsInFlight = new Map<string, { readonly generation: number, readonly found: Promise<ChangeRead> }>()
  function readShared (after: bigint | null, limit: number, resources: readonly string[] | null): Promise<ChangeRead> {
    const key = `${after ?? ''} ${limit} ${resources?.join(',') ?? ''}`
    const generation = wakeups.generation()
    const inFlight = readsInFlight.get(key)
    if (inFlight?.generation === generation) return inFlight.found
    const found = log.readChanges({ after, limit, resources })
    readsInFlight.set(key, { generation, found })
    // Settled, it is no one's to join (it may drop a later read of the same key: that one is then not shared).
    const settled = () => { readsInFlight.delete(key) }
    found.then(settled, settled)
    return found
  }

  /** The log after `after`, or 410 when changes after it were purged (links: the head). */
  async function read (query: FeedQuery, after: bigint | null, limit: number): Promise<ChangeRead> {
    const found = await readShared(after, limit, query.resources)
    if (after !== null && after < BigInt(found.purgedThrough)) {
      const error = new ChangesExpiredError(`The feed no longer keeps the changes after position ${after}: read the collections again, then resume from the head.`)
      throw Object.assign(error, { links: [{ rel: 'head', href: hrefOf(found.head, query) }] })
    }
    return found
  }

  /**
   * What the caller sees of a read, and where the next read starts: past what it may not see too;
   * past the head when nothing matched (positions follow commit order, so nothing will commit below it).
   */
  const shown = (principal: unknown, found: ChangeRead, after: bigint | null) => ({
    changes: found.changes.map(change => present(principal, change)).filter((change): change is ShownChange => change !== null),
    next: found.changes.at(-1)?.position ?? (after !== null && after > BigInt(found.head) ? String(after) : found.head)
  })

  async function page (request: FastifyRequest, reply: FastifyReply, query: FeedQuery) {
    const deadline = Date.now() + query.wait * 1000
    let after = query.after
    for (;;) {
      const found = await read(query, after, query.pageSize)
      const { changes, next } = shown(request.principal, found, after)
      if (changes.length > 0 || found.hasMore || Date.now() >= deadline || closing) {
        const links: Link[] = [{ rel: 'self', href: hrefOf(query.after === null ? null : String(query.after), query) }, { rel: 'next', href: hrefOf(next, query) }]
        const body = { meta: { pageSize: query.pageSize }, data: { changes }, links: formatLinks(context.envelope, links) }
        // More lies beyond: this `after` reads these same changes for as long as they are kept.
        if (found.hasMore) {
          reply.header('cache-control', `private, max-age=${finalPageMaxAge}`)
          reply.header('etag', `"${createHash('sha256').update(JSON.stringify(body)).digest('base64url').slice(0, 27)}"`)
        }
        return body
      }
      // Nothing the caller sees yet: wait past what was read, until a commit or the deadline.
      after = BigInt(next)
      await wakeups.next(found.head, deadline)
    }
  }

  /** Server-Sent Events: the backlog, then each change as it commits; a comment line when silent. */
  async function stream (request: FastifyRequest, reply: FastifyReply, query: FeedQuery) {
    // The first read answers a bad or expired position with its problem, before the stream starts.
    let found = await read(query, query.after, query.pageSize)
    const controller = new AbortController()
    streams.add(controller)
    const raw = reply.raw
    reply.hijack()
    // Connection: close, so that a stream ended as the server closes does not leave an idle connection it waits for.
    raw.writeHead(200, { ...reply.getHeaders() as Record<string, string>, 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no', connection: 'close' })
    // Sent now, not with the first event: with nothing to send yet, the client would wait a heartbeat to learn the stream is open.
    raw.flushHeaders()
    const end = () => controller.abort()
    // The response's close: the connection went (the request's fires once its body is read).
    raw.once('close', end)
    let after = query.after
    let lastWrite = Date.now()
    try {
      while (!controller.signal.aborted) {
        const { changes, next } = shown(request.principal, found, after)
        let text = ''
        for (const change of changes) text += `id: ${change.position}\nevent: change\ndata: ${JSON.stringify(change)}\n\n`
        if (text === '' && Date.now() - lastWrite >= settings.heartbeat) text = ': keep-alive\n\n'
        if (text !== '') {
          raw.write(text)
          lastWrite = Date.now()
        }
        after = BigInt(next)
        if (!found.hasMore) await wakeups.next(found.head, lastWrite + settings.heartbeat, controller.signal)
        if (controller.signal.aborted) break
        found = await read(query, after, query.pageSize)
      }
    } catch (error) {
      // The stream has begun: a failure (expired while away, the store gone) can only end it; the client resumes.
      request.log.warn({ err: error }, 'change stream ended')
    } finally {
      streams.delete(controller)
      raw.off('close', end)
      // Connection: close, so the socket serves nothing more: closed once the end is written, not
      // left half-open until the client closes its side (a closing server would wait its keep-alive time).
      raw.end(() => raw.socket?.destroy())
    }
  }

  return {
    handler: async function readChanges (request: FastifyRequest, reply: FastifyReply) {
      const wantsStream = /\btext\/event-stream\b/.test(request.headers.accept ?? '')
      const lastEventId = wantsStream ? request.headers['last-event-id'] as string | undefined : undefined
      const query = parseFeedQuery(request.query as Record<string, unknown>, lastEventId, resourceNames)
      if (wantsStream) return await stream(request, reply, query)
      return await page(request, reply, query)
    },
    close () {
      closing = true
      for (const controller of streams) controller.abort()
      wakeups.close()
    }
  }
}
