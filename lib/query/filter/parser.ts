// Recursive-descent parser for `filter=` (spec "Advanced filtering (`filter`)"): the OData 4.01
// $filter subset, into the AST of ast.ts. Syntax only; check.ts knows the fields and types.
import { FUNCTIONS, isCallName } from './ast.js'
import type { ComparisonOperator, FilterNode, Literal, Operand } from './ast.js'
import { describe as describeAs, FilterSyntaxError, isPunct, syntaxError, tokenize } from './lexer.js'
import type { Punct, Token } from './lexer.js'

export { FilterSyntaxError }

export interface FilterLimits {
  /** Characters; default 2000. */
  readonly maxLength?: number
  /** Nested parentheses, `not` and function calls; default 32. */
  readonly maxDepth?: number
}

type MatchName = 'contains' | 'startswith' | 'endswith'

const isComparison = (word: string): word is ComparisonOperator =>
  ['eq', 'ne', 'gt', 'ge', 'lt', 'le'].includes(word)
const isMatch = (word: string): word is MatchName => ['contains', 'startswith', 'endswith'].includes(word)
// Operators cannot be field names; reading one where a value belongs is always a mistake.
const isOperator = (word: string): boolean => isComparison(word) || ['and', 'or', 'not', 'in'].includes(word)
const ARITHMETIC = new Set(['add', 'sub', 'mul', 'div', 'divby', 'mod'])
// OData 4.01 canonical functions (part 2 §5.1.1) this parser does not take: refused by name.
const UNSUPPORTED_FUNCTIONS = new Set(['matchespattern', 'hour', 'minute', 'second', 'fractionalseconds', 'totalseconds',
  'date', 'time', 'totaloffsetminutes', 'mindatetime', 'maxdatetime', 'round', 'floor', 'ceiling', 'cast', 'isof',
  'hassubset', 'hassubsequence', 'case'])

/** The single identifier a token spells, lower-cased (OData 4.01 keywords and function names are case-insensitive), or '' when it is not a plain name. */
function wordOf (token: Token): string {
  return token.kind === 'name' && token.path.length === 1 ? token.path[0].toLowerCase() : ''
}

/** 'any' or 'all' when the token is a lambda's path, `books/any`; else ''. */
function quantifierOf (token: Token): string {
  if (token.kind !== 'name' || token.path.length < 2) return ''
  const last = (token.path.at(-1) as string).toLowerCase()
  return last === 'any' || last === 'all' ? last : ''
}

const describe = (token: Token): string => describeAs(token, 'filter')

/** `$it`, `$root`, `$count`…: OData names this language does not take, refused by name. */
function refuseDollar (token: Token): void {
  if (token.kind === 'name' && token.text.startsWith('$')) throw syntaxError(`'${token.text}' is not supported`, token.position)
}

const TRUE: Literal = { kind: 'literal', type: 'boolean', value: true }
const FALSE: Literal = { kind: 'literal', type: 'boolean', value: false }

/**
 * Parses filter text. Precedence, tightest first: `not`, comparisons, `and`, `or`; `and` and `or`
 * associate to the left. Limits bound the work done for one request and the recursion depth.
 *
 * A boolean operand alone is a condition (OData boolCommonExpr), true when its value is true.
 * Its null is neither true nor false, so `not available` must not select a null: the parser
 * writes the operand as `x eq true`, or under an odd number of `not`s as `x ne false`, whose
 * negation holds only for false. A lambda's predicate counts its `not`s afresh (its members
 * pass when it is true).
 */
export function parseFilter (text: string, limits: FilterLimits = {}): FilterNode {
  const maxLength = limits.maxLength ?? MAX_FILTER_LENGTH
  if (text.length > maxLength) throw new FilterSyntaxError(`filter is longer than ${maxLength} characters`, maxLength)
  return parseFilterTokens(tokenize(text), limits)
}

/** The default of FilterLimits.maxLength. */
export const MAX_FILTER_LENGTH = 2000

/**
 * A filter read from tokens that end with an `end` token: parseFilter's, or the part of apply='s
 * tokens inside one of its filter(…) steps (query/apply/parser.ts), whose positions are in the
 * whole text. Only `maxDepth` of the limits applies: a length is the text's.
 */
