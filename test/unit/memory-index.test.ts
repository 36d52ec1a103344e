// The memory store's sorted indexes (spec "Sorting", "Paging", "Total"): LIST
// reads an index per sort order kept current by create, update and remove, bounded per table
// with the least recently used evicted. Every page must equal what sorting all matches per
// request gives (the store's previous algorithm, kept here as the oracle) and hold only the
// current record of each id.
import t from 'tap'
import type { Test } from 'tap'
import fc from 'fast-check'
import { Type } from '@sinclair/typebox'
import { buildRegistry } from '../../lib/registry/index.js'
import { defineResource } from '../../lib/define.js'
import type { ResourceModel } from '../../lib/registry/model.js'
import { parseFilter } from '../../lib/query/filter/parser.js'
import { checkFilter } from '../../lib/query/filter/check.js'
import type { FilterNode } from '../../lib/query/filter/ast.js'
import { compilePredicate, sortCompare } from '../../lib/query/filter/evaluate.js'
import { INDEXES_PER_TABLE, SHAPES_PER_TABLE, memoryStore } from '../../lib/stores/memory.js'
import { VERSION_MISMATCH } from '../../lib/stores/store.js'
import type { Fields, ListQuery, Page, PageWindow, SortKey, Store, StoredRecord } from '../../lib/stores/store.js'

const Book = Type.Object({
  id: Type.Readonly(Type.String()),
  title: Type.String(),
  year: Type.Union([Type.Integer(), Type.Null()]),
  rating: Type.Union([Type.Number(), Type.Null()]),
  available: Type.Boolean()
}, { additionalProperties: false })

function setup (): { store: Store, books: ResourceModel } {
  const store = memoryStore()
  const [books] = buildRegistry([defineResource({ name: 'books', singular: 'book', schema: Book, store })])
  return { store, books }
}

const IDS = Array.from({ length: 12 }, (_, i) => `b${String(i).padStart(2, '0')}`)
const YEARS = [null, 2000, 2001, 2002]
const RATINGS = [null, 1, 2.5, 4]
const TITLES = ['a', 'b', 'c']
const FIELDS = ['year', 'rating', 'title', 'available'] as const
const FILTERS = [null, 'year ge 2001', 'year eq null', "title ne 'b'", 'available eq true and rating gt 1', 'not (rating eq null)']

const asc = (field: string): SortKey => ({ field, direction: 'asc' })
const desc = (field: string): SortKey => ({ field, direction: 'desc' })
const BY_YEAR_DESC = [desc('year'), asc('id')]

function query (sort: readonly SortKey[], window: PageWindow = { kind: 'offset', offset: 0 }, more: Partial<ListQuery> = {}): ListQuery {
  return { filter: null, sort, window, limit: 100, total: false, ...more }
}

/** The previous implementation: filter everything, sort the matches, then cut the window. */
function oracle (rows: Iterable<Fields>, filter: FilterNode | null, q: ListQuery) {
  const predicate = filter === null ? () => true : compilePredicate(filter, (record, path) => [record[path[0]]])
  const compare = (a: Fields, b: Fields) => {
    for (const key of q.sort) {
      const order = sortCompare(a[key.field], b[key.field])
      if (order !== 0) return key.direction === 'asc' ? order : -order
    }
    return 0
  }
  const matches = [...rows].filter(predicate).sort(compare)
  const total = q.total ? matches.length : undefined
  const { window, limit } = q
  const cut = (from: number, to: number, hasMore: boolean) => ({ ids: matches.slice(from, to).map(row => row.id), hasMore, total })
  if (window.kind === 'offset') return cut(window.offset, window.offset + limit, matches.length > window.offset + limit)
  const anchor = Object.fromEntries(q.sort.map((key, i) => [key.field, window.values[i]]))
  const after = matches.findIndex(row => compare(row, anchor) > 0)
  const low = after === -1 ? matches.length : after
  if (window.kind === 'after') return cut(low, low + limit, matches.length > low + limit)
  const end = low > 0 && compare(matches[low - 1], anchor) === 0 ? low - 1 : low
  const start = Math.max(0, end - limit)
  return cut(start, end, start > 0)
}

