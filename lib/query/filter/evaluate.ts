// Evaluates a checked filter on in-memory records (spec "Advanced filtering (`filter`)") with OData
// null semantics, and defines the value order shared with sorting (spec "Sorting" 3: null first).
import type { ComparisonOperator, FilterNode, Operand } from './ast.js'
import { utcDay } from '../../values/iso-date.js'

type Item = Record<string, unknown>
type Resolve = (record: Item, path: readonly string[]) => readonly unknown[]
type Values = (record: Item) => readonly unknown[]

/**
 * Orders values: null and undefined below everything, then numbers, strings (code point order),
 * booleans (false before true). Values of different kinds order by kind so the order is total;
 * other values (objects) compare equal.
 */
export function sortCompare (a: unknown, b: unknown): number {
  const byKind = rank(a) - rank(b)
  if (byKind !== 0) return byKind
  if (typeof a === 'string') return compareText(a, String(b))
  if (typeof a === 'number' || typeof a === 'boolean') return Number(a) - Number(b)
  return 0
}

/**
 * Code point order, which PostgreSQL's "C" collation (UTF-8 bytes) gives: JavaScript's `<` compares
 * UTF-16 code units, which put U+10000 and above (surrogates, D800–DFFF) before U+E000–U+FFFF.
 */
export function compareText (a: string, b: string): number {
  if (a === b) return 0
  const length = Math.min(a.length, b.length)
  let at = 0
  while (at < length && a.charCodeAt(at) === b.charCodeAt(at)) at++
  if (at === length) return a.length - b.length
  return codePointRank(a.charCodeAt(at)) - codePointRank(b.charCodeAt(at))
}

// Surrogates move above the rest of the BMP; U+E000–U+FFFF move down into the gap they leave.
const codePointRank = (unit: number) => unit < 0xd800 ? unit : unit >= 0xe000 ? unit - 0x800 : unit + 0x2000

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

// RFC 3339 as JSON Schema's date-time format (ajv-formats) admits it (lower-case t and z, white
// space for the t, ±hh or ±hhmm offsets, second 60) and as filters write it (seconds optional).
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt\s](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(?:[Zz]|([+-])(\d{2})(?::?(\d{2}))?)$/

/**
 * A date-time as milliseconds since the epoch, read as PostgreSQL's timestamptz reads it: a leap
 * second rolls into the next minute and fractions round to microseconds. Stored values (`truncate`)
 * keep whole milliseconds, as the SQL store writes them; literals keep their microseconds. An
 * unparsable value becomes null, so it matches `ne` but never `eq` or an ordering operator.
 */
function instant (value: unknown, truncate: boolean): unknown {
  if (typeof value !== 'string') return value
  const match = DATE_TIME.exec(value)
  if (match === null) return null
  const [, year, month, day, hour, minute, second = '0', fraction = '', sign, offsetHours = '0', offsetMinutes = '0'] = match
  const offset = (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes))
  // Out-of-range parts roll over.
  const date = utcDay(Number(year), Number(month), Number(day))
  date.setUTCHours(Number(hour), Number(minute) - offset, Number(second))
  const micros = Math.round(Number(`0.${fraction}`) * 1e6)
  return date.getTime() + (truncate ? Math.floor(micros / 1000) : micros / 1000)
}

/** How a comparison reads its operands: field values and literals, as they are or as instants. */
interface Conversion {
  readonly field: (value: unknown) => unknown
  readonly literal: (value: unknown) => unknown
}

const same = (value: unknown): unknown => value
const asIs: Conversion = { field: same, literal: same }
// Date-times with different offsets only order correctly as instants.
const asInstants: Conversion = { field: value => instant(value, true), literal: value => instant(value, false) }

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
        // A date-time literal, or a field checkFilter marked as a date-time, makes both sides instants.
        const convert = [node.left, node.right].some(isDateTime) ? asInstants : asIs
        const left = values(node.left, resolve, convert)
        const right = values(node.right, resolve, convert)
        const test = TESTS[node.op]
        return record => anyPair(left(record), right(record), test)
      }
      case 'in': {
        const convert = node.values.some(isDateTime) ? asInstants : asIs
        const operand = values(node.operand, resolve, convert)
        const listed = node.values.map(literal => convert.literal(literal.value))
        return record => anyPair(operand(record), listed, equal)
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

/**
 * Whether `test` holds for some pair of candidates. Loops rather than nested `some` callbacks: a
 * predicate runs once per record a LIST scans, and each callback was an allocation per record.
 */
function anyPair (lefts: readonly unknown[], rights: readonly unknown[], test: (a: unknown, b: unknown) => boolean): boolean {
  for (const a of lefts) for (const b of rights) if (test(a, b)) return true
  return false
}

function isDateTime (operand: Operand): boolean {
  return operand.kind === 'field' ? operand.type === 'datetime' : operand.kind === 'literal' && operand.type === 'datetime'
}

function values (operand: Operand, resolve: Resolve, convert: Conversion): Values {
  switch (operand.kind) {
    case 'literal': {
      const constant = [convert.literal(operand.value)]
      return () => constant
    }
    case 'field': {
      const { path } = operand
      const { field } = convert
      return field === same ? record => resolve(record, path) : record => resolve(record, path).map(field)
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
