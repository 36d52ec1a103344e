// The filter AST: what `filter=` (OData 4.01 subset, spec "Advanced filtering") and the simple
// `?field=value` filters parse into. Stores evaluate it (memory) or compile it (SQL).
import type { FieldType } from '../../registry/model.js'

/** A literal as written in the expression; `date`/`datetime` keep their ISO text. */
export type Literal =
  | { readonly kind: 'literal', readonly type: 'string', readonly value: string }
  | { readonly kind: 'literal', readonly type: 'number', readonly value: number }
  | { readonly kind: 'literal', readonly type: 'boolean', readonly value: boolean }
  | { readonly kind: 'literal', readonly type: 'null', readonly value: null }
  | { readonly kind: 'literal', readonly type: 'date' | 'datetime', readonly value: string }

/**
 * A property path: `title` is ['title'], `author/name` (or `author.name`) is ['author', 'name'].
 * checkFilter sets `scope` on a path inside a lambda that starts with a lambda variable (1 the
 * outermost lambda's, 2 the next…), and drops the variable from `path`; without it the path reads
 * the record filtered. It sets `type` where the path compares as an instant and no literal beside
 * it says so: a date-time compared with another date-time, or a date compared with a date-time
 * (as the instant its day begins in UTC).
 */
export interface FieldRef {
  readonly kind: 'field'
  readonly path: readonly string[]
  readonly scope?: number
  readonly type?: 'datetime'
}

/** A function call returning a value (FUNCTIONS below: names, parameters, result types). */
export interface ValueCall { readonly kind: 'call', readonly name: CallName, readonly args: readonly Operand[] }

export type CallName = 'tolower' | 'toupper' | 'trim' | 'concat' | 'substring' | 'length' | 'indexof' | 'year' | 'month' | 'day' | 'now'

export type Operand = Literal | FieldRef | ValueCall

export type ComparisonOperator = 'eq' | 'ne' | 'gt' | 'ge' | 'lt' | 'le'

/**
 * `books/any(b: b/year gt 1970)`: `path` leads to a 'many' relation (after checkFilter, the relation
 * alone, read from `scope` as for a FieldRef); `predicate` is null for `any()`, "has a member".
 */
export interface Lambda {
  readonly kind: 'lambda'
  readonly quantifier: 'any' | 'all'
  readonly path: readonly string[]
  readonly variable: string
  readonly predicate: FilterNode | null
  readonly scope?: number
}

export type FilterNode =
  | { readonly kind: 'and' | 'or', readonly left: FilterNode, readonly right: FilterNode }
  | { readonly kind: 'not', readonly operand: FilterNode }
  | { readonly kind: 'compare', readonly op: ComparisonOperator, readonly left: Operand, readonly right: Operand }
  | { readonly kind: 'in', readonly operand: Operand, readonly values: readonly Literal[] }
  | { readonly kind: 'match', readonly name: 'contains' | 'startswith' | 'endswith', readonly args: readonly [Operand, Operand] }
  | Lambda

/** Parameter types by position (the first `required` must be given) and the result type. */
export interface Signature {
  readonly params: ReadonlyArray<readonly FieldType[]>
  readonly required: number
  readonly result: FieldType
}

const TEXT: readonly FieldType[] = ['string']
const INTEGER: readonly FieldType[] = ['integer']
const TEMPORAL: readonly FieldType[] = ['date', 'datetime']
const sign = (params: ReadonlyArray<readonly FieldType[]>, result: FieldType, required = params.length): Signature => ({ params, required, result })

/** The value functions `filter=` takes (OData 4.01 canonical functions, part 2 §5.1.1.5–7). */
export const FUNCTIONS: Readonly<Record<CallName, Signature>> = {
  tolower: sign([TEXT], 'string'),
  toupper: sign([TEXT], 'string'),
  trim: sign([TEXT], 'string'),
  concat: sign([TEXT, TEXT], 'string'),
  substring: sign([TEXT, INTEGER, INTEGER], 'string', 2),
  length: sign([TEXT], 'integer'),
  indexof: sign([TEXT, TEXT], 'integer'),
  year: sign([TEMPORAL], 'integer'),
  month: sign([TEMPORAL], 'integer'),
  day: sign([TEMPORAL], 'integer'),
  now: sign([], 'datetime')
}

export const isCallName = (name: string): name is CallName => Object.hasOwn(FUNCTIONS, name)