/** What the client sees of a page, after checking that every item is its id's current record. */
async function seen (t: Test, store: Store, books: ResourceModel, page: Page) {
  for (const item of page.items) {
    if (item !== await store.get(books, item.data.id as string)) t.fail(`stale record ${String(item.data.id)} v${item.version}`)
  }
  return { ids: page.items.map(item => item.data.id), hasMore: page.hasMore, total: page.total }
}

const ids = (page: Page) => page.items.map(item => item.data.id)

const book = (id: string, year: number | null, title = 'a', rating: number | null = null, available = true): Fields =>
  ({ id, title, year, rating, available })

t.test('the index follows create, update and remove', async t => {
  const { store, books } = setup()
  await store.create(books, book('b1', 2000))
  await store.create(books, book('b2', 2002))
  t.same(ids(await store.list(books, query(BY_YEAR_DESC))), ['b2', 'b1'], 'built on first use')

  await store.create(books, book('b3', 2001))
  await store.create(books, book('b4', null))
  t.same(ids(await store.list(books, query(BY_YEAR_DESC))), ['b2', 'b3', 'b1', 'b4'], 'created records take their place; null sorts last descending')

  const moved = await store.update(books, 'b1', book('b1', 2003, 'z'))
  const page = await store.list(books, query(BY_YEAR_DESC))
  t.same(ids(page), ['b1', 'b2', 'b3', 'b4'], 'an updated record moves')
  t.equal(page.items[0], moved, 'and is the new record, not the replaced one')
  t.equal(page.items[0].data.title, 'z')

  await store.update(books, 'b3', book('b3', 2001, 'same key'))
  t.same((await store.list(books, query(BY_YEAR_DESC))).items.map(item => item.data.title), ['z', 'a', 'same key', 'a'], 'an update that keeps the sort key replaces in place')

  t.equal(await store.remove(books, 'b2'), true)
  t.same(ids(await store.list(books, query(BY_YEAR_DESC))), ['b1', 'b3', 'b4'], 'a removed record leaves')
  t.same(ids(await store.list(books, query([asc('year'), asc('id')]))), ['b4', 'b3', 'b1'], 'another sort gets its own index, null first ascending')

  t.equal(await store.update(books, 'b1', book('b1', 1), { ifVersion: 1 }), VERSION_MISMATCH)
  t.equal(await store.remove(books, 'b1', { ifVersion: 1 }), VERSION_MISMATCH)
  t.same(ids(await store.list(books, query(BY_YEAR_DESC))), ['b1', 'b3', 'b4'], 'a refused compare-and-set changes no index')
  t.equal(await store.remove(books, 'missing'), false)

  await store.close()
  t.same(ids(await store.list(books, query(BY_YEAR_DESC))), [], 'close drops the indexes with the rows')
})

t.test('a sort without the id: records equal on every key are found by identity', async t => {
  const { store, books } = setup()
  for (const id of ['b1', 'b2', 'b3', 'b4']) await store.create(books, book(id, 2000))
  await store.create(books, book('b5', 1999))
  const byYear = query([asc('year')])
  t.same(ids(await store.list(books, byYear)), ['b5', 'b1', 'b2', 'b3', 'b4'])
  const replaced = await store.update(books, 'b3', book('b3', 2000, 'new'))
  await store.remove(books, 'b2')
  const page = await store.list(books, byYear)
  t.same([...ids(page)].sort(), ['b1', 'b3', 'b4', 'b5'], 'each id once, the removed one gone')
  t.ok(page.items.includes(replaced as StoredRecord), 'the updated record is the new one')
  t.same(page.items.map(item => item.data.year), [1999, 2000, 2000, 2000])
})

