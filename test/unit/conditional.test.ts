// Unit tests for lib/http/conditional.ts (spec "Request headers": If-Match, If-None-Match; RFC 9110
// §8.8.3 entity tags, §13.1 the four preconditions, §13.2.2 their order): tag-list parsing, ETag
// formatting, and the evaluation matrix, including the branches HTTP tests reach only by accident.
import t from 'tap'
import { evaluatePreconditions, formatETag, hasPreconditions, parseTagList, readPreconditions, unversioned, variantTag } from '../../lib/http/conditional.js'
import type { Current, Preconditions } from '../../lib/http/conditional.js'

const MODIFIED = new Date('2024-05-01T12:00:00.500Z')
const current: Current = { etag: '"3"', version: 3, modifiedAt: MODIFIED }
const variant = variantTag('fields=title')
const projected: Current = { etag: `"3.${variant}"`, version: 3, modifiedAt: MODIFIED }
const at = (iso: string) => new Date(iso)
const strong = (...opaques: string[]) => opaques.map(opaque => ({ weak: false, opaque }))

t.test('parseTagList reads *, single tags, weak tags and lists', async t => {
  t.equal(parseTagList(undefined, 'If-Match'), undefined)
  t.equal(parseTagList(' * ', 'If-Match'), '*')
  t.same(parseTagList('"1"', 'If-Match'), [{ weak: false, opaque: '1' }])
  t.same(parseTagList('W/"1", "2.x" ,"a,b"', 'If-Match'), [{ weak: true, opaque: '1' }, { weak: false, opaque: '2.x' }, { weak: false, opaque: 'a,b' }])
  t.same(parseTagList('""', 'If-Match'), [{ weak: false, opaque: '' }])
})

t.test('parseTagList skips empty list elements and reads an empty list as no tags', async t => {
  t.same(parseTagList(', "1",, ,"2",', 'If-Match'), [{ weak: false, opaque: '1' }, { weak: false, opaque: '2' }])
  t.same(parseTagList(' , ', 'If-Match'), [])
  t.same(parseTagList('', 'If-Match'), [])
})

for (const header of ['1', '"1', 'W/1', 'w/"1"', '"1" "2"', '"a"b"', '*, "1"', '"\u0001"']) {
  t.test(`parseTagList refuses ${JSON.stringify(header)} naming the header`, async t => {
    t.throws(() => parseTagList(header, 'If-None-Match'), { code: 'API_ERR_HEADER_INVALID', statusCode: 400, invalidParams: [{ name: 'If-None-Match' }] })
  })
}

t.test('formatETag quotes the version, with the variant after a dot', async t => {
  t.equal(formatETag(7, ''), '"7"')
  t.equal(formatETag(7, 'x1f'), '"7.x1f"')
})

t.test('variantTag is empty for the plain representation, else 12 stable base64url characters', async t => {
  t.equal(variantTag(''), '')
  t.match(variant, /^[A-Za-z0-9_-]{12}$/)
  t.equal(variantTag('fields=title'), variant)
  t.not(variantTag('fields=year'), variant)
})

t.test('readPreconditions reads the four headers, joining repeated ones', async t => {
  const p = readPreconditions({
    'if-match': ['"1"', '"2"'],
    'if-none-match': 'W/"3"',
    'if-modified-since': 'Wed, 01 May 2024 12:00:00 GMT',
    'if-unmodified-since': 'not a date'
  })
  t.same(p, {
    ifMatch: [{ weak: false, opaque: '1' }, { weak: false, opaque: '2' }],
    ifNoneMatch: [{ weak: true, opaque: '3' }],
    ifModifiedSince: at('2024-05-01T12:00:00Z'),
    ifUnmodifiedSince: undefined
  })
  t.notOk(hasPreconditions(readPreconditions({})))
  for (const name of ['if-match', 'if-none-match', 'if-modified-since', 'if-unmodified-since']) {
    t.ok(hasPreconditions(readPreconditions({ [name]: name.includes('since') ? 'Wed, 01 May 2024 12:00:00 GMT' : '*' })), name)
  }
})

