// Tables from the TypeBox schemas (issue 6 "Schema from TypeBox"): creates what is missing and
// adds missing columns, foreign keys for relations and a (field, id) index per sortable field.
// Upgrades only add: nothing is dropped, retyped or tightened on a table that holds data.
import { createHash } from 'node:crypto'
import type { ResourceModel } from '../../registry/model.js'
import { ident, join, quoteIdent, raw, sql } from './sql.js'
import type { Sql } from './sql.js'
import { columnTypes } from './table.js'
import type { Column, Table } from './table.js'

export type Run = (fragment: Sql) => Promise<unknown[][]>

/** PostgreSQL truncates names to 63 bytes; a long one keeps a hash so two never collide. */
function shortName (name: string): string {
  if (Buffer.byteLength(name) <= 63) return name
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 8)
  return `${Buffer.from(name).subarray(0, 50).toString().replace(/\uFFFD+$/, '')}_${hash}`
}

export function foreignKeyName (table: string, column: string): string {
  return shortName(`${table}_${column}_fkey`)
}

function indexName (table: string, column: string): string {
  return shortName(`${table}_${column}_sort`)
}

interface ForeignKey { readonly child: Table, readonly column: Column, readonly parent: Table }

/** Every relation of the tables as the foreign key it needs, once each. */
function foreignKeys (tables: readonly Table[], tableOf: (model: ResourceModel) => Table): ForeignKey[] {
  const keys = new Map<string, ForeignKey>()
  for (const table of tables) {
    for (const relation of table.model.relations.values()) {
      const target = tableOf(relation.target)
      const [child, parent] = relation.kind === 'one' ? [table, target] : [target, table]
      const column = child.columns.get(relation.field) as Column
      keys.set(`${child.name}\u0000${column.name}`, { child, column, parent })
    }
  }
  return [...keys.values()]
}

/**
 * Brings the tables up to their schemas inside one transaction, under an advisory lock so that
 * instances starting together take turns.
 */
export async function migrate (run: Run, schema: string, tables: readonly Table[], tableOf: (model: ResourceModel) => Table): Promise<void> {
  await run(sql`SELECT pg_advisory_xact_lock(hashtext(${`fastify-api-conventions ${schema}`}))`)
  // CREATE SCHEMA IF NOT EXISTS would still need the CREATE privilege on the database.
  if ((await run(sql`SELECT 1 FROM pg_namespace WHERE nspname = ${schema}`)).length === 0) await run(sql`CREATE SCHEMA ${ident(schema)}`)
  const created = new Set<Table>()
  const added = new Set<Column>()
  for (const table of tables) {
    const rows = await run(sql`SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(${`${quoteIdent(schema)}.${quoteIdent(table.name)}`}) AND attnum > 0 AND NOT attisdropped`)
    const existing = new Set(rows.map(row => row[0]))
    const columns = [...table.columns.values()]
    if (existing.size === 0) {
      const definitions = columns.map(column => {
        const notNull = column.field.required && !column.field.nullable ? ' NOT NULL' : ''
        return sql`${ident(column.name)} ${raw(columnTypes[column.field.type] + notNull)}`
      })
      await run(sql`CREATE TABLE ${table.ref} (${join([...definitions, ...bookkeeping(table)], ', ')}, PRIMARY KEY (${ident(table.id.name)}))`)
      created.add(table)
      continue
    }
    // Added columns stay nullable: the rows already there have no value for them.
    for (const column of columns.filter(column => !existing.has(column.name))) {
      await run(sql`ALTER TABLE ${table.ref} ADD COLUMN ${ident(column.name)} ${raw(columnTypes[column.field.type])}`)
      added.add(column)
    }
    const [version, modifiedAt] = bookkeeping(table)
    if (!existing.has(table.version)) await run(sql`ALTER TABLE ${table.ref} ADD COLUMN ${version}`)
    if (!existing.has(table.modifiedAt)) await run(sql`ALTER TABLE ${table.ref} ADD COLUMN ${modifiedAt}`)
  }
  // Only on columns created now: a constraint on old data could fail, and the user may manage it.
  for (const { child, column, parent } of foreignKeys(tables, tableOf)) {
    if (!created.has(child) && !added.has(column)) continue
    await run(sql`ALTER TABLE ${child.ref} ADD CONSTRAINT ${ident(foreignKeyName(child.name, column.name))} FOREIGN KEY (${ident(column.name)}) REFERENCES ${parent.ref} (${ident(parent.id.name)})`)
  }
  for (const table of tables) {
    for (const column of table.columns.values()) {
      if (column.field.type === 'json' || column === table.id) continue
      // NULLS FIRST as the order asks (spec "Sorting" 3); read backwards it serves descending order too.
      const nulls = column.canBeNull ? raw(' NULLS FIRST') : raw('')
      await run(sql`CREATE INDEX IF NOT EXISTS ${ident(indexName(table.name, column.name))} ON ${table.ref} (${ident(column.name)}${nulls}, ${ident(table.id.name)})`)
    }
  }
}

function bookkeeping (table: Table): [Sql, Sql] {
  return [
    sql`${ident(table.version)} integer NOT NULL DEFAULT 1`,
    sql`${ident(table.modifiedAt)} timestamptz NOT NULL DEFAULT now()`
  ]
}
