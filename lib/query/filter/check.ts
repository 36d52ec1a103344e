// Checks a parsed filter against a resource (spec "Advanced filtering (`filter`)"): fields exist,
// lambdas range over 'many' relations, values are compared and passed to functions in their types.
// Stores then trust the AST they receive.
import { FUNCTIONS } from './ast.js'
import type { FieldRef, FilterNode, Literal, Operand } from './ast.js'
import { compilePredicate } from './evaluate.js'
import type { FieldModel, FieldType, View } from '../../registry/model.js'
import { isDate, isDateTime } from '../../values/iso-date.js'

/** The filter names a field that does not exist or compares values of different types. */
export class FilterTypeError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'FilterTypeError'
  }
}

const TYPE_NAMES: Readonly<Record<FieldType, string>> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'a boolean',
  date: 'a date',
  datetime: 'a date-time',
  json: 'a JSON value'
}

/** What a path inside a lambda may start with: its variable, standing for a member of `model`. */
interface Scope { readonly variable: string, readonly model: View }

/** An operand checked, with the type of its value (null for the null literal). */
interface Typed { readonly operand: Operand, readonly type: FieldType | null }

// A literal-only condition folds to one of these: every store reads them as they are.
const TRUE: FilterNode = { kind: 'compare', op: 'eq', left: { kind: 'literal', type: 'boolean', value: true }, right: { kind: 'literal', type: 'boolean', value: true } }
const FALSE: FilterNode = { ...TRUE, right: { kind: 'literal', type: 'boolean', value: false } }

const WANTS: Readonly<Record<string, string>> = { string: 'strings', integer: 'integers', date: 'dates or date-times' }

/**
 * Returns the filter with literals converted to the type of what they are compared with
 * (`'2024-01-31'` against a date field becomes a date literal), paths that start with a lambda
 * variable given their scope, and conditions of literals alone folded to true or false; throws
 * FilterTypeError.
 */
export function checkFilter (node: FilterNode, model: View): FilterNode {
  // Scope 0 is the record filtered; each lambda adds one.
  const root: Scope = { variable: '', model }
  const variables = lambdaVariables(node)

  const check = (node: FilterNode, scopes: readonly Scope[]): FilterNode => {
    switch (node.kind) {
      case 'and':
      case 'or':
        return { kind: node.kind, left: check(node.left, scopes), right: check(node.right, scopes) }
      case 'not':
        return { kind: 'not', operand: check(node.operand, scopes) }
      case 'match': {
        const [text, part] = node.args.map(arg => argument(arg, ['string'], node.name, scopes))
        return { ...node, args: [text, part] }
      }
      case 'lambda': {
        const { scope, path, model: owner } = locate(node.path, scopes)
        const name = node.path.join('/')
        const relation = owner.relations.get(path[0])
        if (path.length !== 1 || relation === undefined) throw new FilterTypeError(`${node.quantifier}() needs a 'many' relation, and '${name}' is none`)
        if (relation.kind !== 'many') throw new FilterTypeError(`${node.quantifier}() needs a 'many' relation; '${name}' leads to one ${relation.target.singular}`)
        const inner = [...scopes, { variable: node.variable, model: relation.target }]
        const predicate = node.predicate === null ? null : check(node.predicate, inner)
        return { ...node, path, predicate, ...(scope === 0 ? {} : { scope }) }
      }
      case 'in': {
        const subject = typed(node.operand, scopes)
        if (subject.type === null) return node.values.some(value => value.type === 'null') ? TRUE : FALSE
        const instants = subject.type === 'date' && node.values.some(value => value.type === 'datetime')
        const type = instants ? 'datetime' : subject.type
        const checked: FilterNode = { ...node, operand: instants ? asInstant(subject.operand) : subject.operand, values: node.values.map(value => coerce(value, type, subject.operand)) }
        return subject.operand.kind === 'literal' ? fold(checked) : checked
      }
      case 'compare': {
        const left = typed(node.left, scopes)
        const right = typed(node.right, scopes)
        const [a, b] = pair(left, right)
        const checked: FilterNode = { ...node, left: a, right: b }
        return a.kind === 'literal' && b.kind === 'literal' ? fold(checked) : checked
      }
    }
  }

  /** Where a path starts: a lambda variable in scope (innermost first), or the record filtered. */
  const locate = (path: readonly string[], scopes: readonly Scope[]): { scope: number, path: readonly string[], model: View } => {
    const [first] = path
    for (let scope = scopes.length - 1; scope > 0; scope--) {
      if (scopes[scope].variable !== first) continue
      if (path.length === 1) throw new FilterTypeError(`the lambda variable '${first}' stands for a record; filter on one of its fields, e.g. '${first}/${scopes[scope].model.idField}'`)
      return { scope, path: path.slice(1), model: scopes[scope].model }
    }
    if (variables.has(first) && !model.fields.has(first) && !model.relations.has(first)) {
      throw new FilterTypeError(`'${first}' is a lambda variable, known only inside its lambda`)
    }
    return { scope: 0, path, model: root.model }
  }

  const typed = (operand: Operand, scopes: readonly Scope[]): Typed => {
    switch (operand.kind) {
      case 'literal':
        return { operand, type: literalType(operand) }
      case 'field': {
        const { scope, path, model: owner } = locate(operand.path, scopes)
        const field: FieldRef = scope === 0 ? { kind: 'field', path } : { kind: 'field', path, scope }
        return { operand: field, type: fieldType(path, owner) }
      }
      case 'call': {
        const { params, result } = FUNCTIONS[operand.name]
        const args = operand.args.map((arg, i) => argument(arg, params[i], operand.name, scopes))
        return { operand: { ...operand, args }, type: result }
      }
    }
  }

  /** A function's argument, of one of the `allowed` types (a literal null is none: only values may be null). */
  const argument = (arg: Operand, allowed: readonly FieldType[], name: string, scopes: readonly Scope[]): Operand => {
    const { operand, type } = typed(arg, scopes)
    const integral = type === 'number' && operand.kind === 'literal' && Number.isInteger(operand.value)
    if (type !== null && (allowed.includes(type) || (integral && allowed.includes('integer')))) return operand
    const typeName = operand.kind === 'literal' ? '' : ` (${TYPE_NAMES[type as FieldType]})`
    throw new FilterTypeError(`${name}() needs ${WANTS[allowed[0]]}, not ${label(operand)}${typeName}`)
  }

  return check(node, [root])
}

