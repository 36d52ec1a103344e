// Evaluates a checked filter on in-memory records (spec "Advanced filtering (`filter`)") with OData
// null semantics, and defines the value order shared with sorting (spec "Sorting" 3: null first).
import type { CallName, ComparisonOperator, FilterNode, Operand } from './ast.js'
import { utcDay } from '../../values/iso-date.js'

type Item = Record<string, unknown>
type Resolve = (record: Item, path: readonly string[]) => readonly unknown[]

/** A 'many' relation for lambdas: the members of one record, how paths read them, and their own relations. */
export interface Related {
  readonly members: (record: Item) => readonly Item[]
  readonly resolve: Resolve
  readonly relate: Relate
}
export type Relate = (relation: string) => Related

/** The record filtered, then the member bound by each enclosing lambda. */
type Env = readonly Item[]
type Values = (env: Env) => readonly unknown[]
type Predicate = (env: Env) => boolean
/** How paths of one scope read: the record filtered's, or a lambda variable's. */
interface Scope { readonly resolve: Resolve, readonly relate: Relate }

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
// A date alone is the instant its day begins in UTC.
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt\s](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(?:[Zz]|([+-])(\d{2})(?::?(\d{2}))?))?$/

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
  const [, year, month, day, hour = '0', minute = '0', second = '0', fraction = '', sign, offsetHours = '0', offsetMinutes = '0'] = match
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

/** A record with no related records: what lambdas see when the caller gives no relations. */
const nothing = (): readonly never[] => []
const noRelations: Relate = () => ({ members: nothing, resolve: nothing, relate: noRelations })

/**
 * Compiles the filter into a predicate. `resolve` gives the candidate values of a path for a
 * record; a comparison holds when any candidate satisfies it, like the SQL store's EXISTS.
 * `relate` gives the members a lambda ranges over. Logic is two-valued: `not` negates a
 * comparison's true/false, so `not (x eq 3)` is true when x is null, as OData's `eq` is false
 * there rather than null (parser.ts writes a boolean operand alone so that this holds for it too).
 */
export function compilePredicate (node: FilterNode, resolve: Resolve, relate: Relate = noRelations): (record: Item) => boolean {
  const compile = (node: FilterNode, scopes: readonly Scope[]): Predicate => {
    switch (node.kind) {
      case 'and': {
        const left = compile(node.left, scopes)
        const right = compile(node.right, scopes)
        return env => left(env) && right(env)
      }
      case 'or': {
        const left = compile(node.left, scopes)
        const right = compile(node.right, scopes)
        return env => left(env) || right(env)
      }
      case 'not': {
        const operand = compile(node.operand, scopes)
        return env => !operand(env)
      }
      case 'lambda': {
        const at = node.scope ?? 0
        const related = scopes[at].relate(node.path[0])
        const { members } = related
        if (node.predicate === null) return env => members(env[at]).length > 0
        const predicate = compile(node.predicate, [...scopes, related])
        const passes = (env: Env) => (member: Item) => predicate([...env, member])
        return node.quantifier === 'any'
          ? env => members(env[at]).some(passes(env))
          : env => members(env[at]).every(passes(env))
      }
      case 'compare': {
        // A date-time literal, now(), or a field checkFilter marked as an instant makes both sides instants.
        const convert = [node.left, node.right].some(isInstant) ? asInstants : asIs
        const left = values(node.left, scopes, convert)
        const right = values(node.right, scopes, convert)
        const test = TESTS[node.op]
        return env => anyPair(left(env), right(env), test)
      }
      case 'in': {
        const convert = node.values.some(isInstant) ? asInstants : asIs
        const operand = values(node.operand, scopes, convert)
        const listed = node.values.map(literal => convert.literal(literal.value))
        return env => anyPair(operand(env), listed, equal)
      }
      case 'match': {
        const text = values(node.args[0], scopes, asIs)
        const part = values(node.args[1], scopes, asIs)
        const test = MATCHES[node.name]
        return env => {
          const parts = part(env)
          return text(env).some(a => typeof a === 'string' &&
            parts.some(b => typeof b === 'string' && test(a, b)))
        }
      }
    }
  }
  const predicate = compile(node, [{ resolve, relate }])
  return record => predicate([record])
}