const cases: ReadonlyArray<readonly [string, Preconditions, Current | null, boolean, 'proceed' | 'not-modified' | 412]> = [
  ['no preconditions proceed', {}, current, false, 'proceed'],
  ['If-Match * on an existing resource proceeds', { ifMatch: '*' }, current, false, 'proceed'],
  ['If-Match * on a missing resource fails', { ifMatch: '*' }, null, false, 412],
  ['If-Match of the version proceeds', { ifMatch: [{ weak: false, opaque: '3' }] }, current, false, 'proceed'],
  ['If-Match of a variant of the version proceeds', { ifMatch: strong(`3.${variant}`) }, current, false, 'proceed'],
  ['If-Match of a variant of another version fails', { ifMatch: strong(`2.${variant}`, `33.${variant}`) }, current, false, 412],
  ['If-Match of the version with a suffix no variant has fails', { ifMatch: strong('3.garbage', '3.', `3.${variant}x`, `3.${variant.slice(1)}=`, `3.${variant}.${variant}`) }, current, false, 412],
  ['a weak If-Match of a variant fails', { ifMatch: [{ weak: true, opaque: `3.${variant}` }] }, current, false, 412],
  ['If-Match of the full tag proceeds for a projected current', { ifMatch: [{ weak: false, opaque: '3' }] }, projected, false, 'proceed'],
  ['If-Match of another version fails', { ifMatch: [{ weak: false, opaque: '2' }] }, current, false, 412],
  ['a weak If-Match fails', { ifMatch: [{ weak: true, opaque: '3' }] }, current, false, 412],
  ['an If-Match that is no version of ours fails', { ifMatch: [{ weak: false, opaque: 'abc' }, { weak: false, opaque: '03' }, { weak: false, opaque: '' }] }, current, false, 412],
  ['an empty If-Match list fails', { ifMatch: [] }, current, false, 412],
  ['If-Unmodified-Since after the change proceeds', { ifUnmodifiedSince: at('2024-05-01T12:00:01Z') }, current, false, 'proceed'],
  ['If-Unmodified-Since in the same second proceeds', { ifUnmodifiedSince: at('2024-05-01T12:00:00Z') }, current, false, 'proceed'],
  ['If-Unmodified-Since before the change fails', { ifUnmodifiedSince: at('2024-05-01T11:59:59Z') }, current, false, 412],
  ['If-Unmodified-Since on a missing resource is ignored', { ifUnmodifiedSince: at('2024-05-01T11:59:59Z') }, null, false, 'proceed'],
  ['If-Match decides, If-Unmodified-Since is not looked at', { ifMatch: '*', ifUnmodifiedSince: at('2000-01-01T00:00:00Z') }, current, false, 'proceed'],
  ['If-None-Match of the tag on a safe request is not-modified', { ifNoneMatch: [{ weak: false, opaque: '3' }] }, current, true, 'not-modified'],
  ['If-None-Match compares weakly', { ifNoneMatch: [{ weak: true, opaque: '3' }] }, current, true, 'not-modified'],
  ['If-None-Match compares whole representations', { ifNoneMatch: [{ weak: false, opaque: '3' }] }, projected, true, 'proceed'],
  ['If-None-Match * on a safe request is not-modified', { ifNoneMatch: '*' }, current, true, 'not-modified'],
  ['If-None-Match * on a write fails', { ifNoneMatch: '*' }, current, false, 412],
  ['If-None-Match * on a missing resource proceeds', { ifNoneMatch: '*' }, null, false, 'proceed'],
  ['If-None-Match of another tag proceeds', { ifNoneMatch: [{ weak: false, opaque: '2' }] }, current, true, 'proceed'],
  ['If-Modified-Since at the change is not-modified', { ifModifiedSince: at('2024-05-01T12:00:00Z') }, current, true, 'not-modified'],
  ['If-Modified-Since before the change proceeds', { ifModifiedSince: at('2024-05-01T11:59:59Z') }, current, true, 'proceed'],
  ['If-Modified-Since is ignored on writes', { ifModifiedSince: at('2030-01-01T00:00:00Z') }, current, false, 'proceed'],
  ['If-Modified-Since is ignored on a missing resource', { ifModifiedSince: at('2030-01-01T00:00:00Z') }, null, true, 'proceed'],
  ['If-None-Match decides, If-Modified-Since is not looked at', { ifNoneMatch: [{ weak: false, opaque: '9' }], ifModifiedSince: at('2030-01-01T00:00:00Z') }, current, true, 'proceed'],
  ['without validators, If-Match * proceeds', { ifMatch: '*' }, unversioned, false, 'proceed'],
  ['without validators, no If-Match tag matches', { ifMatch: strong('1', `1.${variant}`, '') }, unversioned, true, 412],
  ['without validators, If-Unmodified-Since is ignored', { ifUnmodifiedSince: at('2000-01-01T00:00:00Z') }, unversioned, false, 'proceed'],
  ['without validators, If-None-Match * on a safe request is not-modified', { ifNoneMatch: '*' }, unversioned, true, 'not-modified'],
  ['without validators, If-None-Match * on a write fails', { ifNoneMatch: '*' }, unversioned, false, 412],
  ['without validators, no If-None-Match tag matches', { ifNoneMatch: strong('1', '') }, unversioned, true, 'proceed'],
  ['without validators, If-Modified-Since is ignored', { ifModifiedSince: at('2030-01-01T00:00:00Z') }, unversioned, true, 'proceed']
]

