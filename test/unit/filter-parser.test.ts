// Unit tests for the filter tokenizer and parser (spec "Advanced filtering (`filter`)").
import t, { type Test } from 'tap'
import type { FilterNode, Literal, Operand } from '../../lib/query/filter/ast.js'
import { FilterSyntaxError, parseFilter } from '../../lib/query/filter/parser.js'

const field = (...path: string[]): Operand => ({ kind: 'field', path })
const num = (value: number): Literal => ({ kind: 'literal', type: 'number', value })
const str = (value: string): Literal => ({ kind: 'literal', type: 'string', value })
const eq = (left: Operand, right: Operand): FilterNode => ({ kind: 'compare', op: 'eq', left, right })
const a1 = eq(field('a'), num(1))
const b2 = eq(field('b'), num(2))
const c3 = eq(field('c'), num(3))

/** The literal on the right of `x eq <text>`. */
function literal (text: string): unknown {
  const node = parseFilter(`x eq ${text}`)
  return node.kind === 'compare' ? node.right : node
}

function fails (t: Test, text: string, message: string, position: number, limits?: Parameters<typeof parseFilter>[1]): void {
  const name = text.length > 60 ? `${text.slice(0, 60)}…` : text
  t.throws(() => parseFilter(text, limits), { name: 'FilterSyntaxError', message, position }, name)
}

t.test('precedence and associativity', async t => {
  t.strictSame(parseFilter('a eq 1 or b eq 2 and c eq 3'), { kind: 'or', left: a1, right: { kind: 'and', left: b2, right: c3 } })
  t.strictSame(parseFilter('a eq 1 and b eq 2 or c eq 3'), { kind: 'or', left: { kind: 'and', left: a1, right: b2 }, right: c3 })
  t.strictSame(parseFilter('a eq 1 and b eq 2 and c eq 3'), { kind: 'and', left: { kind: 'and', left: a1, right: b2 }, right: c3 })
  t.strictSame(parseFilter('a eq 1 or b eq 2 or c eq 3'), { kind: 'or', left: { kind: 'or', left: a1, right: b2 }, right: c3 })
  t.strictSame(parseFilter('(a eq 1 or b eq 2) and c eq 3'), { kind: 'and', left: { kind: 'or', left: a1, right: b2 }, right: c3 })
  t.strictSame(parseFilter('((a eq 1))'), a1)
  t.strictSame(parseFilter('(a eq 1)and(b eq 2)'), { kind: 'and', left: a1, right: b2 })
})

t.test('not', async t => {
  t.strictSame(parseFilter('not (a eq 1)'), { kind: 'not', operand: a1 })
  t.strictSame(parseFilter('not not (a eq 1)'), { kind: 'not', operand: { kind: 'not', operand: a1 } })
  t.strictSame(parseFilter('not (a eq 1) and b eq 2'), { kind: 'and', left: { kind: 'not', operand: a1 }, right: b2 })
  t.strictSame(parseFilter("not contains(a, 'x')"),
    { kind: 'not', operand: { kind: 'match', name: 'contains', args: [field('a'), str('x')] } })
  fails(t, 'not a eq 1', "expected '(' after 'not' at position 4", 4)
  fails(t, 'not contains eq 1', "expected '(' after 'not' at position 4", 4)
})

t.test('comparison operators', async t => {
  for (const op of ['eq', 'ne', 'gt', 'ge', 'lt', 'le'] as const) {
    t.strictSame(parseFilter(`a ${op} 1`), { kind: 'compare', op, left: field('a'), right: num(1) })
  }
  t.strictSame(parseFilter('1 lt a'), { kind: 'compare', op: 'lt', left: num(1), right: field('a') })
  t.strictSame(parseFilter('a eq b'), eq(field('a'), field('b')))
})

t.test('literals', async t => {
  t.strictSame(literal("'hello'"), str('hello'))
  t.strictSame(literal("'it''s'"), str("it's"))
  t.strictSame(literal("''''"), str("'"))
  t.strictSame(literal("''"), str(''))
  t.strictSame(literal("'a  (b), eq c'"), str('a  (b), eq c'))
  t.strictSame(literal('42'), num(42))
  t.strictSame(literal('-7'), num(-7))
  t.strictSame(literal('3.25'), num(3.25))
  t.strictSame(literal('1e3'), num(1000))
  t.strictSame(literal('-2.5E-2'), num(-0.025))
  t.strictSame(literal('true'), { kind: 'literal', type: 'boolean', value: true })
  t.strictSame(literal('false'), { kind: 'literal', type: 'boolean', value: false })
  t.strictSame(literal('null'), { kind: 'literal', type: 'null', value: null })
  for (const date of ['2023-01-31', '2024-02-29', '2000-02-29', '0050-01-01']) {
    t.strictSame(literal(date), { kind: 'literal', type: 'date', value: date })
  }
  for (const time of ['2023-01-01T10:00Z', '2023-01-01T23:59:59+05:30', '2023-01-01T00:00:00.123-08:00']) {
    t.strictSame(literal(time), { kind: 'literal', type: 'datetime', value: time })
  }
})

