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
  // A `/` that no name follows is punctuation (apply='s separator), out of place in a filter.
  fails(t, 'author/ eq 1', "expected a comparison operator, found '/' at position 6", 6)
  fails(t, 'a eq 1 / b eq 2', "unexpected '/' at position 7", 7)
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
  t.strictSame(parseFilter('1 in (1)'), { kind: 'in', operand: num(1), values: [num(1)] })
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
  fails(t, 'rating eq', "expected a value after 'eq' at position 9", 9)
  fails(t, 'rating eq and b eq 1', "expected a value after 'eq' at position 10", 10)
  fails(t, 'a b', "expected a comparison operator, found 'b' at position 2", 2)
  fails(t, '(a eq 1', "expected ')' at position 7", 7)
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

// OData 4.01 as client libraries write it (part 2 §5.1.1, the ABNF's boolCommonExpr, lambdas, keywords).
const bool = (value: boolean): Literal => ({ kind: 'literal', type: 'boolean', value })
const isTrue = (operand: Operand): FilterNode => eq(operand, bool(true))
// Under an odd number of `not`s, so that the negation holds only for false (OData: not null is null).
const notFalse = (operand: Operand): FilterNode => ({ kind: 'compare', op: 'ne', left: operand, right: bool(false) })

t.test('a boolean operand alone is a condition, true when the value is true', async t => {
  t.strictSame(parseFilter('true'), isTrue(bool(true)))
  t.strictSame(parseFilter('(false)'), isTrue(bool(false)))
  t.strictSame(parseFilter('null'), isTrue({ kind: 'literal', type: 'null', value: null }))
  t.strictSame(parseFilter('available'), isTrue(field('available')))
  t.strictSame(parseFilter('author/alive and a eq 1'), { kind: 'and', left: isTrue(field('author', 'alive')), right: a1 })
  t.strictSame(parseFilter('not available'), { kind: 'not', operand: notFalse(field('available')) })
  t.strictSame(parseFilter('not (available or b eq 2)'), { kind: 'not', operand: { kind: 'or', left: notFalse(field('available')), right: b2 } })
  t.strictSame(parseFilter('not not available'), { kind: 'not', operand: { kind: 'not', operand: isTrue(field('available')) } })
  t.strictSame(parseFilter('true ne false'), { kind: 'compare', op: 'ne', left: bool(true), right: bool(false) })
  fails(t, '1', "'1' is not a condition at position 0", 0)
  fails(t, "'x' or a eq 1", "'x' is not a condition at position 0", 0)
  fails(t, 'a b', "expected a comparison operator, found 'b' at position 2", 2)
  fails(t, 'not available eq true', "expected '(' after 'not' at position 4", 4)
})

t.test('keywords, operators and function names are case-insensitive (4.01); fields are not', async t => {
  t.strictSame(parseFilter("title EQ 'Milk' AND rating LT 2.55"), {
    kind: 'and',
    left: eq(field('title'), str('Milk')),
    right: { kind: 'compare', op: 'lt', left: field('rating'), right: num(2.55) }
  })
  t.strictSame(parseFilter('a eq tRUe'), eq(field('a'), bool(true)))
  t.strictSame(parseFilter('a Eq NULL or NOT (b Ne FaLsE)'), {
    kind: 'or',
    left: eq(field('a'), { kind: 'literal', type: 'null', value: null }),
    right: { kind: 'not', operand: { kind: 'compare', op: 'ne', left: field('b'), right: bool(false) } }
  })
  t.strictSame(parseFilter("CONTAINS(Title, 'x') Or ToLower(A) IN ('y')"), {
    kind: 'or',
    left: { kind: 'match', name: 'contains', args: [field('Title'), str('x')] },
    right: { kind: 'in', operand: { kind: 'call', name: 'tolower', args: [field('A')] }, values: [str('y')] }
  })
  t.strictSame(parseFilter('books/ANY(B: B/year eq 1)'), { kind: 'lambda', quantifier: 'any', path: ['books'], variable: 'B', predicate: eq(field('B', 'year'), num(1)) })
})

