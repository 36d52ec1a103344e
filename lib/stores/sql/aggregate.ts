// `apply=` as one statement (query/apply/ast.ts AggregateQuery): the view's matching rows, a
// `one` relation's visible target LEFT JOINed for each path grouped by, GROUP BY the grouping
// values; of those groups, a derived table, the ones the filter() steps after the grouping keep
// (SQL's HAVING, as a WHERE), a page in the asked order. The memory store's results
// (query/apply/evaluate.ts) are the same: NULL is lowest in every order, sums of fractional numbers
// add in id order (`sum(x ORDER BY id)`, which no parallel plan reorders), averages divide that
// sum by the count.
import type { View, ViewRelation } from '../../registry/model.js'
import type { Aggregate, AggregateQuery, GroupKey } from '../../query/apply/ast.js'
import { groupsView, setMember } from '../../query/apply/ast.js'
import { compileFilter } from './compile.js'
import type { CompileContext } from './compile.js'
import { ident, join, raw, sql } from './sql.js'
import type { Sql } from './sql.js'
import { columnRef, MAIN } from './table.js'
import type { Column, Table } from './table.js'

export interface CompiledAggregate {
  readonly page: Sql
  /** Present when the query asks for the total of groups and there may be more than one. */
  readonly count?: Sql
  decode (row: readonly unknown[]): Record<string, unknown>
}

/** A value as the answer carries it: dates and date-times as the ISO text records have. */
function output (expression: Sql, type: string): Sql {
  if (type === 'date') return sql`to_char(${expression}, 'YYYY-MM-DD')`
  if (type === 'datetime') return sql`to_char(${expression} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
  return expression
}

const numeric = new Set(['integer', 'number'])
const decodeValue = (value: unknown, type: string): unknown => value === null || value === undefined ? null : numeric.has(type) ? Number(value) : value

export function compileAggregate (table: Table, query: AggregateQuery, context: CompileContext, view: View): CompiledAggregate {
  const where: Sql[] = []
  if (query.filter !== null) where.push(compileFilter(table, query.filter, context, view))
  if (view.visible !== undefined) where.push(compileFilter(table, view.visible, context))
  const column = (of: Table, field: string) => of.columns.get(field) as Column

  // One LEFT JOIN per relation grouped through; a hidden target row is a missing one (NULL).
  const joins: Sql[] = []
  const aliases = new Map<string, string>()
  const groupRef = (key: GroupKey): Sql => {
    if (key.path.length === 1) return columnRef(MAIN, column(table, key.path[0]))
    const relation = view.relations.get(key.path[0]) as ViewRelation
    const target = context.tableOf(relation.target.model)
    let alias = aliases.get(relation.name)
    if (alias === undefined) {
      aliases.set(relation.name, alias = `g${aliases.size + 1}`)
      const { visible } = relation.target
      // Inside the derived table the target is `t0` again: its rule speaks of its own rows.
      const source = visible === undefined ? target.ref : sql`(SELECT * FROM ${target.ref} AS ${ident(MAIN)} WHERE ${compileFilter(target, visible, context)})`
      joins.push(sql` LEFT JOIN ${source} AS ${ident(alias)} ON ${ident(alias, target.id.name)} = ${ident(MAIN, column(table, relation.field).name)}`)
    }
    return columnRef(alias, column(target, key.path[1]))
  }
  const groups = query.groupBy.map(groupRef)

  const idOrder = columnRef(MAIN, table.id)
  const aggregateExpression = (aggregate: Aggregate): Sql => {
    if (aggregate.method === 'count') return raw('count(*)')
    const ref = columnRef(MAIN, column(table, aggregate.field))
    // Integers sum exactly (numeric); fractional numbers in one order, the memory store's.
    const sum = aggregate.fieldType === 'integer' ? sql`sum(${ref})::double precision` : sql`sum(${ref} ORDER BY ${idOrder})`
    switch (aggregate.method) {
      case 'sum': return sum
      case 'average': return sql`(${sum} / NULLIF(count(${ref}), 0)::double precision)`
      case 'min': return sql`min(${ref})`
      case 'max': return sql`max(${ref})`
      case 'countdistinct': return sql`count(DISTINCT ${ref})`
    }
  }
  const aggregates = query.aggregates.map(aggregateExpression)

  // The groups as a table of their own, `t0` of the outer statement, a column `c0`, `c1`… per
  // member: a filter of the groups compiles as any filter does, its paths the members' columns.
  const members = groupsView(view, query.groupBy, query.aggregates)
  const fields = [...members.fields.values()]
  const columns = new Map(fields.map((field, i) => [field.name, { field, name: `c${i}`, canBeNull: true }]))
  const grouped: Table = { ...table, model: members, columns }
  const expressions = [...groups, ...aggregates]
  const position = new Map(fields.map((field, i) => [field.name, i]))
  // NULL sorts lowest (spec "Sorting" 3).
  const orderBy = (member: (i: number) => Sql): Sql => query.sort.length === 0
    ? raw('')
    : sql` ORDER BY ${join(query.sort.map(key => sql`${member(position.get(key.name) as number)} ${raw(key.direction === 'asc' ? 'ASC NULLS FIRST' : 'DESC NULLS LAST')}`), ', ')}`
  const memberColumn = (i: number) => columnRef(MAIN, column(grouped, fields[i].name))
  const inner = join(expressions.map((expression, i) => sql`${expression} AS ${ident(`c${i}`)}`), ', ')
  const filtered = where.length === 0 ? raw('') : sql` WHERE ${join(where, ' AND ')}`
  const groupBy = groups.length === 0 ? raw('') : sql` GROUP BY ${join(groups, ', ')}`
  const having = query.having === null ? raw('') : sql` WHERE ${compileFilter(grouped, query.having, context, members)}`
  const rows = (order: Sql) => sql`(SELECT ${inner} FROM ${table.ref} AS ${ident(MAIN)}${join(joins, '')}${filtered}${groupBy}${order}) AS ${ident(MAIN)}${having}`
  const select = join(fields.map((field, i) => output(memberColumn(i), field.type)), ', ')
  // The groups are ordered inside too: PostgreSQL then finds the outer order met, and stops
  // grouping once the page is full, as it did before the groups were a table of their own.
  // One group more than asked tells whether more lie beyond the page.
  const page = sql`SELECT ${select} FROM ${rows(orderBy(i => expressions[i]))}${orderBy(memberColumn)} LIMIT ${query.limit + 1} OFFSET ${query.offset}`
  // Without groupby and its filter there is one group: nothing to count.
  const count = query.total && (groups.length > 0 || query.having !== null) ? sql`SELECT count(*) FROM ${rows(raw(''))}` : undefined
  return {
    page,
    count,
    decode (row) {
      const group: Record<string, unknown> = {}
      query.groupBy.forEach((key, i) => setMember(group, key.path, decodeValue(row[i], key.type)))
      query.aggregates.forEach((aggregate, i) => { group[aggregate.alias] = decodeValue(row[groups.length + i], aggregate.type) })
      return group
    }
  }
}