/**
 * Whether `test` holds for some pair of candidates. Loops rather than nested `some` callbacks: a
 * predicate runs once per record a LIST scans, and each callback was an allocation per record.
 */
function anyPair (lefts: readonly unknown[], rights: readonly unknown[], test: (a: unknown, b: unknown) => boolean): boolean {
  for (const a of lefts) for (const b of rights) if (test(a, b)) return true
  return false
}

function isInstant (operand: Operand): boolean {
  switch (operand.kind) {
    case 'field': return operand.type === 'datetime'
    case 'literal': return operand.type === 'datetime'
    case 'call': return operand.name === 'now'
  }
}

function values (operand: Operand, scopes: readonly Scope[], convert: Conversion): Values {
  switch (operand.kind) {
    case 'literal': {
      const constant = [convert.literal(operand.value)]
      return () => constant
    }
    case 'field': {
      const { path } = operand
      const at = operand.scope ?? 0
      const { resolve } = scopes[at]
      const { field } = convert
      return field === same ? env => resolve(env[at], path) : env => resolve(env[at], path).map(field)
    }
    case 'call': {
      const call = FUNCTIONS[operand.name]
      const args = operand.args.map(arg => values(arg, scopes, asIs))
      if (args.length === 1) {
        const [arg] = args
        return env => arg(env).map(value => call([value]))
      }
      // Each combination of candidates, as the SQL store's join of their paths gives them.
      return env => combinations(args.map(arg => arg(env))).map(call)
    }
  }
}

function combinations (lists: ReadonlyArray<readonly unknown[]>): unknown[][] {
  return lists.reduce<unknown[][]>((tuples, list) => tuples.flatMap(tuple => list.map(value => [...tuple, value])), [[]])
}

// What trim() removes: JavaScript's white space and line terminators (String.prototype.trim), as the SQL store lists them.
export const TRIMMED = '\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff'

const text = (value: unknown): value is string => typeof value === 'string'
const integer = (value: unknown): value is number => typeof value === 'number'
/** Strings count and cut in code points, as PostgreSQL counts characters. */
const characters = (value: string): string[] => [...value]

/** A date or date-time (or now()'s milliseconds) as its UTC day, or null. */
function utcDate (value: unknown): Date | null {
  const at = instant(value, false)
  return typeof at === 'number' ? new Date(at) : null
}

/**
 * The functions, each taking its arguments' values (one candidate each) and giving null when one
 * is null. Positions and lengths are in code points; year/month/day read the instant in UTC.
 */
const FUNCTIONS: Readonly<Record<CallName, (args: readonly unknown[]) => unknown>> = {
  tolower: ([value]) => text(value) ? value.toLowerCase() : null,
  toupper: ([value]) => text(value) ? value.toUpperCase() : null,
  trim: ([value]) => text(value) ? value.trim() : null,
  length: ([value]) => text(value) ? characters(value).length : null,
  concat: ([a, b]) => text(a) && text(b) ? a + b : null,
  indexof: ([value, part]) => {
    if (!text(value) || !text(part)) return null
    const at = value.indexOf(part)
    return at === -1 ? -1 : characters(value.slice(0, at)).length
  },
  // A start below 0 counts as 0, a length below 0 as 0; past the end is ''.
  substring: args => {
    const [value, start, length] = args
    if (!text(value) || !integer(start) || (args.length === 3 && !integer(length))) return null
    const from = Math.max(start, 0)
    return characters(value).slice(from, integer(length) ? from + Math.max(length, 0) : undefined).join('')
  },
  year: ([value]) => utcDate(value)?.getUTCFullYear() ?? null,
  month: ([value]) => { const date = utcDate(value); return date === null ? null : date.getUTCMonth() + 1 },
  day: ([value]) => utcDate(value)?.getUTCDate() ?? null,
  now: () => Date.now()
}
