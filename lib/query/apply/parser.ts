// `apply=` (OData 4.0 Data Aggregation, $apply without the `$`): transformations chained with
// `/`, any number of `filter(…)` first, then one `aggregate(…)` or `groupby((…)[,aggregate(…)])`.
// Parsed and checked against the caller's view in one pass: each problem is a FilterSyntaxError
// whose message ends with its position in the text, as filter's do.
import type { FieldModel, FieldType, View } from '../../registry/model.js'
import type { FilterNode } from '../filter/ast.js'
import { syntaxError } from '../filter/lexer.js'
import type { FilterSyntaxError } from '../filter/lexer.js'
import { parseFilter } from '../filter/parser.js'
import { checkFilter, FilterTypeError } from '../filter/check.js'
import type { Aggregate, AggregateMethod, GroupKey } from './ast.js'

/** `apply=` read: what the store runs, and the groups as `sort` reads them. */
export interface Aggregation {
  /** The filter() steps, ANDed; null without any. */
  readonly filter: FilterNode | null
  readonly groupBy: readonly GroupKey[]
  readonly aggregates: readonly Aggregate[]
  /** A view whose fields are the groups' members (grouping values and aliases), for `sort`'s parser. */
  readonly groups: View
}

const methods: ReadonlySet<string> = new Set(['sum', 'average', 'min', 'max', 'countdistinct'])
/** The types each method takes; countdistinct takes any but json. */
const accepts: Readonly<Record<AggregateMethod, readonly FieldType[]>> = {
  sum: ['integer', 'number'],
  average: ['integer', 'number'],
  min: ['integer', 'number', 'string', 'date', 'datetime'],
  max: ['integer', 'number', 'string', 'date', 'datetime'],
  countdistinct: ['integer', 'number', 'string', 'date', 'datetime', 'boolean']
}
// OData 4.0 Data Aggregation's other transformations: refused by name.
const unsupported = new Set(['compute', 'concat', 'expand', 'search', 'identity', 'orderby', 'skip', 'top', 'nest', 'topcount',
  'topsum', 'toppercent', 'bottomcount', 'bottomsum', 'bottompercent', 'ancestors', 'descendants', 'traverse'])
const WORD = /[$A-Za-z_][\w]*(?:[/.][A-Za-z_]\w*)*/y
const ALIAS = /^[A-Za-z_]\w*$/

