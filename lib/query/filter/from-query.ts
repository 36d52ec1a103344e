// A collection's filter from its query string (spec "Query parameters on collections", "Advanced
// filtering (`filter`)"): the `filter` expression and the simple `?field=value` filters beside it,
// one checked tree, each literal typed by check.ts. The `filter` entry of query/parameters.ts reads it.
import type { FilterNode, Literal } from './ast.js'
import { parseFilter, FilterSyntaxError } from './parser.js'
import { checkFilter, coerceLiteral, FilterTypeError, textForms } from './check.js'
import type { FieldModel, View } from '../../registry/model.js'
import { unstorableText } from '../../values/storable.js'
import { keepBounded } from '../../bounded.js'
import type { InvalidParam } from '../../errors.js'

/** `?title=X&author.country=NZ&year=1&year=2`: each name with its values (any of them matches), sorted by name. */
export type SimpleFilters = Array<[string, string[]]>

/** What a query's filters are: the one tree the store runs, and the texts as sent, which the links and a token's binding repeat. */
export interface FilterReading {
  /** `filter`'s text as sent; undefined without one. */
  readonly text: string | undefined
  readonly simple: SimpleFilters
  /** Null when the query filters nothing (or something is wrong with it: a problem says what). */
  readonly node: FilterNode | null
}

const filterCacheLimit = 500
/**
 * A longer input is parsed each time rather than kept, so the cache holds at most
 * filterCacheLimit × filterKeyLimit characters of keys per resource.
 */
export const filterKeyLimit = 4096
const filterCache = new WeakMap<View, Map<string, FilterNode>>()

/**
 * `text` as sent under `name` (`filter` or `$filter`), and every name of `query` that is not
 * `reserved` as a simple filter; each problem names its parameter.
 */
export function readFilter (model: View, text: string | undefined, name: string, query: Readonly<Record<string, string | string[] | undefined>>, reserved: ReadonlySet<string>, problems: InvalidParam[]): FilterReading {
  const simple = simpleFilters(model, query, reserved, problems)
  return { text, simple, node: buildFilter(model, comparable(text, name, problems), name, simple, problems) }
}

/** `?title=X&author.country=NZ`: each name a field or relation.field; repeated values mean any of them. */
function simpleFilters (model: View, query: Readonly<Record<string, string | string[] | undefined>>, reserved: ReadonlySet<string>, problems: InvalidParam[]): SimpleFilters {
  const filters: SimpleFilters = []
  for (const [name, value] of Object.entries(query)) {
    if (reserved.has(name) || value === undefined) continue
    if (resolveField(model, name) === undefined) {
      problems.push({ name, reason: 'unknown query parameter or field' })
      continue
    }
    const values = (Array.isArray(value) ? value : [value]).map(one => comparable(one, name, problems))
    if (!values.includes(undefined)) filters.push([name, values as string[]])
  }
  return filters.sort(([a], [b]) => a < b ? -1 : 1)
}

/**
 * A filter's text, unless it holds what no stored text does (NUL, a lone surrogate): every store
 * refuses it the same way, where PostgreSQL would fail the query and the memory store match nothing.
 */
function comparable (text: string | undefined, name: string, problems: InvalidParam[]): string | undefined {
  const reason = text === undefined ? undefined : unstorableText(text)
  if (reason === undefined) return text
  problems.push({ name, reason: `${reason}, which no stored text holds` })
  return undefined
}

function resolveField (model: View, name: string): FieldModel | undefined {
  const dot = name.indexOf('.')
  if (dot === -1) return model.fields.get(name)
  return model.relations.get(name.slice(0, dot))?.target.fields.get(name.slice(dot + 1))
}

/** `filterName`: the parameter the text was sent as, `filter` or `$filter`. */
function buildFilter (model: View, text: string | undefined, filterName: string, simple: SimpleFilters, problems: InvalidParam[]): FilterNode | null {
  if (text === undefined && simple.length === 0) return null
  // The cache is shared by every client: JSON keeps a missing filter apart from `filter=`, and the
  // parts apart whatever characters (U+0000 included) a value holds, so no query reads another's tree.
  const key = JSON.stringify([text ?? null, simple])
  let cache = filterCache.get(model)
  if (cache === undefined) filterCache.set(model, cache = new Map())
  const cached = cache.get(key)
  if (cached !== undefined) return cached
  let node: FilterNode | null = null
  const before = problems.length
  if (text !== undefined) {
    try {
      node = checkFilter(parseFilter(text), model)
    } catch (error) {
      if (!(error instanceof FilterSyntaxError || error instanceof FilterTypeError)) throw error
      problems.push({ name: filterName, reason: error.message })
    }
  }
  for (const [name, values] of simple) {
    const field = resolveField(model, name) as FieldModel
    const literals: Literal[] = []
    for (const value of values) {
      const literal = coerceLiteral(field, value)
      if (literal === undefined) problems.push({ name, reason: `'${value}' is not ${textForms[field.type]}` })
      else literals.push(literal)
    }
    const operand = { kind: 'field', path: name.split('.') } as const
    const condition: FilterNode = literals.length === 1
      ? { kind: 'compare', op: 'eq', left: operand, right: literals[0] }
      : { kind: 'in', operand, values: literals }
    node = node === null ? condition : { kind: 'and', left: node, right: condition }
  }
  if (problems.length > before || node === null) return null
  return key.length <= filterKeyLimit ? keepBounded(cache, filterCacheLimit, key, node) : node
}
