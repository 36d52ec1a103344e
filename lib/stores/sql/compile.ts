// ListQuery → one parameterized SELECT per page, run by the database (spec "Advanced filtering",
// "Sorting", "Paging"). Results equal the memory store's: OData null rules with two-valued logic,
// related paths with the same candidate semantics, NULL lowest in every order, keyset windows.
import { compilePredicate, TRIMMED } from '../../query/filter/evaluate.js'
import { FUNCTIONS } from '../../query/filter/ast.js'
import type { FieldRef, FilterNode, Lambda, Literal, Operand, ValueCall } from '../../query/filter/ast.js'
import type { FieldType, ResourceModel, View, ViewRelation } from '../../registry/model.js'
import type { ListQuery, SortKey } from '../store.js'
import { ident, join, raw, sql } from './sql.js'
import type { Sql } from './sql.js'
import { columnRef, MAIN, typed } from './table.js'
import type { Column, RowReader, Table } from './table.js'
import { relevance, searchCondition } from './search.js'
import { RELEVANCE } from '../../query/search.js'

export interface CompileContext {
  readonly tableOf: (model: ResourceModel) => Table
  /** The collation tolower/toupper use: `pg_unicode_fast` (PostgreSQL 18+) maps case as JavaScript does. */
  readonly caseCollation: string
}

export interface CompiledList {
  readonly page: Sql
  /** Present when the query asks for the total. */
  readonly count?: Sql
  /** Present when the query asks for an estimated total: the planner's plan of the matching rows (EXPLAIN, JSON). */
  readonly estimate?: Sql
  /** A `before` window is read backwards from its anchor; the rows come back reversed. */
  readonly reversed: boolean
  /** Ordered by relevance: each row ends with it, after the record's columns. */
  readonly ranked: boolean
  /** A page's row as a record: whole, or what the query reads of it (ListQuery.reads). */
  readonly decode: RowReader['decode']
}

type Atom = Extract<FilterNode, { kind: 'compare' | 'in' | 'match' }>

/** The forms of an atom: each is TRUE exactly when the atom (or its negation) holds, else FALSE or NULL. */
interface Test { readonly pos: Sql, readonly neg: Sql }

const TRUE = raw('TRUE')
const FALSE = raw('FALSE')
const ORDERING = { gt: '>', ge: '>=', lt: '<', le: '<=' } as const
const DIRECTIONS = { asc: 'ASC', desc: 'DESC' } as const
const ESCAPE = raw(String.raw` ESCAPE E'\\'`)
/** The page's rows on the near side of a nullable first key's NULL group, when it splits the page. */
const NEAR = 'near'

/** `view`: the view read, of the table's model (whose visible records alone are listed). */
export function compileList (table: Table, query: ListQuery, context: CompileContext, view: View = table.model): CompiledList {
  const where = conditionsOf(table, query, context, view)
  const rank = rankOf(table, query, context)
  const from = sql`${table.ref} AS ${ident(MAIN)}`
  const count = query.total ? sql`SELECT count(*) FROM ${from}${whereClause(where)}` : undefined
  // The plan of the rows themselves: the count's own top node is its aggregate, of one row.
  const estimate = query.total === 'estimated' ? sql`EXPLAIN (FORMAT JSON) SELECT 1 FROM ${from}${whereClause(where)}` : undefined
  const { window } = query
  const reversed = window.kind === 'before'
  // A `before` page is the `after` page of the reversed order (NULL stays lowest, so it flips side).
  const sort = reversed ? query.sort.map(key => ({ field: key.field, direction: key.direction === 'asc' ? 'desc' : 'asc' } as const)) : query.sort
  const order = orderOf(table, sort, rank)
  const reader = query.reads === undefined ? table : table.dataReader(readFields(query.reads, query.sort))
  const selectList = rank === null ? reader.selectList : sql`${reader.selectList}, ${rank}`
  // One row more than asked tells whether more lie beyond the page.
  const limit = sql` ORDER BY ${order} LIMIT ${query.limit + 1}`
  const select = (conditions: readonly Sql[], list: Sql) => sql`SELECT ${list} FROM ${from}${whereClause(conditions)}${limit}`
  let page: Sql
  if (window.kind === 'offset') {
    page = sql`${select(where, selectList)} OFFSET ${window.offset}`
  } else if (window.values.length === 0) {
    // Before the end: the reversed order from its start.
    page = select(where, selectList)
  } else {
    const [near, far] = keyset(table, sort, window.values, rank)
    if (far === undefined) {
      page = select([...where, near], selectList)
    } else {
      // Two ranges, two index scans. The far one is read only when the near one cannot fill the
      // page (the count is computed once, so PostgreSQL skips that scan otherwise); the outer
      // ORDER BY puts the rows in order. Named as the table, the union is read by the select list
      // and the order unchanged.
      const rows = sql`${ident(MAIN)}.*`
      const gate = sql`(SELECT count(*) FROM ${ident(NEAR)}) <= ${query.limit}`
      page = sql`WITH ${ident(NEAR)} AS MATERIALIZED (${select([...where, near], rows)}) SELECT ${selectList} FROM (SELECT * FROM ${ident(NEAR)} UNION ALL (${select([...where, far, gate], rows)})) AS ${ident(MAIN)}${limit}`
    }
  }
  return { page, count, estimate, reversed, ranked: rank !== null, decode: reader.decode }
}

