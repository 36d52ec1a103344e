// The table behind one resource, from its TypeBox schema: its names, column types and the
// row codec, resolved once per model from the store's options, never per request.
import type { FieldModel, FieldType, ResourceModel } from '../../registry/model.js'
import type { Fields, StoredRecord } from '../store.js'
import { storedValue } from '../../values/storable.js'
import { ident, join, raw, sql, Sql, toQuery } from './sql.js'

/** Maps a resource onto a table someone else manages (or renames ours). */
export interface TableMapping {
  /** Default: the resource name, e.g. `books`. */
  readonly table?: string | undefined
  /** Field name → column name; fields not listed use their own name. */
  readonly columns?: Readonly<Record<string, string>> | undefined
  /** Default `version`. */
  readonly versionColumn?: string | undefined
  /** Default `modified_at`. */
  readonly modifiedAtColumn?: string | undefined
}

export interface Column {
  readonly field: FieldModel
  readonly name: string
  /**
   * False for the id and required non-nullable fields, whose columns are NOT NULL: their order
   * needs no NULLS clause. True for those too when the database still allows NULL there.
   */
  readonly canBeNull: boolean
}

export interface Table {
  readonly model: ResourceModel
  readonly schema: string
  readonly name: string
  /** `"schema"."table"`. */
  readonly ref: Sql
  /** By field name, in the schema's order. */
  readonly columns: ReadonlyMap<string, Column>
  readonly id: Column
  readonly version: string
  readonly modifiedAt: string
  /** The fields, then version and modification time, of the row aliased `t0`. */
  readonly selectList: Sql
  /** The text of RETRIEVE's statement, `SELECT … WHERE id = $1`: the same for every request, so made once. */
  readonly selectById: string
  /** The record's data as JSON, of the row aliased `t0`, as decode() makes it: what a change keeps (changes.ts). */
  readonly json: Sql
  decode (row: readonly unknown[]): StoredRecord
  /**
   * A reader of the data alone, of these fields (null: every field) and the id, for a list whose
   * caller reads no more (ListQuery.reads): fewer columns to send and parse, and no version or
   * modification time (0 and the epoch in its records).
   */
  dataReader (fields: ReadonlySet<string> | null): RowReader
}

/** A select list of the row aliased `t0` and what makes a record of each row it gives. */
export interface RowReader {
  readonly selectList: Sql
  decode (row: readonly unknown[]): StoredRecord
}

/** Column type per field type. Text is collated "C" so it sorts by code point, like the memory store. */
export const columnTypes: Readonly<Record<FieldType, string>> = {
  string: 'text COLLATE "C"',
  integer: 'bigint',
  number: 'double precision',
  boolean: 'boolean',
  date: 'date',
  datetime: 'timestamptz',
  json: 'jsonb'
}

const casts: Readonly<Record<FieldType, string>> = {
  string: 'text',
  integer: 'bigint',
  number: 'double precision',
  boolean: 'boolean',
  date: 'date',
  datetime: 'timestamptz',
  json: 'jsonb'
}

/** The alias of the main table in every statement. */
export const MAIN = 't0'

/**
 * A filter's or a page anchor's value as a typed placeholder, so PostgreSQL never guesses its
 * type (never of a json field: those are neither filtered by value nor sorted; writes take writeValue).
 */
export function typed (value: unknown, type: FieldType): Sql {
  // Integers beyond 2^53 are not exact JS numbers anyway; compare them as doubles rather than fail.
  const cast = type === 'integer' && !Number.isSafeInteger(value) && value !== null ? 'double precision' : casts[type]
  return sql`${value}::${raw(cast)}`
}

export function arrayCast (type: FieldType): Sql {
  return raw(`${casts[type]}[]`)
}

/** A column of an aliased table; text gets the "C" collation so order and comparison follow code points. */
export function columnRef (alias: string, column: Column): Sql {
  const ref = ident(alias, column.name)
  return column.field.type === 'string' ? sql`${ref} COLLATE "C"` : ref
}

export interface ReadOptions {
  /** Columns of required fields that the database lets hold NULL (ddl.ts migrate). */
  readonly nullable?: ReadonlySet<string>
  /** The driver drops a leading U+FEFF from every text it decodes (PGlite's TextDecoder). */
  readonly dropsLeadingBom?: boolean
}

/** Resolves a model's table once; throws TypeError when the mapping names unknown fields or reuses a column. */
export function resolveTable (model: ResourceModel, schema: string, mapping: TableMapping = {}, read: ReadOptions = {}): Table {
  const { nullable = new Set(), dropsLeadingBom = false } = read
  const where = `tables.${model.name}`
  const name = mapping.table ?? model.name
  for (const field of Object.keys(mapping.columns ?? {})) {
    if (!model.fields.has(field)) throw new TypeError(`SQL store option ${where}.columns names '${field}', which is not a field of ${model.name}`)
  }
  const columns = new Map<string, Column>()
  for (const field of model.fields.values()) {
    const name = mapping.columns?.[field.name] ?? field.name
    const canBeNull = field.name !== model.idField && (field.nullable || !field.required || nullable.has(name))
    columns.set(field.name, { field, name, canBeNull })
  }
  const version = mapping.versionColumn ?? 'version'
  const modifiedAt = mapping.modifiedAtColumn ?? 'modified_at'
  const names = [...[...columns.values()].map(column => column.name), version, modifiedAt]
  const repeated = names.find((column, i) => names.indexOf(column) !== i)
  if (repeated !== undefined) {
    throw new TypeError(`SQL store: column '${repeated}' of table ${name} would hold two things; rename it with ${where}.columns, .versionColumn or .modifiedAtColumn`)
  }
  const ordered = [...columns.values()]
  const whole = rowReader(ordered, { version, modifiedAt }, dropsLeadingBom)
  const ref = ident(schema, name)
  const id = columns.get(model.idField) as Column
  return Object.freeze({
    model,
    schema,
    name,
    ref,
    columns,
    id,
    version,
    modifiedAt,
    selectList: whole.selectList,
    selectById: toQuery(sql`SELECT ${whole.selectList} FROM ${ref} AS ${ident(MAIN)} WHERE ${ident(MAIN, id.name)} = ${''}::text`).text,
    json: recordJson(ordered),
    decode: whole.decode,
    dataReader: (fields: ReadonlySet<string> | null) => fields === null
      ? rowReader(ordered, null, dropsLeadingBom)
      : rowReader(ordered.filter(column => column === id || fields.has(column.field.name)), null, dropsLeadingBom)
  })
}

