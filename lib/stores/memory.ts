// The in-memory store: the Store contract over Maps, evaluating ListQuery itself. Nothing is
// kept across restarts; meant for tests, demos and small data.
// LIST reads a sorted index per table and sort order, kept current by every write, so a page
// costs a binary search and a scan to limit + 1 matches, not a sort of the table.
import { compilePredicate, sortCompare } from '../query/filter/evaluate.js'
import type { FilterNode } from '../query/filter/ast.js'
import type { RelationModel, ResourceModel } from '../registry/model.js'
import { hasChildrenError, missingRelatedError } from './referential.js'
import { VERSION_MISMATCH } from './store.js'
import { storedFields } from '../values/storable.js'
import type { Fields, ListQuery, Page, SortKey, Store, StoredRecord, WriteOptions } from './store.js'
import { ConflictError } from '../errors.js'
import { knownKeys, refuseUnknownKeys } from '../options-check.js'

type Predicate = (record: Fields) => boolean
type Compare = (a: Fields, b: Fields) => number

/** One table's records in one sort order. */
interface SortIndex {
  readonly compare: Compare
  readonly records: StoredRecord[]
}

interface Table {
  readonly rows: Map<string, StoredRecord>
  /** By sort order; Map order is recency of use, so the first is the least recently used. */
  readonly indexes: Map<string, SortIndex>
  /** Filter ASTs are cached per distinct expression upstream, so identity is the usual key… */
  readonly predicates: WeakMap<FilterNode, Predicate>
  /** …but a nested collection builds its parent scope per request: those are found by structure. */
  readonly predicatesByShape: Map<string, Predicate>
}

export interface MemoryStoreOptions {
  /** Clock for modification times; default `() => new Date()`. */
  readonly now?: () => Date
}

/** Sort indexes kept per table; each costs one array of references and a splice per write. */
export const INDEXES_PER_TABLE = 16
/** Predicates kept per table by structure before that cache starts over. */
export const SHAPES_PER_TABLE = 500

const memoryStoreKeys = knownKeys({ now: true } satisfies Record<keyof MemoryStoreOptions, true>)