/** What a page reads of each row: the fields asked (null: all) and the sort's, whose values the next page's token holds. */
function readFields (reads: ReadonlySet<string> | null, sort: readonly SortKey[]): ReadonlySet<string> | null {
  if (reads === null || sort.every(key => reads.has(key.field))) return reads
  return new Set([...reads, ...sort.map(key => key.field)])
}

/** Every row of the query, in its order, without a window: what an export's cursor reads (docs/export.md). */
export function compileExport (table: Table, query: ListQuery, context: CompileContext, view: View = table.model): Sql {
  const where = conditionsOf(table, query, context, view)
  return sql`SELECT ${table.selectList} FROM ${table.ref} AS ${ident(MAIN)}${whereClause(where)} ORDER BY ${orderOf(table, query.sort, rankOf(table, query, context))}`
}

/** What a row must meet: the query's filter, its search and the view's row rules. */
function conditionsOf (table: Table, query: ListQuery, context: CompileContext, view: View): Sql[] {
  const where: Sql[] = []
  if (query.filter !== null) where.push(compileFilter(table, query.filter, context, view))
  if (view.visible !== undefined) where.push(compileFilter(table, view.visible, context))
  if (query.search != null) where.push(searchCondition(table, query.search, MAIN, context.caseCollation))
  return where
}

/** A search's relevance, where the sort asks for it (its RELEVANCE key); null otherwise. */
function rankOf (table: Table, query: ListQuery, context: CompileContext): Sql | null {
  return query.search != null && query.sort.some(key => key.field === RELEVANCE) ? relevance(table, query.search, MAIN, context.caseCollation) : null
}

function orderOf (table: Table, sort: readonly SortKey[], rank: Sql | null): Sql {
  // NULL sorts lowest (spec "Sorting" 3). On a column that holds no NULL the clause is left out:
  // PostgreSQL would not match NULLS FIRST against a plain index, and would sort the whole table.
  return join(sort.map(key => {
    const { ref, canBeNull } = sortTerm(table, key.field, rank)
    const nulls = canBeNull ? (key.direction === 'asc' ? ' NULLS FIRST' : ' NULLS LAST') : ''
    return sql`${ref} ${raw(DIRECTIONS[key.direction] + nulls)}`
  }), ', ')
}

function whereClause (conditions: readonly Sql[]): Sql {
  return conditions.length === 0 ? raw('') : sql` WHERE ${join(conditions, ' AND ')}`
}

function column (table: Table, field: string): Column {
  return table.columns.get(field) as Column
}

/** A sort key's expression: its column, or the search's relevance (an integer, never null). */
function sortTerm (table: Table, field: string, rank: Sql | null): { ref: Sql, canBeNull: boolean, type: FieldType } {
  if (field === RELEVANCE && rank !== null) return { ref: rank, canBeNull: false, type: 'integer' }
  const col = column(table, field)
  return { ref: columnRef(MAIN, col), canBeNull: col.canBeNull, type: col.field.type }
}