t.test('each window kind, hasMore and total, against the oracle', async t => {
  const { store, books } = setup()
  const rows: Fields[] = []
  for (const [i, id] of IDS.entries()) {
    rows.push(book(id, YEARS[i % 4], TITLES[i % 3], RATINGS[(i + 1) % 4], i % 2 === 0))
    await store.create(books, rows[i])
  }
  const filter = checkFilter(parseFilter('available eq true'), books)
  const cases: Array<[string, ListQuery]> = [
    ['first page', query(BY_YEAR_DESC, undefined, { limit: 3 })],
    ['offset without filter', query(BY_YEAR_DESC, { kind: 'offset', offset: 4 }, { limit: 3 })],
    ['offset with filter', query(BY_YEAR_DESC, { kind: 'offset', offset: 2 }, { limit: 3, filter })],
    ['offset past the end', query(BY_YEAR_DESC, { kind: 'offset', offset: 50 }, { limit: 3, filter })],
    ['last offset page', query(BY_YEAR_DESC, { kind: 'offset', offset: 3 }, { limit: 3, filter })],
    ['after an item', query(BY_YEAR_DESC, { kind: 'after', values: [2001, 'b01'] }, { limit: 2, filter })],
    ['after a position between items', query(BY_YEAR_DESC, { kind: 'after', values: [2001, 'b00'] }, { limit: 2 })],
    ['after the last', query(BY_YEAR_DESC, { kind: 'after', values: [null, 'b99'] }, { limit: 2 })],
    ['before an item, in sort order', query(BY_YEAR_DESC, { kind: 'before', values: [null, 'b04'] }, { limit: 2, filter })],
    ['before near the start', query(BY_YEAR_DESC, { kind: 'before', values: [2001, 'b05'] }, { limit: 5 })],
    ['before the first', query(BY_YEAR_DESC, { kind: 'before', values: [2002, 'b02'] }, { limit: 5 })],
    ['total without filter', query(BY_YEAR_DESC, undefined, { limit: 2, total: true })],
    ['total with filter', query(BY_YEAR_DESC, { kind: 'after', values: [2002, 'b02'] }, { limit: 2, filter, total: true })]
  ]
  for (const [name, q] of cases) {
    t.same(await seen(t, store, books, await store.list(books, q)), oracle(rows, q.filter, q), name)
  }
  const page = await store.list(books, cases[0][1])
  t.equal(page.total, undefined, 'no total unless asked')
  t.same(ids(page), ['b03', 'b07', 'b11'], 'the latest year first')
  t.equal(page.hasMore, true)
})

t.test('indexes per table are bounded; the least recently used is evicted', async t => {
  const { store, books } = setup()
  const rows = new Map(IDS.slice(0, 4).map((id, i) => [id, book(id, YEARS[i])]))
  for (const row of rows.values()) await store.create(books, row)
  // INDEXES_PER_TABLE + 1 distinct sorts, each ending with the id.
  const sorts = Array.from({ length: INDEXES_PER_TABLE + 1 }, (_, i): SortKey[] => i === INDEXES_PER_TABLE
    ? [asc('title'), asc('year'), asc('id')]
    : [(i & 4) === 0 ? asc(FIELDS[i % 4]) : desc(FIELDS[i % 4]), (i & 8) === 0 ? asc('id') : desc('id')])
  t.equal(new Set(sorts.map(sort => JSON.stringify(sort))).size, sorts.length)
  // An index is built by sorting an array of the store's records; count those sorts.
  const arrays: { sort: unknown[]['sort'] } = Array.prototype
  const sorted = t.capture(arrays, 'sort', arrays.sort)
  const builds = () => sorted().filter(call => (call.receiver as Array<Partial<StoredRecord>>)[0]?.version !== undefined).length
  const list = async (sort: readonly SortKey[]) => {
    const page = await store.list(books, query(sort))
    t.same(ids(page), oracle(rows.values(), null, query(sort)).ids)
    return builds()
  }

  t.equal(await list(sorts[0]), 1, 'built on first use')
  t.equal(await list(sorts[0]), 0, 'then reused')
  for (const sort of sorts.slice(1, INDEXES_PER_TABLE)) t.equal(await list(sort), 1)
  t.equal(await list(sorts[0]), 0, 'the table holds its limit; using the first makes it the most recent')
  t.equal(await list(sorts[INDEXES_PER_TABLE]), 1, 'one more is built…')
  t.equal(await list(sorts[0]), 0, '…evicting not the first…')
  t.equal(await list(sorts[2]), 0)

  rows.set('b01', book('b01', 1990))
  await store.update(books, 'b01', rows.get('b01') as Fields)
  t.equal(await list(sorts[1]), 1, '…but the least recently used, rebuilt on demand with the writes made meanwhile')
  t.equal(await list(sorts[0]), 0, 'a kept index followed the write')
  sorted.restore()

  const other = setup()
  await other.store.create(other.books, book('b1', 2000))
  t.same(ids(await other.store.list(other.books, query(sorts[1]))), ['b1'], 'stores do not share indexes')
})

