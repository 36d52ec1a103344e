// `apply=` run over records in memory (the memory store's aggregate), with the results the SQL
// store's GROUP BY gives (stores/sql/aggregate.ts): NULL grouping values form one group; sums add
// in id order from the first value, as PostgreSQL's sum(… ORDER BY id) does, so sums and
// averages of fractional numbers come out to the same bits; min and max in sort order; the groups
// filtered as records are (filter/evaluate.ts), each path a member.
import { compilePredicate, sortCompare } from '../filter/evaluate.js'
import { memberOf, setMember } from './ast.js'
import type { Aggregate, AggregateQuery, GroupPage } from './ast.js'

type Record_ = Readonly<Record<string, unknown>>

/** A sum, or null without values: each added to the sum so far, in the order given. */
function sumOf (values: readonly number[]): number | null {
  let sum: number | null = null
  for (const value of values) sum = sum === null ? value : sum + value
  return sum
}

function extreme (values: readonly unknown[], sign: 1 | -1): unknown {
  let found: unknown = null
  for (const value of values) if (found === null || sign * sortCompare(value, found) > 0) found = value
  return found
}

function valueOf (aggregate: Aggregate, members: readonly Record_[]): unknown {
  if (aggregate.method === 'count') return members.length
  const values = members.map(member => member[aggregate.field]).filter(value => value !== null && value !== undefined)
  switch (aggregate.method) {
    case 'sum': return sumOf(values as number[])
    case 'average': return values.length === 0 ? null : (sumOf(values as number[]) as number) / values.length
    case 'min': return extreme(values, -1)
    case 'max': return extreme(values, 1)
    case 'countdistinct': return new Set(values).size
  }
}

/**
 * The page of groups `query` asks for. `records`: the matching records, in id order; `resolve`:
 * a record's value at a path (a `one` relation's field through its visible target, else null).
 */
export function aggregateRecords (records: Iterable<Record_>, query: AggregateQuery, resolve: (record: Record_, path: readonly string[]) => unknown): GroupPage {
  const byKey = new Map<string, { values: unknown[], members: Record_[] }>()
  // Without groupby one group holds every record, and exists with none.
  if (query.groupBy.length === 0) byKey.set('', { values: [], members: [] })
  for (const record of records) {
    const values = query.groupBy.map(key => resolve(record, key.path) ?? null)
    const key = query.groupBy.length === 0 ? '' : JSON.stringify(values)
    let group = byKey.get(key)
    if (group === undefined) byKey.set(key, group = { values, members: [] })
    group.members.push(record)
  }
  const all = [...byKey.values()].map(({ values, members }) => {
    const group: Record<string, unknown> = {}
    query.groupBy.forEach((key, i) => setMember(group, key.path, values[i]))
    for (const aggregate of query.aggregates) group[aggregate.alias] = valueOf(aggregate, members)
    return group
  })
  const having = query.having === null ? null : compilePredicate(query.having, (group, path) => [memberOf(group, path[0])])
  const groups = having === null ? all : all.filter(having)
  // The first key on which two groups differ orders them; the sort is total (AggregateQuery), so there is one.
  groups.sort((a, b) => {
    let order = 0
    for (const { name, direction } of query.sort) {
      order = (direction === 'asc' ? 1 : -1) * sortCompare(memberOf(a, name), memberOf(b, name))
      if (order !== 0) break
    }
    return order
  })
  const end = query.offset + query.limit
  return {
    groups: groups.slice(query.offset, end),
    hasMore: groups.length > end,
    ...(query.total ? { total: groups.length } : {})
  }
}
