// The `changes` option (docs/changes.md): the change feed at `{prefix}/changes`, off unless given,
// and publishing to NATS JetStream (`changes.nats`).
import { OptionsInvalidError } from '../errors.js'
import { knownKeys, refuseUnknownKeys } from '../options-check.js'
import { milliseconds } from '../security/rate-limit.js'
import { resolveWebhooks } from './webhooks.js'
import type { ResolvedWebhooks, WebhooksOptions } from './webhooks.js'
import type { ShownChange } from './present.js'

export interface ChangesOptions {
  /** How long changes are kept: milliseconds or a duration such as `7 days`. Default 7 days. */
  readonly retention?: number | string | undefined
  /**
   * How often an instance with waiting readers looks for changes other instances committed, in
   * milliseconds (the wake-up that works everywhere, behind a transaction pooler too). Default 500.
   */
  readonly pollInterval?: number | undefined
  /** The longest silence on a Server-Sent Events stream before a comment line, in milliseconds. Default 15000. */
  readonly heartbeat?: number | undefined
  /** Also publish every change to NATS JetStream (docs/changes.md "NATS JetStream"). Needs the package `nats`. Default: off. */
  readonly nats?: NatsChangesOptions | undefined
  /** Webhooks: `{prefix}/webhooks`, callers' subscriptions, each change POSTed to them (docs/changes.md "Webhooks"). Default: off. */
  readonly webhooks?: WebhooksOptions | undefined
  /**
   * An in-process consumer (docs/changes.md "In-process consumers"): called on every instance with
   * each change committed after the app is ready, on any instance, in commit order, one at a time,
   * as the admin sees it. A call that throws is logged and made again with the same change after
   * a pause (1 s, doubling up to 30 s): catch what should be skipped. Default: none.
   */
  readonly onChange?: ((change: ShownChange) => void | Promise<void>) | undefined
}

export interface NatsChangesOptions {
  /** The NATS server: `nats://host:4222`, `host:4222`, or several comma-separated. */
  readonly url: string
  /** The JetStream stream, created when missing (its subjects `<subjectPrefix>.>`). Default `API_CHANGES`. */
  readonly stream?: string | undefined
  /** A change goes to the subject `<subjectPrefix>.<resource>`. Default `api.changes`. */
  readonly subjectPrefix?: string | undefined
  /** More options of the nats package's `connect()` (credentials, TLS, name), passed as they are. */
  readonly connection?: Readonly<Record<string, unknown>> | undefined
}

export interface ResolvedNats {
  readonly servers: readonly string[]
  readonly stream: string
  readonly subjectPrefix: string
  readonly connection: Readonly<Record<string, unknown>>
}

export interface ResolvedChanges {
  readonly retention: number
  readonly pollInterval: number
  readonly heartbeat: number
  readonly nats: ResolvedNats | null
  readonly webhooks: ResolvedWebhooks | null
  readonly onChange: ((change: ShownChange) => void | Promise<void>) | null
}

const changesKeys = knownKeys({ retention: true, pollInterval: true, heartbeat: true, nats: true, webhooks: true, onChange: true } satisfies Record<keyof ChangesOptions, true>)
const natsKeys = knownKeys({ url: true, stream: true, subjectPrefix: true, connection: true } satisfies Record<keyof NatsChangesOptions, true>)

// JetStream's names: a stream name is one token of these characters; a subject, tokens joined by dots.
const tokenPattern = /^[A-Za-z0-9_-]+$/
const subjectPattern = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/

function resolveNats (value: unknown): ResolvedNats | null {
  if (value === undefined) return null
  if (typeof value !== 'object' || value === null) throw new OptionsInvalidError(`changes.nats must be an object { url, stream?, subjectPrefix?, connection? }, received ${JSON.stringify(value)}`)
  const given = value as Record<string, unknown>
  refuseUnknownKeys(given, natsKeys, 'changes.nats')
  const servers = typeof given.url === 'string' ? given.url.split(',').map(server => server.trim()).filter(server => server !== '') : []
  if (servers.length === 0) throw new OptionsInvalidError(`changes.nats.url must name a NATS server, such as 'nats://127.0.0.1:4222', received ${JSON.stringify(given.url)}`)
  const named = (name: 'stream' | 'subjectPrefix', pattern: RegExp, fallback: string, what: string) => {
    const text = given[name] ?? fallback
    if (typeof text !== 'string' || !pattern.test(text)) throw new OptionsInvalidError(`changes.nats.${name} must be ${what}, received ${JSON.stringify(given[name])}`)
    return text
  }
  const connection = given.connection ?? {}
  if (typeof connection !== 'object' || connection === null || Array.isArray(connection)) throw new OptionsInvalidError(`changes.nats.connection must be an object of connect() options, received ${JSON.stringify(connection)}`)
  return Object.freeze({
    servers,
    stream: named('stream', tokenPattern, 'API_CHANGES', 'a stream name (letters, digits, _ and -)'),
    subjectPrefix: named('subjectPrefix', subjectPattern, 'api.changes', 'subject tokens joined by dots, without wildcards'),
    connection: connection as Record<string, unknown>
  })
}

/** `true` or an object serves the feed; `false` or nothing does not. */
export function resolveChanges (value: unknown): ResolvedChanges | null {
  if (value === undefined || value === false) return null
  if (value !== true && (typeof value !== 'object' || value === null)) throw new OptionsInvalidError(`changes must be a boolean or an object { retention?, pollInterval?, heartbeat?, nats?, webhooks?, onChange? }, received ${JSON.stringify(value)}`)
  const given = (value === true ? {} : value) as Record<string, unknown>
  refuseUnknownKeys(given, changesKeys, 'changes')
  const duration = (name: keyof ChangesOptions, fallback: number | string) => {
    const ms = milliseconds(given[name] ?? fallback)
    if (ms === undefined) throw new OptionsInvalidError(`changes.${name} must be positive milliseconds or a duration such as '7 days', received ${JSON.stringify(given[name])}`)
    return ms
  }
  const onChange = given.onChange ?? null
  if (onChange !== null && typeof onChange !== 'function') throw new OptionsInvalidError(`changes.onChange must be a function of the change, received ${JSON.stringify(onChange)}`)
  return Object.freeze({
    retention: duration('retention', '7 days'),
    pollInterval: duration('pollInterval', 500),
    heartbeat: duration('heartbeat', 15000),
    nats: resolveNats(given.nats),
    webhooks: resolveWebhooks(given.webhooks),
    onChange: onChange as ResolvedChanges['onChange']
  })
}
