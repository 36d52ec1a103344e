// Parses a collection's query string once into a checked ListRequest (spec "Query parameters on
// collections", "Sorting", "Paging"): every problem is collected into one 400 with invalidParams.
import type { FilterNode, Literal } from './filter/ast.js'
import { parseFilter, FilterSyntaxError } from './filter/parser.js'
import { checkFilter, FilterTypeError } from './filter/check.js'
import { isDate, isDateTime } from '../values/iso-date.js'
import { CursorError } from '../paging/cursor.js'
import type { CursorCodec } from '../paging/cursor.js'
import { itemParameterNames, largestCount, listParameterNames, odataParameters, queryParameters, singleValue } from './parameters.js'
import type { ParameterName, QueryParameter } from './parameters.js'
import type { FieldModel, RelationModel, ResourceModel } from '../registry/model.js'
import type { ListQuery, SortKey } from './store-query.js'
import { unstorableText } from '../values/storable.js'
import { QueryInvalidError, withInvalidParams } from '../errors.js'
import { keepBounded } from '../bounded.js'
import type { InvalidParam } from '../errors.js'

export type RawQuery = Record<string, string | string[] | undefined>

/** The query options that stay fixed while paging, already encoded for links. */
export interface ListRequest {
  readonly query: ListQuery
  readonly pageSize: number
  /** Offset paging: the 0-based position; absent in token paging. */
  readonly offset?: number
  /** Offset paging: the 1-based page number (as sent, or derived from `offset`); absent in token paging. */
  readonly pageOffset?: number
  /** The continuation token the page was read with, for its `self` link. */
  readonly token?: string
  /** How the client asked for the page, so links keep that form. */
  readonly pagingMode: 'token' | 'offset' | 'pageOffset'
  /** Requested fields plus the mandatory ones; null for all. */
  readonly fields: ReadonlySet<string> | null
  readonly expand: readonly RelationModel[]
  readonly include: readonly RelationModel[]
  /** `filter=…&sort=…` etc., for page links; empty when none. */
  readonly stableQuery: string
  /** What a continuation token is bound to. */
  readonly binding: string
}

export interface ListQueryContext {
  readonly cursor: CursorCodec
  /** Paging used when the client names none. */
  readonly defaultPaging: 'token' | 'offset'
}

const filterCacheLimit = 500
// A longer input is parsed each time rather than kept, so the cache holds at most
// filterCacheLimit × filterKeyLimit characters of keys per resource.
const filterKeyLimit = 4096
const filterCache = new WeakMap<ResourceModel, Map<string, FilterNode>>()

const requestCacheLimit = 500
const requestCache = new WeakMap<ListQueryContext, WeakMap<ResourceModel, Map<string, ListRequest>>>()

/**
 * parseListQuery, remembered by query for a caller's view: the same query from callers who see
 * the same view is the same ListRequest, worked out once, and what is derived from its objects
 * (the SQL store's statement) is found at once. Keyed by the parsed parameters themselves, not
 * the URL, so that a host's hook that changes `request.query` is never answered from another
 * request's entry. Not for a query with a token, which may have expired since (each is opened
 * anew), nor one that is refused (not kept).
 */
export function listRequestFor (model: ResourceModel, raw: RawQuery, context: ListQueryContext, base: string): ListRequest {
  if (raw.token !== undefined) return parseListQuery(model, raw, context, base)
  const key = JSON.stringify([base, raw])
  if (key.length > filterKeyLimit) return parseListQuery(model, raw, context, base)
  let byView = requestCache.get(context)
  if (byView === undefined) requestCache.set(context, byView = new WeakMap())
  let cache = byView.get(model)
  if (cache === undefined) byView.set(model, cache = new Map())
  const cached = cache.get(key)
  if (cached !== undefined) return cached
  const parsed = parseListQuery(model, raw, context, base)
  const { query } = parsed
  return keepBounded(cache, requestCacheLimit, key, Object.freeze({ ...parsed, query: Object.freeze({ ...query, sort: Object.freeze(query.sort), window: Object.freeze(query.window) }) }))
}

