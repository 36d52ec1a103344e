// Unit tests for checking a filter against a resource model (spec "Advanced filtering (`filter`)").
import t, { type Test } from 'tap'
import type { FilterNode } from '../../lib/query/filter/ast.js'
import { checkFilter, FilterTypeError } from '../../lib/query/filter/check.js'
import { parseFilter } from '../../lib/query/filter/parser.js'
import type { FieldModel, FieldType, RelationModel, ResourceModel } from '../../lib/registry/model.js'

function model (name: string, fields: Record<string, FieldType>, relations: RelationModel[] = []): ResourceModel {
  const fieldModels = Object.entries(fields).map(([name, type]): [string, FieldModel] =>
    [name, { name, type, nullable: true, required: false, readOnly: false, schema: {} as never }])
  const built: ResourceModel = {
    get model () { return built },
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
    generateId: () => '',
    searchable: []
  }
  return built
}

const authors = model('authors', { id: 'integer', name: 'string', born: 'date' })
const replies = model('replies', { id: 'integer', reviewId: 'integer', body: 'string' })
const reviews = model('reviews', { id: 'integer', bookId: 'integer', rating: 'number', body: 'string', at: 'datetime' }, [
  { name: 'replies', kind: 'many', target: replies, field: 'reviewId' }
])
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
  rejects(t, 'rating eq 2023-01-01T00:00Z', "'rating' is a number and cannot be compared with the date-time 2023-01-01T00:00Z")
  accepts(t, 'available eq false')
  rejects(t, 'available eq 1', "'available' is a boolean and cannot be compared with 1")
  accepts(t, 'published ge 2023-01-01')
  rejects(t, "published eq '2023-02-30'", "'published' is a date and cannot be compared with '2023-02-30'")
  accepts(t, 'updatedAt lt 2023-01-01T00:00:00+01:00')
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
  rejects(t, 'published eq year', "'published' (a date) cannot be compared with 'year' (an integer)")
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

const TRUE = parseFilter('true')
const FALSE = parseFilter('true eq false')

t.test('conditions of literals alone are decided at once, as true or false', async t => {
  t.strictSame(TRUE, { kind: 'compare', op: 'eq', left: { kind: 'literal', type: 'boolean', value: true }, right: { kind: 'literal', type: 'boolean', value: true } })
  for (const text of ['true', '(true)', 'true ne false', '1 eq 1.0', '1 lt 2', "'a' lt 'b'", 'null eq null', '1 ne null', '1 in (2, 1)',
    'null in (1, null)', '2020-01-01 lt 2020-01-01T00:00:01Z', '2020-01-01 eq 2020-01-01T00:00:00Z', 'not false']) {
    const checked = check(text)
    t.strictSame(checked.kind === 'not' ? checked.operand : checked, text === 'not false' ? FALSE : TRUE, text)
  }
  for (const text of ['false', 'null', '1 gt null', 'null in (1)', '1 in (2)', "'a' in ('b')", '2020-01-02 le 2020-01-01T23:59:59Z']) {
    t.strictSame(check(text), FALSE, text)
  }
  rejects(t, "1 eq 'a'", "1 is a number and cannot be compared with 'a'")
  rejects(t, "1 in (1, 'a')", "1 is a number and cannot be compared with 'a'")
})

t.test('a boolean operand alone must be a boolean', async t => {
  t.strictSame(check('available'), parseFilter('available eq true'))
  rejects(t, 'title', "'title' is a string and cannot be compared with true")
  rejects(t, 'not year', "'year' is an integer and cannot be compared with false")
})

t.test('a date beside a date-time compares as the instant its day begins in UTC', async t => {
  const instant = (...path: string[]) => ({ kind: 'field', path, type: 'datetime' })
  const time = (value: string) => ({ kind: 'literal', type: 'datetime', value })
  t.strictSame(check('published eq 2023-01-01T00:00Z'), { kind: 'compare', op: 'eq', left: instant('published'), right: time('2023-01-01T00:00Z') })
  t.strictSame(check('2023-01-01T00:00Z lt author/born'), { kind: 'compare', op: 'lt', left: time('2023-01-01T00:00Z'), right: instant('author', 'born') })
  t.strictSame(check('updatedAt lt 2023-01-01'), { kind: 'compare', op: 'lt', left: { kind: 'field', path: ['updatedAt'] }, right: time('2023-01-01T00:00:00Z') })
  t.strictSame(check('published eq updatedAt'), { kind: 'compare', op: 'eq', left: instant('published'), right: instant('updatedAt') })
  t.strictSame(check('published in (2023-01-01, 2023-01-02T10:00Z, null)'), {
    kind: 'in',
    operand: instant('published'),
    values: [time('2023-01-01T00:00:00Z'), time('2023-01-02T10:00Z'), { kind: 'literal', type: 'null', value: null }]
  })
  t.strictSame(check('updatedAt in (2023-01-01)'), { kind: 'in', operand: { kind: 'field', path: ['updatedAt'] }, values: [time('2023-01-01T00:00:00Z')] })
  // now() is a date-time: the field beside it is read as an instant, the call says so itself.
  t.strictSame(check('published lt now()'), { kind: 'compare', op: 'lt', left: instant('published'), right: { kind: 'call', name: 'now', args: [] } })
})