t.test('predicates of filters built per request are found by structure', async t => {
  const { store, books } = setup()
  for (const [i, id] of IDS.entries()) await store.create(books, book(id, YEARS[i % 4]))
  const scope = (year: number): FilterNode => ({ kind: 'compare', op: 'eq', left: { kind: 'field', path: ['year'] }, right: { kind: 'literal', type: 'number', value: year } })
  const sort = [asc('id')]
  t.same(ids(await store.list(books, { ...query(sort), filter: scope(2000) })), ['b01', 'b05', 'b09'])
  t.same(ids(await store.list(books, { ...query(sort), filter: scope(2000) })), ['b01', 'b05', 'b09'], 'an equal new AST, the same matches')
  t.same(ids(await store.list(books, { ...query(sort), filter: scope(2001) })), ['b02', 'b06', 'b10'], 'another value, another predicate')
  // Past the bound the cache starts over, and answers stay right.
  for (let year = 0; year <= SHAPES_PER_TABLE; year++) await store.list(books, { ...query(sort), filter: scope(year) })
  t.same(ids(await store.list(books, { ...query(sort), filter: scope(2002) })), ['b03', 'b07', 'b11'])
})

t.test('any sequence of writes and LISTs agrees with sorting all matches per request', async t => {
  const values = <T>(choices: readonly T[]) => fc.constantFrom(...choices)
  const row = fc.record({ id: values(IDS), year: values(YEARS), rating: values(RATINGS), title: values(TITLES), available: fc.boolean() })
  const key = fc.record({ field: values(FIELDS), direction: values(['asc', 'desc'] as const) })
  // Sorts always end with the id (ListQuery contract), ascending or descending.
  const sort = fc.tuple(fc.uniqueArray(key, { maxLength: 2, selector: k => k.field }), values(['asc', 'desc'] as const))
    .map(([keys, direction]): SortKey[] => [...keys, { field: 'id', direction }])
  const window = fc.oneof(
    fc.nat({ max: 14 }).map(offset => ({ kind: 'offset' as const, offset })),
    fc.tuple(values(['after', 'before'] as const), row).map(([kind, anchor]) => ({ kind, anchor }))
  )
  const op = fc.oneof(
    row.map(data => ({ op: 'create' as const, data })),
    row.map(data => ({ op: 'update' as const, data })),
    values(IDS).map(id => ({ op: 'remove' as const, id })),
    fc.record({ op: fc.constant('list' as const), sort, window, filter: values(FILTERS), fresh: fc.boolean(), limit: fc.integer({ min: 1, max: 5 }), total: fc.boolean() })
  )
  await fc.assert(fc.asyncProperty(fc.array(op, { maxLength: 80 }), async ops => {
    const { store, books } = setup()
    const rows = new Map<string, Fields>()
    const asts = new Map(FILTERS.map(text => [text, text === null ? null : checkFilter(parseFilter(text), books)]))
    for (const step of ops) {
      if (step.op === 'create') {
        if (rows.has(step.data.id)) continue
        await store.create(books, step.data)
        rows.set(step.data.id, step.data)
      } else if (step.op === 'update') {
        const written = await store.update(books, step.data.id, step.data)
        if (written !== null) rows.set(step.data.id, step.data)
      } else if (step.op === 'remove') {
        if (await store.remove(books, step.id)) rows.delete(step.id)
      } else {
        const cached = asts.get(step.filter) as FilterNode | null
        // A fresh copy stands for a nested collection's per-request AST.
        const filter = step.fresh && cached !== null ? structuredClone(cached) : cached
        const { window } = step
        const pageWindow: PageWindow = window.kind === 'offset' ? window : { kind: window.kind, values: step.sort.map(k => (window.anchor as Fields)[k.field]) }
        const q: ListQuery = { filter, sort: step.sort, window: pageWindow, limit: step.limit, total: step.total }
        const actual = await seen(t, store, books, await store.list(books, q))
        const expected = oracle(rows.values(), filter, q)
        if (JSON.stringify(actual) !== JSON.stringify(expected)) {
          throw new Error(`${JSON.stringify(q)}\n got ${JSON.stringify(actual)}\nwant ${JSON.stringify(expected)}`)
        }
      }
    }
  }), { numRuns: 300 })
  t.pass('agrees')
})