t.test('whitespace', async t => {
  t.strictSame(parseFilter('  a\teq \t 1  '), a1)
})

t.test('property paths', async t => {
  t.strictSame(parseFilter('author/name eq 1'), eq(field('author', 'name'), num(1)))
  t.strictSame(parseFilter('author.name eq 1'), eq(field('author', 'name'), num(1)))
  t.strictSame(parseFilter('_x9.y_ eq 1'), eq(field('_x9', 'y_'), num(1)))
  fails(t, 'author/ eq 1', "unexpected character '/' at position 6", 6)
})

t.test('in', async t => {
  t.strictSame(parseFilter("a in ('x', 'y')"), { kind: 'in', operand: field('a'), values: [str('x'), str('y')] })
  t.strictSame(parseFilter('a in (1)'), { kind: 'in', operand: field('a'), values: [num(1)] })
  t.strictSame(parseFilter('a in (null,2023-01-01)'), {
    kind: 'in',
    operand: field('a'),
    values: [{ kind: 'literal', type: 'null', value: null }, { kind: 'literal', type: 'date', value: '2023-01-01' }]
  })
  t.strictSame(parseFilter("tolower(a) in ('x')"),
    { kind: 'in', operand: { kind: 'call', name: 'tolower', args: [field('a')] }, values: [str('x')] })
  fails(t, '1 in (1)', 'a comparison needs a field at position 0', 0)
  fails(t, "a in 'x'", "expected '(' after 'in' at position 5", 5)
  fails(t, 'a in ()', "expected a literal in the 'in' list, found ')' at position 6", 6)
  fails(t, 'a in (1,)', "expected a literal in the 'in' list, found ')' at position 8", 8)
  fails(t, 'a in (b)', "expected a literal in the 'in' list, found 'b' at position 6", 6)
  fails(t, 'a in (1', "expected ')' at position 7", 7)
})

t.test('functions', async t => {
  for (const name of ['contains', 'startswith', 'endswith'] as const) {
    t.strictSame(parseFilter(`${name}(a, 'x')`), { kind: 'match', name, args: [field('a'), str('x')] })
  }
  t.strictSame(parseFilter("contains('x',a/b)"), { kind: 'match', name: 'contains', args: [str('x'), field('a', 'b')] })
  t.strictSame(parseFilter("tolower(a) eq 'x'"), eq({ kind: 'call', name: 'tolower', args: [field('a')] }, str('x')))
  t.strictSame(parseFilter("'X' eq toupper(tolower(a))"),
    eq(str('X'), { kind: 'call', name: 'toupper', args: [{ kind: 'call', name: 'tolower', args: [field('a')] }] }))
  t.strictSame(parseFilter("startswith(tolower(a), 'x') or b eq 2"), {
    kind: 'or',
    left: { kind: 'match', name: 'startswith', args: [{ kind: 'call', name: 'tolower', args: [field('a')] }, str('x')] },
    right: b2
  })
  // Without parentheses these are plain names.
  t.strictSame(parseFilter('contains eq tolower'), eq(field('contains'), field('tolower')))
  fails(t, "contains(a, 'b') eq true", 'contains() is a condition and cannot be compared at position 17', 17)
  fails(t, "a eq contains(b, 'c')", 'contains() is a condition, not a value at position 5', 5)
  fails(t, 'foo(a) eq 1', "unknown function 'foo' at position 0", 0)
  fails(t, "tolower(a, b) eq 'x'", "expected ')' at position 9", 9)
  fails(t, "tolower() eq 'x'", "expected a value after '(' at position 8", 8)
  fails(t, "contains(a 'b')", "expected ',' at position 11", 11)
  fails(t, "contains(, 'b')", "expected a value after '(' at position 9", 9)
  fails(t, 'contains(a, )', "expected a value after ',' at position 12", 12)
  fails(t, "contains(a, 'b'", "expected ')' at position 15", 15)
})