const EPOCH = new Date(0)

/** Reads these columns, then the bookkeeping columns when named (else the record has version 0 and the epoch). */
function rowReader (read: readonly Column[], bookkeeping: { readonly version: string, readonly modifiedAt: string } | null, dropsLeadingBom: boolean): RowReader {
  const list = read.map(column => selectColumn(column, dropsLeadingBom))
  const n = read.length
  return {
    selectList: join(bookkeeping === null ? list : [...list, ident(MAIN, bookkeeping.version), modifiedAtMillis(bookkeeping.modifiedAt)], ', '),
    decode (row) {
      const data: Fields = {}
      for (let i = 0; i < n; i++) {
        const { field } = read[i]
        const value = row[i]
        // Optional non-nullable fields that were never set stay absent, as in the memory store.
        if (value === null) {
          if (field.nullable) data[field.name] = null
        } else {
          // bigint arrives as a string from pg; the schema promises a JSON number.
          data[field.name] = field.type === 'integer' ? Number(value) : value
        }
      }
      return bookkeeping === null
        ? Object.freeze({ data: Object.freeze(data), version: 0, modifiedAt: EPOCH })
        : Object.freeze({ data: Object.freeze(data), version: Number(row[n]), modifiedAt: new Date(Number(row[n + 1])) })
    }
  }
}

/**
 * The bookkeeping time as milliseconds since the epoch, not a timestamptz: the driver parses each
 * timestamptz text with regular expressions (0.4 µs a row here, 8 µs of a LIST page of 21 rows),
 * a bigint is one Number(). Truncated to the millisecond first, as a Date holds it, so the product
 * is exact whether `extract` gives numeric (PostgreSQL 14 on) or a double (before).
 */
const modifiedAtMillis = (column: string) => sql`(extract(epoch from date_trunc('milliseconds', ${ident(MAIN, column)})) * 1000)::bigint`

/**
 * The JSON object decode() makes of a row, built in the statement: members in the schema's order,
 * a NULL of a nullable field as null, of any other field left out. Pieces are joined with
 * array_to_string, which skips the NULL ones (and, unlike concat_ws, takes any number of fields).
 */
function recordJson (columns: readonly Column[]): Sql {
  const members = columns.map(column => {
    const value = sql`to_json(${selectColumn(column, false)})::text`
    // The member's name is a field name of the schema, JSON-quoted, as a literal of this code's own.
    const name = raw(`'${JSON.stringify(column.field.name).replaceAll("'", "''")}:'`)
    return column.field.nullable ? sql`${name} || coalesce(${value}, 'null')` : sql`${name} || ${value}`
  })
  return sql`('{' || array_to_string(ARRAY[${join(members, ', ')}]::text[], ',') || '}')::json`
}

/** A text as the driver must read it back: a decoder that drops a leading U+FEFF (WHATWG Encoding "UTF-8 decode") gets one more to drop. */
export function textOut (ref: Sql, dropsLeadingBom: boolean): Sql {
  return dropsLeadingBom ? sql`CASE WHEN starts_with(${ref}, chr(65279)) THEN chr(65279) || ${ref} ELSE ${ref} END` : ref
}

// Dates and date-times leave as the ISO text the schema promises, whatever the driver's parsers.
function selectColumn (column: Column, dropsLeadingBom: boolean): Sql {
  const ref = ident(MAIN, column.name)
  switch (column.field.type) {
    case 'string': return textOut(ref, dropsLeadingBom)
    case 'date': return sql`to_char(${ref}, 'YYYY-MM-DD')`
    case 'datetime': return sql`to_char(${ref} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
    default: return ref
  }
}

/** A field value for INSERT/UPDATE; one PostgreSQL cannot keep exactly is a 422 naming the field, never altered (values/storable.ts storedValue). */
export function writeValue (col: Column, value: unknown): Sql {
  return writeSlot(col, writeParam(col, value))
}

/**
 * writeValue's parameter. Date-times go as the UTC instant to the millisecond (values.ts), which
 * is what reads give back; storedValue refuses the integers typed() would cast otherwise.
 */
export function writeParam (col: Column, value: unknown): unknown {
  const stored = storedValue(col.field, value ?? null)
  return col.field.type === 'json' && stored !== null ? JSON.stringify(stored) : stored
}

/** writeValue's placeholder, around its parameter or a Slot for it. */
export function writeSlot (col: Column, param: unknown): Sql {
  return sql`${param}::${raw(casts[col.field.type])}`
}
