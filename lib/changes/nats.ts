// Publishing the change log to NATS JetStream (docs/changes.md "NATS JetStream"): each instance tails
// the log in position order and publishes every change to `<subjectPrefix>.<resource>` with the
// change id as message id, so JetStream's duplicate window drops what another instance (or a retry)
// already published. The stream itself says where to resume: its last message carries the
// position. Writes never wait for any of this; a failure is retried with backoff.
import type { FastifyBaseLogger } from 'fastify'
import { importOptional } from '../optional.js'
import type { ChangeRecord, Store } from '../stores/store.js'
import type { ResolvedNats } from './options.js'
import type { ShownChange } from './present.js'
import type { Wakeups } from './wakeups.js'

type Nats = typeof import('nats')
type Connection = Awaited<ReturnType<Nats['connect']>>
type Manager = Awaited<ReturnType<Connection['jetstreamManager']>>

/** The header of each message that holds the change's position in the log. */
export const positionHeader = 'Api-Change-Position'
const batchSize = 100
/** The first wait after a failure, doubled after each one up to the last. */
const firstRetry = 1000
const lastRetry = 30_000
/** The longest wait for a wake-up before reading the log again anyway. */
const idleWait = 30_000
const positionPattern = /^(0|[1-9][0-9]{0,18})$/
// JetStream's API error codes (err_code) the publisher expects.
const streamNotFound = 10059
const noMessageFound = 10037

export interface Publisher {
  /** Starts tailing the log (the app is ready); returns at once. */
  readonly start: () => void
  /** Stops after the publish in flight, and drains the connection. */
  readonly stop: () => Promise<void>
}

const apiErrorCode = (error: unknown): number | undefined => (error as { api_error?: { err_code?: number } }).api_error?.err_code

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause (ms: number, signal: AbortSignal): Promise<void> {
  return new Promise(resolve => {
    const done = () => { clearTimeout(timer); signal.removeEventListener('abort', done); resolve() }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done)
  })
}

/**
 * The publisher of `log` to NATS. `present` shows a change as it is published (the unrestricted
 * view); `wakeups` wake it on a commit of this instance, and poll for other instances' commits.
 */
export async function natsPublisher (settings: ResolvedNats, log: Required<Pick<Store, 'readChanges'>>, wakeups: Wakeups, present: (change: ChangeRecord) => ShownChange | null, logger: FastifyBaseLogger): Promise<Publisher> {
  // Loaded at registration: a missing package stops start-up, naming it.
  const nats = await importOptional<Nats>('nats', 'changes.nats')
  const { stream, subjectPrefix } = settings
  const stopping = new AbortController()
  let connection: Connection | null = null
  let running: Promise<void> | null = null
  /** The position of the last change published (acknowledged by JetStream); null before any. */
  let published: bigint | null = null

  async function ensureStream (jsm: Manager) {
    try {
      await jsm.streams.info(stream)
    } catch (error) {
      if (apiErrorCode(error) !== streamNotFound) throw error
      // Two instances adding the same stream at once is fine: JetStream accepts an identical add.
      await jsm.streams.add({ name: stream, subjects: [`${subjectPrefix}.>`] })
      logger.info({ stream, subjects: `${subjectPrefix}.>` }, 'api-conventions: NATS stream created for the changes')
    }
  }

  /** The position of the last change in the stream, null when it holds none. */
  async function lastInStream (jsm: Manager): Promise<bigint | null> {
    try {
      const message = await jsm.streams.getMessage(stream, { last_by_subj: `${subjectPrefix}.>` })
      const position = message.header?.get(positionHeader) ?? ''
      if (positionPattern.test(position)) return BigInt(position)
      logger.warn({ stream, seq: message.seq }, `api-conventions: the stream's last message has no ${positionHeader} header; publishing from the oldest change kept`)
      return null
    } catch (error) {
      if (apiErrorCode(error) === noMessageFound) return null
      throw error
    }
  }

  /** Where to publish from: after the stream's last change, or this instance's, whichever is later. */
  async function resumePoint (jsm: Manager): Promise<bigint | null> {
    await ensureStream(jsm)
    let inStream = await lastInStream(jsm)
    const { head, purgedThrough } = await log.readChanges({ after: null, limit: 0, resources: null })
    // A stream ahead of the log follows another log (or this one was emptied): its positions mean nothing here.
    if (inStream !== null && inStream > BigInt(head)) {
      logger.warn({ stream, inStream: String(inStream), head }, 'api-conventions: the NATS stream is ahead of this change log; publishing from the oldest change kept')
      inStream = null
    }
    const from = published !== null && (inStream === null || published > inStream) ? published : inStream
    if (from !== null && from < BigInt(purgedThrough)) {
      logger.warn({ stream, from: String(from), purgedThrough }, 'api-conventions: changes were purged before they were published to NATS; they are missing from the stream')
    }
    return from
  }

  async function publish (js: ReturnType<Connection['jetstream']>, change: ChangeRecord) {
    const shown = present(change)
    // A change of a resource no longer served is no one's to see.
    if (shown === null) return
    const headers = nats.headers()
    headers.set(positionHeader, change.position)
    await js.publish(`${subjectPrefix}.${change.resource}`, JSON.stringify(shown), { msgID: change.id, headers, expect: { streamName: stream } })
  }

  /**
   * Publishes the log from where the stream left off, then each change as it commits, until stopped
   * or failing. `healthy` is called after each publish and whenever it has caught up.
   */
  async function tail (open: Connection, healthy: () => void) {
    let after = await resumePoint(await open.jetstreamManager())
    logger.info({ stream, after: after === null ? null : String(after) }, 'api-conventions: publishing changes to NATS')
    const js = open.jetstream()
    while (!stopping.signal.aborted) {
      const found = await log.readChanges({ after, limit: batchSize, resources: null })
      for (const change of found.changes) {
        // In order, one at a time: the stream's last message is then always where to resume.
        await publish(js, change)
        published = after = BigInt(change.position)
        healthy()
        if (stopping.signal.aborted) return
      }
      if (found.hasMore) continue
      healthy()
      await wakeups.next(found.head, Date.now() + idleWait, stopping.signal)
    }
  }

  async function run () {
    let retry = firstRetry
    let failing = false
    const healthy = () => {
      if (failing) logger.info({ stream }, 'api-conventions: publishing changes to NATS again')
      failing = false
      retry = firstRetry
    }
    while (!stopping.signal.aborted) {
      try {
        connection = await nats.connect({ reconnect: false, timeout: 5000, ...settings.connection, servers: [...settings.servers] })
        await tail(connection, healthy)
      } catch (error) {
        if (stopping.signal.aborted) break
        failing = true
        logger.warn({ err: error, stream, retryInMs: retry }, 'api-conventions: publishing changes to NATS failed; retrying')
        await connection?.close().catch(() => {})
        connection = null
        await pause(retry, stopping.signal)
        retry = Math.min(retry * 2, lastRetry)
      }
    }
  }

  return {
    start () {
      running ??= run()
    },
    async stop () {
      stopping.abort()
      await running
      // What was published is acknowledged already; drain lets the client finish cleanly.
      await connection?.drain().catch(() => {})
      connection = null
    }
  }
}
