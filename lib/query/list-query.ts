// Parses a collection's query string once into a checked ListRequest (spec "Query parameters on
// collections", "Sorting", "Paging"): each parameter is read with its entry of parameters.ts, and
// what the page links repeat and a token is bound to come from those entries; paging/ reads the
// window. Every problem is collected into one 400 with invalidParams.
import { byPart, itemParameterNames, odataParameters, queryParameters, readParameters, windowNames } from './parameters.js'
import type { LinkPairs, ParameterName, QueryParameter, RawQuery, Readings, Resolved, Sent } from './parameters.js'
import type { AggregateQuery, GroupSortKey } from './apply/ast.js'
import type { Aggregation } from './apply/parser.js'
import type { View, ViewRelation } from '../registry/model.js'
import type { PageWindow, SortKey } from './store-query.js'
import { filterKeyLimit } from './filter/from-query.js'
import { RELEVANCE } from './search.js'
import { bindingOf, readWindow } from '../paging/index.js'
import type { PagedRequest, WindowContext } from '../paging/index.js'
import { QueryInvalidError, withInvalidParams } from '../errors.js'
import { keepBounded } from '../bounded.js'
import type { InvalidParam } from '../errors.js'

export type { RawQuery }

/** A LIST request, checked: what the store is asked, how it pages, and what each item shows. */
export interface ListRequest extends PagedRequest {
  /** Requested fields plus the mandatory ones; null for all. */
  readonly fields: ReadonlySet<string> | null
  readonly expand: readonly ViewRelation[]
  readonly include: readonly ViewRelation[]
  /** `apply=`: what the store groups instead of listing records (docs/aggregates.md); absent without it. */
  readonly aggregate?: AggregateQuery
}

export type ListQueryContext = WindowContext

const requestCacheLimit = 500
const requestCache = new WeakMap<ListQueryContext, WeakMap<View, Map<string, ListRequest>>>()

/**
 * parseListQuery, remembered by query for a caller's view: the same query from callers who see
 * the same view is the same ListRequest, worked out once, and what is derived from its objects
 * (the SQL store's statement) is found at once. Keyed by the parsed parameters themselves, not
 * the URL, so that a host's hook that changes `request.query` is never answered from another
 * request's entry. Not for a query with a token, which may have expired since (each is opened
 * anew), nor one that is refused (not kept).
 */
