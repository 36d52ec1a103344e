// Tables from the TypeBox schemas: creates what is missing and
// adds missing columns, foreign keys for relations and a (field, id) index per sortable field.
// Upgrades only add: nothing is dropped or retyped, but for the search index, remade when what it
// indexes changes. A column the schema cannot use as it is (a type that cannot hold the field,
// rows without a value for a required field) stops start-up.
// Beside them, the store's own table of responses kept for Idempotency-Key.
import { createHash } from 'node:crypto'
import type { ResourceModel } from '../../registry/model.js'
import { ident, join, quoteIdent, raw, sql, toQuery } from './sql.js'
import type { Sql } from './sql.js'
import { columnTypes, writeValue } from './table.js'
import type { Column, Table } from './table.js'
import { documentVector } from './search.js'

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

// The column types that hold each field type exactly (format_type names, domains by their base
// type): a narrower integer refuses what does not fit (422); anything else would convert silently.
const holds: Readonly<Record<Column['field']['type'], readonly string[]>> = {
  string: ['text', 'character varying'],
  integer: ['bigint', 'integer', 'smallint'],
  number: ['double precision'],
  boolean: ['boolean'],
  date: ['date'],
  datetime: ['timestamp with time zone'],
  json: ['jsonb']
}

interface Existing { readonly type: string, readonly notNull: boolean }

function label (table: Table): string {
  return `${quoteIdent(table.schema)}.${quoteIdent(table.name)}`
}

/** Brings the tables up to their schemas; see {@link migrate}. */
export interface MigrateOptions {
  /** False: only check the tables (option `migrate: false`); nothing is created, added or filled. */
  readonly alter: boolean
  /** The collation search's lower() uses (search.ts); its index is made when given. */
  readonly caseCollation?: string
}

/**
 * Checks and (with `alter`) creates or upgrades the tables, inside one transaction under an
 * advisory lock so that instances starting together take turns. Throws a TypeError naming the
 * table and column when one cannot serve its field. Returns, per table, the columns of required
 * fields that the database still lets hold NULL (columns someone else manages): those sort and
 * page as nullable.
 */
export async function migrate (run: Run, schema: string, tables: readonly Table[], tableOf: (model: ResourceModel) => Table, options: MigrateOptions): Promise<Map<Table, Set<string>>> {
  const { alter } = options
  if (alter) await takeTurn(run, schema)
  const created = new Set<Table>()
  const added = new Set<Column>()
  const nullable = new Map<Table, Set<string>>()
  for (const table of tables) {
    const rows = await run(sql`SELECT a.attname, format_type(CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END, NULL), a.attnotnull
      FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
      WHERE a.attrelid = to_regclass(${label(table)}) AND a.attnum > 0 AND NOT a.attisdropped`)
    const existing = new Map(rows.map(([name, type, notNull]) => [name as string, { type: type as string, notNull: notNull === true }]))
    const columns = [...table.columns.values()]
    if (existing.size === 0) {
      if (!alter) throw new TypeError(`SQL store: table ${label(table)} of resource ${table.model.name} does not exist, and option migrate is false`)
      const definitions = columns.map(column => sql`${ident(column.name)} ${raw(columnTypes[column.field.type] + (column.canBeNull ? '' : ' NOT NULL'))}`)
      await run(sql`CREATE TABLE ${table.ref} (${join([...definitions, ...bookkeeping(table)], ', ')}, PRIMARY KEY (${ident(table.id.name)}))`)
      created.add(table)
      continue
    }
    for (const column of columns) {
      const found = existing.get(column.name)
      if (found === undefined) {
        if (!alter) throw new TypeError(`SQL store: table ${label(table)} has no column ${quoteIdent(column.name)} for field ${column.field.name}, and option migrate is false`)
        await addColumn(run, table, column)
        added.add(column)
      } else {
        checkType(table, column.name, found, holds[column.field.type], `field ${column.field.name} (${column.field.type})`)
        if (!column.canBeNull && !found.notNull) {
          await fillNulls(run, table, column, alter)
          if (column !== table.id) nullable.set(table, (nullable.get(table) ?? new Set()).add(column.name))
        }
      }
    }
    const [version, modifiedAt] = bookkeeping(table)
    for (const [name, definition, types] of [[table.version, version, holds.integer], [table.modifiedAt, modifiedAt, holds.datetime]] as const) {
      const found = existing.get(name)
      if (found !== undefined) checkType(table, name, found, types, 'the store\'s bookkeeping')
      else if (!alter) throw new TypeError(`SQL store: table ${label(table)} has no column ${quoteIdent(name)} for the store's bookkeeping, and option migrate is false`)
      else await run(sql`ALTER TABLE ${table.ref} ADD COLUMN ${definition}`)
    }
  }
  if (!alter) return nullable
  // Only on columns created now: a constraint on old data could fail, and the user may manage it.
  for (const { child, column, parent } of foreignKeys(tables, tableOf)) {
    if (!created.has(child) && !added.has(column)) continue
    await run(sql`ALTER TABLE ${child.ref} ADD CONSTRAINT ${ident(foreignKeyName(child.name, column.name))} FOREIGN KEY (${ident(column.name)}) REFERENCES ${parent.ref} (${ident(parent.id.name)})`)
  }
  for (const table of tables) {
    for (const column of table.columns.values()) {
      if (column.field.type === 'json' || column === table.id) continue
      // NULLS FIRST as the order asks (spec "Sorting" 3); read backwards it serves descending order too.
      const nulls = column.canBeNull || nullable.get(table)?.has(column.name) === true ? raw(' NULLS FIRST') : raw('')
      await run(sql`CREATE INDEX IF NOT EXISTS ${ident(indexName(table.name, column.name))} ON ${table.ref} (${ident(column.name)}${nulls}, ${ident(table.id.name)})`)
    }
    const searchable = table.model.searchable
    if (searchable.length > 0 && options.caseCollation !== undefined) await searchIndex(run, table, documentVector(table, searchable, null, options.caseCollation))
  }
  return nullable
}