/** `base` is the collection's path (for nested collections it names the parent): tokens are bound to it. */
export function parseListQuery (model: ResourceModel, raw: RawQuery, context: ListQueryContext, base: string): ListRequest {
  const problems: InvalidParam[] = []
  const { given, read, sentAs } = readParameters(model, raw, conventionNames, problems)
  const pageSize = read('pageSize') ?? model.defaultPageSize
  const total = read('total')
  const sortKeys = read('sort')
  const sort = withTieBreaker(model, sortKeys)
  const expand = read('expand')
  const include = read('include')
  const fields = withRelationKeys(read('fields') ?? readableFields(model), [...expand, ...include])
  const simple = simpleFilters(model, raw, problems)
  const filter = buildFilter(model, comparable(read('filter'), sentAs('filter'), problems), sentAs('filter'), simple, problems)

  // `page` is the spec's alias of `pageOffset` (its link examples use it); naming both is ambiguous.
  const pageName = given.pageOffset !== undefined ? 'pageOffset' : 'page'
  if (given.pageOffset !== undefined && given.page !== undefined) problems.push({ name: 'page', reason: 'page is an alias of pageOffset; send one of them' })
  const pageText = given[pageName]
  const pageOffset = read(pageName)
  const offsetValue = read('offset')
  if (given.offset !== undefined && pageText !== undefined) problems.push({ name: pageName, reason: `${sentAs('offset')} and ${pageName} cannot be combined` })
  const token = read('token')
  if (token !== undefined && (given.offset !== undefined || pageText !== undefined)) problems.push({ name: 'token', reason: `a token cannot be combined with ${sentAs('offset')} or pageOffset` })

  // Lists as sent, comma-separated or repeated: the links are followed by the client that chose the
  // form. They use the conventions' names, OData's `$orderby` written as sort's text, as the
  // envelope's own paging parameters (pageSize, offset, token) do: either name leads on alike.
  const stableQuery = encodeStable([
    ['filter', given.filter], ...simple,
    ['sort', sentAs('sort') === 'sort' ? raw.sort : sortText(sortKeys)], ['fields', raw[sentAs('fields')]],
    ['expand', raw[sentAs('expand')]], ['include', raw.include],
    ['total', total ? 'true' : undefined]
  ])
  // Paging stability 2–3: a token only opens with the filter, sort and fields it was issued for.
  // JSON keeps the parts apart whatever characters they hold; pageSize may change between pages.
  const binding = JSON.stringify([base, given.filter ?? null, simple, sort.map(sortKey), fields === null ? null : [...fields].sort()])

  let window: ListQuery['window'] = { kind: 'offset', offset: 0 }
  let pagingMode: ListRequest['pagingMode'] = context.defaultPaging
  if (token !== undefined) {
    if (problems.length === 0) {
      try {
        const position = context.cursor.open(token, binding)
        // No values: the `last` link's token, a backward read from the end.
        const fromEnd = position.window === 'before' && position.values.length === 0
        if (position.values.length !== sort.length && !fromEnd) throw new CursorError('foreign-query')
        window = { kind: position.window, values: position.values }
      } catch (error) {
        if (!(error instanceof CursorError)) throw error
        problems.push({ name: 'token', reason: error.message })
      }
    }
    pagingMode = 'token'
  } else if (offsetValue !== undefined) {
    window = { kind: 'offset', offset: offsetValue }
    pagingMode = 'offset'
  } else if (pageOffset !== undefined) {
    // A page that starts past 2^53 - 1 lies past the end of any collection, as does that position.
    window = { kind: 'offset', offset: Math.min((pageOffset - 1) * pageSize, largestCount) }
    pagingMode = 'pageOffset'
  }

  if (problems.length > 0) throw withInvalidParams(new QueryInvalidError(), problems)
  const offset = window.kind === 'offset' && pagingMode !== 'token' ? window.offset : undefined
  return {
    query: { filter, sort, window, limit: pageSize, total },
    pageSize,
    offset,
    // With pageSize 0 every page starts at 0: echo the page asked for rather than one derived.
    pageOffset: offset === undefined ? undefined : pageOffset ?? (pageSize === 0 ? 1 : Math.floor(offset / pageSize) + 1),
    token,
    pagingMode,
    fields,
    expand,
    include,
    stableQuery,
    binding
  }
}

