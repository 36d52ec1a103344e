// Exports (docs/export.md, demo contract "Export"): LIST answered as NDJSON or CSV with every
// matching record instead of one page. The records come from the store's exportList when it has
// one (the SQL store's cursor), else from its pages read one after another by keyset, so no store
// builds the whole answer; the text is made as the response stream asks for more, so a slow
// client holds back the read (back-pressure) and a client that leaves ends it.
import { Readable } from 'node:stream'
import { stringify } from 'csv-stringify/sync'
import type { View } from '../registry/model.js'
import type { ListQuery, Store, StoredRecord } from '../stores/store.js'
import type { ListRequest, RawQuery } from '../query/list-query.js'
import { odataParameters, windowNames } from '../query/parameters.js'
import type { ParameterName } from '../query/parameters.js'
import { project } from '../envelope/index.js'
import { QueryInvalidError, withInvalidParams } from '../errors.js'
import type { Format } from '../http/negotiation.js'
import type { Outcome } from './input.js'

export type ExportFormat = Extract<Format, 'ndjson' | 'csv'>

export const exportTypes: Readonly<Record<ExportFormat, string>> = {
  ndjson: 'application/x-ndjson',
  csv: 'text/csv; charset=utf-8; header=present'
}

export const isExport = (format: Format): format is ExportFormat => format === 'ndjson' || format === 'csv'

/** Records a page of the fallback reads, and the text a chunk of the answer gathers before it is written. */
const PAGE = 500
const CHUNK = 16 * 1024

/** The query without the paging parameters, which an export ignores (it sends every match). */
export function withoutPaging (raw: RawQuery): RawQuery {
  const names = new Set<string>()
  for (const name of windowNames) names.add(name).add(odataParameters.get(name as ParameterName)?.name ?? name)
  return Object.fromEntries(Object.entries(raw).filter(([name]) => !names.has(name)))
}

/** Every record of the query, in order: the store's own export, or its pages one after another. */
async function * recordsOf (store: Store, view: View, query: ListQuery): AsyncGenerator<StoredRecord> {
  if (store.exportList !== undefined) {
    yield * store.exportList(view, query)
    return
  }
  let window: ListQuery['window'] = { kind: 'offset', offset: 0 }
  for (;;) {
    const page = await store.list(view, { ...query, window, limit: PAGE, total: false })
    yield * page.items
    const last = page.items.at(-1)
    if (!page.hasMore || last === undefined) return
    // The next page after the last record's sort keys: unmoved by writes meanwhile (Paging stability).
    window = { kind: 'after', values: query.sort.map(key => last.data[key.field] ?? null) }
  }
}

/** A CSV cell: text as it is, but for a leading character a spreadsheet reads as a formula (OWASP "CSV Injection"), objects and arrays as JSON. */
function cell (value: unknown): string | number | boolean | null {
  if (value === null || value === undefined) return null
  if (typeof value === 'string') return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value
  if (typeof value === 'number' || typeof value === 'boolean') return value
  return JSON.stringify(value)
}

/**
 * RFC 4180: CRLF after each record, and a cell with a line break quoted (csv-stringify quotes one
 * holding the record delimiter, CRLF, but not a lone LF or CR); booleans as `true`/`false` (its
 * default is 1 and an empty cell).
 */
const csvOptions = { record_delimiter: 'windows', quoted_match: /[\r\n]/, cast: { boolean: (value: boolean) => String(value) } } as const

/** The lines of the answer, gathered into chunks; CSV's header first. */
async function * linesOf (format: ExportFormat, records: AsyncIterable<StoredRecord>, columns: readonly string[], fields: ReadonlySet<string> | null): AsyncGenerator<string> {
  const line = format === 'ndjson'
    ? (record: StoredRecord) => `${JSON.stringify(project(record.data, fields))}\n`
    : (record: StoredRecord) => stringify([columns.map(column => cell(record.data[column]))], csvOptions)
  let chunk = format === 'csv' ? stringify([columns], csvOptions) : ''
  for await (const record of records) {
    chunk += line(record)
    if (chunk.length >= CHUNK) {
      yield chunk
      chunk = ''
    }
  }
  if (chunk !== '') yield chunk
}

/**
 * The export of a LIST request. The first record is read before the answer starts, so that a
 * failure to begin (the database unavailable, a value it cannot compare) is still a problem
 * answer; what fails later cuts the stream short.
 */
export async function exportOutcome (store: Store, view: View, parsed: ListRequest, query: ListQuery, format: ExportFormat): Promise<Outcome> {
  const related = [['expand', parsed.expand], ['include', parsed.include]] as const
  const problems = related.filter(([, relations]) => relations.length > 0).map(([name]) => ({ name, reason: 'is not available in an export (Accept: text/csv or application/x-ndjson)' }))
  if (problems.length > 0) throw withInvalidParams(new QueryInvalidError(), problems)
  const records = recordsOf(store, view, query)
  const first = await records.next()
  async function * all (): AsyncGenerator<StoredRecord> {
    if (first.done === true) return
    yield first.value
    yield * records
  }
  const columns = [...view.fields.keys()].filter(name => parsed.fields === null || parsed.fields.has(name))
  const stream = Readable.from(linesOf(format, all(), columns, parsed.fields), { objectMode: false })
  // Closed before it was read through (the client left): the read ends too, even if the stream
  // never started pulling (the SQL store rolls back its transaction).
  stream.once('close', () => { records.return(undefined).catch(() => {}) })
  return { status: 200, headers: { 'content-type': exportTypes[format] }, body: null, stream }
}
