// `apply=` (OData 4.0 Data Aggregation, $apply without the `$`): transformations chained with
// `/`, any number of `filter(…)` of the records, one `aggregate(…)` or `groupby((…)[,aggregate(…)])`,
// then any number of `filter(…)` of the groups (SQL's HAVING). Read from the tokens of the filter
// language (filter/lexer.ts), each filter(…) by filter's own parser, and checked against the
// caller's view in one pass: each problem is a FilterSyntaxError whose message ends with its
// position in the text, as filter's do.
import type { FieldModel, FieldType, View } from '../../registry/model.js'
import type { FilterNode, Operand } from '../filter/ast.js'
import { describe as describeAs, isPunct, syntaxError, tokenize } from '../filter/lexer.js'
import type { FilterSyntaxError, Punct, Token } from '../filter/lexer.js'
import { MAX_FILTER_LENGTH, parseFilterTokens } from '../filter/parser.js'
import { checkFilter, FilterTypeError } from '../filter/check.js'
import { groupsView } from './ast.js'
import type { Aggregate, AggregateMethod, GroupKey } from './ast.js'

/** `apply=` read: what the store runs, and the groups as `sort` reads them. */
export interface Aggregation {
  /** The filter() steps before the grouping, ANDed; null without any. */
  readonly filter: FilterNode | null
  readonly groupBy: readonly GroupKey[]
  readonly aggregates: readonly Aggregate[]
  /** The filter() steps after the grouping, ANDed, on the groups' members (AggregateQuery.having); null without any. */
  readonly having: FilterNode | null
  /** A view whose fields are the groups' members (grouping values and aliases), for `sort`'s parser. */
  readonly groups: View
}

type Name = Extract<Token, { kind: 'name' }>

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
const ALIAS = /^[A-Za-z_]\w*$/

const and = (nodes: readonly FilterNode[]): FilterNode | null =>
  nodes.reduce<FilterNode | null>((all, node) => all === null ? node : { kind: 'and', left: all, right: node }, null)