for (const [name, preconditions, resource, safe, expected] of cases) {
  t.test(name, async t => {
    if (expected === 412) {
      t.throws(() => evaluatePreconditions(preconditions, resource, safe), { code: 'API_ERR_PRECONDITION_FAILED', statusCode: 412 })
    } else {
      t.equal(evaluatePreconditions(preconditions, resource, safe), expected)
    }
  })
}

// RFC 9110 §5.6.7: the three HTTP-date forms are read; anything else, however Date.parse reads
// it, leaves the condition out (§13.1.3, §13.1.4).
for (const [text, iso] of [
  ['Wed, 01 May 2024 12:00:00 GMT', '2024-05-01T12:00:00Z'],
  ['Wednesday, 01-May-24 12:00:00 GMT', '2024-05-01T12:00:00Z'],
  ['Wed May  1 12:00:00 2024', '2024-05-01T12:00:00Z'],
  ['Sun Nov  6 08:49:37 1994', '1994-11-06T08:49:37Z'],
  ['Thu Nov 17 08:49:37 1994', '1994-11-17T08:49:37Z']
] as const) {
  t.test(`readPreconditions reads the HTTP-date ${JSON.stringify(text)}`, async t => {
    t.same(readPreconditions({ 'if-modified-since': text, 'if-unmodified-since': text }), {
      ifMatch: undefined, ifNoneMatch: undefined, ifModifiedSince: at(iso), ifUnmodifiedSince: at(iso)
    })
  })
}

for (const text of [
  '1', '2099', '3000-01-01', '2024-05-01T12:00:00Z', '',
  'Wed, 01 May 2024 12:00:00 +0000', 'Wed, 01 May 2024 12:00 GMT', '1 May 2024 12:00:00 GMT', 'Wed, 1 May 2024 12:00:00 GMT',
  'wed, 01 may 2024 12:00:00 gmt', 'Wed, 01 May 2024 12:00:00 UTC', ' Wed, 01 May 2024 12:00:00 GMT',
  'Thu, 01 May 2024 12:00:00 GMT', 'Wed, 31 Feb 2024 12:00:00 GMT', 'Wed, 01 May 2024 24:00:00 GMT', 'Xyz, 01 May 2024 12:00:00 GMT',
  'Wednesday, 01-May-2024 12:00:00 GMT', 'Wed May 1 12:00:00 2024'
]) {
  t.test(`readPreconditions ignores ${JSON.stringify(text)}, which is no HTTP-date`, async t => {
    const p = readPreconditions({ 'if-modified-since': text, 'if-unmodified-since': text })
    t.same([p.ifModifiedSince, p.ifUnmodifiedSince, hasPreconditions(p)], [undefined, undefined, false])
  })
}
