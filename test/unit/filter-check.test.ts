// Unit tests for checking a filter against a resource model (spec "Advanced filtering (`filter`)").
import t, { type Test } from 'tap'
import type { FilterNode } from '../../lib/query/filter/ast.js'
import { checkFilter, FilterTypeError } from '../../lib/query/filter/check.js'
import { parseFilter } from '../../lib/query/filter/parser.js'
import type { FieldModel, FieldType, RelationModel, ResourceModel } from '../../lib/registry/model.js'

function model (name: string, fields: Record<string, FieldType>, relations: RelationModel[] = []): ResourceModel {
  const fieldModels = Object.entries(fields).map(([name, type]): [string, FieldModel] =>
    [name, { name, type, nullable: true, required: false, readOnly: false, schema: {} as never }])
  return {
    name,
    singular: name.slice(0, -1),
    idField: 'id',
    schema: {} as never,
    fields: new Map(fieldModels),
    mandatory: ['id'],
    relations: new Map(relations.map(relation => [relation.name, relation])),
    defaultPageSize: 10,
    maxPageSize: 100,
    operations: new Set(['list']),
    generateId: () => ''
  }
}

const authors = model('authors', { id: 'integer', name: 'string', born: 'date' })
const reviews = model('reviews', { id: 'integer', bookId: 'integer', rating: 'number', body: 'string', at: 'datetime' })
const books = model('books', {
  id: 'integer',
  title: 'string',
  year: 'integer',
  rating: 'number',
  available: 'boolean',
  published: 'date',
  updatedAt: 'datetime',
  meta: 'json',
  authorId: 'integer'
}, [
  { name: 'author', kind: 'one', target: authors, field: 'authorId' },
  { name: 'reviews', kind: 'many', target: reviews, field: 'bookId' }
])

const check = (text: string): FilterNode => checkFilter(parseFilter(text), books)
/** Valid filters come back unchanged. */
const accepts = (t: Test, text: string): void => { t.strictSame(check(text), parseFilter(text), text) }
const rejects = (t: Test, text: string, message: string): void => {
  t.throws(() => check(text), { name: 'FilterTypeError', message }, text)
}

t.test('fields and paths', async t => {
  accepts(t, "title eq 'x'")
  accepts(t, "author/name eq 'x'")
  accepts(t, "author.name eq 'x'")
  accepts(t, 'reviews/rating gt 3')
  rejects(t, "titel eq 'x'", "unknown field 'titel'")
  rejects(t, "author eq 'x'", "'author' is a relation; filter on one of its fields, e.g. 'author/id'")
  rejects(t, "author/nme eq 'x'", "unknown field 'author/nme'")
  rejects(t, "editor/name eq 'x'", "unknown relation 'editor' in 'editor/name'")
  rejects(t, "title/name eq 'x'", "unknown relation 'title' in 'title/name'")
  rejects(t, "author/books/title eq 'x'", "'author/books/title' is too deep: a path may follow one relation")
  const error = t.throws(() => check("titel eq 'x'"))
  t.ok(error instanceof FilterTypeError)
  t.ok(error instanceof Error)
})

t.test('literals by field type', async t => {
  for (const field of ['title', 'year', 'rating', 'available', 'published', 'updatedAt', 'meta', 'author/name']) {
    accepts(t, `${field} eq null`)
    accepts(t, `null ne ${field}`)
  }
  accepts(t, "title ne 'x'")
  rejects(t, 'title eq 3', "'title' is a string and cannot be compared with 3")
  accepts(t, 'year ge 2000')
  accepts(t, 'year eq 1e3')
  rejects(t, "year eq 'abc'", "'year' is an integer and cannot be compared with 'abc'")
  rejects(t, "year eq 'it''s'", "'year' is an integer and cannot be compared with 'it''s'")
  accepts(t, 'year gt 2.5') // integers and decimals mix: a decimal beside an integer field means what it says
  accepts(t, 'rating lt 2.5')
  accepts(t, 'rating lt 2')
  rejects(t, 'rating eq true', "'rating' is a number and cannot be compared with true")
  rejects(t, 'rating eq 2023-01-01', "'rating' is a number and cannot be compared with the date 2023-01-01")
  accepts(t, 'available eq false')
  rejects(t, 'available eq 1', "'available' is a boolean and cannot be compared with 1")
  accepts(t, 'published ge 2023-01-01')
  rejects(t, "published eq '2023-02-30'", "'published' is a date and cannot be compared with '2023-02-30'")
  rejects(t, 'published eq 2023-01-01T00:00Z',
    "'published' is a date and cannot be compared with the date-time 2023-01-01T00:00Z")
  accepts(t, 'updatedAt lt 2023-01-01T00:00:00+01:00')
  rejects(t, 'updatedAt lt 2023-01-01', "'updatedAt' is a date-time and cannot be compared with the date 2023-01-01")
  rejects(t, "updatedAt lt 'soon'", "'updatedAt' is a date-time and cannot be compared with 'soon'")
  rejects(t, "meta eq 'x'", "'meta' is a JSON value and cannot be compared with 'x'")
  rejects(t, "author/born eq 'x'", "'author/born' is a date and cannot be compared with 'x'")
})

