// Evaluates a checked filter on in-memory records (spec "Advanced filtering (`filter`)") with OData
// null semantics, and defines the value order shared with sorting (spec "Sorting" 3: null first).
import type { ComparisonOperator, FilterNode, Operand } from './ast.js'

type Item = Record<string, unknown>
type Resolve = (record: Item, path: readonly string[]) => readonly unknown[]
type Values = (record: Item) => readonly unknown[]

/**
 * Orders values: null and undefined below everything, then numbers, strings (code unit order),
 * booleans (false before true). Values of different kinds order by kind so the order is total;
 * other values (objects) compare equal.
 */
export function sortCompare (a: unknown, b: unknown): number {
  const byKind = rank(a) - rank(b)
  if (byKind !== 0) return byKind
  if (typeof a === 'string') {
    const other = String(b)
    return a < other ? -1 : a > other ? 1 : 0
  }
  if (typeof a === 'number' || typeof a === 'boolean') return Number(a) - Number(b)
  return 0
}

function rank (value: unknown): number {
  if (value == null) return 0
  switch (typeof value) {
    case 'number': return 1
    case 'string': return 2
    case 'boolean': return 3
    default: return 4
  }
}

// OData rather than SQL: null equals null, and `ne` is the plain negation of `eq`, so `x ne 3`
// holds when x is null. Ordering operators are false when either side is null.
const equal = (a: unknown, b: unknown): boolean => a == null || b == null ? a == null && b == null : sortCompare(a, b) === 0
const bothSet = (a: unknown, b: unknown): boolean => a != null && b != null

const TESTS: Readonly<Record<ComparisonOperator, (a: unknown, b: unknown) => boolean>> = {
  eq: equal,
  ne: (a, b) => !equal(a, b),
  gt: (a, b) => bothSet(a, b) && sortCompare(a, b) > 0,
  ge: (a, b) => bothSet(a, b) && sortCompare(a, b) >= 0,
  lt: (a, b) => bothSet(a, b) && sortCompare(a, b) < 0,
  le: (a, b) => bothSet(a, b) && sortCompare(a, b) <= 0
}

const MATCHES = {
  contains: (text: string, part: string) => text.includes(part),
  startswith: (text: string, part: string) => text.startsWith(part),
  endswith: (text: string, part: string) => text.endsWith(part)
}

// Date-times with different offsets only order correctly as instants. An unparsable value
// becomes null, so it matches `ne` but never `eq` or an ordering operator.
function instant (value: unknown): unknown {
  if (typeof value !== 'string') return value
  const time = Date.parse(value)
  return Number.isNaN(time) ? null : time
}

const asIs = (value: unknown): unknown => value

/**
 * Compiles the filter into a predicate. `resolve` gives the candidate values of a path for a
 * record; a comparison holds when any candidate satisfies it, like the SQL store's EXISTS.
 * Logic is two-valued: `not` negates a comparison's true/false, so `not (x eq 3)` is true
 * when x is null (three-valued logic would make it unknown, hence false).
 */
export function compilePredicate (node: FilterNode, resolve: Resolve): (record: Item) => boolean {
  const compile = (node: FilterNode): ((record: Item) => boolean) => {
    switch (node.kind) {
      case 'and': {
        const left = compile(node.left)
        const right = compile(node.right)
        return record => left(record) && right(record)
      }
      case 'or': {
        const left = compile(node.left)
        const right = compile(node.right)
        return record => left(record) || right(record)
      }
      case 'not': {
        const operand = compile(node.operand)
        return record => !operand(record)
      }
      case 'compare': {
        // Only a date-time literal tells us the values are date-times (the AST carries no types).
        const convert = [node.left, node.right].some(isDateTime) ? instant : asIs
        const left = values(node.left, resolve, convert)
        const right = values(node.right, resolve, convert)
        const test = TESTS[node.op]
        return record => {
          const rights = right(record)
          return left(record).some(a => rights.some(b => test(a, b)))
        }
      }
      case 'in': {
        const convert = node.values.some(isDateTime) ? instant : asIs
        const operand = values(node.operand, resolve, convert)
        const listed = node.values.map(literal => convert(literal.value))
        return record => operand(record).some(a => listed.some(b => equal(a, b)))
      }
      case 'match': {
        const text = values(node.args[0], resolve, asIs)
        const part = values(node.args[1], resolve, asIs)
        const test = MATCHES[node.name]
        return record => {
          const parts = part(record)
          return text(record).some(a => typeof a === 'string' &&
            parts.some(b => typeof b === 'string' && test(a, b)))
        }
      }
    }
  }
  return compile(node)
}

function isDateTime (operand: Operand): boolean {
  return operand.kind === 'literal' && operand.type === 'datetime'
}

function values (operand: Operand, resolve: Resolve, convert: (value: unknown) => unknown): Values {
  switch (operand.kind) {
    case 'literal': {
      const constant = [convert(operand.value)]
      return () => constant
    }
    case 'field': {
      const { path } = operand
      return record => resolve(record, path).map(convert)
    }
    case 'call': {
      const arg = values(operand.args[0], resolve, asIs)
      const change = operand.name === 'tolower'
        ? (text: string) => text.toLowerCase()
        : (text: string) => text.toUpperCase()
      return record => arg(record).map(value => typeof value === 'string' ? change(value) : null)
    }
  }
}
