// Unit tests for lib/query/list-query.ts (spec "Query parameters on collections", "Paging"): the
// parsed ListRequest itself — what links and tokens are built from — and the paths HTTP cannot reach.
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { defineResource, memoryStore } from '../../lib/index.js'
import { buildRegistry } from '../../lib/registry/index.js'
import type { ResourceModel } from '../../lib/registry/model.js'
import { createCursorCodec } from '../../lib/paging/cursor.js'
import type { CursorCodec } from '../../lib/paging/cursor.js'
import { listRequestFor, parseItemQuery, parseListQuery } from '../../lib/query/list-query.js'
import { coerceLiteral } from '../../lib/query/filter/check.js'
import type { RawQuery } from '../../lib/query/list-query.js'
import { demoResources } from '../../demo/schemas/index.js'

const cursor = createCursorCodec({ secrets: ['a-unit-test-secret-0123'] })
const context = { cursor, defaultPaging: 'token' as const }
const [authors, books] = buildRegistry(demoResources(memoryStore()))
const parse = (raw: RawQuery, model: ResourceModel = books) => parseListQuery(model, raw, context, '/v1/books')

function invalidParams (fn: () => unknown): unknown {
  try {
    fn()
  } catch (error) {
    return (error as { invalidParams?: unknown }).invalidParams
  }
  throw new Error('did not throw')
}

t.test('defaults: token paging from the start, default page size, id order, no total', async t => {
  const request = parse({})
  t.same(request.query, { filter: null, sort: [{ field: 'id', direction: 'asc' }], window: { kind: 'offset', offset: 0 }, limit: 20, total: false, search: null, reads: null })
  t.equal(request.pagingMode, 'token')
  t.equal(request.offset, undefined)
  t.equal(request.pageOffset, undefined)
  t.equal(request.fields, null)
  t.equal(request.stableQuery, '')
  const offsetDefault = parseListQuery(books, {}, { cursor, defaultPaging: 'offset' }, '/v1/books')
  t.equal(offsetDefault.offset, 0)
  t.equal(offsetDefault.pageOffset, 1)
})

t.test('stableQuery keeps the options in a fixed order, encoded, and leaves paging out', async t => {
  const request = parse({ total: 'true', include: 'author', expand: 'author', fields: 'year', sort: '-year', year: ['1', '2'], 'author.country': 'NZ', filter: "title eq 'a&b'", pageSize: '5', offset: '5' })
  t.equal(request.stableQuery, "filter=title%20eq%20'a%26b'&author.country=NZ&year=1&year=2&sort=-year&fields=year&expand=author&include=author&total=true")
})

t.test('simple filters are ordered by name whatever the order they came in', async t => {
  const forward = parse({ available: 'true', title: 'x', year: '1' })
  const backward = parse({ year: '1', title: 'x', available: 'true' })
  t.equal(forward.stableQuery, 'available=true&title=x&year=1')
  t.equal(backward.stableQuery, forward.stableQuery)
  t.equal(backward.binding, forward.binding)
  t.equal(backward.query.filter, forward.query.filter, 'and share one cached AST')
})

t.test('the binding ignores page size, paging, total, expand and include, and the order of fields', async t => {
  const base = parse({ sort: 'title', fields: 'year,rating' }).binding
  t.equal(parse({ sort: 'title', fields: 'rating,year', pageSize: '3', total: 'true', expand: 'author', include: 'author' }).binding, base)
  t.not(parse({ sort: 'title' }).binding, base)
  t.not(parse({ sort: '-title', fields: 'year,rating' }).binding, base)
  t.not(parseListQuery(books, { sort: 'title', fields: 'year,rating' }, context, '/v1/authors/1/books').binding, base)
  // Parts cannot run into each other: a newline in a value does not forge another query's binding.
  t.not(parse({ filter: "title eq 'a\n'", sort: 'title' }).binding, parse({ filter: "title eq 'a'", sort: '\ntitle' }).binding)
})

t.test('identical filters parse once: the same AST object comes back', async t => {
  const one = parse({ filter: 'year gt 1' }).query.filter
  const two = parse({ filter: 'year gt 1' }).query.filter
  t.ok(one !== null)
  t.equal(one, two)
  t.not(parse({ filter: 'year gt 2' }).query.filter, one)
})