t.test('strings holding dates become date literals', async t => {
  const date = { kind: 'literal', type: 'date', value: '2023-01-31' }
  const time = { kind: 'literal', type: 'datetime', value: '2023-01-31T10:00:00Z' }
  t.strictSame(check("published eq '2023-01-31'"), { kind: 'compare', op: 'eq', left: { kind: 'field', path: ['published'] }, right: date })
  t.strictSame(check("'2023-01-31' lt published"), { kind: 'compare', op: 'lt', left: date, right: { kind: 'field', path: ['published'] } })
  t.strictSame(check("updatedAt eq '2023-01-31T10:00:00Z'"),
    { kind: 'compare', op: 'eq', left: { kind: 'field', path: ['updatedAt'] }, right: time })
  t.strictSame(check("author/born eq '2023-01-31'"),
    { kind: 'compare', op: 'eq', left: { kind: 'field', path: ['author', 'born'] }, right: date })
  t.strictSame(check("published in ('2023-01-31', 2023-01-31, null)"), {
    kind: 'in',
    operand: { kind: 'field', path: ['published'] },
    values: [date, date, { kind: 'literal', type: 'null', value: null }]
  })
  // Normalisation reaches into and/or/not.
  const compare = (value: string): FilterNode => ({ kind: 'compare', op: 'eq', left: { kind: 'field', path: ['published'] }, right: { kind: 'literal', type: 'date', value } })
  t.strictSame(check("not (published eq '2023-01-01') and published eq '2023-01-02' or published eq '2023-01-03'"), {
    kind: 'or',
    left: { kind: 'and', left: { kind: 'not', operand: compare('2023-01-01') }, right: compare('2023-01-02') },
    right: compare('2023-01-03')
  })
})

t.test('two date-time fields compared are marked as date-times, so they compare as instants', async t => {
  const field = (path: string[]) => ({ kind: 'field', path, type: 'datetime' })
  t.strictSame(check('updatedAt lt updatedAt'), { kind: 'compare', op: 'lt', left: field(['updatedAt']), right: field(['updatedAt']) })
  t.strictSame(check('updatedAt ge reviews/at'), { kind: 'compare', op: 'ge', left: field(['updatedAt']), right: field(['reviews', 'at']) })
  // Beside a literal or between other fields, the tree stays as parsed.
  accepts(t, 'updatedAt lt 2023-01-01T00:00Z')
  accepts(t, 'published lt author/born')
})

t.test('comparing two fields', async t => {
  accepts(t, 'year eq rating')
  accepts(t, 'rating gt reviews/rating')
  accepts(t, 'available eq available')
  accepts(t, 'published lt author/born')
  accepts(t, 'title eq author/name')
  rejects(t, 'title eq year', "'title' (a string) cannot be compared with 'year' (an integer)")
  rejects(t, 'published eq updatedAt', "'published' (a date) cannot be compared with 'updatedAt' (a date-time)")
  rejects(t, 'meta eq meta', "'meta' (a JSON value) cannot be compared with 'meta' (a JSON value)")
  rejects(t, 'year eq meta', "'year' (an integer) cannot be compared with 'meta' (a JSON value)")
  rejects(t, 'tolower(title) eq year', "tolower('title') (a string) cannot be compared with 'year' (an integer)")
})

t.test('in', async t => {
  accepts(t, 'year in (1, 2)')
  accepts(t, "tolower(title) in ('a', null)")
  rejects(t, "year in (1, 'a')", "'year' is an integer and cannot be compared with 'a'")
  rejects(t, 'nope in (1)', "unknown field 'nope'")
})

t.test('functions need strings', async t => {
  for (const name of ['contains', 'startswith', 'endswith']) {
    accepts(t, `${name}(title, 'x')`)
  }
  accepts(t, "contains(tolower(author/name), 'x')")
  accepts(t, "startswith('abc', title)")
  accepts(t, 'endswith(title, reviews/body)')
  accepts(t, "tolower(title) eq 'x'")
  accepts(t, "toupper(tolower(title)) eq 'X'")
  accepts(t, "tolower('ABC') eq title")
  rejects(t, "contains(year, 'x')", "contains() needs strings, not 'year' (an integer)")
  rejects(t, 'startswith(title, 3)', 'startswith() needs strings, not 3')
  rejects(t, 'endswith(title, null)', 'endswith() needs strings, not null')
  rejects(t, "contains(titel, 'x')", "unknown field 'titel'")
  rejects(t, "tolower(year) eq 'x'", "tolower() needs strings, not 'year' (an integer)")
  rejects(t, 'toupper(true) eq title', 'toupper() needs strings, not true')
  rejects(t, 'tolower(title) eq 3', "tolower('title') is a string and cannot be compared with 3")
})

t.test('a comparison needs a field', async t => {
  const one = { kind: 'literal', type: 'number', value: 1 } as const
  t.throws(() => checkFilter({ kind: 'compare', op: 'eq', left: one, right: one }, books),
    { name: 'FilterTypeError', message: 'a comparison needs a field' })
  t.throws(() => checkFilter({ kind: 'in', operand: one, values: [one] }, books),
    { name: 'FilterTypeError', message: 'a comparison needs a field' })
})
