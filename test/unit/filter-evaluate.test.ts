// Unit tests for evaluating filters on records and for the shared value order
// (spec "Advanced filtering (`filter`)", "Sorting" 3).
import t from 'tap'
import { compareText, compilePredicate, sortCompare } from '../../lib/query/filter/evaluate.js'
import type { FilterNode } from '../../lib/query/filter/ast.js'
import { parseFilter } from '../../lib/query/filter/parser.js'
import { checkFilter } from '../../lib/query/filter/check.js'
import type { FieldType, ResourceModel } from '../../lib/registry/model.js'

type Item = Record<string, unknown>

const isItem = (value: unknown): value is Item => typeof value === 'object' && value !== null

/** Own fields directly; a nested object is a many-to-one relation, an array a one-to-many one. */
function resolve (record: Item, path: readonly string[]): readonly unknown[] {
  const value = record[path[0]]
  if (path.length === 1) return [value]
  if (Array.isArray(value)) return value.filter(isItem).map(related => related[path[1]])
  return [isItem(value) ? value[path[1]] : null]
}

const matches = (filter: string, record: Item): boolean => compilePredicate(parseFilter(filter), resolve)(record)

t.test('comparisons', async t => {
  const record = { n: 5, s: 'abc', b: true, d: '2023-01-31' }
  const cases: Array<[string, boolean]> = [
    ['n eq 5', true], ['n eq 5.0', true], ['n eq 6', false], ['n ne 6', true], ['n ne 5', false],
    ['n gt 4', true], ['n gt 5', false], ['n ge 5', true], ['n ge 6', false],
    ['n lt 6', true], ['n lt 5', false], ['n le 5', true], ['n le 4', false],
    ['4 lt n', true],
    ["s eq 'abc'", true], ["s gt 'abb'", true], ["s lt 'abd'", true], ["s lt 'B'", false], ["s eq 'ABC'", false],
    ['b eq true', true], ['b gt false', true], ['b lt true', false],
    ['d lt 2023-02-01', true], ['d eq 2023-01-31', true], ['d gt 2023-01-31', false],
    ['n eq n', true], ['n lt n', false],
    // Values of different kinds are never equal.
    ["n eq '5'", false]
  ]
  for (const [filter, expected] of cases) t.equal(matches(filter, record), expected, filter)
})

t.test('null semantics', async t => {
  const record = { n: null, v: 3 }
  const cases: Array<[string, boolean]> = [
    ['n eq null', true], ['v eq null', false], ['n ne null', false], ['v ne null', true],
    ['missing eq null', true], ['missing ne null', false],
    ['n eq 3', false], ['n ne 3', true], ['missing ne 3', true], ['null eq n', true],
    ['n gt 3', false], ['n ge 3', false], ['n lt 3', false], ['n le 3', false],
    ['v gt null', false], ['v ge null', false], ['v lt null', false], ['v le null', false],
    ['n le null', false], ['n ge null', false],
    ['not (n eq 3)', true],
    ['n in (1, null)', true], ['n in (1, 2)', false], ['v in (1, 3)', true], ['v in (1, null)', false]
  ]
  for (const [filter, expected] of cases) t.equal(matches(filter, record), expected, filter)
})

t.test('date-times compare as instants', async t => {
  const record = { at: '2023-01-01T09:00:00Z', bad: 'soon', none: null }
  const cases: Array<[string, boolean]> = [
    ['at eq 2023-01-01T11:00:00+02:00', true],
    ['at eq 2023-01-01T09:00:00.000Z', true],
    // As strings '2023-01-01T09…' < '2023-01-01T10…', but 10:00+02:00 is 08:00Z.
    ['at gt 2023-01-01T10:00+02:00', true],
    ['2023-01-01T10:00+02:00 lt at', true],
    ['at lt 2023-01-01T10:00+02:00', false],
    ['at in (2023-01-01T08:00Z, 2023-01-01T04:00-05:00)', true],
    ['at in (2023-01-01T08:00Z)', false],
    ['bad eq 2023-01-01T09:00Z', false], ['bad ne 2023-01-01T09:00Z', true], ['bad lt 2023-01-01T09:00Z', false],
    ['none eq null', true], ['none lt 2023-01-01T09:00Z', false], ['none in (null, 2023-01-01T09:00Z)', true]
  ]
  for (const [filter, expected] of cases) t.equal(matches(filter, record), expected, filter)
})