interface Key { readonly ref: Sql, readonly value: Sql | null, readonly asc: boolean, readonly canBeNull: boolean }

/**
 * Rows strictly after the anchor in the given order, as one or two conditions, nearest first, that
 * an index on (first key, id) reads each as one range: a nullable first key splits at its NULL
 * group, which no comparison with a value reaches (NULL is lowest: before the values ascending,
 * after them descending). Without the split PostgreSQL would read through that group, or from the top.
 */
function keyset (table: Table, sort: readonly SortKey[], anchor: readonly unknown[], rank: Sql | null): Sql[] {
  const keys: Key[] = sort.map((key, i) => {
    const { ref, canBeNull, type } = sortTerm(table, key.field, rank)
    return { ref, value: anchor[i] == null ? null : typed(anchor[i], type), asc: key.direction === 'asc', canBeNull }
  })
  const [first, ...rest] = keys
  if (first.value === null) {
    // Within the NULL group the rest of the keys decide; ascending, every value follows the group.
    const group = sql`${first.ref} IS NULL AND ${beyond(rest)}`
    return first.asc ? [group, sql`${first.ref} IS NOT NULL`] : [group]
  }
  // A row comparison over the leading keys of one direction is the range an index scan seeks to.
  // It stops before a nullable key: a NULL there makes the comparison NULL rather than after.
  // Over only some of the keys it bounds the rows (equal ones included) and the OR of ANDs decides.
  const end = keys.findIndex((key, i) => i > 0 && (key.asc !== first.asc || key.canBeNull))
  const leading = end === -1 ? keys : keys.slice(0, end)
  const row = (parts: readonly Sql[]) => parts.length === 1 ? parts[0] : sql`(${join(parts, ', ')})`
  const op = raw((first.asc ? '>' : '<') + (end === -1 ? '' : '='))
  const range = sql`${row(leading.map(key => key.ref))} ${op} ${row(leading.map(key => key.value as Sql))}`
  const values = end === -1 ? range : sql`${range} AND ${beyond(keys)}`
  // Descending, the NULL group follows the values: all of it is after the anchor.
  return first.asc || !first.canBeNull ? [values] : [values, sql`${first.ref} IS NULL`]
}

/** Rows after the anchor on these keys, as an OR of ANDs (a row comparison cannot mix directions or order NULLs): equal on the first i keys and after it on key i. */
function beyond (keys: readonly Key[]): Sql {
  const terms: Sql[] = []
  keys.forEach(({ ref, value, asc, canBeNull }, i) => {
    // NULL is the lowest value: after it ascending is any value; nothing is after it descending.
    const after = value === null
      ? (asc ? sql`${ref} IS NOT NULL` : null)
      : (asc ? sql`${ref} > ${value}` : canBeNull ? sql`(${ref} < ${value} OR ${ref} IS NULL)` : sql`${ref} < ${value}`)
    if (after === null) return
    const equal = keys.slice(0, i).map(key => key.value === null ? sql`${key.ref} IS NULL` : sql`${key.ref} = ${key.value}`)
    terms.push(join([...equal, after], ' AND '))
  })
  // The id is always the last key and never null, so there is at least one term.
  return sql`(${join(terms, ' OR ')})`
}

/**
 * The filter as a WHERE condition on the table aliased `t0`; `not` is pushed down to the atoms so
 * SQL's NULL never leaks into logic. Related paths follow the relations of `view`, of the table's
 * model: a target that is a caller's view offers only its visible records as candidates.
 * A view's own `visible` is compiled on the table's model: it speaks of stored records.
 */
export function compileFilter (table: Table, filter: FilterNode, context: CompileContext, view: View = table.model): Sql {
  return condition({ context, aliases: 0 }, [{ table, alias: MAIN, view }], filter)
}

/** What the conditions of one statement share: every subquery takes the next alias, `t1`, `t2`… */
interface Scope {
  readonly context: CompileContext
  aliases: number
}