const conventionNames = Object.keys(queryParameters) as ParameterName[]
const itemNames = conventionNames.filter(name => queryParameters[name].item)

/**
 * Reads each of `names` once, under the name it was sent as: its own, or its OData name
 * (parameters.ts), whose parser then names it in each problem; `sentAs` tells which. Both names
 * of one option are a problem naming each, and the option is read as absent.
 */
function readParameters (model: ResourceModel, raw: RawQuery, names: readonly ParameterName[], problems: InvalidParam[]) {
  const given: Partial<Record<ParameterName, string>> = {}
  const parameters: Partial<Record<ParameterName, QueryParameter<unknown>>> = {}
  for (const name of names) {
    const odata = odataParameters.get(name)
    const parameter = odata !== undefined && raw[odata.name] !== undefined ? odata : queryParameters[name]
    parameters[name] = parameter
    if (parameter !== odata || raw[name] === undefined) {
      given[name] = singleValue(parameter.name, raw[parameter.name], problems)
    } else {
      for (const sent of [name, odata.name]) problems.push({ name: sent, reason: `${name} and ${odata.name} are one option: send one of them` })
    }
  }
  const sentAs = (name: ParameterName): string => (parameters[name] as QueryParameter<unknown>).name
  const read = <N extends ParameterName>(name: N) =>
    (parameters[name] as QueryParameter<unknown>).parse(model, given[name], problems) as ReturnType<typeof queryParameters[N]['parse']>
  return { given, read, sentAs }
}

const sortKey = (key: SortKey) => (key.direction === 'desc' ? '-' : '') + key.field
/** Keys as `sort` spells them. */
const sortText = (keys: readonly SortKey[]) => keys.map(sortKey).join(',')

/**
 * Paging stability 1: the id ends every order, making it total. Unless sorted on, it takes the
 * direction of the last key (ascending without one), so `sort=-rating` is the `(rating, id)`
 * index read backwards: the SQL store pages it by seeking instead of sorting each rating's ties.
 */
/**
 * The fields of a caller's view that leaves some out (rules/view.ts), as a projection: what
 * `fields=` absent means for it. Null (every field) for a model that hides none.
 */
export function readableFields (model: ResourceModel): Set<string> | null {
  return model.hidden === undefined ? null : new Set(model.fields.keys())
}

export function withTieBreaker (model: ResourceModel, keys: readonly SortKey[]): SortKey[] {
  if (keys.some(key => key.field === model.idField)) return [...keys]
  return [...keys, { field: model.idField, direction: keys.at(-1)?.direction ?? 'asc' }]
}

/** A projection keeps the foreign key of each expanded or included many-to-one relation: related data is looked up through it. */
function withRelationKeys (fields: Set<string> | null, relations: readonly RelationModel[]): Set<string> | null {
  if (fields !== null) for (const relation of relations) if (relation.kind === 'one') fields.add(relation.field)
  return fields
}

