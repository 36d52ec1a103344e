// Property (docs/aggregates.md: "results equal on every store"): random `apply=` group-bys and
// aggregates of random books, parsed and checked as LIST reads them, give the same page of groups
// on the memory store and on PostgreSQL (PGlite when DATABASE_URL is not set): grouping values,
// counts, sums and averages of fractional numbers to the bit, min and max, countdistinct, random
// filter() steps of the groups after the grouping (HAVING) on grouping values and aliases of every
// type, sort, offset, limit and total, through a view whose authors are partly hidden (a hidden
// parent groups as null). AGGREGATE_SEED=<n> replays one run.
import t from 'tap'
import fc from 'fast-check'
import { memoryStore } from '../../lib/stores/memory.js'
import { pgliteStore, postgresStore } from '../../lib/stores/sql/index.js'
import type { Store } from '../../lib/index.js'
import type { FieldType, View } from '../../lib/registry/model.js'
import { parseApply } from '../../lib/query/apply/parser.js'
import type { AggregateQuery, GroupSortKey } from '../../lib/query/apply/ast.js'
import { repoint, suiteModels, viewOf } from '../stores/conformance.js'
import type { Models } from '../stores/conformance.js'
import { openPglite } from '../stores/pglite-db.js'
import { runSchemas } from '../stores/run-schemas.js'

const connectionString = process.env.DATABASE_URL
let store: Store
if (connectionString === undefined) {
  const db = await openPglite()
  t.teardown(() => db.close())
  store = await pgliteStore({ db, schema: 'aggregates' })
} else {
  const { prefix } = runSchemas(t, connectionString)
  store = await postgresStore({ connectionString, schema: `${prefix}_aggregates` })
}
t.teardown(() => store.close())
const memory = memoryStore()
const sql = suiteModels(store)
const mem = suiteModels(memory)

const authors = [
  { id: 'a1', name: 'Ann', born: '1950-03-01', country: 'NZ' },
  { id: 'a2', name: 'bob', born: null, country: 'GB' },
  { id: 'a3', name: 'Émile', born: '1899-12-31', country: null },
  { id: 'a4', name: 'Zed', born: '2001-01-01', country: 'NZ' }
]
for (const author of authors) {
  await store.create(sql.authors, author)
  await memory.create(mem.authors, author)
}

// Fractions whose sums depend on the order they are added in, and values of every kind.
const bookArb = fc.record({
  title: fc.constantFrom('Alpha', 'alpha', 'Émile', 'Zeta', 'b'),
  authorId: fc.constantFrom('a1', 'a2', 'a3', 'a4'),
  year: fc.constantFrom(1999, 2001, 2010, -5, null),
  rating: fc.constantFrom(0.1, 0.2, 0.3, 4.5, 1e-3, 3.14159, -1.5, 1e15, null),
  available: fc.boolean(),
  published: fc.constantFrom('2020-01-01T10:00:00.000Z', '2019-06-30T23:59:59.999Z', null)
})

const groupable = ['title', 'authorId', 'year', 'rating', 'available', 'published', 'author/country', 'author/born']
const aggregateArb = fc.oneof(
  fc.constant('$count'),
  fc.tuple(fc.constantFrom('year', 'rating'), fc.constantFrom('sum', 'average', 'min', 'max', 'countdistinct')).map(([field, method]) => `${field} with ${method}`),
  fc.tuple(fc.constantFrom('title', 'published'), fc.constantFrom('min', 'max', 'countdistinct')).map(([field, method]) => `${field} with ${method}`),
  fc.constant('available with countdistinct')
)
const filterArb = fc.constantFrom(null, 'year gt 2000', 'rating ne null', "author/country eq 'NZ'", "title ne 'b'")

// A condition on a member of each type, `pick` choosing the operator and the value.
const operators = ['eq', 'ne', 'gt', 'ge', 'lt', 'le']
const conditions: Readonly<Record<FieldType, ReadonlyArray<(name: string, op: string) => string>>> = {
  integer: ['1', '2', '3', '2001', '-5', '1e15', 'null', '2.5'].map(value => (name, op) => `${name} ${op} ${value}`),
  number: ['0.2', '0.3', '0.30000000000000004', '-1.5', '4.5', '1', '1e15', 'null'].map(value => (name, op) => `${name} ${op} ${value}`),
  string: [
    ...["'Alpha'", "'b'", "'NZ'", "'a2'", "'Zeta'", 'null'].map(value => (name: string, op: string) => `${name} ${op} ${value}`),
    name => `contains(${name},'a')`,
    (name, op) => `length(${name}) ${op} 4`,
    (name, op) => `tolower(${name}) ${op} 'alpha'`
  ],
  boolean: [name => name, name => `not ${name}`, (name, op) => `${name} ${op === 'eq' || op === 'ne' ? op : 'eq'} false`],
  date: ['1950-03-01', '1899-12-31', '2001-01-01', 'null'].map(value => (name: string, op: string) => `${name} ${op} ${value}`).concat((name, op) => `year(${name}) ${op} 1950`),
  datetime: ['2020-01-01T10:00:00Z', '2019-06-30T23:59:59.999Z', '2020-01-01', 'null'].map(value => (name: string, op: string) => `${name} ${op} ${value}`).concat((name, op) => `month(${name}) ${op} 6`),
  json: []
}
const havingArb = fc.array(fc.record({ member: fc.nat(7), pick: fc.nat(1000), negate: fc.boolean(), or: fc.boolean(), step: fc.boolean() }), { maxLength: 3 })