t.test('numbers may carry a leading +', async t => {
  t.strictSame(literal('+42'), num(42))
  t.strictSame(literal('+0.314e+1'), num(3.14))
  t.strictSame(literal('-0.5E+1'), num(-5))
  fails(t, 'a eq +x', "unexpected character '+' at position 5", 5)
  fails(t, 'a eq -+5', "unexpected character '-' at position 5", 5)
})

t.test('lambda operators: any and all over a path, with a variable the predicate reads', async t => {
  const gt = (left: Operand, right: Operand): FilterNode => ({ kind: 'compare', op: 'gt', left, right })
  t.strictSame(parseFilter('books/any(b: b/year gt 1970)'),
    { kind: 'lambda', quantifier: 'any', path: ['books'], variable: 'b', predicate: gt(field('b', 'year'), num(1970)) })
  t.strictSame(parseFilter('books/all(b:b/rating ge 4 and b/available)'), {
    kind: 'lambda',
    quantifier: 'all',
    path: ['books'],
    variable: 'b',
    predicate: { kind: 'and', left: { kind: 'compare', op: 'ge', left: field('b', 'rating'), right: num(4) }, right: isTrue(field('b', 'available')) }
  })
  t.strictSame(parseFilter('books/any()'), { kind: 'lambda', quantifier: 'any', path: ['books'], variable: '', predicate: null })
  t.strictSame(parseFilter('not books/any()'), { kind: 'not', operand: { kind: 'lambda', quantifier: 'any', path: ['books'], variable: '', predicate: null } })
  // A lambda's predicate counts its `not`s afresh: its members pass when it is true.
  t.strictSame(parseFilter('not books/any(b: b/available)'),
    { kind: 'not', operand: { kind: 'lambda', quantifier: 'any', path: ['books'], variable: 'b', predicate: isTrue(field('b', 'available')) } })
  t.strictSame(parseFilter('a/b/any(c: c/d/all(e: not e/f))'), {
    kind: 'lambda',
    quantifier: 'any',
    path: ['a', 'b'],
    variable: 'c',
    predicate: { kind: 'lambda', quantifier: 'all', path: ['c', 'd'], variable: 'e', predicate: { kind: 'not', operand: notFalse(field('e', 'f')) } }
  })
  fails(t, 'books/all()', "expected a lambda variable after 'books/all(', e.g. books/all(x: …) at position 10", 10)
  fails(t, 'books/any(: true)', "expected a lambda variable after 'books/any(', e.g. books/any(x: …) at position 10", 10)
  fails(t, 'books/any(and: true)', "expected a lambda variable after 'books/any(', e.g. books/any(x: …) at position 10", 10)
  fails(t, 'books/any(b b/x)', "expected ':' after the lambda variable 'b' at position 12", 12)
  fails(t, 'books/any(b: b/x', "expected ')' at position 16", 16)
  fails(t, 'books/any(b: b/x) eq true', 'books/any() is a condition and cannot be compared at position 18', 18)
  fails(t, 'a eq books/any(b: b/x)', 'books/any() is a condition, not a value at position 5', 5)
  fails(t, 'any(b: b/x)', "any() follows the path of a 'many' relation, e.g. books/any(b: …) at position 0", 0)
  fails(t, 'books/any(b: books/all(c: c/x))', 'filter nests deeper than 1 levels at position 13', 13, { maxDepth: 1 })
})