t.test('date-times are read in every form the date-time format admits, as PostgreSQL reads them', async t => {
  const cases: Array<[string, string, boolean]> = [
    ['2024-01-01t10:00:00+02:00', 'at eq 2024-01-01T08:00:00Z', true],
    ['2024-01-01 08:00:00z', 'at eq 2024-01-01T08:00:00Z', true],
    ['2024-01-01\t08:00:00Z', 'at eq 2024-01-01T08:00:00Z', true],
    ['2024-01-01T10:00:00+02', 'at eq 2024-01-01T08:00:00Z', true],
    ['2024-01-01T10:30:00+0230', 'at eq 2024-01-01T08:00:00Z', true],
    ['2024-01-01T03:00:00-05:00', 'at eq 2024-01-01T08:00:00Z', true],
    ['2024-01-01T08:00Z', 'at eq 2024-01-01T08:00:00.000Z', true],
    // A leap second rolls into the next minute.
    ['2023-12-31T23:59:60Z', 'at eq 2024-01-01T00:00:00Z', true],
    // Stored values keep whole milliseconds, as the SQL store writes them; literals keep microseconds.
    ['2024-01-01T08:00:00.0009Z', 'at eq 2024-01-01T08:00:00Z', true],
    ['2024-01-01T08:00:00.0009Z', 'at lt 2024-01-01T08:00:00.0005Z', true],
    ['2024-01-01T08:00:00.9999996Z', 'at eq 2024-01-01T08:00:01Z', true],
    ['2024-01-01T08:00:00.123Z', 'at gt 2024-01-01T08:00:00.1229Z', true],
    ['0099-12-31T23:00:00-01:00', 'at eq 0100-01-01T00:00:00Z', true],
    ['0099-12-31T23:00:00Z', 'at lt 0100-01-01T00:00:00Z', true],
    ['not a date', 'at lt 2024-01-01T08:00:00Z', false]
  ]
  for (const [at, filter, expected] of cases) t.equal(matches(filter, { at }), expected, `${at}: ${filter}`)
})

t.test('date-time fields marked by the checker compare with each other as instants', async t => {
  const record = { start: '2024-01-01T10:00:00+02:00', end: '2024-01-01T09:00:00Z', none: null }
  const compare = (op: 'lt' | 'gt' | 'eq', left: string, right: string, type?: 'datetime'): boolean => {
    const node: FilterNode = { kind: 'compare', op, left: { kind: 'field', path: [left], type }, right: { kind: 'field', path: [right], type } }
    return compilePredicate(node, resolve)(record)
  }
  t.equal(compare('lt', 'start', 'end', 'datetime'), true, '08:00Z is before 09:00Z')
  t.equal(compare('gt', 'start', 'end', 'datetime'), false)
  t.equal(compare('lt', 'start', 'end'), false, 'unmarked fields compare as they are')
  t.equal(compare('lt', 'start', 'none', 'datetime'), false, 'null is never ordered')
  t.equal(compare('eq', 'none', 'none', 'datetime'), true, 'null equals null')
})

t.test('logic', async t => {
  const record = { a: 1, b: 2 }
  const cases: Array<[string, boolean]> = [
    ['a eq 1 and b eq 2', true], ['a eq 1 and b eq 3', false], ['a eq 2 and b eq 2', false],
    ['a eq 1 or b eq 3', true], ['a eq 2 or b eq 2', true], ['a eq 2 or b eq 3', false],
    ['not (a eq 1)', false], ['not (a eq 2)', true], ['not not (a eq 1)', true],
    ['a eq 2 or a eq 1 and b eq 2', true], ['(a eq 2 or a eq 1) and b eq 3', false]
  ]
  for (const [filter, expected] of cases) t.equal(matches(filter, record), expected, filter)
})

t.test('functions', async t => {
  const record = { s: 'Hello World', other: 'World', n: null, num: 5 }
  const cases: Array<[string, boolean]> = [
    ["contains(s, 'o W')", true], ["contains(s, 'o w')", false], ["contains(s, '')", true],
    ["startswith(s, 'Hell')", true], ["startswith(s, 'hell')", false],
    ["endswith(s, 'World')", true], ["endswith(s, 'Hello')", false],
    ['endswith(s, other)', true], ["contains('Say World!', other)", true],
    ["contains(n, 'x')", false], ['contains(s, n)', false], ["contains(num, '5')", false], ['contains(s, num)', false],
    ['not contains(n, \'x\')', true],
    ["tolower(s) eq 'hello world'", true], ["toupper(s) eq 'HELLO WORLD'", true], ["tolower(s) eq 'Hello World'", false],
    ["contains(tolower(s), 'hello')", true], ["'WORLD' eq toupper(other)", true],
    ["toupper(tolower(s)) eq 'HELLO WORLD'", true],
    ['tolower(n) eq null', true], ["tolower(n) ne 'x'", true], ['tolower(num) eq null', true],
    ["tolower(s) in ('x', 'hello world')", true]
  ]
  for (const [filter, expected] of cases) t.equal(matches(filter, record), expected, filter)
})