t.test('the filter cache is bounded: when full, the oldest entry makes room', async t => {
  const first = parse({ filter: 'year eq 0' }).query.filter
  for (let i = 1; i <= 500; i++) parse({ filter: `year eq ${i}` })
  const recent = parse({ filter: 'year eq 500' }).query.filter
  t.not(parse({ filter: 'year eq 0' }).query.filter, first, 'evicted, parsed again')
  t.same(parse({ filter: 'year eq 0' }).query.filter, first, 'to the same tree')
  t.equal(parse({ filter: 'year eq 500' }).query.filter, recent, 'a recent entry stays')
})

t.test('an input longer than the cache key limit is parsed each time rather than kept', async t => {
  const long = { title: 'x'.repeat(5000) }
  const one = parse(long).query.filter
  t.not(parse(long).query.filter, one)
  t.same(parse(long).query.filter, one)
})

t.test('cache keys keep every input apart: separators in values, a missing or empty filter', async t => {
  const twice = parse({ title: ['C', 'd'] }).query.filter
  t.not(parse({ title: 'C\u0001d' }).query.filter, twice)
  t.same(parse({ title: 'C\u0001d' }).query.filter, { kind: 'compare', op: 'eq', left: { kind: 'field', path: ['title'] }, right: { kind: 'literal', type: 'string', value: 'C\u0001d' } })
  t.same(invalidParams(() => parse({ title: 'B\u0000year=null' })), [{ name: 'title', reason: 'cannot contain the NUL character, which no stored text holds' }])
  t.ok(parse({ title: 'A' }).query.filter)
  t.same(invalidParams(() => parse({ title: 'A', filter: '' })), [{ name: 'filter', reason: 'unexpected end of filter at position 0' }])
})

t.test('listRequestFor keeps a parsed query per query, view, base and context, frozen', async t => {
  const raw = { filter: 'year gt 1', sort: '-year' }
  const kept = listRequestFor(books, raw, context, '/v1/books')
  t.same(kept, parse(raw), 'what parseListQuery answers')
  t.equal(listRequestFor(books, { ...raw }, context, '/v1/books'), kept, 'the same object again, for an equal query')
  t.ok(Object.isFrozen(kept) && Object.isFrozen(kept.query))
  // Keyed by the parameters, not the URL: a host hook that adds one to request.query gets its own.
  t.same(listRequestFor(books, { ...raw, title: 'x' }, context, '/v1/books').query.filter, parse({ ...raw, title: 'x' }).query.filter)
  t.not(listRequestFor(books, raw, { cursor, defaultPaging: 'offset' }, '/v1/books'), kept, 'another context: its own')
  t.not(listRequestFor(authors, {}, context, '/v1/authors'), listRequestFor(authors, {}, context, '/v1/authors/1/books'), 'another base: its own')
  t.not(listRequestFor(authors, {}, context, '/v1/authors'), listRequestFor(books, {}, context, '/v1/authors'), 'another view: its own')
})

t.test('listRequestFor parses each time a query with a token, a refused one, or one longer than the key limit', async t => {
  const token = cursor.seal({ window: 'after', values: ['b'] }, parse({}).binding)
  const withToken = () => listRequestFor(books, { token }, context, '/v1/books')
  t.not(withToken(), withToken())
  t.same(withToken().query.window, { kind: 'after', values: ['b'] })
  t.same(invalidParams(() => listRequestFor(books, { pageSize: 'x' }, context, '/v1/books')), [{ name: 'pageSize', reason: 'must be a non-negative integer' }])
  t.throws(() => listRequestFor(books, { pageSize: 'x' }, context, '/v1/books'), 'refused again')
  const long = () => listRequestFor(books, { title: 'x'.repeat(5000) }, context, '/v1/books')
  t.not(long(), long())
})

t.test('listRequestFor is bounded per view: when full, the oldest entry makes room', async t => {
  const kept = (year: number) => listRequestFor(authors, { name: String(year) }, context, '/v1/authors')
  const first = kept(0)
  for (let i = 1; i <= 500; i++) kept(i)
  const recent = kept(500)
  t.not(kept(0), first, 'evicted, parsed again')
  t.equal(kept(500), recent, 'a recent entry stays')
})