export function memoryStore (options: MemoryStoreOptions = {}): Store {
  refuseUnknownKeys(options, memoryStoreKeys, 'memoryStore')
  const now = options.now ?? (() => new Date())
  const tables = new Map<string, Table>()

  function table (model: ResourceModel): Table {
    let found = tables.get(model.name)
    if (found === undefined) tables.set(model.name, found = { rows: new Map(), indexes: new Map(), predicates: new WeakMap(), predicatesByShape: new Map() })
    return found
  }

  /** Candidate values of a filter path for one record (filter/evaluate.ts contract). */
  function resolvePath (model: ResourceModel, record: Fields, path: readonly string[]): readonly unknown[] {
    if (path.length === 1) return [record[path[0]]]
    const relation = model.relations.get(path[0]) as RelationModel
    if (relation.kind === 'one') return [table(relation.target).rows.get(record[relation.field] as string)?.data[path[1]] ?? null]
    const id = record[model.idField]
    const values: unknown[] = []
    for (const child of table(relation.target).rows.values()) if (child.data[relation.field] === id) values.push(child.data[path[1]])
    return values
  }

  function predicateFor (model: ResourceModel, filter: FilterNode): Predicate {
    const { predicates, predicatesByShape } = table(model)
    let predicate = predicates.get(filter)
    if (predicate !== undefined) return predicate
    const shape = JSON.stringify(filter)
    predicate = predicatesByShape.get(shape)
    if (predicate === undefined) {
      predicate = compilePredicate(filter, (record, path) => resolvePath(model, record, path))
      if (predicatesByShape.size >= SHAPES_PER_TABLE) predicatesByShape.clear()
      predicatesByShape.set(shape, predicate)
    }
    predicates.set(filter, predicate)
    return predicate
  }

  /** The table sorted by `sort`: built on first use, then maintained by writes until evicted. */
  function indexFor (model: ResourceModel, sort: readonly SortKey[]): SortIndex {
    const { rows, indexes } = table(model)
    const key = sort.map(({ field, direction }) => `${direction} ${field}`).join('\u0000')
    let index = indexes.get(key)
    if (index === undefined) {
      const compare = comparator(sort)
      index = { compare, records: [...rows.values()].sort((a, b) => compare(a.data, b.data)) }
      if (indexes.size >= INDEXES_PER_TABLE) indexes.delete(indexes.keys().next().value as string)
    } else {
      indexes.delete(key) // re-added below as the most recently used
    }
    indexes.set(key, index)
    return index
  }

  /** Every index of the table swaps `previous` (if any) for `next` (if any), staying sorted. */
  function reindex (model: ResourceModel, previous: StoredRecord | undefined, next: StoredRecord | undefined) {
    for (const index of table(model).indexes.values()) {
      if (previous !== undefined) index.records.splice(positionOf(index, previous), 1)
      if (next !== undefined) index.records.splice(bound(index, next.data, false), 0, next)
    }
  }

  function count (model: ResourceModel, predicate: Predicate | null): number {
    const { rows } = table(model)
    if (predicate === null) return rows.size
    let matches = 0
    for (const record of rows.values()) if (predicate(record.data)) matches++
    return matches
  }

  function checkRelated (model: ResourceModel, data: Fields) {
    for (const relation of model.relations.values()) {
      const value = data[relation.field]
      if (relation.kind === 'one' && value !== null && value !== undefined && !table(relation.target).rows.has(value as string)) {
        throw missingRelatedError(relation, value)
      }
    }
  }

  function write (model: ResourceModel, id: string, fields: Fields, previous: StoredRecord | undefined): StoredRecord {
    // Date-times kept as the SQL store keeps them, so both answer and sort alike (values.ts).
    const data = storedFields(model, fields)
    checkRelated(model, data)
    const record = Object.freeze({ data: Object.freeze(data), version: (previous?.version ?? 0) + 1, modifiedAt: now() })
    table(model).rows.set(id, record)
    reindex(model, previous, record)
    return record
  }

  return {
    async list (model: ResourceModel, query: ListQuery): Promise<Page> {
      const predicate = query.filter === null ? null : predicateFor(model, query.filter)
      const index = indexFor(model, query.sort)
      const { window, limit } = query
      let page: Pick<Page, 'items' | 'hasMore'>
      if (window.kind === 'offset') {
        // Without a filter every record matches, so the window starts at its offset directly.
        page = predicate === null
          ? scan(index.records, window.offset, 1, null, 0, limit)
          : scan(index.records, 0, 1, predicate, window.offset, limit)
      } else {
        const anchor = Object.fromEntries(query.sort.map((key, i) => [key.field, window.values[i]]))
        page = window.kind === 'after'
          ? scan(index.records, bound(index, anchor, false), 1, predicate, 0, limit)
          : scan(index.records, bound(index, anchor, true) - 1, -1, predicate, 0, limit)
      }
      return { ...page, total: query.total ? count(model, predicate) : undefined }
    },

    async get (model, id) {
      return table(model).rows.get(id) ?? null
    },

    async getMany (model, field, values) {
      const wanted = new Set(values)
      const { rows } = table(model)
      if (field === model.idField) return [...wanted].flatMap(id => rows.get(id as string) ?? [])
      return [...rows.values()].filter(record => wanted.has(record.data[field]))
    },

    async create (model, fields) {
      const id = fields[model.idField] as string
      if (table(model).rows.has(id)) throw new ConflictError(`A ${model.singular} with this id already exists.`)
      return write(model, id, fields, undefined)
    },

    async update (model, id, fields, how: WriteOptions = {}) {
      const previous = table(model).rows.get(id)
      if (previous === undefined) return null
      if (how.ifVersion !== undefined && how.ifVersion !== previous.version) return VERSION_MISMATCH
      return write(model, id, fields, previous)
    },

    async remove (model, id, how: WriteOptions = {}) {
      const { rows } = table(model)
      const previous = rows.get(id)
      if (previous === undefined) return false
      if (how.ifVersion !== undefined && how.ifVersion !== previous.version) return VERSION_MISMATCH
      for (const relation of model.relations.values()) {
        if (relation.kind !== 'many') continue
        for (const child of table(relation.target).rows.values()) if (child.data[relation.field] === id) throw hasChildrenError(relation, model.singular)
      }
      rows.delete(id)
      reindex(model, previous, undefined)
      return true
    },

    async close () {
      tables.clear()
    }
  }
}

/** Orders by each key in turn; null first ascending, last descending (spec "Sorting" 3). */
function comparator (sort: readonly SortKey[]): Compare {
  return (a, b) => {
    for (const key of sort) {
      const order = sortCompare(a[key.field], b[key.field])
      if (order !== 0) return key.direction === 'asc' ? order : -order
    }
    return 0
  }
}

/** The first position whose record sorts after `target`, or at or after it when `orEqual`. */
function bound (index: SortIndex, target: Fields, orEqual: boolean): number {
  const { records, compare } = index
  let low = 0
  let high = records.length
  while (low < high) {
    const middle = (low + high) >>> 1
    const order = compare(records[middle].data, target)
    if (order < 0 || (order === 0 && !orEqual)) low = middle + 1
    else high = middle
  }
  return low
}

/** Where `record` sits in the index. Sorts end with the id, so it is found at once; a sort
 *  without one makes a run of equal records, searched by identity. */
function positionOf (index: SortIndex, record: StoredRecord): number {
  let at = bound(index, record.data, true)
  while (at < index.records.length && index.records[at] !== record) at++
  return at
}

/**
 * Up to `limit` matches read from `from` in direction `step`, after skipping `skip` matches,
 * returned in sort order; `hasMore` when one more match lies beyond them.
 */
function scan (records: readonly StoredRecord[], from: number, step: 1 | -1, predicate: Predicate | null, skip: number, limit: number) {
  const items: StoredRecord[] = []
  let hasMore = false
  for (let at = from; at >= 0 && at < records.length; at += step) {
    const record = records[at]
    if (predicate !== null && !predicate(record.data)) continue
    if (skip > 0) {
      skip--
    } else if (items.length === limit) {
      hasMore = true
      break
    } else {
      items.push(record)
    }
  }
  if (step === -1) items.reverse()
  return { items, hasMore }
}