t.test('value functions take their number of arguments', async t => {
  const call = (name: string, ...args: Operand[]): Operand => ({ kind: 'call', name, args } as Operand)
  t.strictSame(parseFilter('length(a) gt 1'), { kind: 'compare', op: 'gt', left: call('length', field('a')), right: num(1) })
  t.strictSame(parseFilter("indexof(a, 'x') eq 0"), eq(call('indexof', field('a'), str('x')), num(0)))
  t.strictSame(parseFilter("substring(a, 1) eq 'x'"), eq(call('substring', field('a'), num(1)), str('x')))
  t.strictSame(parseFilter("substring(a, 1, 2) eq 'x'"), eq(call('substring', field('a'), num(1), num(2)), str('x')))
  t.strictSame(parseFilter("trim(concat(a, 'x')) eq 'x'"), eq(call('trim', call('concat', field('a'), str('x'))), str('x')))
  t.strictSame(parseFilter('year(a) eq month(b)'), eq(call('year', field('a')), call('month', field('b'))))
  t.strictSame(parseFilter('day(a) lt 3'), { kind: 'compare', op: 'lt', left: call('day', field('a')), right: num(3) })
  t.strictSame(parseFilter('a lt now()'), { kind: 'compare', op: 'lt', left: field('a'), right: call('now') })
  fails(t, 'now(a) eq 1', "expected ')' at position 4", 4)
  fails(t, "substring(a) eq 'x'", "expected ',' at position 11", 11)
  fails(t, "substring(a, 1, 2, 3) eq 'x'", "expected ')' at position 17", 17)
  fails(t, "concat(a, ) eq 'x'", "expected a value after ',' at position 10", 10)
})

t.test('OData constructs not supported are refused by name', async t => {
  fails(t, 'price add 1 gt 5', "arithmetic operators ('add') are not supported at position 6", 6)
  fails(t, 'price DIVBY 2 gt 5', "arithmetic operators ('divby') are not supported at position 6", 6)
  fails(t, "style has Sales.Pattern'Yellow'", "the 'has' operator is not supported at position 6", 6)
  fails(t, 'round(price) eq 3', 'the function round() is not supported at position 0', 0)
  fails(t, 'hour(at) eq 3', 'the function hour() is not supported at position 0', 0)
  fails(t, '$it/year eq 1', "'$it' is not supported at position 0", 0)
  fails(t, 'a eq $root', "'$root' is not supported at position 5", 5)
  fails(t, 'books/any($this: true)', "'$this' is not supported at position 10", 10)
  fails(t, 'tolower($it) eq 1', "'$it' is not supported at position 8", 8)
  fails(t, 'a eq @p', "parameter aliases ('@p') are not supported at position 5", 5)
  fails(t, 'a eq $', "unexpected character '$' at position 5", 5)
  fails(t, "a eq duration'P1D'", "typed literals (duration'…') are not supported at position 5", 5)
  // Only a name directly followed by a string is a typed literal.
  t.strictSame(parseFilter("a eq'x'"), eq(field('a'), str('x')))
})

t.test('a bare GUID is the text of the id it spells, in any case; dates and numbers read as before', async t => {
  const id = '018cc251-f400-7000-8000-00000000a002'
  t.strictSame(literal(id), str(id))
  t.strictSame(literal('DEADBEEF-0000-4000-8000-ABCDEF012345'), str('DEADBEEF-0000-4000-8000-ABCDEF012345'), 'it may begin like a name, in capitals')
  t.strictSame(literal('20240101-2024-0101-2024-010120240101'), str('20240101-2024-0101-2024-010120240101'), 'digits only')
  t.strictSame(parseFilter(`authorId in (${id}, 'a1')`), { kind: 'in', operand: field('authorId'), values: [str(id), str('a1')] })
  t.strictSame(parseFilter(`${id} eq authorId`), eq(str(id), field('authorId')), 'on the left too')
  t.strictSame(literal('2024-01-01'), { kind: 'literal', type: 'date', value: '2024-01-01' })
  t.strictSame(literal('12345678'), num(12345678))
  fails(t, `a eq ${id}x`, "unexpected character 'x' at position 41", 41)
  // Not of the form (a group short, a letter past f): read as before, a value then a signed number.
  fails(t, 'a eq 018cc251-f400-7000-8000-00000000a00', "unexpected character 'c' at position 8", 8)
  fails(t, 'a eq deadbeef-f400-7000-8000-00000000a00g', "unexpected character '-' at position 13", 13)
})
