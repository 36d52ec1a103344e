// Checks a parsed filter against a resource (spec "Advanced filtering (`filter`)"): fields exist
// and are compared with values of their type. Stores then trust the AST they receive.
import type { FieldRef, FilterNode, Literal, Operand, ValueCall } from './ast.js'
import type { FieldType, ResourceModel } from '../../registry/model.js'
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

/**
 * Returns the filter with literals converted to the type of what they are compared with
 * (`'2024-01-31'` against a date field becomes a date literal); throws FilterTypeError.
 */
export function checkFilter (node: FilterNode, model: ResourceModel): FilterNode {
  switch (node.kind) {
    case 'and':
    case 'or':
      return { kind: node.kind, left: checkFilter(node.left, model), right: checkFilter(node.right, model) }
    case 'not':
      return { kind: 'not', operand: checkFilter(node.operand, model) }
    case 'match':
      for (const arg of node.args) requireString(arg, model, node.name)
      return node
    case 'in': {
      const { operand } = node
      if (operand.kind === 'literal') throw new FilterTypeError('a comparison needs a field')
      const type = typeOf(operand, model)
      return { ...node, values: node.values.map(value => coerce(value, type, operand)) }
    }
    case 'compare': {
      const { left, right } = node
      if (left.kind === 'literal') {
        if (right.kind === 'literal') throw new FilterTypeError('a comparison needs a field')
        return { ...node, left: coerce(left, typeOf(right, model), right) }
      }
      const leftType = typeOf(left, model)
      if (right.kind === 'literal') return { ...node, right: coerce(right, leftType, left) }
      const rightType = typeOf(right, model)
      if (!comparable(leftType, rightType)) {
        throw new FilterTypeError(`${label(left)} (${TYPE_NAMES[leftType]}) cannot be compared with ${label(right)} (${TYPE_NAMES[rightType]})`)
      }
      // Two date-time fields: only their type says the values are instants (functions take strings).
      if (leftType === 'datetime') return { ...node, left: { ...left as FieldRef, type: 'datetime' }, right: { ...right as FieldRef, type: 'datetime' } }
      return node
    }
  }
}

function typeOf (operand: FieldRef | ValueCall, model: ResourceModel): FieldType {
  if (operand.kind === 'call') {
    requireString(operand.args[0], model, operand.name)
    return 'string'
  }
  return fieldType(operand.path, model)
}

function fieldType (path: readonly string[], model: ResourceModel): FieldType {
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

function requireString (operand: Operand, model: ResourceModel, functionName: string): void {
  if (operand.kind === 'literal') {
    if (operand.type !== 'string') throw new FilterTypeError(`${functionName}() needs strings, not ${label(operand)}`)
    return
  }
  const type = typeOf(operand, model)
  if (type !== 'string') throw new FilterTypeError(`${functionName}() needs strings, not ${label(operand)} (${TYPE_NAMES[type]})`)
}

// Integers and numbers mix; dates and date-times do not, since a date has no instant.
function comparable (a: FieldType, b: FieldType): boolean {
  if (a === 'json' || b === 'json') return false
  const numeric = (type: FieldType): boolean => type === 'integer' || type === 'number'
  return a === b || (numeric(a) && numeric(b))
}

/** The literal in the form a field of `type` compares with; null compares with anything. */
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
      if (literal.type === type) return literal
      const valid = type === 'date' ? isDate : isDateTime
      if (literal.type === 'string' && valid(literal.value)) return { kind: 'literal', type, value: literal.value }
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
      return `${operand.name}(${label(operand.args[0])})`
    case 'literal':
      switch (operand.type) {
        case 'string': return `'${operand.value.replaceAll("'", "''")}'`
        case 'date': return `the date ${operand.value}`
        case 'datetime': return `the date-time ${operand.value}`
        default: return String(operand.value)
      }
  }
}