t.test('stableQuery repeats a name per value and keeps each value whole, control characters included', async t => {
  t.equal(parse({ title: 'A\u0001B' }).stableQuery, 'title=A%01B')
  t.equal(parse({ title: ['A', 'B'] }).stableQuery, 'title=A&title=B')
})

t.test('a pageOffset whose page would start past 2^53 - 1 reads from 2^53 - 1, past any end', async t => {
  const request = parse({ pageOffset: '9007199254740991', pageSize: '100' })
  t.same(request.query.window, { kind: 'offset', offset: Number.MAX_SAFE_INTEGER })
  t.equal(request.pageOffset, 9007199254740991)
})

t.test('simple filters become eq, or in for repeated values, ANDed after filter=', async t => {
  const field = (...path: string[]) => ({ kind: 'field', path })
  t.same(parse({ filter: 'year gt 1', title: 'x', year: ['1', '2'] }).query.filter, {
    kind: 'and',
    left: {
      kind: 'and',
      left: { kind: 'compare', op: 'gt', left: field('year'), right: { kind: 'literal', type: 'number', value: 1 } },
      right: { kind: 'compare', op: 'eq', left: field('title'), right: { kind: 'literal', type: 'string', value: 'x' } }
    },
    right: { kind: 'in', operand: field('year'), values: [{ kind: 'literal', type: 'number', value: 1 }, { kind: 'literal', type: 'number', value: 2 }] }
  })
  t.same(parse({ 'author.country': 'NZ' }).query.filter, { kind: 'compare', op: 'eq', left: field('author', 'country'), right: { kind: 'literal', type: 'string', value: 'NZ' } })
})

t.test('offset and pageOffset set the window; pageOffset is derived for an offset', async t => {
  t.match(parse({ offset: '7', pageSize: '5' }), { query: { window: { kind: 'offset', offset: 7 } }, offset: 7, pageOffset: 2, pagingMode: 'offset' })
  t.match(parse({ pageOffset: '3', pageSize: '5' }), { query: { window: { kind: 'offset', offset: 10 } }, offset: 10, pageOffset: 3, pagingMode: 'pageOffset' })
  t.match(parse({ page: '3', pageSize: '0' }), { query: { window: { kind: 'offset', offset: 0 }, limit: 0 }, offset: 0, pageOffset: 3 })
  t.match(parse({ offset: '7', pageSize: '0' }), { offset: 7, pageOffset: 1 })
})

t.test('a valid token sets a keyset window', async t => {
  const { binding } = parse({ sort: '-year' })
  const token = cursor.seal({ window: 'before', values: [1999, 'x'] }, binding)
  const request = parse({ sort: '-year', token })
  t.same(request.query.window, { kind: 'before', values: [1999, 'x'] })
  t.equal(request.token, token)
  t.equal(request.pagingMode, 'token')
  t.equal(request.offset, undefined)
})

t.test('a genuine token whose position does not fit the sort is refused', async t => {
  const { binding } = parse({ sort: '-year' })
  const token = cursor.seal({ window: 'after', values: ['x'] }, binding)
  t.same(invalidParams(() => parse({ sort: '-year', token })), [{ name: 'token', reason: 'token was issued for a different query' }])
})

t.test('a token is not opened while other parameters are already wrong', async t => {
  let opened = 0
  const counting: CursorCodec = { seal: cursor.seal, sealShared: cursor.sealShared, open: (token, binding) => { opened++; return cursor.open(token, binding) } }
  t.same(invalidParams(() => parseListQuery(books, { token: 'x', sort: 'nope' }, { cursor: counting, defaultPaging: 'token' }, '/v1/books')),
    [{ name: 'sort', reason: "unknown field 'nope'" }])
  t.equal(opened, 0)
})

