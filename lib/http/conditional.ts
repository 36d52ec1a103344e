// Conditional requests (spec "Request headers": If-Match / If-None-Match; "Errors" 4, 5, 7):
// ETags from the stored version, and RFC 9110 §13.2.2 evaluation of the preconditions.
import { createHash } from 'node:crypto'
import { HeaderInvalidError, PreconditionFailedError, withInvalidParams } from '../errors.js'
import { parseHttpDate } from './dates.js'

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
 * strong validators to differ per representation; If-Match accepts the tag of any representation
 * of the current version, and only tags of this shape.
 */
export function formatETag (version: number, variant: string): string {
  return variant === '' ? `"${version}"` : `"${version}.${variant}"`
}

const variantLength = 12
const variantPattern = new RegExp(`^[A-Za-z0-9_-]{${variantLength}}$`)

/** A short, stable tag for a representation variant: base64url of its SHA-256, cut to `variantLength`. */
export function variantTag (text: string): string {
  return text === '' ? '' : createHash('sha256').update(text).digest('base64url').slice(0, variantLength)
}

/**
 * The tag of a representation sent compressed (http/compression.ts): another representation, so
 * another strong tag (RFC 9110 §8.8.3.3), which names the coding: `"7"` → `"7+br"`, `"7.x1f…"` → `"7.x1f…+gzip"`.
 */
export const codedETag = (etag: string, coding: string): string => `${etag.slice(0, -1)}+${coding}"`

// The codings compression offers: `+` is not in a variant tag's alphabet.
const codingSuffix = /\+(?:br|gzip)$/

/** Whether `opaque` is a tag formatETag gives some representation of `version` (`7`, or `7.` and a variant tag), or codedETag its compressed form. */
function isTagOf (opaque: string, version: number): boolean {
  const uncoded = opaque.replace(codingSuffix, '')
  const bare = String(version)
  if (uncoded === bare) return true
  return uncoded.startsWith(`${bare}.`) && variantPattern.test(uncoded.slice(bare.length + 1))
}

/**
 * The tag a GET answers with, `etag` unless the client holds the representation compressed: when
 * If-None-Match names `etag` coded in one of `codings()` (those the request accepts), that
 * representation is the one selected, and a 304 names it. A client naming the uncompressed tag
 * is answered with that one, as without compression.
 */
export function heldETag (etag: string, ifNoneMatch: TagList | undefined, codings: () => readonly string[]): string {
  if (ifNoneMatch === undefined || ifNoneMatch === '*') return etag
  for (const coding of codings()) {
    const coded = codedETag(etag, coding)
    if (ifNoneMatch.some(tag => `"${tag.opaque}"` === coded)) return coded
  }
  return etag
}

/** The selected representation's validators; a collection has none (README "Conditional requests"). */
export interface Current {
  /** The strong ETag of the representation a GET would send, if it has one. */
  readonly etag: string | null
  /** The stored version: If-Match accepts the tag of any of its representations. */
  readonly version: number | null
  readonly modifiedAt: Date | null
}

/** An existing resource without validators: only `*` can match it (RFC 9110 §13.1.1, §13.1.2). */
export const unversioned: Current = Object.freeze({ etag: null, version: null, modifiedAt: null })

export interface Preconditions {
  readonly ifMatch?: TagList
  readonly ifNoneMatch?: TagList
  readonly ifModifiedSince?: Date
  readonly ifUnmodifiedSince?: Date
}

/** Reads the four conditional headers; malformed tag lists are 400, values that are no HTTP-date are ignored (RFC 9110 §13.1.3, §13.1.4). */
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

// RFC 9110 §5.6.7: only an HTTP-date, not the wider RFC 5322 forms a Date header may take.
function httpDate (text: string | undefined): Date | undefined {
  return text === undefined ? undefined : parseHttpDate(text) ?? undefined
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
  const modifiedAt = current?.modifiedAt ?? null
  // Step 1: If-Match uses the strong comparison, against the tags issued for the current version.
  if (p.ifMatch !== undefined) {
    const version = current?.version ?? null
    const matches = current !== null && (p.ifMatch === '*' || (version !== null && p.ifMatch.some(tag => !tag.weak && isTagOf(tag.opaque, version))))
    if (!matches) throw new PreconditionFailedError('If-Match does not match the current version of the resource; fetch it again and retry.')
  } else if (p.ifUnmodifiedSince !== undefined && modifiedAt !== null) {
    // Step 2.
    if (seconds(modifiedAt) > seconds(p.ifUnmodifiedSince)) throw new PreconditionFailedError('The resource was modified after If-Unmodified-Since.')
  }
  // Step 3: If-None-Match uses the weak comparison, on the exact representation.
  if (p.ifNoneMatch !== undefined) {
    const opaque = current?.etag?.slice(1, -1)
    const matches = current !== null && (p.ifNoneMatch === '*' || p.ifNoneMatch.some(tag => tag.opaque === opaque))
    if (matches) {
      if (safe) return 'not-modified'
      throw new PreconditionFailedError('If-None-Match matches the current resource.')
    }
  } else if (safe && p.ifModifiedSince !== undefined && modifiedAt !== null) {
    // Step 4.
    if (seconds(modifiedAt) <= seconds(p.ifModifiedSince)) return 'not-modified'
  }
  return 'proceed'
}
