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
import { follower, retrying, tailLog } from './tail.js'
import type { Follower } from './tail.js'

type Nats = typeof import('nats')
type Connection = Awaited<ReturnType<Nats['connect']>>
type Manager = Awaited<ReturnType<Connection['jetstreamManager']>>

/** The header of each message that holds the change's position in the log. */
const positionHeader = 'Api-Change-Position'
const positionPattern = /^(0|[1-9][0-9]{0,18})$/

/**
 * The publisher of `log` to NATS. `present` shows a change as it is published (the unrestricted
 * view); `wakeups` wake it on a commit of this instance, and poll for other instances' commits.
 */
export async function natsPublisher (settings: ResolvedNats, log: Required<Pick<Store, 'readChanges'>>, wakeups: Wakeups, present: (change: ChangeRecord) => ShownChange | null, logger: FastifyBaseLogger): Promise<Follower> {
  // Loaded at registration: a missing package stops start-up, naming it.
  const nats = await importOptional<Nats>('nats', 'changes.nats')
  const { stream, subjectPrefix } = settings
  let connection: Connection | null = null

  /** The position of the last change in the stream (made when missing), null when it holds none of ours. */
  async function lastInStream (jsm: Manager): Promise<bigint | null> {
    const subjects = `${subjectPrefix}.>`
    const read = async () => await jsm.streams.info(stream, { subjects_filter: subjects })
    // Not there: made, then read again. Adding a stream that exists with the same settings is a no-op,
    // so a read that failed for another reason reads it as it is; other settings fail, and are retried.
    const info = await read().catch(async () => {
      logger.info({ stream, subjects }, 'api-conventions: no NATS stream to read; adding it')
      await jsm.streams.add({ name: stream, subjects: [subjects] })
      return await read()
    })
    // The counts of the subjects of ours the stream holds: none, when it holds none.
    if (info.state.subjects === undefined) return null
    const message = await jsm.streams.getMessage(stream, { last_by_subj: subjects })
    const position = message.header.get(positionHeader)
    if (positionPattern.test(position)) return BigInt(position)
    logger.warn({ stream, seq: message.seq }, `api-conventions: the stream's last message has no ${positionHeader} header; publishing from the oldest change kept`)
    return null
  }

  /** Where to publish from: after the stream's last change, which this instance or another published. */
  async function resumePoint (jsm: Manager): Promise<bigint | null> {
    const inStream = await lastInStream(jsm)
    const { head, purgedThrough } = await log.readChanges({ after: null, limit: 0, resources: null })
    // A stream ahead of the log follows another log (or this one was emptied): its positions mean nothing here.
    if (inStream !== null && inStream > BigInt(head)) {
      logger.warn({ stream, inStream: String(inStream), head }, 'api-conventions: the NATS stream is ahead of this change log; publishing from the oldest change kept')
      return null
    }
    if (inStream !== null && inStream < BigInt(purgedThrough)) {
      logger.warn({ stream, inStream: String(inStream), purgedThrough }, 'api-conventions: changes were purged from the log before they were published to NATS; they are missing from the stream')
    }
    return inStream
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
  async function tail (open: Connection, healthy: () => void, signal: AbortSignal) {
    const after = await resumePoint(await open.jetstreamManager())
    logger.info({ stream, after: after === null ? null : String(after) }, 'api-conventions: publishing changes to NATS')
    const js = open.jetstream()
    // In order, one at a time: the stream's last message is then always where to resume.
    for await (const change of tailLog(log, wakeups, { after, signal, caughtUp: healthy })) {
      await publish(js, change)
      healthy()
    }
  }

  const publisher = follower(async signal => {
    let failing = false
    await retrying(signal, async reset => {
      const healthy = () => {
        if (failing) logger.info({ stream }, 'api-conventions: publishing changes to NATS again')
        failing = false
        reset()
      }
      connection = await nats.connect({ reconnect: false, timeout: 5000, ...settings.connection, servers: [...settings.servers] })
      await tail(connection, healthy, signal)
    }, async (error, retryInMs) => {
      failing = true
      logger.warn({ err: error, stream, retryInMs }, 'api-conventions: publishing changes to NATS failed; retrying')
      await connection?.close().catch(() => {})
      connection = null
    })
  })

  return {
    start: publisher.start,
    async stop () {
      await publisher.stop()
      // What was published is acknowledged already; drain lets the client finish cleanly.
      await connection?.drain().catch(() => {})
      connection = null
    }
  }
}
