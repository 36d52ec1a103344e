// Unit tests for lib/paging/cursor.ts: continuation tokens (spec "Paging" → "Token-based paging").
// Raw tokens are built by hand where the codec would never produce them, to reach every refusal.
import t from 'tap'
import { createCipheriv, createHash, createHmac, hkdfSync, randomBytes } from 'node:crypto'
import { CursorError, createCursorCodec, randomCursorSecret, type CursorCodec, type CursorPosition, type CursorProblem } from '../../lib/paging/cursor.js'

const SECRET = 'an-old-but-still-valid-secret-0001'
const NEW_SECRET = 'the-newest-secret-of-them-all-0002'
const BINDING = 'books|filter=year ge 2000|sort=-year,id|fields=|pageSize=20'
const T0 = 1_700_000_000_000

function problemOf (codec: CursorCodec, token: string, binding = BINDING): CursorProblem | 'none' {
  try {
    codec.open(token, binding)
    return 'none'
  } catch (error) {
    if (!(error instanceof CursorError)) throw error
    return error.problem
  }
}

function flip (token: string, index: number): string {
  const bytes = Buffer.from(token, 'base64url')
  bytes[index < 0 ? bytes.length + index : index] ^= 0x01
  return bytes.toString('base64url')
}

// Buffer decodes a final character whose unused low bits are set to the same bytes as the canonical one.
function nonCanonical (codec: CursorCodec): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  for (let n = 0; ; n++) {
    const token = codec.seal({ window: 'after', values: ['x'.repeat(n)] }, BINDING)
    if (token.length % 4 === 0) continue
    const last = alphabet.indexOf(token[token.length - 1])
    const variant = token.slice(0, -1) + alphabet[last ^ 1]
    if (!Buffer.from(variant, 'base64url').equals(Buffer.from(token, 'base64url'))) throw new Error('not a respelling')
    return variant
  }
}

// Mirrors the token format so tests can seal plaintexts the codec itself refuses to write.
function rawToken (secret: string, plaintext: string, binding = BINDING, version = 1): string {
  const material = Buffer.from(hkdfSync('sha256', secret, '', 'fastify-api-conventions cursor v1', 64))
  const header = Buffer.alloc(13)
  header.writeUInt8(version, 0)
  createHash('sha256').update(material).digest().copy(header, 1, 0, 4)
  createHmac('sha256', material.subarray(32)).update(binding).digest().copy(header, 5, 0, 8)
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', material.subarray(0, 32), iv)
  cipher.setAAD(Buffer.concat([header, Buffer.from(binding)]))
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()])
  return Buffer.concat([header, iv, body, cipher.getAuthTag()]).toString('base64url')
}

t.test('round trip', async t => {
  const codec = createCursorCodec({ secrets: [SECRET] })
  const positions: CursorPosition[] = [
    { window: 'after', values: ['Ünïcödé ✓ 🚀 日本語', 42, -1.5e-7, true, false, null, '', 'id-1'] },
    { window: 'before', values: [null, 0, 'id-2'] },
    { window: 'after', values: [] }
  ]
  for (const position of positions) {
    t.same(codec.open(codec.seal(position, BINDING), BINDING), position, position.window)
  }
  const sealed = positions.map(p => codec.seal(p, BINDING))
  t.not(sealed[0], codec.seal(positions[0], BINDING), 'a fresh IV per token')
})

t.test('tokens are URL-safe, opaque and short', async t => {
  const codec = createCursorCodec({ secrets: [SECRET] })
  const distinctive = 'ZebraQuokka'
  const token = codec.seal({ window: 'after', values: [distinctive, 'b3f1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d'] }, BINDING)
  t.match(token, /^[A-Za-z0-9_-]+$/)
  t.notOk(token.includes(distinctive))
  const decoded = Buffer.from(token, 'base64url').toString('latin1')
  t.notOk(decoded.includes(distinctive))
  t.notOk(decoded.includes('"w"'))
  t.equal(encodeURIComponent(token), token)
  const typical = codec.seal({ window: 'after', values: ['2024-05-01T10:00:00.000Z', 'b3f1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d'] }, BINDING)
  t.ok(typical.length < 200, `typical token is ${typical.length} characters`)
})

