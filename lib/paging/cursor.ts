// Continuation tokens for keyset paging (spec "Paging" → "Token-based paging" 4, "Paging stability" 2–3):
// sealed with AES-256-GCM so clients can neither read nor forge positions, and bound to the query they came from.
import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto'
import { keepBounded } from '../bounded.js'

export interface CursorPosition {
  /** Which side of the anchor item the page lies on. */
  readonly window: 'after' | 'before'
  /** Sort-key values of the anchor item (JSON values: string, number, boolean, null), one per sort key, id last. */
  readonly values: readonly unknown[]
}

export type CursorProblem = 'malformed' | 'tampered' | 'expired' | 'foreign-query'

const MESSAGES: Readonly<Record<CursorProblem, string>> = {
  malformed: 'token is malformed',
  tampered: 'token is not authentic',
  expired: 'token has expired',
  'foreign-query': 'token was issued for a different query'
}

/** Why a token was refused; the message is safe to show to clients (the caller answers 400). */
export class CursorError extends Error {
  readonly problem: CursorProblem

  constructor (problem: CursorProblem) {
    super(MESSAGES[problem])
    this.name = 'CursorError'
    this.problem = problem
  }
}

export interface CursorCodecOptions {
  /** Secrets, newest first: the first seals, all open (key rotation). Each at least 16 characters. */
  readonly secrets: readonly string[]
  /** Lifetime of a token in seconds; default 86400. */
  readonly ttlSeconds?: number
  /** Clock for tests; default Date.now. */
  readonly now?: () => number
}

export interface CursorCodec {
  /** `binding` is a canonical string of the query options the token belongs to (resource path, filter, sort, fields, pageSize…): it is authenticated (AAD), not stored. */
  seal (position: CursorPosition, binding: string): string
  /** Throws CursorError. */
  open (token: string, binding: string): CursorPosition
  /**
   * `seal`, shared: every page that hands out this position of this query in the same second gets
   * the same token (one seal serves them all). For links, which a hot query hands out again and
   * again: its first page's `next`, every page's `last`.
   */
  sealShared (position: CursorPosition, binding: string): string
}

// Token = base64url(version | key id | binding tag | IV | ciphertext | GCM tag).
// The key id lets `open` pick the key in one lookup instead of trying every rotated secret; the binding
// tag lets it tell a token from another query (a client bug worth naming) from a forged one before decrypting.
const VERSION = 1
const KEY_ID_LENGTH = 4
const BINDING_TAG_LENGTH = 8
const IV_LENGTH = 12
const GCM_TAG_LENGTH = 16
const HEADER_LENGTH = 1 + KEY_ID_LENGTH + BINDING_TAG_LENGTH
const IV_END = HEADER_LENGTH + IV_LENGTH
// The smallest plaintext this module writes, `{"w":"a","v":[],"e":0}`, is longer than one byte; anything
// shorter than header + IV + one byte + tag cannot be ours.
const MIN_LENGTH = IV_END + 1 + GCM_TAG_LENGTH
const HKDF_INFO = 'fastify-api-conventions cursor v1'
const MIN_SECRET_LENGTH = 16
const BASE64URL = /^[A-Za-z0-9_-]+$/

interface Key {
  readonly id: number
  /** AES-256-GCM key. */
  readonly cipher: Buffer
  /** HMAC-SHA256 key for the binding tag; separate from `cipher` so neither use weakens the other. */
  readonly mac: Buffer
}

interface Plaintext {
  readonly w: 'a' | 'b'
  readonly v: ReadonlyArray<string | number | boolean | null>
  readonly e: number
}

function deriveKey (secret: string): Key {
  // HKDF rather than a password hash: secrets are operator-chosen and meant to be long and random
  // (randomCursorSecret), and derivation happens once, at creation.
  const material = Buffer.from(hkdfSync('sha256', secret, '', HKDF_INFO, 64))
  const id = createHash('sha256').update(material).digest().readUInt32BE(0)
  return { id, cipher: material.subarray(0, 32), mac: material.subarray(32) }
}

function bindingTag (key: Key, binding: string): Buffer {
  return createHmac('sha256', key.mac).update(binding).digest().subarray(0, BINDING_TAG_LENGTH)
}

function isScalar (value: unknown): value is string | number | boolean | null {
  return value === null || typeof value === 'string' || typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value))
}

function isPlaintext (value: unknown): value is Plaintext {
  if (typeof value !== 'object' || value === null) return false
  const { w, v, e } = value as Record<string, unknown>
  return (w === 'a' || w === 'b') && Array.isArray(v) && v.every(isScalar) && Number.isSafeInteger(e)
}

/** A fresh secret for when the operator configures none (tokens then die with the process). */
export function randomCursorSecret (): string {
  return randomBytes(32).toString('base64url')
}

const RANDOM_SECRET_WARNING = 'api-conventions: no cursorSecret configured; paging tokens use a random key and will not survive a restart or work across instances'
let processWarned = false

/**
 * Says that paging tokens use a random key: in the host's log, and, where that log does not show
 * warnings (no logger, or a level above warn), as a process warning, which Node prints on stderr
 * and a host can catch (`process.on('warning')`). The process warning comes once per process, as
 * Node's own do; the log line comes with each registration.
 */
export function warnOfRandomSecret (log: { warn (message: string): void, isLevelEnabled?: (level: string) => boolean }): void {
  log.warn(RANDOM_SECRET_WARNING)
  if (processWarned || log.isLevelEnabled?.('warn') === true) return
  processWarned = true
  process.emitWarning(RANDOM_SECRET_WARNING, { type: 'ApiConventionsWarning', code: 'API_WARN_NO_CURSOR_SECRET' })
}