/** Parses and checks `text` against the caller's view; throws FilterSyntaxError (position in the message). */
export function parseApply (text: string, model: View): Aggregation {
  let at = 0
  const space = () => { while (text[at] === ' ' || text[at] === '\t') at++ }
  const eat = (char: string): boolean => {
    space()
    if (text[at] !== char) return false
    at++
    return true
  }
  const describe = (position: number) => position >= text.length ? 'end of apply' : `'${[...text.slice(position, position + 2)][0]}'`
  const expect = (char: string, after: string) => {
    space()
    if (!eat(char)) throw syntaxError(`expected '${char}' ${after}, found ${describe(at)}`, at)
  }
  const word = (what: string): { text: string, at: number } => {
    space()
    WORD.lastIndex = at
    const found = WORD.exec(text)?.[0]
    if (found === undefined) throw syntaxError(`expected ${what}, found ${describe(at)}`, at)
    const start = at
    at += found.length
    return { text: found, at: start }
  }
  const keyword = (expected: string, after: string) => {
    const found = word(`'${expected}' ${after}`)
    if (found.text.toLowerCase() !== expected) throw syntaxError(`expected '${expected}' ${after}, found '${found.text}'`, found.at)
  }

  const filters: FilterNode[] = []
  let groupBy: GroupKey[] | undefined
  let aggregates: Aggregate[] = []
  const taken = new Set<string>()

  /** A grouping value: a field of the view, or a field of a `one` relation's target. */
  const groupKey = (): GroupKey => {
    const { text: name, at: start } = word('a field to group by')
    const path = name.split(/[/.]/)
    let field: FieldModel | undefined
    if (path.length === 1) {
      field = model.fields.get(path[0])
      if (field === undefined) throw syntaxError(model.relations.has(path[0]) ? `'${name}' is a relation; group by one of its fields, e.g. '${name}/${(model.relations.get(path[0]) as { target: View }).target.idField}'` : `unknown field '${name}'`, start)
    } else {
      const relation = model.relations.get(path[0])
      if (path.length > 2) throw syntaxError(`'${name}' is too deep: a path may follow one relation`, start)
      if (relation === undefined) throw syntaxError(`unknown relation '${path[0]}' in '${name}'`, start)
      if (relation.kind !== 'one') throw syntaxError(`'${name}' follows a 'many' relation; group by a field of a 'one' relation`, start)
      field = relation.target.fields.get(path[1])
      if (field === undefined) throw syntaxError(`unknown field '${name}'`, start)
    }
    if (field.type === 'json') throw syntaxError(`'${name}' holds objects or arrays and cannot be grouped by`, start)
    const key = path.join('/')
    if (taken.has(key)) throw syntaxError(`'${key}' appears more than once`, start)
    taken.add(key)
    return { name: key, path: path as unknown as GroupKey['path'], type: field.type }
  }

  const alias = (): string => {
    keyword('as', 'and an alias')
    const { text: name, at: start } = word('an alias')
    if (!ALIAS.test(name)) throw syntaxError(`'${name}' is not an alias: a name of letters, digits and _`, start)
    if (taken.has(name) || model.fields.has(name) || model.relations.has(name)) throw syntaxError(`the alias '${name}' is taken: name it apart from the fields, relations and other aliases`, start)
    taken.add(name)
    return name
  }

  const aggregate = (): Aggregate => {
    space()
    const start = at
    const { text: name } = word("'$count' or a field")
    if (name.toLowerCase() === '$count') return { method: 'count', alias: alias(), type: 'integer' }
    if (name.startsWith('$')) throw syntaxError(`'${name}' is not supported`, start)
    if (name.includes('/') || name.includes('.')) throw syntaxError(`'${name}': aggregate a field of the ${model.name} themselves`, start)
    const field = model.fields.get(name)
    if (field === undefined) throw syntaxError(`unknown field '${name}'`, start)
    keyword('with', `after '${name}'`)
    const { text: methodText, at: methodAt } = word('sum, average, min, max or countdistinct')
    const method = methodText.toLowerCase()
    if (!methods.has(method)) throw syntaxError(`unknown aggregation method '${methodText}': sum, average, min, max or countdistinct`, methodAt)
    if (!accepts[method as AggregateMethod].includes(field.type)) throw syntaxError(`${method} needs ${method === 'sum' || method === 'average' ? 'a number' : 'values with an order'}, and '${name}' is ${field.type}`, methodAt)
    const type: FieldType = method === 'countdistinct' ? 'integer' : method === 'average' ? 'number' : field.type
    return { alias: alias(), method: method as AggregateMethod, field: name, fieldType: field.type, type }
  }

  const aggregateList = (): Aggregate[] => {
    expect('(', "after 'aggregate'")
    const list = [aggregate()]
    while (eat(',')) list.push(aggregate())
    expect(')', 'closing aggregate(')
    return list
  }

  /** filter(…): the text up to its closing parenthesis (quotes skipped) is filter's language, checked against the view. */
  const filterStep = (): FilterNode => {
    expect('(', "after 'filter'")
    const start = at
    let depth = 1
    let end = start
    let quoted = false
    for (; end < text.length && depth > 0; end++) {
      // A doubled quote inside a string toggles twice: the string goes on.
      if (text[end] === "'") quoted = !quoted
      else if (!quoted && text[end] === '(') depth++
      else if (!quoted && text[end] === ')') depth--
    }
    const inner = depth === 0 ? text.slice(start, end - 1) : text.slice(start)
    let node: FilterNode
    try {
      node = checkFilter(parseFilter(inner), model)
    } catch (error) {
      // checkFilter's FilterTypeError has no position; parseFilter throws FilterSyntaxError only.
      if (error instanceof FilterTypeError) throw syntaxError(`${error.message} in filter()`, start)
      const { message, position } = error as FilterSyntaxError
      const suffix = ` at position ${position}`
      // Its messages end with their position, but for the length limit's.
      throw syntaxError(`${message.endsWith(suffix) ? message.slice(0, -suffix.length) : message} in filter()`, start + position)
    }
    if (depth !== 0) throw syntaxError("expected ')' closing filter(", text.length)
    at = end
    return node
  }

  do {
    space()
    const { text: name, at: start } = word('a transformation: aggregate, groupby or filter')
    const lower = name.toLowerCase()
    if (groupBy !== undefined && ['filter', 'aggregate', 'groupby'].includes(lower)) throw syntaxError(`${lower}() after groupby() or aggregate() is not supported`, start)
    if (lower === 'filter') filters.push(filterStep())
    else if (lower === 'aggregate') {
      groupBy = []
      aggregates = aggregateList()
    } else if (lower === 'groupby') {
      expect('(', "after 'groupby'")
      expect('(', 'before the fields to group by')
      const keys = [groupKey()]
      while (eat(',')) keys.push(groupKey())
      expect(')', 'after the fields to group by')
      if (eat(',')) {
        keyword('aggregate', "after groupby's fields")
        aggregates = aggregateList()
      }
      expect(')', 'closing groupby(')
      groupBy = keys
    } else if (unsupported.has(lower)) throw syntaxError(`the transformation ${lower}() is not supported`, start)
    else throw syntaxError(`unknown transformation '${name}': aggregate, groupby or filter`, start)
  } while (eat('/'))
  space()
  if (at < text.length) throw syntaxError(`unexpected ${describe(at)}`, at)
  if (groupBy === undefined) throw syntaxError('expected aggregate(…) or groupby(…) after the filters', text.length)

  const members = new Map<string, FieldModel>()
  const member = (name: string, type: FieldType) => members.set(name, { name, type, nullable: true, required: false, readOnly: true, schema: {} as FieldModel['schema'] })
  for (const key of groupBy) member(key.name, key.type)
  for (const one of aggregates) member(one.alias, one.type)
  const groups: View = Object.freeze({ ...model, fields: members, relations: new Map(), mandatory: [], visible: undefined, hidden: undefined })
  const filter = filters.reduce<FilterNode | null>((all, node) => all === null ? node : { kind: 'and', left: all, right: node }, null)
  return { filter, groupBy, aggregates, groups }
}
