// Conditional requests (spec "Request headers": If-Match / If-None-Match; "Errors" 4, 5, 7):
// ETags from the stored version, and RFC 9110 §13.2.2 evaluation of the preconditions.
import { HeaderInvalidError, PreconditionFailedError, withInvalidParams } from './errors.js'

/** A parsed If-Match / If-None-Match: `*`, or the listed entity tags. */
export type TagList = '*' | ReadonlyArray<{ readonly weak: boolean, readonly opaque: string }>

// RFC 9110 §8.8.3: entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE, etagc = %x21 / %x23-7E / obs-text.
// Empty list elements (`"a", , "b"`) are skipped, as §5.6.1.2 asks of recipients.
const tagPattern = /^[\s,]*(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"\s*(?:,|$)/

export function parseTagList (header: string | undefined, name: string): TagList | undefined {
  if (header === undefined) return undefined
  if (header.trim() === '*') return '*'
  const tags: Array<{ weak: boolean, opaque: string }> = []
  let rest = header
  while (/[^\s,]/.test(rest)) {
    const match = tagPattern.exec(rest)
    if (match === null) throw withInvalidParams(new HeaderInvalidError(), [{ name, reason: 'must be * or a list of quoted entity tags' }])
    tags.push({ weak: match[1] !== undefined, opaque: match[2] })
    rest = rest.slice(match[0].length)
  }
  return tags
}

/**
 * The ETag of one representation of a stored version: `"7"` for the full JSON resource, `"7.x1f"`
 * for a variant (projected fields, embedded relations, another format). RFC 9110 §8.8.3 wants
 * strong validators to differ per representation; writes compare only the version part, so an
 * ETag from any representation of the current version satisfies If-Match (issue 4, point 6).
 */
export function formatETag (version: number, variant: string): string {
  return variant === '' ? `"${version}"` : `"${version}.${variant}"`
}

function versionOf (opaque: string): number | undefined {
  const dot = opaque.indexOf('.')
  const digits = dot === -1 ? opaque : opaque.slice(0, dot)
  return /^[1-9][0-9]{0,15}$/.test(digits) ? Number(digits) : undefined
}

export interface Current {
  /** The strong ETag of the representation a GET would send. */
  readonly etag: string
  readonly version: number
  readonly modifiedAt: Date
}

export interface Preconditions {
  readonly ifMatch?: TagList
  readonly ifNoneMatch?: TagList
  readonly ifModifiedSince?: Date
  readonly ifUnmodifiedSince?: Date
}

/** Reads the four conditional headers; malformed ones are 400, dates that do not parse are ignored (RFC 9110 §13.1.3, §13.1.4). */
export function readPreconditions (headers: Record<string, string | string[] | undefined>): Preconditions {
  const text = (name: string) => {
    const value = headers[name]
    return Array.isArray(value) ? value.join(', ') : value
  }
  return {
    ifMatch: parseTagList(text('if-match'), 'If-Match'),
    ifNoneMatch: parseTagList(text('if-none-match'), 'If-None-Match'),
    ifModifiedSince: httpDate(text('if-modified-since')),
    ifUnmodifiedSince: httpDate(text('if-unmodified-since'))
  }
}

function httpDate (text: string | undefined): Date | undefined {
  if (text === undefined) return undefined
  const time = Date.parse(text)
  return Number.isNaN(time) ? undefined : new Date(time)
}

export const hasPreconditions = (p: Preconditions) =>
  p.ifMatch !== undefined || p.ifNoneMatch !== undefined || p.ifModifiedSince !== undefined || p.ifUnmodifiedSince !== undefined

/** HTTP dates have whole seconds: compare at that resolution. */
const seconds = (date: Date) => Math.floor(date.getTime() / 1000)

/**
 * RFC 9110 §13.2.2, in its order. `current` is null when the resource does not exist.
 * Returns 'not-modified' for a safe request that should get 304; throws 412 when a condition fails.
 */
export function evaluatePreconditions (p: Preconditions, current: Current | null, safe: boolean): 'proceed' | 'not-modified' {
  // Step 1: If-Match uses the strong comparison, on the version (any representation of it).
  if (p.ifMatch !== undefined) {
    const matches = current !== null && (p.ifMatch === '*' || p.ifMatch.some(tag => !tag.weak && versionOf(tag.opaque) === current.version))
    if (!matches) throw new PreconditionFailedError('If-Match does not match the current version of the resource; fetch it again and retry.')
  } else if (p.ifUnmodifiedSince !== undefined && current !== null) {
    // Step 2.
    if (seconds(current.modifiedAt) > seconds(p.ifUnmodifiedSince)) throw new PreconditionFailedError('The resource was modified after If-Unmodified-Since.')
  }
  // Step 3: If-None-Match uses the weak comparison, on the exact representation.
  if (p.ifNoneMatch !== undefined) {
    const opaque = current?.etag.slice(1, -1)
    const matches = current !== null && (p.ifNoneMatch === '*' || p.ifNoneMatch.some(tag => tag.opaque === opaque))
    if (matches) {
      if (safe) return 'not-modified'
      throw new PreconditionFailedError('If-None-Match matches the current resource.')
    }
  } else if (safe && p.ifModifiedSince !== undefined && current !== null) {
    // Step 4.
    if (seconds(current.modifiedAt) <= seconds(p.ifModifiedSince)) return 'not-modified'
  }
  return 'proceed'
}