t.test('relations: any candidate satisfies the comparison', async t => {
  const book = { author: { name: 'Ann' }, reviews: [{ rating: 1 }, { rating: 5 }] }
  const orphan = { author: null, reviews: [] }
  const cases: Array<[string, Item, boolean]> = [
    ["author/name eq 'Ann'", book, true], ["author/name ne 'Ann'", book, false],
    ['author/name eq null', orphan, true], ["author/name ne 'Ann'", orphan, true],
    ['reviews/rating gt 4', book, true], ['reviews/rating lt 1', book, false],
    ['reviews/rating eq 1 and reviews/rating eq 5', book, true],
    // Both differ from some review: ANY, not ALL.
    ['reviews/rating ne 1', book, true],
    // No related records: nothing satisfies anything, not even `ne` or `eq null`.
    ['reviews/rating ne 1', orphan, false], ['reviews/rating eq null', orphan, false],
    ['reviews/rating in (1, 2)', orphan, false], ['not (reviews/rating eq 1)', orphan, true],
    ["contains(author/name, 'n')", book, true]
  ]
  for (const [filter, record, expected] of cases) t.equal(matches(filter, record), expected, `${filter} on ${JSON.stringify(record)}`)
})

t.test('the predicate is compiled once and reused', async t => {
  let calls = 0
  const counting = (record: Item, path: readonly string[]): readonly unknown[] => {
    calls++
    return resolve(record, path)
  }
  const predicate = compilePredicate(parseFilter('a gt 1 and a lt 4'), counting)
  t.equal(calls, 0, 'nothing is resolved while compiling')
  t.strictSame([1, 2, 3, 4].map(a => predicate({ a })), [false, true, true, false])
})

t.test('sortCompare', async t => {
  const object = {}
  // (Array#sort never passes undefined to the comparator, so it is checked on its own below.)
  const values = [true, 'b', 2, null, 'B', object, false, -1, 'a', 10]
  t.strictSame([...values].sort(sortCompare), [null, -1, 2, 10, 'B', 'a', 'b', false, true, object])
  t.equal(sortCompare(null, undefined), 0)
  t.ok(sortCompare(undefined, -1e9) < 0)
  t.equal(sortCompare('x', 'x'), 0)
  t.ok(sortCompare('b', 'a') > 0)
  t.ok(sortCompare('a', 'b') < 0)
  t.equal(sortCompare(1.5, 1.5), 0)
  t.ok(sortCompare(false, true) < 0)
  t.equal(sortCompare({ a: 1 }, { b: 2 }), 0)
  t.ok(sortCompare(1, 'a') < 0)
  t.ok(sortCompare(true, 'a') > 0)
})

t.test('strings order by code point, as PostgreSQL\'s "C" collation does, not by UTF-16 code unit', async t => {
  // Code unit order puts 😀 (U+1F600, surrogates D83D DE00) before ！ (U+FF01); code points do not.
  const texts = ['😀', '！', '\uE000', 'a', 'a😀', 'a！', '', '\uD7FF', '𐀀']
  const byCodePoint = (a: string, b: string) => {
    const [x, y] = [[...a].map(c => c.codePointAt(0) as number), [...b].map(c => c.codePointAt(0) as number)]
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i]
    return x.length - y.length
  }
  t.same([...texts].sort(compareText), [...texts].sort(byCodePoint))
  t.same([...texts].sort(sortCompare), [...texts].sort(byCodePoint), 'sortCompare, which the memory store\'s indexes use')
  t.ok(compareText('😀', '！') > 0)
  t.equal(compareText('same', 'same'), 0)
  t.same(['😀', '！', 'z'].filter(title => matches("title gt '！'", { title })), ['😀'], 'filters compare the same way')
})

// Lambdas over the arrays of these records: a member is read like any record.
const relate = (relation: string) => ({
  members: (record: Item) => (Array.isArray(record[relation]) ? record[relation] as unknown[] : []).filter(isItem),
  resolve,
  relate
})
const holds = (filter: string, record: Item): boolean => compilePredicate(checkFilter(parseFilter(filter), anyModel), resolve, relate)(record)

/** The records' fields by type; `kids` and `empty` are 'many' relations of the model to itself. */
const anyModel = ((): ResourceModel => {
  const types: Record<string, FieldType> = { s: 'string', e: 'string', none: 'string', n: 'integer', ni: 'integer', at: 'datetime', d: 'date', nd: 'date', b: 'boolean' }
  const fields = new Map(Object.entries(types).map(([name, type]) => [name, { name, type }]))
  const model = { name: 'items', singular: 'item', idField: 'id', fields, relations: new Map() } as unknown as ResourceModel
  for (const name of ['kids', 'empty']) (model.relations as Map<string, unknown>).set(name, { name, kind: 'many', target: model, field: 'parent' })
  return model
})()