/** Parses and checks `text` against the caller's view; throws FilterSyntaxError (position in the message). */
export function parseApply (text: string, model: View): Aggregation {
  const tokens = tokenize(text)
  let index = 0
  const peek = (): Token => tokens[index]
  const describe = (token: Token) => describeAs(token, 'apply')
  const eat = (punct: Punct): boolean => {
    if (!isPunct(peek(), punct)) return false
    index++
    return true
  }
  const expect = (punct: Punct, after: string) => {
    if (!eat(punct)) throw syntaxError(`expected '${punct}' ${after}, found ${describe(peek())}`, peek().position)
  }
  const name = (what: string): Name => {
    const token = peek()
    if (token.kind !== 'name') throw syntaxError(`expected ${what}, found ${describe(token)}`, token.position)
    index++
    return token
  }
  const keyword = (expected: string, after: string) => {
    const found = name(`'${expected}' ${after}`)
    if (found.text.toLowerCase() !== expected) throw syntaxError(`expected '${expected}' ${after}, found '${found.text}'`, found.position)
  }

  const filters: FilterNode[] = []
  const having: FilterNode[] = []
  /** Set by aggregate(…) or groupby(…): what follows filters the groups. */
  let grouping: Pick<Aggregation, 'groupBy' | 'aggregates' | 'groups'> | undefined
  const taken = new Set<string>()

  /** A grouping value: a field of the view, or a field of a `one` relation's target. */
  const groupKey = (): GroupKey => {
    const { text: written, path, position } = name('a field to group by')
    let field: FieldModel | undefined
    if (path.length === 1) {
      field = model.fields.get(path[0])
      if (field === undefined) throw syntaxError(model.relations.has(path[0]) ? `'${written}' is a relation; group by one of its fields, e.g. '${written}/${(model.relations.get(path[0]) as { target: View }).target.idField}'` : `unknown field '${written}'`, position)
    } else {
      const relation = model.relations.get(path[0])
      if (path.length > 2) throw syntaxError(`'${written}' is too deep: a path may follow one relation`, position)
      if (relation === undefined) throw syntaxError(`unknown relation '${path[0]}' in '${written}'`, position)
      if (relation.kind !== 'one') throw syntaxError(`'${written}' follows a 'many' relation; group by a field of a 'one' relation`, position)
      field = relation.target.fields.get(path[1])
      if (field === undefined) throw syntaxError(`unknown field '${written}'`, position)
    }
    if (field.type === 'json') throw syntaxError(`'${written}' holds objects or arrays and cannot be grouped by`, position)
    const key = path.join('/')
    if (taken.has(key)) throw syntaxError(`'${key}' appears more than once`, position)
    taken.add(key)
    return { name: key, path: path as unknown as GroupKey['path'], type: field.type }
  }

  const alias = (): string => {
    keyword('as', 'and an alias')
    const { text: written, position } = name('an alias')
    if (!ALIAS.test(written)) throw syntaxError(`'${written}' is not an alias: a name of letters, digits and _`, position)
    if (taken.has(written) || model.fields.has(written) || model.relations.has(written)) throw syntaxError(`the alias '${written}' is taken: name it apart from the fields, relations and other aliases`, position)
    taken.add(written)
    return written
  }

  const aggregate = (): Aggregate => {
    const { text: written, path, position } = name("'$count' or a field")
    if (written.toLowerCase() === '$count') return { method: 'count', alias: alias(), type: 'integer' }
    if (written.startsWith('$')) throw syntaxError(`'${written}' is not supported`, position)
    if (path.length > 1) throw syntaxError(`'${written}': aggregate a field of the ${model.name} themselves`, position)
    const field = model.fields.get(written)
    if (field === undefined) throw syntaxError(`unknown field '${written}'`, position)
    keyword('with', `after '${written}'`)
    const { text: methodText, position: methodAt } = name('sum, average, min, max or countdistinct')
    const method = methodText.toLowerCase()
    if (!methods.has(method)) throw syntaxError(`unknown aggregation method '${methodText}': sum, average, min, max or countdistinct`, methodAt)
    if (!accepts[method as AggregateMethod].includes(field.type)) throw syntaxError(`${method} needs ${method === 'sum' || method === 'average' ? 'a number' : 'values with an order'}, and '${written}' is ${field.type}`, methodAt)
    const type: FieldType = method === 'countdistinct' ? 'integer' : method === 'average' ? 'number' : field.type
    return { alias: alias(), method: method as AggregateMethod, field: written, fieldType: field.type, type }
  }

  const aggregateList = (): Aggregate[] => {
    expect('(', "after 'aggregate'")
    const list = [aggregate()]
    while (eat(',')) list.push(aggregate())
    expect(')', 'closing aggregate(')
    return list
  }

  /**
   * filter(…): its tokens up to the matching `)` are filter's language, read by filter's parser
   * and checked against the view (before the grouping) or the groups (after it, `of` given).
   */
  const filterStep = (of?: View): FilterNode => {
    const open = peek()
    expect('(', "after 'filter'")
    const start = index
    let depth = 1
    let end = start
    for (; tokens[end].kind !== 'end'; end++) {
      if (isPunct(tokens[end], '(')) depth++
      else if (isPunct(tokens[end], ')') && --depth === 0) break
    }
    // The closing `)`, or the end of the text when it is missing.
    const close = tokens[end]
    const part = [...tokens.slice(start, end), { kind: 'end', text: '', position: close.position } as const]
    const first = open.position + 1
    if (close.position - first > MAX_FILTER_LENGTH) throw syntaxError(`filter is longer than ${MAX_FILTER_LENGTH} characters in filter()`, first + MAX_FILTER_LENGTH)
    let node: FilterNode
    try {
      node = parseFilterTokens(part)
    } catch (error) {
      // parseFilterTokens throws FilterSyntaxError only; its positions are in the whole text.
      const { reason, position } = error as FilterSyntaxError
      throw syntaxError(`${reason} in filter()`, position)
    }
    if (close.kind === 'end') throw syntaxError("expected ')' closing filter(", close.position)
    index = end + 1
    try {
      return of === undefined ? checkFilter(node, model) : checkFilter(onMembers(node, of, part), of)
    } catch (error) {
      // checkFilter's FilterTypeError has no position; onMembers throws FilterSyntaxError.
      if (error instanceof FilterTypeError) throw syntaxError(`${error.message} in filter()`, first)
      throw error
    }
  }

  do {
    const { text: written, position } = name('a transformation: aggregate, groupby or filter')
    const lower = written.toLowerCase()
    if (lower === 'filter') {
      if (grouping === undefined) filters.push(filterStep())
      else having.push(filterStep(grouping.groups))
    } else if (grouping !== undefined && (lower === 'aggregate' || lower === 'groupby')) {
      throw syntaxError(`${lower}() after groupby() or aggregate() is not supported`, position)
    } else if (lower === 'aggregate') {
      const aggregates = aggregateList()
      grouping = { groupBy: [], aggregates, groups: groupsView(model, [], aggregates) }
    } else if (lower === 'groupby') {
      expect('(', "after 'groupby'")
      expect('(', 'before the fields to group by')
      const groupBy = [groupKey()]
      while (eat(',')) groupBy.push(groupKey())
      expect(')', 'after the fields to group by')
      let aggregates: Aggregate[] = []
      if (eat(',')) {
        keyword('aggregate', "after groupby's fields")
        aggregates = aggregateList()
      }
      expect(')', 'closing groupby(')
      grouping = { groupBy, aggregates, groups: groupsView(model, groupBy, aggregates) }
    } else if (unsupported.has(lower)) throw syntaxError(`the transformation ${lower}() is not supported`, position)
    else throw syntaxError(`unknown transformation '${written}': aggregate, groupby or filter`, position)
  } while (eat('/'))
  if (peek().kind !== 'end') throw syntaxError(`unexpected ${describe(peek())}`, peek().position)
  if (grouping === undefined) throw syntaxError('expected aggregate(…) or groupby(…) after the filters', text.length)
  return { filter: and(filters), ...grouping, having: and(having) }
}