/**
 * The GIN index of `search=` by a caller who may read every searchable field: on the expression
 * that search runs (search.ts). It serves that expression only, so its comment names a hash of it,
 * and an index of another (made by an earlier version with another fold, or for other fields or
 * another case collation) is dropped and made again.
 */
async function searchIndex (run: Run, table: Table, vector: Sql): Promise<void> {
  const name = shortName(`${table.name}_search`)
  const mark = `fastify-api-conventions search ${createHash('sha256').update(toQuery(vector).text).digest('hex').slice(0, 16)}`
  const [[current]] = await run(sql`SELECT obj_description(to_regclass(${`${quoteIdent(table.schema)}.${quoteIdent(name)}`}), 'pg_class')`)
  if (current === mark) return
  await run(sql`DROP INDEX IF EXISTS ${ident(table.schema, name)}`)
  await run(sql`CREATE INDEX ${ident(name)} ON ${table.ref} USING gin (${vector})`)
  await run(sql`COMMENT ON INDEX ${ident(table.schema, name)} IS ${raw(`'${mark}'`)}`)
}

/** Waits for the schema's advisory lock (held until the transaction ends), then creates the schema if missing. */
export async function takeTurn (run: Run, schema: string): Promise<void> {
  await run(sql`SELECT pg_advisory_xact_lock(hashtext(${`fastify-api-conventions ${schema}`}))`)
  // CREATE SCHEMA IF NOT EXISTS would still need the CREATE privilege on the database.
  if ((await run(sql`SELECT 1 FROM pg_namespace WHERE nspname = ${schema}`)).length === 0) await run(sql`CREATE SCHEMA ${ident(schema)}`)
}

/** The table of responses kept for Idempotency-Key (Store.keepResponse), one per schema. */
export const KEYS_TABLE = 'api_idempotency_keys'

/**
 * Its definition. The response is `json`, not `jsonb`: kept as the text it was written, so a replay
 * sends its members in their order, and strings `jsonb` refuses (`\u0000`) are kept too. The
 * index serves purgeKeys.
 */
function keysTable (schema: string): Sql[] {
  const table = ident(schema, KEYS_TABLE)
  return [
    sql`CREATE TABLE ${table} (key text COLLATE "C" PRIMARY KEY, fingerprint text NOT NULL, response json NOT NULL, expires_at timestamptz NOT NULL)`,
    sql`CREATE INDEX ${ident(`${KEYS_TABLE}_expires_at`)} ON ${table} (expires_at)`
  ]
}