t.test('refuses malformed tokens', async t => {
  const codec = createCursorCodec({ secrets: [SECRET] })
  const token = codec.seal({ window: 'after', values: ['x', 1] }, BINDING)
  t.equal(problemOf(codec, ''), 'malformed', 'empty')
  t.equal(problemOf(codec, token.slice(0, 20)), 'malformed', 'truncated below the minimum')
  t.equal(problemOf(codec, randomBytes(80).toString('base64url')), 'malformed', 'random garbage (unknown version)')
  t.equal(problemOf(codec, `${token.slice(0, 10)}+/${token.slice(12)}`), 'malformed', 'base64 but not base64url')
  t.equal(problemOf(codec, `${token}=`), 'malformed', 'padding')
  t.equal(problemOf(codec, `${token.slice(0, 10)} ${token.slice(10)}`), 'malformed', 'space')
  t.equal(problemOf(codec, `${token.slice(0, 10)}%${token.slice(10)}`), 'malformed', 'percent sign')
  let impossible = token
  while (impossible.length % 4 !== 1) impossible += 'A'
  t.equal(problemOf(codec, impossible), 'malformed', 'length that no byte string encodes to')
  t.equal(problemOf(codec, nonCanonical(codec)), 'malformed', 'same bytes, other spelling (unused trailing bits set)')
  t.equal(problemOf(codec, 42 as unknown as string), 'malformed', 'not a string')
  const bytes = Buffer.from(token, 'base64url')
  bytes[0] = 2
  t.equal(problemOf(codec, bytes.toString('base64url')), 'malformed', 'unknown version')
  t.equal(problemOf(codec, rawToken(SECRET, 'not json')), 'malformed', 'authentic but not JSON')
  for (const plaintext of [
    'null', '[]', '"a"',
    '{"w":"x","v":[],"e":9999999999}',
    '{"w":"a","v":{},"e":9999999999}',
    '{"w":"a","v":[{}],"e":9999999999}',
    '{"w":"a","v":[[1]],"e":9999999999}',
    '{"w":"a","v":[],"e":"9999999999"}',
    '{"w":"a","v":[],"e":1.5}'
  ]) {
    t.equal(problemOf(codec, rawToken(SECRET, plaintext)), 'malformed', `authentic but wrong shape: ${plaintext}`)
  }
  t.same(codec.open(rawToken(SECRET, '{"w":"b","v":[1],"e":9999999999}'), BINDING), { window: 'before', values: [1] },
    'the hand-built format matches the codec')
})

t.test('refuses tampered tokens', async t => {
  const codec = createCursorCodec({ secrets: [SECRET] })
  const token = codec.seal({ window: 'before', values: ['x', 1] }, BINDING)
  const length = Buffer.from(token, 'base64url').length
  t.equal(problemOf(codec, flip(token, 13)), 'tampered', 'IV')
  t.equal(problemOf(codec, flip(token, 25)), 'tampered', 'first ciphertext byte')
  t.equal(problemOf(codec, flip(token, -17)), 'tampered', 'last ciphertext byte')
  t.equal(problemOf(codec, flip(token, -1)), 'tampered', 'GCM tag')
  t.equal(problemOf(codec, flip(token, 1)), 'tampered', 'key id')
  const truncated = Buffer.from(token, 'base64url').subarray(0, length - 1).toString('base64url')
  t.equal(problemOf(codec, truncated), 'tampered', 'truncated by one byte')
  const other = createCursorCodec({ secrets: ['someone-elses-secret-entirely'] })
  t.equal(problemOf(codec, other.seal({ window: 'after', values: [] }, BINDING)), 'tampered', 'unknown secret')
  // The binding tag sits outside the ciphertext; flipping it reads as a different query (still 400).
  t.equal(problemOf(codec, flip(token, 5)), 'foreign-query', 'binding tag')
})

t.test('refuses tokens from a different query', async t => {
  const codec = createCursorCodec({ secrets: [SECRET] })
  const token = codec.seal({ window: 'after', values: ['x', 1] }, BINDING)
  t.equal(problemOf(codec, token, BINDING.replace('-year', 'year')), 'foreign-query', 'different sort')
  t.equal(problemOf(codec, token, BINDING.replace('2000', '2001')), 'foreign-query', 'different filter')
  t.equal(problemOf(codec, token, ''), 'foreign-query', 'empty binding')
  try {
    codec.open(token, 'authors')
    t.fail('should throw')
  } catch (error) {
    t.ok(error instanceof CursorError)
    t.ok(error instanceof Error)
    t.match(error, { name: 'CursorError', problem: 'foreign-query', message: 'token was issued for a different query' })
  }
})

t.test('expiry', async t => {
  let clock = T0
  const codec = createCursorCodec({ secrets: [SECRET], ttlSeconds: 60, now: () => clock })
  const token = codec.seal({ window: 'after', values: [1] }, BINDING)
  clock = T0 + 60_000
  t.same(codec.open(token, BINDING), { window: 'after', values: [1] }, 'valid at the last instant')
  clock = T0 + 60_001
  t.equal(problemOf(codec, token), 'expired', 'expired just after')
  t.throws(() => codec.open(token, BINDING), { message: 'token has expired' })

  clock = T0 + 500
  const rounded = codec.seal({ window: 'after', values: [1] }, BINDING)
  clock = T0 + 60_500
  t.equal(problemOf(codec, rounded), 'none', 'lifetime is rounded up, never down')

  clock = T0
  const daily = createCursorCodec({ secrets: [SECRET], now: () => clock })
  const dayToken = daily.seal({ window: 'after', values: [] }, BINDING)
  clock = T0 + 86_400_000
  t.equal(problemOf(daily, dayToken), 'none', 'default lifetime is one day')
  clock += 1
  t.equal(problemOf(daily, dayToken), 'expired')

  const real = createCursorCodec({ secrets: [SECRET] })
  t.equal(problemOf(real, real.seal({ window: 'after', values: [] }, BINDING)), 'none', 'default clock')
  t.equal(problemOf(real, rawToken(SECRET, '{"w":"a","v":[],"e":1000}')), 'expired')
})

