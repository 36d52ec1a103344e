// What `apply=` (OData 4.0 Data Aggregation's $apply, without the `$`) parses into, and the query
// a store runs for it: the records filtered, then grouped, each group one object of its grouping
// values and its aggregates, then the groups filtered. parser.ts makes it, checked against the
// caller's view; evaluate.ts runs it over records (the memory store), stores/sql/aggregate.ts
// compiles it to one GROUP BY.
import type { FieldModel, FieldType, ResourceModel, View } from '../../registry/model.js'
import type { FilterNode } from '../filter/ast.js'

export type AggregateMethod = 'sum' | 'average' | 'min' | 'max' | 'countdistinct'

/** A grouping value: a field (`authorId`), or a field of a `one` relation's target (`author/country`). */
export interface GroupKey {
  /** As sent and as `sort` names it: `authorId`, `author/country`. */
  readonly name: string
  readonly path: readonly [string] | readonly [string, string]
  readonly type: FieldType
}

/** `$count as n`, or `rating with average as avgRating`: a value of each group under its alias. */
export type Aggregate =
  | { readonly alias: string, readonly method: 'count', readonly type: 'integer' }
  | { readonly alias: string, readonly method: AggregateMethod, readonly field: string, readonly fieldType: FieldType, readonly type: FieldType }

/** A group's member as `sort` names it: a grouping value or an alias. */
export interface GroupSortKey { readonly name: string, readonly direction: 'asc' | 'desc' }

/**
 * What a store runs for `apply=`: the records of the view that match `filter` (the query's filter
 * and the filter() steps of the apply before the grouping), grouped by `groupBy` (none: one group
 * of them all, even when empty), the groups that match `having` (the filter() steps after the
 * grouping), in `sort` order (total: it ends with every grouping value), from `offset`, at most
 * `limit` groups; `total` also counts the groups that match.
 */
export interface AggregateQuery {
  readonly filter: FilterNode | null
  readonly groupBy: readonly GroupKey[]
  readonly aggregates: readonly Aggregate[]
  /** On the groups' members (groupsView): each path one member's name, `author/country` too. */
  readonly having: FilterNode | null
  readonly sort: readonly GroupSortKey[]
  readonly offset: number
  readonly limit: number
  readonly total: boolean
}

/**
 * A page of groups. Each group holds its grouping values (a relation's under the relation's name:
 * `{ author: { country: 'NZ' } }`) and its aliases; a sum, average, min or max of no values is null.
 */
export interface GroupPage {
  readonly groups: ReadonlyArray<Record<string, unknown>>
  /** More groups lie past the page. */
  readonly hasMore: boolean
  /** Set when the query asked for it: the number of groups. */
  readonly total?: number
}

/** A group's value under `name` (`author/country` reads `group.author.country`). */
export function memberOf (group: Readonly<Record<string, unknown>>, name: string): unknown {
  const slash = name.indexOf('/')
  if (slash === -1) return group[name]
  return (group[name.slice(0, slash)] as Record<string, unknown> | undefined)?.[name.slice(slash + 1)]
}

/** Sets a group's value under a grouping key's path. */
export function setMember (group: Record<string, unknown>, path: readonly string[], value: unknown): void {
  if (path.length === 1) {
    group[path[0]] = value
    return
  }
  const inner = (group[path[0]] ??= {}) as Record<string, unknown>
  inner[path[1]] = value
}

/**
 * The groups as a resource of their own, for what names their members (a grouping value by its
 * name, `author/country` too, and each alias): `sort`, and filter() after the grouping, which
 * check.ts reads with its fields; no relations. Its own model, as a registered resource is: the
 * SQL store compiles that filter over the grouped rows and reads a member's type from the model.
 */
export function groupsView (view: View, groupBy: readonly GroupKey[], aggregates: readonly Aggregate[]): ResourceModel {
  const fields = new Map<string, FieldModel>()
  const member = (name: string, type: FieldType) => fields.set(name, { name, type, nullable: true, required: false, readOnly: true, schema: {} as FieldModel['schema'] })
  for (const key of groupBy) member(key.name, key.type)
  for (const one of aggregates) member(one.alias, one.type)
  const groups: { -readonly [K in keyof ResourceModel]: ResourceModel[K] } = { ...view.model, fields, relations: new Map(), mandatory: [], searchable: [] }
  groups.model = groups
  return Object.freeze(groups)
}