/** A table paths read from: the one filtered (frame 0), then the member each enclosing lambda binds; as `view` shows it. */
interface Frame { readonly table: Table, readonly alias: string, readonly view: View }

/** A related table joined to a frame: its alias and the conditions tying its rows to the frame's row. */
interface Joined { readonly target: Table, readonly name: string, readonly conditions: Sql[] }

/** `filter` (negated when asked) on the frames' tables, its paths through the relations of their models. */
function condition (scope: Scope, frames: readonly Frame[], filter: FilterNode, negate = false): Sql {
  const { context } = scope
  const logic = (node: FilterNode, negated: boolean): Sql => {
    switch (node.kind) {
      case 'and':
      case 'or': {
        const conjunction = (node.kind === 'and') !== negated
        return sql`(${logic(node.left, negated)} ${raw(conjunction ? 'AND' : 'OR')} ${logic(node.right, negated)})`
      }
      case 'not':
        return logic(node.operand, !negated)
      case 'lambda':
        return lambda(node, negated)
      default:
        return atom(node, negated)
    }
  }

  /** The rows of `relation` from the frame's row; a hidden target row is none. */
  const related = (frame: Frame, relation: ViewRelation): Joined => {
    const target = context.tableOf(relation.target.model)
    const name = `t${++scope.aliases}`
    const correlation = relation.kind === 'one'
      ? sql`${ident(name, target.id.name)} = ${ident(frame.alias, column(frame.table, relation.field).name)}`
      : sql`${ident(name, column(target, relation.field).name)} = ${ident(frame.alias, frame.table.id.name)}`
    const { visible } = relation.target
    const conditions = visible === undefined ? [correlation] : [correlation, condition(scope, [{ table: target, alias: name, view: target.model }], visible)]
    return { target, name, conditions }
  }

  /** any: some member passes (EXISTS); all: no member fails to pass (NOT EXISTS of the negation). */
  const lambda = (node: Lambda, negated: boolean): Sql => {
    const frame = frames[node.scope ?? 0]
    const relation = relationOf(frame.view, node.path)
    const { target, name, conditions } = related(frame, relation)
    const all = node.quantifier === 'all'
    if (node.predicate !== null) conditions.push(condition(scope, [...frames, { table: target, alias: name, view: relation.target }], node.predicate, all))
    const exists = sql`EXISTS (SELECT 1 FROM ${target.ref} AS ${ident(name)} WHERE ${join(conditions, ' AND ')})`
    return all !== negated ? sql`NOT ${exists}` : exists
  }

  /**
   * A comparison holds when some candidate value of each path passes (filter/evaluate.ts): a
   * 'many' path becomes an EXISTS over the children. A lone 'one' path becomes an EXISTS over its
   * target too, or NOT EXISTS of the negation when a missing target (a null candidate) passes.
   */
  const atom = (node: Atom, negated: boolean): Sql => {
    const paths = fieldPaths(node)
    const lonelyOne = paths.length === 1 && paths[0].path.length === 2 && relationOf(frames[paths[0].scope].view, paths[0].path).kind === 'one'
    const from: Sql[] = []
    const correlations: Sql[] = []
    const ref = (field: FieldRef): Sql => {
      const frame = frames[field.scope ?? 0]
      const { path } = field
      if (path.length === 1) return columnRef(frame.alias, column(frame.table, path[0]))
      const relation = relationOf(frame.view, path)
      const { target, name, conditions } = related(frame, relation)
      const value = columnRef(name, column(target, path[1]))
      // Beside other operands a 'one' path is a scalar subquery: exactly one candidate, NULL when missing.
      if (relation.kind === 'one' && !lonelyOne) return sql`(SELECT ${value} FROM ${target.ref} AS ${ident(name)} WHERE ${join(conditions, ' AND ')})`
      from.push(sql`${target.ref} AS ${ident(name)}`)
      correlations.push(...conditions)
      return value
    }
    const test = testOf(frames, node, ref, context)
    if (from.length === 0) return negated ? test.neg : test.pos
    const nullPasses = lonelyOne && compilePredicate(withNulls(node), () => [])({})
    const exists = sql`EXISTS (SELECT 1 FROM ${join(from, ', ')} WHERE ${join([...correlations, nullPasses ? test.neg : test.pos], ' AND ')})`
    return nullPasses !== negated ? sql`NOT ${exists}` : exists
  }

  return logic(filter, negate)
}