t.test('key rotation', async t => {
  const old = createCursorCodec({ secrets: [SECRET] })
  const rotated = createCursorCodec({ secrets: [NEW_SECRET, SECRET] })
  const retired = createCursorCodec({ secrets: [NEW_SECRET] })
  const position: CursorPosition = { window: 'after', values: ['x', 1] }
  const oldToken = old.seal(position, BINDING)
  t.same(rotated.open(oldToken, BINDING), position, 'old tokens still open')
  t.equal(problemOf(rotated, oldToken, 'other'), 'foreign-query', 'binding still checked with the old key')
  const newToken = rotated.seal(position, BINDING)
  t.same(retired.open(newToken, BINDING), position, 'new tokens are sealed with the newest secret')
  t.equal(problemOf(old, newToken), 'tampered', 'so a codec without it cannot open them')
  t.equal(problemOf(retired, oldToken), 'tampered', 'rotated-away secret')
  const repeated = createCursorCodec({ secrets: [SECRET, SECRET] })
  t.same(repeated.open(oldToken, BINDING), position, 'a repeated secret is harmless')
})

t.test('options are checked at creation', async t => {
  t.throws(() => createCursorCodec({ secrets: ['too-short'] }), { name: 'TypeError', message: /cursorSecret/ })
  t.throws(() => createCursorCodec({ secrets: [SECRET, '123456789012345'] }), { name: 'TypeError', message: /cursorSecret/ })
  t.doesNotThrow(() => createCursorCodec({ secrets: ['1234567890123456'] }), '16 characters suffice')
  t.throws(() => createCursorCodec({ secrets: [] }), { name: 'TypeError', message: /cursorSecret/ })
  t.throws(() => createCursorCodec({ secrets: SECRET as unknown as string[] }), { name: 'TypeError', message: /cursorSecret/ })
  t.throws(() => createCursorCodec({ secrets: [42 as unknown as string] }), { name: 'TypeError', message: /cursorSecret/ })
  for (const ttlSeconds of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '60' as unknown as number]) {
    t.throws(() => createCursorCodec({ secrets: [SECRET], ttlSeconds }), { name: 'TypeError', message: /ttlSeconds/ }, String(ttlSeconds))
  }
})

t.test('seal refuses values JSON would not round-trip', async t => {
  const codec = createCursorCodec({ secrets: [SECRET] })
  for (const value of [Number.NaN, Number.POSITIVE_INFINITY, undefined, new Date(0), { a: 1 }, [1], 1n]) {
    t.throws(() => codec.seal({ window: 'after', values: [value] }, BINDING), TypeError, typeof value)
  }
})

t.test('randomCursorSecret', async t => {
  const a = randomCursorSecret()
  t.match(a, /^[A-Za-z0-9_-]{43}$/)
  t.not(a, randomCursorSecret())
  const codec = createCursorCodec({ secrets: [a] })
  t.same(codec.open(codec.seal({ window: 'before', values: [] }, BINDING), BINDING), { window: 'before', values: [] })
})

t.test('sealShared: one token per query, position and second, living at least the ttl; past a thousand the oldest is forgotten', async t => {
  let clock = T0
  const codec = createCursorCodec({ secrets: [SECRET], ttlSeconds: 60, now: () => clock })
  const end = { window: 'before', values: [] } as const
  const after = { window: 'after', values: ['b', 2] } as const
  const first = codec.sealShared(end, BINDING)
  t.same(codec.open(first, BINDING), end)
  const next = codec.sealShared(after, BINDING)
  t.same(codec.open(next, BINDING), after)
  t.not(next, first, 'another position: another token')
  t.not(codec.sealShared({ window: 'before', values: ['b', 2] }, BINDING), next, 'another window: another token')
  clock += 999
  t.equal(codec.sealShared(end, BINDING), first, 'within its second: the same token')
  t.equal(codec.sealShared({ window: 'after', values: ['b', 2] }, BINDING), next, 'for an equal position too')
  t.not(codec.sealShared(end, `${BINDING}|other`), first, 'another query: another token')
  clock += 60_000
  t.same(codec.open(first, BINDING), end, 'handed out at the end of its second, it still opens a ttl later')
  const second = codec.sealShared(end, BINDING)
  t.not(second, first, 'a second later: sealed anew')
  for (let i = 0; i < 1000; i++) codec.sealShared(end, `${BINDING}|${i}`)
  t.not(codec.sealShared(end, BINDING), second, 'forgotten once a thousand others came after it: sealed anew within its second')
  t.equal(problemOf(codec, codec.sealShared(end, BINDING), 'another query'), 'foreign-query')
})