export function createCursorCodec (options: CursorCodecOptions): CursorCodec {
  const { secrets, ttlSeconds = 86400, now = Date.now } = options
  if (!Array.isArray(secrets) || secrets.length === 0) {
    throw new TypeError('cursorSecret must name at least one secret')
  }
  for (const secret of secrets) {
    if (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH) {
      throw new TypeError(`cursorSecret must be at least ${MIN_SECRET_LENGTH} characters long`)
    }
  }
  if (typeof ttlSeconds !== 'number' || !Number.isFinite(ttlSeconds) || ttlSeconds <= 0) {
    throw new TypeError('cursor ttlSeconds must be a positive number')
  }

  const keys = secrets.map(deriveKey)
  const sealer = keys[0]
  const byId = new Map<number, Key>()
  for (const key of keys) {
    // A repeated secret derives the same key. Distinct secrets sharing a 32-bit id (odds 2^-32) would
    // leave the older one unable to open its tokens: clients get 400 and restart paging, nothing worse.
    if (!byId.has(key.id)) byId.set(key.id, key)
  }

  function seal (position: CursorPosition, binding: string, extraSeconds = 0): string {
    // Checked here because JSON would silently turn NaN into null or a Date into a string, so the
    // position read back would differ from the one sealed.
    if (!position.values.every(isScalar)) {
      throw new TypeError('cursor values must be strings, finite numbers, booleans or null')
    }
    // Rounded up so a token lives at least ttlSeconds.
    const e = Math.ceil(now() / 1000 + ttlSeconds + extraSeconds)
    const plaintext: Plaintext = { w: position.window === 'after' ? 'a' : 'b', v: position.values as Plaintext['v'], e }
    const header = Buffer.alloc(HEADER_LENGTH)
    header.writeUInt8(VERSION, 0)
    header.writeUInt32BE(sealer.id, 1)
    bindingTag(sealer, binding).copy(header, 1 + KEY_ID_LENGTH)
    const iv = randomBytes(IV_LENGTH)
    const cipher = createCipheriv('aes-256-gcm', sealer.cipher, iv, { authTagLength: GCM_TAG_LENGTH })
    cipher.setAAD(Buffer.concat([header, Buffer.from(binding)]))
    const body = Buffer.concat([cipher.update(JSON.stringify(plaintext)), cipher.final()])
    return Buffer.concat([header, iv, body, cipher.getAuthTag()]).toString('base64url')
  }

  function open (token: string, binding: string): CursorPosition {
    if (typeof token !== 'string' || !BASE64URL.test(token)) throw new CursorError('malformed')
    const bytes = Buffer.from(token, 'base64url')
    // Buffer's decoder skips stray characters and ignores trailing bits; re-encoding rejects every
    // spelling but the one seal produces.
    if (bytes.length < MIN_LENGTH || bytes.toString('base64url') !== token) throw new CursorError('malformed')
    if (bytes.readUInt8(0) !== VERSION) throw new CursorError('malformed')

    // Sealed under a secret we never had or have rotated away: indistinguishable from a forgery.
    const key = byId.get(bytes.readUInt32BE(1))
    if (key === undefined) throw new CursorError('tampered')

    const header = bytes.subarray(0, HEADER_LENGTH)
    if (!timingSafeEqual(header.subarray(1 + KEY_ID_LENGTH), bindingTag(key, binding))) {
      throw new CursorError('foreign-query')
    }

    let text: string
    try {
      const decipher = createDecipheriv('aes-256-gcm', key.cipher, bytes.subarray(HEADER_LENGTH, IV_END), { authTagLength: GCM_TAG_LENGTH })
      decipher.setAAD(Buffer.concat([header, Buffer.from(binding)]))
      decipher.setAuthTag(bytes.subarray(bytes.length - GCM_TAG_LENGTH))
      text = Buffer.concat([decipher.update(bytes.subarray(IV_END, bytes.length - GCM_TAG_LENGTH)), decipher.final()]).toString('utf8')
    } catch {
      throw new CursorError('tampered')
    }

    // Authentic yet unreadable only if another version of this code sealed it with the same secret.
    let plaintext: unknown
    try {
      plaintext = JSON.parse(text)
    } catch {
      throw new CursorError('malformed')
    }
    if (!isPlaintext(plaintext)) throw new CursorError('malformed')
    if (now() / 1000 > plaintext.e) throw new CursorError('expired')
    return { window: plaintext.w === 'a' ? 'after' : 'before', values: plaintext.v }
  }

  // A seal is a sizeable share of a page's CPU (about 10 µs, an AES-GCM key setup and three
  // buffers). Sealed to live a second longer, so that a token handed out during its second still
  // lives at least ttlSeconds.
  const shared = new Map<string, { readonly token: string, readonly until: number }>()
  function sealShared (position: CursorPosition, binding: string): string {
    const at = now()
    const key = `${position.window}\u0000${JSON.stringify(position.values)}\u0000${binding}`
    const kept = shared.get(key)
    if (kept !== undefined && at < kept.until) return kept.token
    const token = seal(position, binding, 1)
    return keepBounded(shared, SHARED_TOKENS_KEPT, key, { token, until: at + 1000 }).token
  }

  return { seal: (position, binding) => seal(position, binding), open, sealShared }
}

/** Shared tokens kept, at most (the oldest is dropped first). */
const SHARED_TOKENS_KEPT = 1000