/**
 * A filter of the groups with each path read as one member's name (`author/country`, also written
 * `author.country`, is one member, not a relation's field). A path that names no member is refused
 * where it is first written as one (`tokens`: the filter's, ending with its end); lambdas are left
 * to checkFilter, which refuses them (the groups have no relations).
 */
function onMembers (node: FilterNode, groups: View, tokens: readonly Token[]): FilterNode {
  const operand = (op: Operand): Operand => {
    switch (op.kind) {
      case 'literal': return op
      case 'call': return { ...op, args: op.args.map(operand) }
      case 'field': {
        const member = op.path.join('/')
        if (groups.fields.has(member)) return { ...op, path: [member] }
        // The path's token: a name of that path not followed by '(', which would make it a function's.
        const at = tokens.find((token, i) => token.kind === 'name' && token.path.join('/') === member && !isPunct(tokens[i + 1], '(')) as Token
        throw syntaxError(`'${member}' is neither a grouping value nor an alias: after the grouping, filter() may name ${[...groups.fields.keys()].join(', ')}`, at.position)
      }
    }
  }
  const walk = (node: FilterNode): FilterNode => {
    switch (node.kind) {
      case 'and':
      case 'or':
        return { ...node, left: walk(node.left), right: walk(node.right) }
      case 'not': return { ...node, operand: walk(node.operand) }
      case 'compare': return { ...node, left: operand(node.left), right: operand(node.right) }
      case 'in': return { ...node, operand: operand(node.operand) }
      case 'match': return { ...node, args: [operand(node.args[0]), operand(node.args[1])] }
      case 'lambda': return node
    }
  }
  return walk(node)
}