t.test('syntax errors carry the position', async t => {
  const error = t.throws(() => parseFilter('a eq 1)'))
  t.ok(error instanceof FilterSyntaxError)
  t.ok(error instanceof Error)
  fails(t, 'a eq 1)', "unexpected ')' at position 6", 6)
  fails(t, "title eq ')' and (", 'unexpected end of filter at position 18', 18)
  fails(t, '', 'unexpected end of filter at position 0', 0)
  fails(t, ') eq 1', "unexpected ')' at position 0", 0)
  fails(t, 'eq 1', "unexpected 'eq' at position 0", 0)
  fails(t, 'a eq 1 b eq 2', "unexpected 'b' at position 7", 7)
  fails(t, "a eq 1 'b'", "unexpected 'b' at position 7", 7)
  // Keywords are lower case, as in OData; `AND` is a name.
  fails(t, 'a eq 1 AND b eq 2', "unexpected 'AND' at position 7", 7)
  t.strictSame(parseFilter('a eq TRUE'), eq(field('a'), field('TRUE')))
  fails(t, 'rating eq', "expected a value after 'eq' at position 9", 9)
  fails(t, 'rating eq and b eq 1', "expected a value after 'eq' at position 10", 10)
  fails(t, 'a', 'expected a comparison operator, found end of filter at position 1', 1)
  fails(t, 'a b', "expected a comparison operator, found 'b' at position 2", 2)
  fails(t, '(a eq 1', "expected ')' at position 7", 7)
  fails(t, '1 eq 1', 'a comparison needs a field at position 0', 0)
})

t.test('lexical errors', async t => {
  fails(t, "a eq 'abc", 'unterminated string starting at position 5', 5)
  fails(t, "a eq 'x''", 'unterminated string starting at position 5', 5)
  fails(t, 'a eq 2023-02-30', "invalid date '2023-02-30' at position 5", 5)
  fails(t, 'a eq 2023-02-29', "invalid date '2023-02-29' at position 5", 5)
  fails(t, 'a eq 1900-02-29', "invalid date '1900-02-29' at position 5", 5)
  fails(t, 'a eq 2023-13-01', "invalid date '2023-13-01' at position 5", 5)
  fails(t, 'a eq 2023-00-10', "invalid date '2023-00-10' at position 5", 5)
  fails(t, 'a eq 2023-01-00', "invalid date '2023-01-00' at position 5", 5)
  fails(t, 'a eq 0000-01-01', "invalid date '0000-01-01' at position 5", 5)
  fails(t, 'a eq 0000-06-01T00:00Z', "invalid date-time '0000-06-01T00:00Z' at position 5", 5)
  fails(t, 'a eq 2023-01-01T25:00Z', "invalid date-time '2023-01-01T25:00Z' at position 5", 5)
  fails(t, 'a eq 2023-01-01T10:60Z', "invalid date-time '2023-01-01T10:60Z' at position 5", 5)
  fails(t, 'a eq 2023-01-01T10:00', "invalid date-time '2023-01-01T10:00' at position 5", 5)
  fails(t, 'a eq 2023-01-01T eq 1', "invalid date-time '2023-01-01T' at position 5", 5)
  fails(t, 'a eq 2023-02-30T10:00Z', "invalid date-time '2023-02-30T10:00Z' at position 5", 5)
  fails(t, 'a eq 2023-01-01x', "unexpected character 'x' at position 15", 15)
  fails(t, 'a eq 12abc', "unexpected character 'a' at position 7", 7)
  fails(t, 'a eq 1e999', 'number 1e999 is out of range at position 5', 5)
  fails(t, 'a eq -x', "unexpected character '-' at position 5", 5)
  fails(t, 'a eq #', "unexpected character '#' at position 5", 5)
  fails(t, 'a eq \u{1F600}', "unexpected character '\u{1F600}' at position 5", 5)
})

t.test('limits', async t => {
  const long = `a eq '${'x'.repeat(1993)}'`
  t.equal(long.length, 2000)
  t.equal(parseFilter(long).kind, 'compare', 'exactly 2000 characters')
  fails(t, `${long} `, 'filter is longer than 2000 characters', 2000)
  fails(t, 'a eq 12345', 'filter is longer than 8 characters', 8, { maxLength: 8 })

  const nested = (levels: number): string => `${'('.repeat(levels)}a eq 1${')'.repeat(levels)}`
  t.strictSame(parseFilter(nested(32)), a1)
  fails(t, nested(33), 'filter nests deeper than 32 levels at position 32', 32)
  fails(t, 'not (a eq 1)', 'filter nests deeper than 1 levels at position 4', 4, { maxDepth: 1 })
  fails(t, "tolower(a) eq 'x'", 'filter nests deeper than 0 levels at position 0', 0, { maxDepth: 0 })
  fails(t, "a eq 1 or contains(a, 'x')", 'filter nests deeper than 0 levels at position 10', 10, { maxDepth: 0 })
  // Flat chains do not nest.
  const chain = Array.from({ length: 40 }, (_, i) => `a eq ${i}`).join(' or ')
  t.equal(parseFilter(chain).kind, 'or')
  // Depth is released when a group closes.
  t.equal(parseFilter('(a eq 1) and (b eq 2)', { maxDepth: 1 }).kind, 'and')
})