t.test('value functions take arguments of their types and give values of theirs', async t => {
  accepts(t, "length(title) gt 3 and indexof(title, 'x') ge 0")
  accepts(t, "substring(title, 1) eq 'x' and substring(title, year, length(title)) eq 'y'")
  accepts(t, "trim(concat(title, author/name)) eq 'x'")
  accepts(t, 'year(published) eq 2000 and month(updatedAt) lt 3 and day(now()) ge 1 and year(2020-01-01) eq 2020')
  accepts(t, 'year(published) gt 2000.5')
  accepts(t, 'substring(title, 1e3) eq title')
  rejects(t, "length(title) eq 'x'", "length('title') is an integer and cannot be compared with 'x'")
  rejects(t, 'length(year) eq 1', "length() needs strings, not 'year' (an integer)")
  rejects(t, "substring(title, 1.5) eq 'x'", 'substring() needs integers, not 1.5')
  rejects(t, "substring(title, rating) eq 'x'", "substring() needs integers, not 'rating' (a number)")
  rejects(t, "substring(title, 1, '2') eq 'x'", "substring() needs integers, not '2'")
  rejects(t, 'year(title) eq 1', "year() needs dates or date-times, not 'title' (a string)")
  rejects(t, "year('2020-01-01') eq 1", "year() needs dates or date-times, not '2020-01-01'")
  rejects(t, 'length(null) eq 1', 'length() needs strings, not null')
  rejects(t, 'now() eq title', "now() (a date-time) cannot be compared with 'title' (a string)")
  rejects(t, "concat(title, 'x') eq 3", "concat('title', 'x') is a string and cannot be compared with 3")
})

t.test('lambdas range over a many relation; paths starting with the variable read its members', async t => {
  const member = (scope: number, ...path: string[]) => ({ kind: 'field', path, scope })
  const three = { kind: 'literal', type: 'number', value: 3 }
  t.strictSame(check('reviews/any(r: r/rating gt 3)'),
    { kind: 'lambda', quantifier: 'any', path: ['reviews'], variable: 'r', predicate: { kind: 'compare', op: 'gt', left: member(1, 'rating'), right: three } })
  // Other paths read the record filtered, as OData's $it.
  t.strictSame(check('reviews/all(r: r/rating gt rating)'),
    { kind: 'lambda', quantifier: 'all', path: ['reviews'], variable: 'r', predicate: { kind: 'compare', op: 'gt', left: member(1, 'rating'), right: { kind: 'field', path: ['rating'] } } })
  t.strictSame(check('reviews/all(r: r/at lt updatedAt)'), {
    kind: 'lambda',
    quantifier: 'all',
    path: ['reviews'],
    variable: 'r',
    predicate: { kind: 'compare', op: 'lt', left: { ...member(1, 'at'), type: 'datetime' }, right: { kind: 'field', path: ['updatedAt'], type: 'datetime' } }
  })
  accepts(t, 'reviews/any()')
  // Nested: the inner lambda over the outer variable's relation, its predicate reading both variables.
  t.strictSame(check('reviews/any(r: r/replies/any(p: p/body eq r/body and contains(p/body, title)))'), {
    kind: 'lambda',
    quantifier: 'any',
    path: ['reviews'],
    variable: 'r',
    predicate: {
      kind: 'lambda',
      quantifier: 'any',
      path: ['replies'],
      variable: 'p',
      scope: 1,
      predicate: {
        kind: 'and',
        left: { kind: 'compare', op: 'eq', left: member(2, 'body'), right: member(1, 'body') },
        right: { kind: 'match', name: 'contains', args: [member(2, 'body'), { kind: 'field', path: ['title'] }] }
      }
    }
  })
  // The innermost variable of a name wins; a variable named as a field leaves the field readable outside.
  t.strictSame(check('reviews/any(r: reviews/any(r: r/rating gt 3))'), {
    kind: 'lambda',
    quantifier: 'any',
    path: ['reviews'],
    variable: 'r',
    predicate: { kind: 'lambda', quantifier: 'any', path: ['reviews'], variable: 'r', predicate: { kind: 'compare', op: 'gt', left: member(2, 'rating'), right: three } }
  })
  t.strictSame(check("reviews/any(title: title/rating gt 3) and title eq 'x'"), {
    kind: 'and',
    left: { kind: 'lambda', quantifier: 'any', path: ['reviews'], variable: 'title', predicate: { kind: 'compare', op: 'gt', left: member(1, 'rating'), right: three } },
    right: parseFilter("title eq 'x'")
  })
  rejects(t, "author/any(a: a/name eq 'x')", "any() needs a 'many' relation; 'author' leads to one author")
  rejects(t, 'title/all(a: true)', "all() needs a 'many' relation, and 'title' is none")
  rejects(t, 'reviews/rating/any()', "any() needs a 'many' relation, and 'reviews/rating' is none")
  rejects(t, 'reviews/any(r: r eq 1)', "the lambda variable 'r' stands for a record; filter on one of its fields, e.g. 'r/id'")
  rejects(t, 'reviews/any(r: true) and r/rating eq 1', "'r' is a lambda variable, known only inside its lambda")
  rejects(t, 'reviews/any(r: r/nope eq 1)', "unknown field 'nope'")
  rejects(t, 'reviews/any(r: r/rating eq title)', "'rating' (a number) cannot be compared with 'title' (a string)")
})