/** filter() steps of the groups (none, one or two): conditions on `members`, joined by and/or, some negated. */
function havingSteps (members: ReadonlyArray<{ name: string, type: FieldType }>, picks: ReadonlyArray<{ member: number, pick: number, negate: boolean, or: boolean, step: boolean }>): string[] {
  const steps: string[][] = []
  for (const { member, pick, negate, or, step } of picks) {
    const { name, type } = members[member % members.length]
    const forms = conditions[type]
    const condition = forms[pick % forms.length](name, operators[Math.floor(pick / forms.length) % operators.length])
    const written = negate ? `not (${condition})` : condition
    if (steps.length === 0 || step) steps.push([written])
    else steps[steps.length - 1].push(or ? 'or' : 'and', written)
  }
  return steps.map(step => `filter(${step.join(' ')})`)
}

const applyArb = fc.record({
  filter: filterArb,
  having: havingArb,
  groupBy: fc.subarray(groupable, { maxLength: 3 }),
  aggregates: fc.array(aggregateArb, { maxLength: 4 }),
  sort: fc.array(fc.tuple(fc.nat(7), fc.boolean()), { maxLength: 3 }),
  offset: fc.nat(4),
  limit: fc.integer({ min: 0, max: 6 }),
  total: fc.boolean(),
  hideGB: fc.boolean()
}).filter(({ groupBy, aggregates }) => groupBy.length + aggregates.length > 0)

/** The books view: with `hideGB`, authors from GB are hidden from it (their books group under a null country). */
function booksView ({ books, authors }: Models, hideGB: boolean): View {
  if (!hideGB) return books
  const view = viewOf(books)
  repoint(view, 'author', viewOf(authors, "country ne 'GB'"))
  return view
}

let run = 0
const seed = process.env.AGGREGATE_SEED === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.AGGREGATE_SEED)
t.comment(`fast-check seed ${seed} (replay with AGGREGATE_SEED=${seed})`)

await t.test('random group-bys of random books agree with the memory store', async t => {
  await fc.assert(fc.asyncProperty(fc.array(bookArb, { maxLength: 14 }), applyArb, async (books, options) => {
    // A fresh set of books each run, the same ids in both stores.
    run++
    for (const [model, into] of [[sql.books, store], [mem.books, memory]] as const) {
      for (const { data } of (await into.list(model, { filter: null, sort: [{ field: 'id', direction: 'asc' }], window: { kind: 'offset', offset: 0 }, limit: 1000, total: false })).items) await into.remove(model, data.id as string)
      for (const [i, book] of books.entries()) await into.create(model, { id: `r${run}-${String(i).padStart(2, '0')}`, ...book })
    }
    const aggregates = options.aggregates.map((expression, i) => `${expression} as x${i}`)
    const steps = [
      ...(options.filter === null ? [] : [`filter(${options.filter})`]),
      options.groupBy.length === 0 ? `aggregate(${aggregates.join(',')})` : `groupby((${options.groupBy.join(',')})${aggregates.length === 0 ? '' : `,aggregate(${aggregates.join(',')})`})`
    ]
    const members = [...parseApply(steps.join('/'), mem.books).groups.fields.values()]
    const text = [...steps, ...havingSteps(members, options.having)].join('/')
    const queryOf = (view: View): AggregateQuery => {
      const aggregation = parseApply(text, view)
      const members = [...aggregation.groups.fields.keys()]
      const sort: GroupSortKey[] = []
      for (const [at, descending] of options.sort) {
        const name = members[at % members.length]
        if (!sort.some(key => key.name === name)) sort.push({ name, direction: descending ? 'desc' : 'asc' })
      }
      for (const key of aggregation.groupBy) if (!sort.some(sorted => sorted.name === key.name)) sort.push({ name: key.name, direction: 'asc' })
      return { filter: aggregation.filter, groupBy: aggregation.groupBy, aggregates: aggregation.aggregates, having: aggregation.having, sort, offset: options.offset, limit: options.limit, total: options.total }
    }
    const sqlView = booksView(sql, options.hideGB)
    const memView = booksView(mem, options.hideGB)
    const actual = await (store.aggregate as NonNullable<Store['aggregate']>)(sqlView, queryOf(sqlView))
    const expected = await (memory.aggregate as NonNullable<Store['aggregate']>)(memView, queryOf(memView))
    t.strictSame(actual, expected, `${text} ${JSON.stringify({ ...options, groupBy: undefined, aggregates: undefined, filter: undefined, having: undefined })}`)
  }), { numRuns: 100, seed })
})
