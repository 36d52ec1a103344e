// The `changes` option (docs/changes.md): the change feed at `{prefix}/changes`, off unless given.
import { OptionsInvalidError } from '../errors.js'
import { knownKeys, refuseUnknownKeys } from '../options-check.js'
import { milliseconds } from '../security/rate-limit.js'

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
}

export interface ResolvedChanges {
  readonly retention: number
  readonly pollInterval: number
  readonly heartbeat: number
}

const changesKeys = knownKeys({ retention: true, pollInterval: true, heartbeat: true } satisfies Record<keyof ChangesOptions, true>)

/** `true` or an object serves the feed; `false` or nothing does not. */
export function resolveChanges (value: unknown): ResolvedChanges | null {
  if (value === undefined || value === false) return null
  if (value !== true && (typeof value !== 'object' || value === null)) throw new OptionsInvalidError(`changes must be a boolean or an object { retention?, pollInterval?, heartbeat? }, received ${JSON.stringify(value)}`)
  const given = (value === true ? {} : value) as Record<string, unknown>
  refuseUnknownKeys(given, changesKeys, 'changes')
  const duration = (name: keyof ChangesOptions, fallback: number | string) => {
    const ms = milliseconds(given[name] ?? fallback)
    if (ms === undefined) throw new OptionsInvalidError(`changes.${name} must be positive milliseconds or a duration such as '7 days', received ${JSON.stringify(given[name])}`)
    return ms
  }
  return Object.freeze({ retention: duration('retention', '7 days'), pollInterval: duration('pollInterval', 500), heartbeat: duration('heartbeat', 15000) })
}