/** Both sides of a comparison, a literal in the type of the other side; dates beside date-times compare as instants. */
function pair (left: Typed, right: Typed): [Operand, Operand] {
  if (left.operand.kind === 'literal' && right.operand.kind === 'literal') {
    return left.type === null || right.type === null ? [left.operand, right.operand] : [left.operand, coerce(right.operand, left.type, left.operand)]
  }
  if (left.operand.kind === 'literal') {
    const [b, a] = pair(right, left)
    return [a, b]
  }
  const type = left.type as FieldType
  if (right.operand.kind === 'literal') {
    const literal = coerce(right.operand, type, left.operand)
    return [type === 'date' && literal.type === 'datetime' ? asInstant(left.operand) : left.operand, literal]
  }
  const other = right.type as FieldType
  if (!comparable(type, other)) {
    throw new FilterTypeError(`${label(left.operand)} (${TYPE_NAMES[type]}) cannot be compared with ${label(right.operand)} (${TYPE_NAMES[other]})`)
  }
  // Two date-times: only their type says the values are instants (functions take strings).
  if (type === 'datetime' || other === 'datetime') return [asInstant(left.operand), asInstant(right.operand)]
  return [left.operand, right.operand]
}

/** A field read as an instant (a date as the instant its day begins in UTC); other operands say so themselves. */
function asInstant (operand: Operand): Operand {
  return operand.kind === 'field' ? { ...operand, type: 'datetime' } : operand
}

/** A condition of literals alone, decided now. */
function fold (node: FilterNode): FilterNode {
  return compilePredicate(node, () => [])({}) ? TRUE : FALSE
}

function literalType (literal: Literal): FieldType | null {
  return literal.type === 'null' ? null : literal.type
}

/** The variables the filter's lambdas declare, to tell one used outside its lambda from an unknown field. */
function lambdaVariables (node: FilterNode, into = new Set<string>()): Set<string> {
  switch (node.kind) {
    case 'and':
    case 'or':
      lambdaVariables(node.left, into)
      return lambdaVariables(node.right, into)
    case 'not':
      return lambdaVariables(node.operand, into)
    case 'lambda':
      into.add(node.variable)
      return node.predicate === null ? into : lambdaVariables(node.predicate, into)
    default:
      return into
  }
}