function relationOf (view: View, path: readonly string[]): ViewRelation {
  return view.relations.get(path[0]) as ViewRelation
}

function operandsOf (node: Atom): Operand[] {
  return node.kind === 'compare' ? [node.left, node.right] : node.kind === 'in' ? [node.operand] : [...node.args]
}

function fieldPaths (node: Atom): Array<{ scope: number, path: readonly string[] }> {
  const paths: Array<{ scope: number, path: readonly string[] }> = []
  const visit = (operand: Operand) => {
    if (operand.kind === 'field') paths.push({ scope: operand.scope ?? 0, path: operand.path })
    else if (operand.kind === 'call') operand.args.forEach(visit)
  }
  operandsOf(node).forEach(visit)
  return paths
}

/** The atom with every path read as null: what it says of a missing 'one' target. */
function withNulls (node: Atom): Atom {
  const nulled = (operand: Operand): Operand => {
    if (operand.kind === 'field') return { kind: 'literal', type: 'null', value: null }
    return operand.kind === 'call' ? { ...operand, args: operand.args.map(nulled) } : operand
  }
  switch (node.kind) {
    case 'compare': return { ...node, left: nulled(node.left), right: nulled(node.right) }
    case 'in': return { ...node, operand: nulled(node.operand) }
    case 'match': return { ...node, args: [nulled(node.args[0]), nulled(node.args[1])] }
  }
}

type Ref = (field: FieldRef) => Sql

function fieldType (frames: readonly Frame[], field: FieldRef): FieldType {
  const { view } = frames[field.scope ?? 0]
  const { path } = field
  const owner = path.length === 1 ? view : relationOf(view, path).target
  return owner.model.fields.get(path[path.length - 1])?.type as FieldType
}

/** An operand's type: what a literal beside it is cast to. */
function typeOf (frames: readonly Frame[], operand: Operand): FieldType {
  switch (operand.kind) {
    case 'field': return fieldType(frames, operand)
    case 'call': return FUNCTIONS[operand.name].result
    case 'literal': return 'string'
  }
}

// PostgreSQL's substr() takes int4 positions: larger ones are clamped (no string is that long).
const INT4_MAX = 2147483647