export function listRequestFor (model: View, raw: RawQuery, context: ListQueryContext, base: string): ListRequest {
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

const conventionNames = Object.keys(queryParameters) as ParameterName[]
const itemNames = conventionNames.filter(name => queryParameters[name].item)
const filterNames = new Set(byPart.filter(({ definition }) => definition.part === 'filter').map(({ name }) => name))
/**
 * Every parameter but the window's (read by paging/ once the binding is known), in the table's
 * order, the filter's last: it reads every name no entry reserves as a simple filter, so an
 * unknown name is reported after the named parameters' problems.
 */
const readOrder = [...conventionNames.filter(name => !windowNames.has(name) && !filterNames.has(name)), ...filterNames]

/** What may not come with `apply`: each names records, not groups. */
// `search` too, for now: groups are of filtered records, and a search is not yet a step of `apply`.
const notWithApply: readonly ParameterName[] = ['fields', 'expand', 'include', 'token', 'search']

/**
 * `sort` (or `$orderby`) with `apply`: the groups' members, read by sort's parser against the
 * groups' view, and made total with every grouping value (each group has its own).
 */
function groupSort ({ given, sentAs }: Readings, aggregation: Aggregation, problems: InvalidParam[]): GroupSortKey[] {
  const as = sentAs('sort')
  const entry = (as === 'sort' ? queryParameters.sort : odataParameters.get('sort')) as QueryParameter<SortKey[]>
  const keys: GroupSortKey[] = entry.parse(aggregation.groups, given.sort, problems).map(({ field, direction }) => ({ name: field, direction }))
  for (const key of aggregation.groupBy) if (!keys.some(sorted => sorted.name === key.name)) keys.push({ name: key.name, direction: 'asc' })
  return keys
}

/** `base` is the collection's path (for nested collections it names the parent): tokens are bound to it. */
export function parseListQuery (model: View, raw: RawQuery, context: ListQueryContext, base: string): ListRequest {
  const problems: InvalidParam[] = []
  const readings = readParameters(model, raw, conventionNames, problems)
  // `apply` first: with it, `sort` names the groups' members.
  const applied = readings.read('apply')
  const aggregation = applied?.aggregation ?? null
  let groupKeys: GroupSortKey[] = []
  if (applied !== null) {
    for (const name of notWithApply) {
      if (readings.given[name] === undefined) continue
      problems.push({ name: readings.sentAs(name), reason: `cannot be combined with ${readings.sentAs('apply')}` })
      problems.push({ name: readings.sentAs('apply'), reason: `cannot be combined with ${readings.sentAs(name)}` })
    }
    if (aggregation !== null) groupKeys = groupSort(readings, aggregation, problems)
  }
  const sent = new Map<ParameterName, Sent<unknown>>()
  for (const name of readOrder) {
    const as = readings.sentAs(name)
    const read = name === 'apply' ? applied : name === 'sort' && applied !== null ? groupKeys.map(key => ({ field: key.name, direction: key.direction })) : readings.read(name)
    sent.set(name, { name, value: read, as, raw: raw[as] })
  }
  const value = <N extends ParameterName>(name: N) => (sent.get(name) as Sent<ReturnType<typeof queryParameters[N]['parse']>>).value
  const expand = value('expand')
  const include = value('include')
  const search = value('search')
  const sort = value('sort')
  const resolved: Resolved = {
    // Groups sort by what they are sorted by; a search without sort: the most relevant first, ties by id (ascending).
    sort: applied !== null ? sort : search !== null && sort.length === 0 ? [{ field: RELEVANCE, direction: 'desc' }, { field: model.idField, direction: 'asc' }] : withTieBreaker(model, sort),
    fields: withRelationKeys(value('fields') ?? readableFields(model), [...expand, ...include])
  }
  const links: LinkPairs[number][] = []
  const bound: unknown[] = []
  // Loops, not flatMap, which V8 runs several times slower: this runs for every page read with a token.
  for (const { name, definition } of byPart) {
    const one = sent.get(name) as Sent<unknown>
    if (definition.link !== undefined) links.push(...definition.link(one))
    if (definition.bind !== undefined) bound.push(...definition.bind(one, resolved))
  }
  const stableQuery = encodeStable(links)
  const binding = bindingOf(base, bound)
  // Groups page by offset: a token would hold a record's position.
  const paging = readWindow(model, readings, resolved.sort, binding, applied === null ? context : { ...context, defaultPaging: 'offset' }, problems)
  if (problems.length > 0) throw withInvalidParams(new QueryInvalidError(), problems)
  const filter = value('filter').node
  const aggregate: AggregateQuery | undefined = aggregation === null
    ? undefined
    : {
        filter: filter === null ? aggregation.filter : aggregation.filter === null ? filter : { kind: 'and', left: filter, right: aggregation.filter },
        groupBy: aggregation.groupBy,
        aggregates: aggregation.aggregates,
        having: aggregation.having,
        sort: groupKeys,
        // No token comes with apply (notWithApply): the window is an offset.
        offset: (paging.window as Extract<PageWindow, { kind: 'offset' }>).offset,
        limit: paging.pageSize,
        // Groups are counted exactly: an estimate is of rows, not of groups.
        total: value('total') !== false
      }
  return {
    query: { filter, sort: resolved.sort, window: paging.window, limit: paging.pageSize, total: value('total'), search, reads: resolved.fields },
    pageSize: paging.pageSize,
    offset: paging.offset,
    pageOffset: paging.pageOffset,
    token: paging.token,
    pagingMode: paging.pagingMode,
    fields: resolved.fields,
    expand,
    include,
    stableQuery,
    binding,
    ...(aggregate === undefined ? {} : { aggregate })
  }
}

/**
 * The fields of a caller's view that leaves some out (rules/view.ts), as a projection: what
 * `fields=` absent means for it. Null (every field) for a model that hides none.
 */
export function readableFields (model: View): Set<string> | null {
  return model.hidden === undefined ? null : new Set(model.fields.keys())
}

/**
 * Paging stability 1: the id ends every order, making it total. Unless sorted on, it takes the
 * direction of the last key (ascending without one), so `sort=-rating` is the `(rating, id)`
 * index read backwards: the SQL store pages it by seeking instead of sorting each rating's ties.
 */
export function withTieBreaker (model: View, keys: readonly SortKey[]): SortKey[] {
  if (keys.some(key => key.field === model.idField)) return [...keys]
  return [...keys, { field: model.idField, direction: keys.at(-1)?.direction ?? 'asc' }]
}

/** A projection keeps the foreign key of each expanded or included many-to-one relation: related data is looked up through it. */
function withRelationKeys (fields: Set<string> | null, relations: readonly ViewRelation[]): Set<string> | null {
  if (fields !== null) for (const relation of relations) if (relation.kind === 'one') fields.add(relation.field)
  return fields
}

/** `name=value` pairs; a list repeats its name, so a link carries exactly the values sent (Page links 4). */
function encodeStable (pairs: LinkPairs): string {
  const parts: string[] = []
  for (const [name, value] of pairs) {
    if (value === undefined) continue
    for (const one of typeof value === 'string' ? [value] : value) parts.push(`${encodeURIComponent(name)}=${encodeURIComponent(one)}`)
  }
  return parts.join('&')
}

export interface ItemRequest {
  readonly fields: ReadonlySet<string> | null
  readonly expand: readonly ViewRelation[]
  readonly include: readonly ViewRelation[]
  /** Canonical text of the options that change the representation; '' for the full resource. */
  readonly variant: string
}

/** RETRIEVE's query: `fields`, `expand`, `include` (each a list; OData's `$select`, `$expand`); anything else is 400 so typos never pass silently. */
export function parseItemQuery (model: View, raw: RawQuery): ItemRequest {
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
export function representationVariant (fields: ReadonlySet<string> | null, expand: readonly ViewRelation[] = [], include: readonly ViewRelation[] = []): string {
  return fields === null && expand.length === 0 && include.length === 0
    ? ''
    : `${[...(fields ?? [])].sort().join(',')};${expand.map(r => r.name).join(',')};${include.map(r => r.name).join(',')}`
}