function fieldType (path: readonly string[], model: View): FieldType {
  const name = path.join('/')
  const [first, second] = path
  const relation = model.relations.get(first)
  if (path.length === 1) {
    const field = model.fields.get(first)
    if (field !== undefined) return field.type
    if (relation !== undefined) throw new FilterTypeError(`'${name}' is a relation; filter on one of its fields, e.g. '${name}/${relation.target.idField}'`)
    throw new FilterTypeError(`unknown field '${name}'`)
  }
  if (path.length !== 2) throw new FilterTypeError(`'${name}' is too deep: a path may follow one relation`)
  if (relation === undefined) throw new FilterTypeError(`unknown relation '${first}' in '${name}'`)
  const field = relation.target.fields.get(second)
  if (field === undefined) throw new FilterTypeError(`unknown field '${name}'`)
  return field.type
}

// Integers and numbers mix; dates and date-times mix as instants.
function comparable (a: FieldType, b: FieldType): boolean {
  if (a === 'json' || b === 'json') return false
  const numeric = (type: FieldType): boolean => type === 'integer' || type === 'number'
  const temporal = (type: FieldType): boolean => type === 'date' || type === 'datetime'
  return a === b || (numeric(a) && numeric(b)) || (temporal(a) && temporal(b))
}

/**
 * The literal in the form a value of `type` compares with; null compares with anything. A date
 * beside a date-time becomes the instant its day begins in UTC; a date-time beside a date stays
 * one (the date is read as that instant).
 */
function coerce (literal: Literal, type: FieldType, subject: Operand): Literal {
  if (literal.type === 'null') return literal
  switch (type) {
    case 'string':
    case 'integer': // with any number: `year gt 1960.5` means what it says
    case 'number':
    case 'boolean':
      if (literal.type === type || (type === 'integer' && literal.type === 'number')) return literal
      break
    case 'date':
    case 'datetime': {
      if (literal.type === type || literal.type === 'datetime') return literal
      if (literal.type === 'date') return { kind: 'literal', type: 'datetime', value: `${literal.value}T00:00:00Z` }
      const typed = literal.type === 'string' ? fromText[type](literal.value) : undefined
      if (typed !== undefined) return typed
      break
    }
  }
  throw new FilterTypeError(`${label(subject)} is ${TYPE_NAMES[type]} and cannot be compared with ${label(literal)}`)
}

function label (operand: Operand): string {
  switch (operand.kind) {
    case 'field':
      return `'${operand.path.join('/')}'`
    case 'call':
      return `${operand.name}(${operand.args.map(label).join(', ')})`
    case 'literal':
      switch (operand.type) {
        case 'string': return `'${operand.value.replaceAll("'", "''")}'`
        case 'date': return `the date ${operand.value}`
        case 'datetime': return `the date-time ${operand.value}`
        default: return String(operand.value)
      }
  }
}

const numberText = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/

/**
 * Text read as a value of each type, unquoted: a simple filter's value (`?year=1964`), and a quoted
 * text beside a date or a date-time in `filter` (coerce), so both forms accept the same dates.
 */
const fromText: Readonly<Record<FieldType, (text: string) => Literal | undefined>> = {
  string: text => ({ kind: 'literal', type: 'string', value: text }),
  integer: text => /^-?(0|[1-9]\d{0,15})$/.test(text) ? { kind: 'literal', type: 'number', value: Number(text) } : undefined,
  number: text => numberText.test(text) && Number.isFinite(Number(text)) ? { kind: 'literal', type: 'number', value: Number(text) } : undefined,
  boolean: text => text === 'true' || text === 'false' ? { kind: 'literal', type: 'boolean', value: text === 'true' } : undefined,
  date: text => isDate(text) ? { kind: 'literal', type: 'date', value: text } : undefined,
  datetime: text => isDateTime(text) ? { kind: 'literal', type: 'datetime', value: text } : undefined,
  json: () => undefined
}

/** What a simple filter's text must be for a field of each type: its refusal says so. */
export const textForms: Readonly<Record<FieldType, string>> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: "'true' or 'false'",
  date: 'a date (YYYY-MM-DD)',
  datetime: 'a date-time (RFC 3339)',
  json: 'null (an object or array field matches only null)'
}

/**
 * A simple filter's text (`?year=1964`) as a literal of the field's type, or undefined when it is
 * none (textForms says what it must be); `null` matches a null value of a non-string field.
 */
export function coerceLiteral (field: FieldModel, text: string): Literal | undefined {
  if (text === 'null' && field.nullable && field.type !== 'string') return { kind: 'literal', type: 'null', value: null }
  return fromText[field.type](text)
}