t.test('errors other than refusals are not turned into 400s', async t => {
  const broken: CursorCodec = { seal: cursor.seal, sealShared: cursor.sealShared, open: () => { throw new RangeError('bug') } }
  t.throws(() => parseListQuery(books, { token: 'x' }, { cursor: broken, defaultPaging: 'token' }, '/v1/books'), RangeError)
  const faulty = { ...books, relations: { get () { throw new RangeError('bug') } } } as unknown as ResourceModel
  t.throws(() => parseListQuery(faulty, { filter: 'author/name eq 1' }, context, '/v1/books'), RangeError)
})

t.test('fields: the mandatory ones are always in, plus the key of an expanded or included many-to-one', async t => {
  t.same([...parse({ fields: 'year' }).fields ?? []], ['id', 'title', 'authorId', 'year'])
  t.same([...parseListQuery(authors, { fields: 'born', expand: 'books' }, context, '/v1/authors').fields ?? []], ['id', 'name', 'born'])
  t.equal(parse({ expand: 'author' }).fields, null, 'no fields, no projection')
})

t.test('coerceLiteral reads each field type as the filter grammar does', async t => {
  const field = (type: string, nullable = true) => ({ name: 'f', type, nullable, required: false, readOnly: false, schema: {} }) as never
  t.same(coerceLiteral(field('datetime'), '2024-05-01T10:00:00Z'), { kind: 'literal', type: 'datetime', value: '2024-05-01T10:00:00Z' })
  t.equal(coerceLiteral(field('datetime'), '2024-05-01'), undefined)
  t.equal(coerceLiteral(field('datetime'), 'May 1, 2024'), undefined, 'no lenient Date.parse')
  t.equal(coerceLiteral(field('date'), '2024-02-29')?.type, 'date')
  t.equal(coerceLiteral(field('date'), '2023-02-29'), undefined)
  t.equal(coerceLiteral(field('json'), '[]'), undefined)
  t.same(coerceLiteral(field('json'), 'null'), { kind: 'literal', type: 'null', value: null })
  t.equal(coerceLiteral(field('integer', false), 'null'), undefined, 'null only for nullable fields')
  t.same(coerceLiteral(field('string'), 'null'), { kind: 'literal', type: 'string', value: 'null' })
  t.same(coerceLiteral(field('number'), '-0.5'), { kind: 'literal', type: 'number', value: -0.5 })
})

t.test('simple filters on date-time and JSON fields over HTTP-shaped input', async t => {
  const store = memoryStore()
  const [events] = buildRegistry([defineResource({
    name: 'events',
    singular: 'event',
    store,
    schema: Type.Object({
      id: Type.Readonly(Type.String()),
      at: Type.String({ format: 'date-time' }),
      tags: Type.Union([Type.Array(Type.String()), Type.Null()])
    }, { additionalProperties: false })
  })])
  const request = parseListQuery(events, { at: '2024-05-01T10:00:00+02:00', tags: 'null' }, context, '/v1/events')
  t.ok(request.query.filter)
  t.same(invalidParams(() => parseListQuery(events, { at: 'noon', tags: 'x' }, context, '/v1/events')), [
    { name: 'at', reason: "'noon' is not a date-time (RFC 3339)" },
    { name: 'tags', reason: "'x' is not null (an object or array field matches only null)" }
  ])
})

t.test('parseItemQuery accepts fields, expand and include only, each repeated or comma-separated', async t => {
  t.same(parseItemQuery(books, {}), { fields: null, expand: [], include: [], variant: '' })
  const options = parseItemQuery(books, { fields: 'year', expand: 'author', include: 'author' })
  t.same([...options.fields ?? []], ['id', 'title', 'authorId', 'year'])
  t.equal(options.variant, 'authorId,id,title,year;author;author')
  t.same(parseItemQuery(books, { fields: ['year', 'rating'], expand: ['author', 'author'] }), parseItemQuery(books, { fields: 'year,rating', expand: 'author' }))
  t.same(invalidParams(() => parseItemQuery(books, { sort: 'x', fields: ['a', 'b'] })), [
    { name: 'sort', reason: 'unknown query parameter' }
  ])
  t.same(invalidParams(() => parseItemQuery(books, { fields: 'nope', expand: 'nope' })), [
    { name: 'expand', reason: "unknown relation 'nope'" },
    { name: 'fields', reason: "unknown field 'nope'" }
  ])
})
