// The filter AST: what `filter=` (OData 4.0 subset, spec "Advanced filtering") and the simple
// `?field=value` filters parse into. Stores evaluate it (memory) or compile it (SQL).

/** A literal as written in the expression; `date`/`datetime` keep their ISO text. */
export type Literal =
  | { readonly kind: 'literal', readonly type: 'string', readonly value: string }
  | { readonly kind: 'literal', readonly type: 'number', readonly value: number }
  | { readonly kind: 'literal', readonly type: 'boolean', readonly value: boolean }
  | { readonly kind: 'literal', readonly type: 'null', readonly value: null }
  | { readonly kind: 'literal', readonly type: 'date' | 'datetime', readonly value: string }

/**
 * A property path: `title` is ['title'], `author/name` (or `author.name`) is ['author', 'name'].
 * `type` is set by checkFilter where the field's type decides how values compare and no literal
 * beside it says so: a date-time compared with another field compares as an instant.
 */
export interface FieldRef { readonly kind: 'field', readonly path: readonly string[], readonly type?: 'datetime' }

/** A value-returning function call. */
export interface ValueCall { readonly kind: 'call', readonly name: 'tolower' | 'toupper', readonly args: readonly [Operand] }

export type Operand = Literal | FieldRef | ValueCall

export type ComparisonOperator = 'eq' | 'ne' | 'gt' | 'ge' | 'lt' | 'le'

export type FilterNode =
  | { readonly kind: 'and' | 'or', readonly left: FilterNode, readonly right: FilterNode }
  | { readonly kind: 'not', readonly operand: FilterNode }
  | { readonly kind: 'compare', readonly op: ComparisonOperator, readonly left: Operand, readonly right: Operand }
  | { readonly kind: 'in', readonly operand: Operand, readonly values: readonly Literal[] }
  | { readonly kind: 'match', readonly name: 'contains' | 'startswith' | 'endswith', readonly args: readonly [Operand, Operand] }