t.test('lambdas: any member passes, all members pass; no member: any is false, all is true', async t => {
  const record = { s: 'x', kids: [{ n: 1, s: 'x' }, { n: 5, s: 'y', kids: [{ n: 7 }] }], empty: [] }
  const cases: Array<[string, boolean]> = [
    ['kids/any(k: k/n gt 4)', true], ['kids/any(k: k/n gt 5)', false],
    ['kids/all(k: k/n ge 1)', true], ['kids/all(k: k/n gt 1)', false],
    ['kids/any()', true], ['empty/any()', false], ['empty/all(k: k/n eq 0)', true], ['empty/any(k: true)', false],
    ['kids/any(k: k/s eq s)', true], ['kids/all(k: k/s eq s)', false],
    ['kids/any(k: k/kids/any(j: j/n gt k/n))', true], ['kids/any(k: k/kids/any(j: j/n lt k/n))', false],
    ['not kids/all(k: k/n eq 1)', true]
  ]
  for (const [filter, expected] of cases) t.equal(holds(filter, record), expected, filter)
  // Without relations, a record has no members.
  t.equal(compilePredicate(checkFilter(parseFilter('kids/any()'), anyModel), resolve)(record), false)
  t.equal(compilePredicate(checkFilter(parseFilter('kids/all(k: false)'), anyModel), resolve)(record), true)
})

t.test('a boolean alone: true when true; under not, when false; null is neither', async t => {
  for (const [b, alone, negated] of [[true, true, false], [false, false, true], [null, false, false]] as const) {
    t.equal(holds('b', { b }), alone, `b is ${b}`)
    t.equal(holds('not b', { b }), negated, `not b, b is ${b}`)
    t.equal(holds('kids/all(k: not k/b)', { kids: [{ b }] }), negated, `all not, b is ${b}`)
  }
})

t.test('value functions count in code points and give null for null arguments', async t => {
  const record = { s: 'a𝄞b  ', e: '', n: 2, none: null, ni: null, nd: null, at: '2023-12-31T23:30:00Z', d: '2024-02-29' }
  const cases: Array<[string, boolean]> = [
    ['length(s) eq 5', true], ['length(e) eq 0', true], ['length(none) eq null', true],
    ["indexof(s, 'b') eq 2", true], ["indexof(s, 'z') eq -1", true], ["indexof(s, '') eq 0", true], ['indexof(s, none) eq null', true],
    ["substring(s, 1) eq '𝄞b  '", true], ["substring(s, 1, 1) eq '𝄞'", true], ["substring(s, -2, 2) eq 'a𝄞'", true],
    ["substring(s, 9) eq ''", true], ["substring(s, 1, -1) eq ''", true], ['substring(s, ni) eq null', true],
    ['substring(s, 0, ni) eq null', true], ['substring(none, 0) eq null', true], ["substring(s, n) eq 'b  '", true],
    ["trim(s) eq 'a𝄞b'", true], ["trim(concat('\u00a0\t', e)) eq ''", true], ['trim(none) eq null', true],
    ["concat(s, 'x') eq 'a𝄞b  x'", true], ["concat(none, 'x') eq null", true], ["concat('x', none) eq null", true],
    ['tolower(none) eq null', true], ['toupper(none) eq null', true],
    ['year(at) eq 2023 and month(at) eq 12 and day(at) eq 31', true],
    ['year(d) eq 2024 and month(d) eq 2 and day(d) eq 29', true],
    ['year(2020-01-01T00:30:00+01:00) eq 2019', true],
    ['year(nd) eq null and month(nd) eq null and day(nd) eq null', true],
    ['year(now()) ge 2024', true], ['at lt now()', true], ['d lt now()', true]
  ]
  for (const [filter, expected] of cases) t.equal(holds(filter, record), expected, filter)
  // Several candidates: every combination counts, as the SQL store's join gives them.
  t.equal(holds("kids/any(k: concat(k/s, s) eq 'yx')", { s: 'x', kids: [{ s: 'x' }, { s: 'y' }] }), true)
  t.equal(matches("concat(kids/s, kids/s) eq 'xy'", { kids: [{ s: 'x' }, { s: 'y' }] }), true)
})

t.test('a date beside a date-time is the instant its day begins in UTC', async t => {
  const record = { d: '1925-01-01', at: '1925-01-01T00:00:00Z' }
  const cases: Array<[string, boolean]> = [
    ['d eq 1925-01-01T00:00:00Z', true], ['d eq 1925-01-01T01:00:00+01:00', true], ['d gt 1924-12-31T23:59:59Z', true],
    ['d lt 1925-01-01T00:00:00.001Z', true], ['d ge 1925-01-01T00:00:00.001Z', false], ['d eq at', true],
    ['at eq 1925-01-01', true], ['d in (1925-01-01T00:00:00Z)', true]
  ]
  for (const [filter, expected] of cases) t.equal(holds(filter, record), expected, filter)
})