function testOf (frames: readonly Frame[], node: Atom, ref: Ref, context: CompileContext): Test {
  const clamp = (value: Sql, max: number): Sql => sql`(CASE WHEN ${value} < 0 THEN 0 WHEN ${value} > ${raw(String(max))} THEN ${raw(String(max))} ELSE ${value} END)`
  const operand = (op: Operand, beside: FieldType): Sql => {
    switch (op.kind) {
      case 'literal': return literal(op, beside)
      case 'field': {
        // A date read as an instant: the one its day begins in UTC (not in the session's time zone).
        const value = ref(op)
        return op.type === 'datetime' && fieldType(frames, op) === 'date' ? sql`(${value}::timestamp AT TIME ZONE 'UTC')` : value
      }
      case 'call': return call(op)
    }
  }
  const call = (op: ValueCall): Sql => {
    const { params } = FUNCTIONS[op.name]
    const args = op.args.map((arg, i) => operand(arg, params[i][0]))
    const [first, second, third] = args
    // Text results compare by code point, as every column does.
    const text = (expression: Sql): Sql => sql`${expression} COLLATE "C"`
    switch (op.name) {
      case 'tolower':
      case 'toupper': {
        // The case mapping needs a Unicode collation; the result compares by code point again.
        const name = raw(op.name === 'tolower' ? 'lower' : 'upper')
        return text(sql`${name}(${first} COLLATE ${ident(context.caseCollation)})`)
      }
      case 'trim': return text(sql`btrim(${first}, ${TRIMMED}::text)`)
      case 'concat': return text(sql`(${first} || ${second})`)
      case 'substring': {
        const start = sql`(${clamp(second, INT4_MAX - 1)} + 1)::integer`
        return text(third === undefined ? sql`substr(${first}, ${start})` : sql`substr(${first}, ${start}, ${clamp(third, INT4_MAX)}::integer)`)
      }
      case 'length': return sql`length(${first})`
      case 'indexof': return sql`(strpos(${first}, ${second}) - 1)`
      case 'year':
      case 'month':
      case 'day': {
        const utc = typeOf(frames, op.args[0]) === 'date' ? first : sql`(${first} AT TIME ZONE 'UTC')`
        return sql`extract(${raw(op.name)} from ${utc})::integer`
      }
      case 'now': return raw('statement_timestamp()')
    }
  }
  switch (node.kind) {
    case 'compare': {
      const { left, right, op } = node
      if (isNull(left) || isNull(right)) {
        const other = operand(isNull(left) ? right : left, 'string')
        const isNullTest = sql`${other} IS NULL`
        const notNullTest = sql`${other} IS NOT NULL`
        // OData: null equals null; ordering with null is false whatever the other side.
        if (op === 'eq') return { pos: isNullTest, neg: notNullTest }
        if (op === 'ne') return { pos: notNullTest, neg: isNullTest }
        return { pos: FALSE, neg: TRUE }
      }
      const a = operand(left, typeOf(frames, right))
      const b = operand(right, typeOf(frames, left))
      const distinct = sql`${a} IS DISTINCT FROM ${b}`
      // Beside a non-null literal, `=` equals OData's eq (and can use an index).
      const same = left.kind === 'literal' || right.kind === 'literal' ? sql`${a} = ${b}` : sql`${a} IS NOT DISTINCT FROM ${b}`
      if (op === 'eq') return { pos: same, neg: distinct }
      if (op === 'ne') return { pos: distinct, neg: same }
      const ordered = sql`${a} ${raw(ORDERING[op])} ${b}`
      return { pos: ordered, neg: sql`(${ordered}) IS NOT TRUE` }
    }
    case 'in': {
      const type = typeOf(frames, node.operand)
      const x = operand(node.operand, type)
      const listed = node.values.filter(value => value.type !== 'null').map(value => literal(value, type))
      const isNullTest = sql`${x} IS NULL`
      if (listed.length === 0) return { pos: isNullTest, neg: sql`${x} IS NOT NULL` }
      const within = sql`${x} IN (${join(listed, ', ')})`
      if (listed.length === node.values.length) return { pos: within, neg: sql`(${within}) IS NOT TRUE` }
      return { pos: sql`(${within} OR ${isNullTest})`, neg: sql`((${within}) IS NOT TRUE AND ${x} IS NOT NULL)` }
    }
    case 'match': {
      const [text, part] = node.args
      // LIKE with the pattern characters escaped: a literal here, a column in SQL.
      const [before, after] = node.name === 'contains' ? ['%', '%'] : node.name === 'startswith' ? ['', '%'] : ['%', '']
      const pattern = part.kind === 'literal'
        ? sql`${before + escapeLike(String(part.value)) + after}::text`
        : sql`${before}::text || replace(replace(replace(${operand(part, 'string')}, ${raw(String.raw`E'\\', E'\\\\'), '%', E'\\%'), '_', E'\\_')`)} || ${after}::text`
      const like = sql`${operand(text, 'string')} LIKE (${pattern})${ESCAPE}`
      return { pos: like, neg: sql`(${like}) IS NOT TRUE` }
    }
  }
}

function isNull (operand: Operand): boolean {
  return operand.kind === 'literal' && operand.type === 'null'
}

/** A literal as a typed placeholder; a number beside an integer column stays an integer. */
function literal (value: Literal, beside: FieldType): Sql {
  // Null literals never get here: the tests above turn them into IS [NOT] NULL.
  const type = value.type === 'number' ? (beside === 'integer' ? 'integer' : 'number') : value.type as FieldType
  return typed(value.value, type)
}

export function escapeLike (text: string): string {
  return text.replace(/[\\%_]/g, '\\$&')
}
