// Recursive-descent parser for `filter=` (spec "Advanced filtering (`filter`)"): the OData 4.0
// $filter subset plus 4.01 `in`, into the AST of ast.ts. Syntax only; check.ts knows the fields.
import type { ComparisonOperator, FilterNode, Literal, Operand } from './ast.js'
import { FilterSyntaxError, syntaxError, tokenize, type Token } from './lexer.js'

export { FilterSyntaxError }

export interface FilterLimits {
  /** Characters; default 2000. */
  readonly maxLength?: number
  /** Nested parentheses, `not` and function calls; default 32. */
  readonly maxDepth?: number
}

type MatchName = 'contains' | 'startswith' | 'endswith'
type CallName = 'tolower' | 'toupper'

const isComparison = (word: string): word is ComparisonOperator =>
  ['eq', 'ne', 'gt', 'ge', 'lt', 'le'].includes(word)
const isMatch = (word: string): word is MatchName => ['contains', 'startswith', 'endswith'].includes(word)
const isCall = (word: string): word is CallName => word === 'tolower' || word === 'toupper'
// Operators cannot be field names; reading one where a value belongs is always a mistake.
const isOperator = (word: string): boolean => isComparison(word) || ['and', 'or', 'not', 'in'].includes(word)

/** The single identifier a token spells, or '' when it is not a plain name. */
function wordOf (token: Token): string {
  return token.kind === 'name' && token.path.length === 1 ? token.path[0] : ''
}

function isPunct (token: Token, text: '(' | ')' | ','): boolean {
  return token.kind === 'punct' && token.text === text
}

function describe (token: Token): string {
  if (token.kind === 'end') return 'end of filter'
  // A string literal shows its own quotes.
  return token.kind === 'literal' && token.literal.type === 'string' ? token.text : `'${token.text}'`
}

/**
 * Parses filter text. Precedence, tightest first: `not`, comparisons, `and`, `or`; `and` and `or`
 * associate to the left. Limits bound the work done for one request and the recursion depth.
 */
export function parseFilter (text: string, limits: FilterLimits = {}): FilterNode {
  const maxLength = limits.maxLength ?? 2000
  const maxDepth = limits.maxDepth ?? 32
  if (text.length > maxLength) throw new FilterSyntaxError(`filter is longer than ${maxLength} characters`, maxLength)

  const tokens = tokenize(text)
  let index = 0
  // Every recursive rule goes through enter(), so maxDepth also bounds the parser's stack.
  // and/or chains are read in a loop and do not count: a flat list of 40 `or`s is not nested.
  let depth = 0

  const peek = (): Token => tokens[index]
  const enter = (token: Token): void => {
    if (++depth > maxDepth) throw syntaxError(`filter nests deeper than ${maxDepth} levels`, token.position)
  }
  const expect = (punct: '(' | ')' | ',', context = ''): void => {
    const token = peek()
    if (!isPunct(token, punct)) throw syntaxError(`expected '${punct}'${context}`, token.position)
    index++
  }

  function parseOr (): FilterNode {
    let left = parseAnd()
    while (wordOf(peek()) === 'or') {
      index++
      left = { kind: 'or', left, right: parseAnd() }
    }
    return left
  }

  function parseAnd (): FilterNode {
    let left = parseUnary()
    while (wordOf(peek()) === 'and') {
      index++
      left = { kind: 'and', left, right: parseUnary() }
    }
    return left
  }

  function parseUnary (): FilterNode {
    const token = peek()
    if (wordOf(token) !== 'not') return parsePrimary()
    index++
    enter(token)
    // `not` binds tighter than comparisons, so `not x eq 1` would mean `(not x) eq 1`; rather than
    // guess, accept only operands that are already conditions.
    const next = peek()
    const isCondition = isPunct(next, '(') || wordOf(next) === 'not' || (isMatch(wordOf(next)) && isCallAt(index))
    if (!isCondition) throw syntaxError("expected '(' after 'not'", next.position)
    const operand = parseUnary()
    depth--
    return { kind: 'not', operand }
  }

  function parsePrimary (): FilterNode {
    const token = peek()
    if (isPunct(token, '(')) {
      index++
      enter(token)
      const inner = parseOr()
      expect(')')
      depth--
      return inner
    }
    const name = wordOf(token)
    if (isMatch(name) && isCallAt(index)) {
      index += 2
      enter(token)
      const first = parseOperand("'('")
      expect(',')
      const second = parseOperand("','")
      expect(')')
      depth--
      const after = peek()
      if (isComparison(wordOf(after))) {
        throw syntaxError(`${name}() is a condition and cannot be compared`, after.position)
      }
      return { kind: 'match', name, args: [first, second] }
    }
    return parseComparison()
  }

  function parseComparison (): FilterNode {
    const start = peek()
    const left = parseOperand()
    const opToken = peek()
    const op = wordOf(opToken)
    if (op === 'in') {
      if (left.kind === 'literal') throw syntaxError('a comparison needs a field', start.position)
      index++
      return { kind: 'in', operand: left, values: parseList() }
    }
    if (!isComparison(op)) throw syntaxError(`expected a comparison operator, found ${describe(opToken)}`, opToken.position)
    index++
    const right = parseOperand(`'${op}'`)
    if (left.kind === 'literal' && right.kind === 'literal') {
      throw syntaxError('a comparison needs a field', start.position)
    }
    return { kind: 'compare', op, left, right }
  }

  function parseList (): Literal[] {
    expect('(', " after 'in'")
    const values: Literal[] = []
    for (;;) {
      const token = peek()
      if (token.kind !== 'literal') throw syntaxError(`expected a literal in the 'in' list, found ${describe(token)}`, token.position)
      values.push(token.literal)
      index++
      if (!isPunct(peek(), ',')) break
      index++
    }
    expect(')')
    return values
  }

  /** A literal, a field or tolower/toupper; `after` names what precedes it, for the message. */
  function parseOperand (after?: string): Operand {
    const token = peek()
    if (token.kind === 'literal') {
      index++
      return token.literal
    }
    if (token.kind === 'name' && !isOperator(wordOf(token))) {
      if (!isCallAt(index)) {
        index++
        return { kind: 'field', path: token.path }
      }
      const name = token.text
      if (!isCall(name)) {
        throw syntaxError(isMatch(name) ? `${name}() is a condition, not a value` : `unknown function '${name}'`, token.position)
      }
      index += 2
      enter(token)
      const arg = parseOperand("'('")
      expect(')')
      depth--
      return { kind: 'call', name, args: [arg] }
    }
    throw syntaxError(after === undefined ? `unexpected ${describe(token)}` : `expected a value after ${after}`, token.position)
  }

  /** A plain name directly followed by '(' (the end token is last, so index + 1 exists). */
  function isCallAt (at: number): boolean {
    return wordOf(tokens[at]) !== '' && isPunct(tokens[at + 1], '(')
  }

  const node = parseOr()
  const rest = peek()
  if (rest.kind !== 'end') throw syntaxError(`unexpected ${describe(rest)}`, rest.position)
  return node
}