/** `?title=X&author.country=NZ`: each name a field or relation.field; repeated values mean any of them. */
function simpleFilters (model: ResourceModel, raw: RawQuery, problems: InvalidParam[]): Array<[string, string[]]> {
  const filters: Array<[string, string[]]> = []
  for (const [name, value] of Object.entries(raw)) {
    if (listParameterNames.has(name) || value === undefined) continue
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

function resolveField (model: ResourceModel, name: string): FieldModel | undefined {
  const dot = name.indexOf('.')
  if (dot === -1) return model.fields.get(name)
  return model.relations.get(name.slice(0, dot))?.target.fields.get(name.slice(dot + 1))
}

/** `filterName`: the parameter the text was sent as, `filter` or `$filter`. */
function buildFilter (model: ResourceModel, text: string | undefined, filterName: string, simple: Array<[string, string[]]>, problems: InvalidParam[]): FilterNode | null {
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
      if (literal === undefined) problems.push({ name, reason: `'${value}' is not ${typeNames[field.type]}` })
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

const typeNames: Readonly<Record<FieldModel['type'], string>> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: "'true' or 'false'",
  date: 'a date (YYYY-MM-DD)',
  datetime: 'a date-time (RFC 3339)',
  json: 'null (an object or array field matches only null)'
}

const numberPattern = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/

/** A simple filter's text as a literal of the field's type; `null` matches a null value of a non-string field. */
export function coerceLiteral (field: FieldModel, text: string): Literal | undefined {
  if (text === 'null' && field.nullable && field.type !== 'string') return { kind: 'literal', type: 'null', value: null }
  switch (field.type) {
    case 'string': return { kind: 'literal', type: 'string', value: text }
    case 'integer': return /^-?(0|[1-9]\d{0,15})$/.test(text) ? { kind: 'literal', type: 'number', value: Number(text) } : undefined
    case 'number': return numberPattern.test(text) && Number.isFinite(Number(text)) ? { kind: 'literal', type: 'number', value: Number(text) } : undefined
    case 'boolean': return text === 'true' || text === 'false' ? { kind: 'literal', type: 'boolean', value: text === 'true' } : undefined
    // The same literal rules as in `filter=`, so both forms accept the same values.
    case 'date': return isDate(text) ? { kind: 'literal', type: 'date', value: text } : undefined
    case 'datetime': return isDateTime(text) ? { kind: 'literal', type: 'datetime', value: text } : undefined
    default: return undefined
  }
}

/** `name=value` pairs; a list repeats its name, so a link carries exactly the values sent (Page links 4). */
function encodeStable (pairs: ReadonlyArray<readonly [string, string | readonly string[] | undefined]>): string {
  const parts: string[] = []
  for (const [name, value] of pairs) {
    if (value === undefined) continue
    for (const one of typeof value === 'string' ? [value] : value) parts.push(`${encodeURIComponent(name)}=${encodeURIComponent(one)}`)
  }
  return parts.join('&')
}

export interface ItemRequest {
  readonly fields: ReadonlySet<string> | null
  readonly expand: readonly RelationModel[]
  readonly include: readonly RelationModel[]
  /** Canonical text of the options that change the representation; '' for the full resource. */
  readonly variant: string
}

/** RETRIEVE's query: `fields`, `expand`, `include` (each a list; OData's `$select`, `$expand`); anything else is 400 so typos never pass silently. */
export function parseItemQuery (model: ResourceModel, raw: RawQuery): ItemRequest {
  const problems: InvalidParam[] = []
  for (const name of Object.keys(raw)) {
    if (!itemParameterNames.has(name)) problems.push({ name, reason: 'unknown query parameter' })
  }
  if (problems.length > 0) throw withInvalidParams(new QueryInvalidError(), problems)
  const { read } = readParameters(model, raw, itemNames, problems)
  const expand = read('expand')
  const include = read('include')
  const fields = withRelationKeys(read('fields') ?? readableFields(model), [...expand, ...include])
  if (problems.length > 0) throw withInvalidParams(new QueryInvalidError(), problems)
  return { fields, expand, include, variant: representationVariant(fields, expand, include) }
}

/**
 * What sets a representation apart from the full resource, for its ETag: the fields sent and the
 * relations embedded; '' for the full resource. A write's answer to a caller who sees fewer fields
 * is the representation a RETRIEVE without parameters sends that caller: the same text, the same tag.
 */
export function representationVariant (fields: ReadonlySet<string> | null, expand: readonly RelationModel[] = [], include: readonly RelationModel[] = []): string {
  return fields === null && expand.length === 0 && include.length === 0
    ? ''
    : `${[...(fields ?? [])].sort().join(',')};${expand.map(r => r.name).join(',')};${include.map(r => r.name).join(',')}`
}