/** The statements that make it, as text: for those who manage their tables themselves (`migrate: false`). */
export function keysTableDefinition (schema: string): string {
  return keysTable(schema).map(statement => toQuery(statement).text).join('; ')
}

/**
 * Checks and (with `alter`) creates the table of kept responses, under the same lock as
 * {@link migrate}. Without `alter` a missing table is a TypeError that gives its definition.
 */
export async function migrateKeys (run: Run, schema: string, options: MigrateOptions): Promise<void> {
  if (options.alter) await takeTurn(run, schema)
  const name = `${quoteIdent(schema)}.${quoteIdent(KEYS_TABLE)}`
  const [[exists]] = await run(sql`SELECT to_regclass(${name}) IS NOT NULL`)
  if (exists === true) return
  if (!options.alter) {
    throw new TypeError(`SQL store: table ${name}, where responses to requests with an Idempotency-Key are kept, does not exist, and option migrate is false; ` +
      `create it: ${keysTableDefinition(schema)}`)
  }
  for (const statement of keysTable(schema)) await run(statement)
}

function checkType (table: Table, column: string, found: Existing, types: readonly string[], what: string): void {
  if (types.includes(found.type)) return
  throw new TypeError(`SQL store: column ${quoteIdent(column)} of table ${label(table)} is ${found.type}, which cannot hold ${what}; ` +
    `it needs ${types.join(' or ')}. The store never converts a column: convert it yourself or map the field to another column (option tables.${table.model.name}.columns)`)
}

/** The schema's `default` of a field, if it has one. */
function defaultOf (column: Column): { readonly value: unknown } | undefined {
  const { schema } = column.field
  return 'default' in schema ? { value: schema.default } : undefined
}

function missingValues (table: Table, column: Column, count: unknown): TypeError {
  return new TypeError(`SQL store: ${String(count)} existing rows of table ${label(table)} have no value in column ${quoteIdent(column.name)}, ` +
    `but field ${column.field.name} of ${table.model.name} is required; give the field a default in its schema (the upgrade fills those rows with it), make it optional, or fill the column first`)
}

/**
 * A column for a field that may be absent stays nullable. One for a required field is NOT NULL;
 * the rows already there get the schema's default, in one statement, or the upgrade stops.
 */
async function addColumn (run: Run, table: Table, column: Column): Promise<void> {
  const type = columnTypes[column.field.type]
  if (column.canBeNull) {
    await run(sql`ALTER TABLE ${table.ref} ADD COLUMN ${ident(column.name)} ${raw(type)}`)
    return
  }
  const [[count]] = await run(sql`SELECT count(*) FROM ${table.ref}`)
  if (Number(count) === 0) {
    await run(sql`ALTER TABLE ${table.ref} ADD COLUMN ${ident(column.name)} ${raw(`${type} NOT NULL`)}`)
    return
  }
  const fallback = defaultOf(column)
  if (fallback === undefined) throw missingValues(table, column, count)
  await run(sql`ALTER TABLE ${table.ref} ADD COLUMN ${ident(column.name)} ${raw(type)}`)
  await run(sql`UPDATE ${table.ref} SET ${ident(column.name)} = ${writeValue(column, fallback.value)}`)
  await run(sql`ALTER TABLE ${table.ref} ALTER COLUMN ${ident(column.name)} SET NOT NULL`)
}

/** A nullable column of a required field: its NULLs get the schema's default (with `alter`) or stop start-up. */
async function fillNulls (run: Run, table: Table, column: Column, alter: boolean): Promise<void> {
  const [[count]] = await run(sql`SELECT count(*) FROM ${table.ref} WHERE ${ident(column.name)} IS NULL`)
  if (Number(count) === 0) return
  const fallback = defaultOf(column)
  if (!alter || fallback === undefined) throw missingValues(table, column, count)
  await run(sql`UPDATE ${table.ref} SET ${ident(column.name)} = ${writeValue(column, fallback.value)} WHERE ${ident(column.name)} IS NULL`)
}

function bookkeeping (table: Table): [Sql, Sql] {
  return [
    sql`${ident(table.version)} integer NOT NULL DEFAULT 1`,
    sql`${ident(table.modifiedAt)} timestamptz NOT NULL DEFAULT now()`
  ]
}