export function parseFilterTokens (tokens: readonly Token[], limits: FilterLimits = {}): FilterNode {
  const maxDepth = limits.maxDepth ?? 32
  let index = 0
  // Every recursive rule goes through enter(), so maxDepth also bounds the parser's stack.
  // and/or chains are read in a loop and do not count: a flat list of 40 `or`s is not nested.
  let depth = 0
  /** `not`s around the condition being read, within the innermost lambda. */
  let negations = 0

  const peek = (): Token => tokens[index]
  const enter = (token: Token): void => {
    if (++depth > maxDepth) throw syntaxError(`filter nests deeper than ${maxDepth} levels`, token.position)
  }
  const expect = (punct: Punct, context = ''): void => {
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
    negations++
    // `not` binds tighter than comparisons, so `not x eq 1` would mean `(not x) eq 1`; rather than
    // guess, accept only operands that are already conditions: a boolean operand stands alone.
    const next = peek()
    const isCondition = isPunct(next, '(') || wordOf(next) === 'not' || isConditionCallAt(index)
    const operand = isCondition ? parseUnary() : parseComparison(next)
    negations--
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
    if (!isConditionCallAt(index)) return parseComparison()
    enter(token)
    const node = quantifierOf(token) === '' ? parseMatch() : parseLambda()
    depth--
    const after = peek()
    if (isComparison(wordOf(after))) {
      throw syntaxError(`${describeCall(token)} is a condition and cannot be compared`, after.position)
    }
    return node
  }

  function parseMatch (): FilterNode {
    const name = wordOf(peek()) as MatchName
    index += 2
    const first = parseOperand("'('")
    expect(',')
    const second = parseOperand("','")
    expect(')')
    return { kind: 'match', name, args: [first, second] }
  }

  /** `path/any()`, `path/any(v: predicate)`, `path/all(v: predicate)` (OData 4.01 part 2 §5.1.1.13). */
  function parseLambda (): FilterNode {
    const token = peek() as Extract<Token, { kind: 'name' }>
    const quantifier = quantifierOf(token) as 'any' | 'all'
    const path = token.path.slice(0, -1)
    index += 2
    if (quantifier === 'any' && isPunct(peek(), ')')) {
      index++
      return { kind: 'lambda', quantifier, path, variable: '', predicate: null }
    }
    const variableToken = peek()
    refuseDollar(variableToken)
    const variable = wordOf(variableToken) === '' || isOperator(wordOf(variableToken)) ? '' : (variableToken as Extract<Token, { kind: 'name' }>).text
    if (variable === '') throw syntaxError(`expected a lambda variable after '${token.text}(', e.g. ${token.text}(x: …)`, variableToken.position)
    index++
    expect(':', ` after the lambda variable '${variable}'`)
    const outer = negations
    negations = 0
    const predicate = parseOr()
    negations = outer
    expect(')')
    return { kind: 'lambda', quantifier, path, variable, predicate }
  }

  /** `after`: when given, the `not` whose operand this is: only a boolean operand alone may follow it. */
  function parseComparison (after?: Token): FilterNode {
    const start = peek()
    const left = parseOperand()
    const opToken = peek()
    const op = wordOf(opToken)
    const standsAlone = opToken.kind === 'end' || isPunct(opToken, ')') || op === 'and' || op === 'or'
    if (after !== undefined && !standsAlone) throw syntaxError("expected '(' after 'not'", after.position)
    if (op === 'in') {
      index++
      return { kind: 'in', operand: left, values: parseList() }
    }
    if (isComparison(op)) {
      index++
      return { kind: 'compare', op, left, right: parseOperand(`'${op}'`) }
    }
    if (standsAlone) {
      if (left.kind === 'literal' && left.type !== 'boolean' && left.type !== 'null') throw syntaxError(`${describe(start)} is not a condition`, start.position)
      return negations % 2 === 0
        ? { kind: 'compare', op: 'eq', left, right: TRUE }
        : { kind: 'compare', op: 'ne', left, right: FALSE }
    }
    if (ARITHMETIC.has(op)) throw syntaxError(`arithmetic operators ('${op}') are not supported`, opToken.position)
    if (op === 'has') throw syntaxError("the 'has' operator is not supported", opToken.position)
    throw syntaxError(`expected a comparison operator, found ${describe(opToken)}`, opToken.position)
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

  /** A literal, a field or a value function; `after` names what precedes it, for the message. */
  function parseOperand (after?: string): Operand {
    const token = peek()
    if (token.kind === 'literal') {
      index++
      return token.literal
    }
    refuseDollar(token)
    if (token.kind === 'name' && !isOperator(wordOf(token))) {
      const next = tokens[index + 1]
      if (next.kind === 'literal' && next.literal.type === 'string' && next.position === token.position + token.text.length) {
        throw syntaxError(`typed literals (${token.text}'…') are not supported`, token.position)
      }
      if (!isPunct(next, '(')) {
        index++
        return { kind: 'field', path: token.path }
      }
      return parseCall(token)
    }
    throw syntaxError(after === undefined ? `unexpected ${describe(token)}` : `expected a value after ${after}`, token.position)
  }

  function parseCall (token: Extract<Token, { kind: 'name' }>): Operand {
    const name = wordOf(token)
    if (!isCallName(name)) {
      const reason = isMatch(name) || quantifierOf(token) !== ''
        ? `${describeCall(token)} is a condition, not a value`
        : name === 'any' || name === 'all'
          ? `${name}() follows the path of a 'many' relation, e.g. books/${name}(b: …)`
          : UNSUPPORTED_FUNCTIONS.has(name) ? `the function ${name}() is not supported` : `unknown function '${token.text}'`
      throw syntaxError(reason, token.position)
    }
    const { params, required } = FUNCTIONS[name]
    index += 2
    enter(token)
    const args: Operand[] = []
    for (let i = 0; i < params.length; i++) {
      if (i >= required && isPunct(peek(), ')')) break
      if (i > 0) expect(',')
      args.push(parseOperand(i === 0 ? "'('" : "','"))
    }
    expect(')')
    depth--
    return { kind: 'call', name, args }
  }

  /** A name directly followed by '(' that reads as a condition: contains(), startswith(), endswith() or a lambda. */
  function isConditionCallAt (at: number): boolean {
    const token = tokens[at]
    // The end token is last, so at + 1 exists.
    return (isMatch(wordOf(token)) || quantifierOf(token) !== '') && isPunct(tokens[at + 1], '(')
  }

  const node = parseOr()
  const rest = peek()
  if (rest.kind !== 'end') throw syntaxError(`unexpected ${describe(rest)}`, rest.position)
  return node
}

/** `contains()`, `books/any()`: a call as messages name it. */
function describeCall (token: Token): string {
  return `${token.text}()`
}
