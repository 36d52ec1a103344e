// The in-memory store: the Store contract over Maps, evaluating ListQuery itself. Nothing is
// kept across restarts; meant for tests, demos and small data.
// LIST reads a sorted index per table and sort order, kept current by every write, so a page
// costs a binary search and a scan to limit + 1 matches, not a sort of the table.
// Transactions run one at a time and undo their writes from a journal when their work throws.
// Responses kept for Idempotency-Key live in a Map by key, as JSON text, as the SQL store keeps them;
// jobs of the work queue (stores/jobs.ts) in a Map by id, their JSON copied in and out.
import { compilePredicate, sortCompare } from '../query/filter/evaluate.js'
import type { Relate } from '../query/filter/evaluate.js'
import type { FilterNode } from '../query/filter/ast.js'
import { aggregateRecords } from '../query/apply/evaluate.js'
import { documentOf, matches, rankedTerms, relevance, RELEVANCE } from '../query/search.js'
import type { Search } from '../query/search.js'
import type { ResourceModel, View, ViewRelation } from '../registry/model.js'
import { hasChildrenError, missingRelatedError } from './referential.js'
import { VERSION_MISMATCH } from './store.js'
import { storedFields } from '../values/storable.js'
import type { Fields, KeptResponse, KeyClaim, ListQuery, Page, SortKey, Store, StoredRecord, WriteOptions } from './store.js'
import type { Job, NewJob } from './jobs.js'
import { ConflictError, OptionsInvalidError } from '../errors.js'
import { keepBounded } from '../bounded.js'
import { memoryChangeLog } from './change-log.js'
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
  /**
   * Predicates of filters on the table's views, by structure: a nested collection builds its
   * parent scope per request (see `predicates`). Each was compiled for one view, the last to ask.
   */
  readonly predicatesByShape: Map<string, { readonly view: View, readonly predicate: Predicate }>
}

export interface MemoryStoreOptions {
  /** Clock for modification times and for when kept responses expire; default `() => new Date()`. */
  readonly now?: (() => Date) | undefined
}

/** A response kept under an Idempotency-Key: JSON text, so every claim reads a copy, round-tripped as in SQL. */
interface Kept {
  readonly fingerprint: string
  readonly response: string
  readonly expiresAt: number
}

/**
 * One write of a transaction, to undo: the record it replaced or removed, or none when it created
 * one; or the response kept under a key that it replaced or purged, or none.
 */
type Undo =
  | { readonly model: ResourceModel, readonly id: string, readonly previous: StoredRecord | undefined }
  | { readonly key: string, readonly previous: Kept | undefined }
  | { readonly job: string, readonly previous: KeptJob | undefined }

/** A job as kept: its lease's end while running, and when it may be purged once finished (milliseconds). */
interface KeptJob extends Job {
  readonly leaseUntil: number
  readonly keepUntil: number
}

/** A JSON value copied, as a backend that keeps JSON text would give it back. */
const copy = (value: unknown): unknown => value === undefined ? null : JSON.parse(JSON.stringify(value))

const FREE: KeyClaim = Object.freeze({ kind: 'free' })
const BUSY: KeyClaim = Object.freeze({ kind: 'busy' })

/** Sort indexes kept per table; each costs one array of references and a splice per write. */
export const INDEXES_PER_TABLE = 16
/** Predicates kept per table by structure before that cache starts over. */
export const SHAPES_PER_TABLE = 500

const memoryStoreKeys = knownKeys({ now: true } satisfies Record<keyof MemoryStoreOptions, true>)

/**
 * Transactions run one at a time; while one runs, writes made outside it wait until it ends, so
 * they never interleave with its steps (work must write through the store it receives: a write
 * on this one would wait for itself). Reads are not held back: they may see a transaction's
 * writes before it ends (and writes it then undoes). `get`'s `lock` changes nothing here.
 *
 * Idempotency keys: a transaction's `claimKey` holds the key until the transaction ends, however it
 * ends. Outside a transaction each call is one of its own: `claimKey` answers what it finds (`busy`
 * while a running transaction holds the key) and holds nothing; `keepResponse` and `purgeKeys`
 * are writes, so they wait for queued transactions as the others do.
 */
export function memoryStore (options: MemoryStoreOptions = {}): Store {
  refuseUnknownKeys(options, memoryStoreKeys, 'memoryStore')
  if (options.now !== undefined && typeof options.now !== 'function') throw new OptionsInvalidError(`memoryStore.now must be a function returning a Date, received ${String(options.now)}`)
  const now = options.now ?? (() => new Date())
  const tables = new Map<string, Table>()
  /**
   * Filter predicates by view (a filter's related paths reach other views through the view's
   * relations), then by filter: parsed filters are cached upstream per view and expression.
   */
  const predicates = new WeakMap<View, WeakMap<FilterNode, Predicate>>()
  /** The end of the last transaction (or write waiting behind one) queued; `waiting` counts them. */
  let queue: Promise<unknown> = Promise.resolve()
  let waiting = 0
  /** Responses kept by Idempotency-Key. */
  const kept = new Map<string, Kept>()
  /** Keys claimed by running transactions, each mapped to the set of keys its transaction claimed. */
  const claims = new Map<string, Set<string>>()
  /** The work queue's jobs by id, in the order they were added. */
  const jobs = new Map<string, KeptJob>()
  const changeLog = memoryChangeLog()

  /** The table of a view's registered model. */
  function table ({ model }: View): Table {
    let found = tables.get(model.name)
    if (found === undefined) tables.set(model.name, found = { rows: new Map(), indexes: new Map(), predicatesByShape: new Map() })
    return found
  }

  /**
   * Candidate values of a filter path for one record (filter/evaluate.ts contract). A target that
   * is a view offers only its visible records: a hidden parent is a missing one (null).
   */
  function resolvePath (view: View, record: Fields, path: readonly string[]): readonly unknown[] {
    if (path.length === 1) return [record[path[0]]]
    const relation = view.relations.get(path[0]) as ViewRelation
    if (relation.kind === 'one') {
      const { target } = relation
      const parent = table(target).rows.get(record[relation.field] as string)
      if (parent !== undefined && target.visible !== undefined && !visiblePredicate(target)(parent.data)) return [null]
      return [parent?.data[path[1]] ?? null]
    }
    return childrenOf(view, relation, record).map(child => child[path[1]])
  }

  /** The visible records of a 'many' relation's target that refer to the record. */
  function childrenOf (view: View, relation: ViewRelation, record: Fields): Fields[] {
    const { target } = relation
    const shown = target.visible === undefined ? null : visiblePredicate(target)
    const id = record[view.idField]
    const children: Fields[] = []
    for (const child of table(target).rows.values()) {
      if (child.data[relation.field] === id && (shown === null || shown(child.data))) children.push(child.data)
    }
    return children
  }

  /** The 'many' relations of a model, as lambdas range over them (filter/evaluate.ts contract). */
  function relateOf (view: View): Relate {
    return name => {
      const relation = view.relations.get(name) as ViewRelation
      const { target } = relation
      return {
        members: record => childrenOf(view, relation, record),
        resolve: (record, path) => resolvePath(target, record, path),
        relate: relateOf(target)
      }
    }
  }

  /** A filter's predicate on records of `view`. */
  function compileFor (view: View, filter: FilterNode): Predicate {
    return compilePredicate(filter, (record, path) => resolvePath(view, record, path), relateOf(view))
  }

  /**
   * Which records of a view are visible. Its filter speaks of stored records, so it is evaluated
   * on the registered model, as any filter of that model (and cached with them).
   */
  function visiblePredicate (view: View): Predicate {
    return predicateFor(view.model, view.visible as FilterNode)
  }

  /** The records a read of a view finds: its visible ones that match the filter, if any. */
  function matcher (view: View, filter: FilterNode | null): Predicate | null {
    const matches = filter === null ? null : predicateFor(view, filter)
    if (view.visible === undefined) return matches
    const shown = visiblePredicate(view)
    return matches === null ? shown : record => shown(record) && matches(record)
  }

  function predicateFor (view: View, filter: FilterNode): Predicate {
    let ofView = predicates.get(view)
    if (ofView === undefined) predicates.set(view, ofView = new WeakMap())
    let predicate = ofView.get(filter)
    if (predicate !== undefined) return predicate
    const { predicatesByShape } = table(view)
    const shape = JSON.stringify(filter)
    const kept = predicatesByShape.get(shape)
    if (kept?.view === view) {
      predicate = kept.predicate
    } else {
      predicate = compileFor(view, filter)
      keepBounded(predicatesByShape, SHAPES_PER_TABLE, shape, { view, predicate })
    }
    ofView.set(filter, predicate)
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
    } else {
      indexes.delete(key) // re-added below as the most recently used
    }
    return keepBounded(indexes, INDEXES_PER_TABLE, key, index)
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

  function write (model: ResourceModel, id: string, fields: Fields, previous: StoredRecord | undefined, journal: Undo[] | null): StoredRecord {
    // Date-times kept as the SQL store keeps them, so both answer and sort alike (values.ts).
    const data = storedFields(model, fields)
    checkRelated(model, data)
    const record = Object.freeze({ data: Object.freeze(data), version: (previous?.version ?? 0) + 1, modifiedAt: now() })
    table(model).rows.set(id, record)
    reindex(model, previous, record)
    journal?.push({ model, id, previous })
    return record
  }

  /**
   * A search: its matches sorted afresh (relevance is no field an index could hold), then paged
   * as any list, over records whose data also holds their relevance under RELEVANCE.
   */
  function searchList (view: View, query: ListQuery, search: Search, predicate: Predicate | null): Page {
    const ranked = query.sort.some(key => key.field === RELEVANCE)
    const terms = rankedTerms(search.node)
    const found: StoredRecord[] = []
    for (const record of table(view.model).rows.values()) {
      if (predicate !== null && !predicate(record.data)) continue
      const document = documentOf(record.data, search.fields)
      if (!matches(search.node, document)) continue
      if (!ranked) found.push(record)
      else {
        const rank = relevance(terms, document)
        found.push({ ...record, data: { ...record.data, [RELEVANCE]: rank }, rank })
      }
    }
    const compare = comparator(query.sort)
    const index: SortIndex = { compare, records: found.sort((a, b) => compare(a.data, b.data)) }
    const { window, limit } = query
    let page: Pick<Page, 'items' | 'hasMore'>
    if (window.kind === 'offset') page = scan(index.records, window.offset, 1, null, 0, limit)
    else if (window.values.length === 0) page = scan(index.records, index.records.length - 1, -1, null, 0, limit)
    else {
      const anchor = Object.fromEntries(query.sort.map((key, i) => [key.field, window.values[i]]))
      page = window.kind === 'after'
        ? scan(index.records, bound(index, anchor, false), 1, null, 0, limit)
        : scan(index.records, bound(index, anchor, true) - 1, -1, null, 0, limit)
    }
    // The data as stored, without the relevance beside it.
    const items = ranked ? page.items.map(item => Object.freeze({ ...table(view.model).rows.get(item.data[view.idField] as string) as StoredRecord, rank: item.rank })) : page.items
    return { items, hasMore: page.hasMore, total: query.total ? found.length : undefined }
  }

  /** The store's reads: a transaction's store reads as the store does. */
  const reads: Pick<Store, 'list' | 'get' | 'getMany'> & Required<Pick<Store, 'aggregate'>> = {
    async list (view: View, query: ListQuery): Promise<Page> {
      const predicate = matcher(view, query.filter)
      if (query.search != null) return searchList(view, query, query.search, predicate)
      const index = indexFor(view.model, query.sort)
      const { window, limit } = query
      let page: Pick<Page, 'items' | 'hasMore'>
      if (window.kind === 'offset') {
        // Without a filter every record matches, so the window starts at its offset directly.
        page = predicate === null
          ? scan(index.records, window.offset, 1, null, 0, limit)
          : scan(index.records, 0, 1, predicate, window.offset, limit)
      } else if (window.values.length === 0) {
        // Before the end: backwards from the last record.
        page = scan(index.records, index.records.length - 1, -1, predicate, 0, limit)
      } else {
        const anchor = Object.fromEntries(query.sort.map((key, i) => [key.field, window.values[i]]))
        page = window.kind === 'after'
          ? scan(index.records, bound(index, anchor, false), 1, predicate, 0, limit)
          : scan(index.records, bound(index, anchor, true) - 1, -1, predicate, 0, limit)
      }
      return { ...page, total: query.total ? count(view.model, predicate) : undefined }
    },

    async aggregate (view, query) {
      const predicate = matcher(view, query.filter)
      // In id order: sums add in the order the SQL store's do.
      const { records } = indexFor(view.model, [{ field: view.idField, direction: 'asc' }])
      const matching = predicate === null ? records.map(record => record.data) : records.flatMap(record => predicate(record.data) ? [record.data] : [])
      return aggregateRecords(matching, query, (record, path) => resolvePath(view, record, path)[0])
    },

    async get (view, id) {
      const record = table(view).rows.get(id)
      if (record === undefined) return null
      return view.visible === undefined || visiblePredicate(view)(record.data) ? record : null
    },

    async getMany (view, field, values) {
      const wanted = new Set(values)
      const { rows } = table(view)
      const found = field === view.idField
        ? [...wanted].flatMap(id => rows.get(id as string) ?? [])
        : [...rows.values()].filter(record => wanted.has(record.data[field]))
      if (view.visible === undefined) return found
      const shown = visiblePredicate(view)
      return found.filter(record => shown(record.data))
    }
  }

  // Writes take the registered model. In a transaction, each write notes in its journal what it
  // replaced, once it is done.
  function create (journal: Undo[] | null, model: ResourceModel, fields: Fields): StoredRecord {
    const id = fields[model.idField] as string
    if (table(model).rows.has(id)) throw new ConflictError(`A ${model.singular} with this id already exists.`)
    return write(model, id, fields, undefined, journal)
  }

  function update (journal: Undo[] | null, model: ResourceModel, id: string, fields: Fields, how: WriteOptions = {}): StoredRecord | null | typeof VERSION_MISMATCH {
    const previous = table(model).rows.get(id)
    if (previous === undefined) return null
    if (how.ifVersion !== undefined && how.ifVersion !== previous.version) return VERSION_MISMATCH
    return write(model, id, fields, previous, journal)
  }

  function remove (journal: Undo[] | null, model: ResourceModel, id: string, how: WriteOptions = {}): boolean | typeof VERSION_MISMATCH {
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
    journal?.push({ model, id, previous })
    return true
  }

  /** `claimed`: the keys the calling transaction holds (it takes this one too), or null outside one. */
  function claimKey (claimed: Set<string> | null, key: string): KeyClaim {
    const holder = claims.get(key)
    const free = holder === undefined || holder === claimed
    if (free && claimed !== null) {
      claimed.add(key)
      claims.set(key, claimed)
    }
    // An answer kept under a key another transaction holds is being replayed there (a transaction
    // keeps its answer last, and a memory transaction cannot fail after its work): replayed here too.
    const entry = kept.get(key)
    if (entry === undefined || entry.expiresAt <= now().getTime()) return free ? FREE : BUSY
    return { kind: 'kept', fingerprint: entry.fingerprint, response: JSON.parse(entry.response) as KeptResponse }
  }

  /** Sets (or with `entry` undefined, deletes) what is kept under `key`, noting what it replaced. */
  function keep (journal: Undo[] | null, key: string, entry: Kept | undefined) {
    journal?.push({ key, previous: kept.get(key) })
    if (entry === undefined) kept.delete(key)
    else kept.set(key, entry)
  }

  function keepResponse (journal: Undo[] | null, key: string, fingerprint: string, response: KeptResponse, expiresAt: Date) {
    keep(journal, key, { fingerprint, response: JSON.stringify(response), expiresAt: expiresAt.getTime() })
  }

  function purgeKeys (journal: Undo[] | null, before: Date): number {
    let purged = 0
    for (const [key, entry] of kept) {
      if (entry.expiresAt >= before.getTime()) continue
      keep(journal, key, undefined)
      purged++
    }
    return purged
  }

  /** Sets (or with `job` undefined, deletes) a job, noting what it replaced. */
  function setJob (journal: Undo[] | null, id: string, job: KeptJob | undefined) {
    journal?.push({ job: id, previous: jobs.get(id) })
    if (job === undefined) jobs.delete(id)
    else jobs.set(id, job)
  }

  /** Whether the attempt is still the job's; a claim waits for running transactions, so one holding it keeps it. */
  async function holdJob (id: string, attempt: number): Promise<boolean> {
    const job = jobs.get(id)
    return job?.state === 'running' && job.attempt === attempt
  }

  async function getJob (id: string): Promise<Job | null> {
    const job = jobs.get(id)
    return job === undefined ? null : shownJob(job)
  }

  function addJob (journal: Undo[] | null, job: NewJob) {
    const at = job.createdAt
    setJob(journal, job.id, { id: job.id, kind: job.kind, owner: job.owner, payload: copy(job.payload), state: 'pending', attempt: 0, outcome: null, createdAt: at, updatedAt: at, leaseUntil: 0, keepUntil: Infinity })
  }

  /** Transactions run one at a time here, so a claim is a write like the others. */
  function claimJobs (kinds: readonly string[], limit: number, leaseMillis: number): Job[] {
    // Jobs keep real time, as their leases must: a test's clock stands still.
    const at = new Date()
    const claimed: Job[] = []
    for (const job of jobs.values()) {
      if (claimed.length === limit) break
      if (!kinds.includes(job.kind) || !(job.state === 'pending' || (job.state === 'running' && job.leaseUntil <= at.getTime()))) continue
      const running: KeptJob = { ...job, state: 'running', attempt: job.attempt + 1, updatedAt: at, leaseUntil: at.getTime() + leaseMillis }
      jobs.set(job.id, running)
      claimed.push(shownJob(running))
    }
    return claimed
  }

  function finishJob (journal: Undo[] | null, id: string, state: 'succeeded' | 'failed', outcome: unknown, keepUntil: Date) {
    const job = jobs.get(id)
    if (job !== undefined) setJob(journal, id, { ...job, state, outcome: copy(outcome), updatedAt: new Date(), leaseUntil: 0, keepUntil: keepUntil.getTime() })
  }

  function purgeJobs (before: Date): number {
    let purged = 0
    for (const [id, job] of jobs) {
      if (job.keepUntil >= before.getTime()) continue
      jobs.delete(id)
      purged++
    }
    return purged
  }

  /** Runs `step` once every transaction queued before it has ended, however it ended. */
  function serialize<T> (step: () => T | Promise<T>): Promise<T> {
    waiting++
    const result = queue.then(step)
    queue = result.then(settle, settle)
    return result
  }
  const settle = () => { waiting-- }

  /** Puts back, newest first, what the journal's writes replaced: map and index work, which cannot fail. */
  function undo (journal: readonly Undo[]) {
    for (let at = journal.length - 1; at >= 0; at--) {
      const step = journal[at]
      if ('job' in step) {
        setJob(null, step.job, step.previous)
        continue
      }
      if ('key' in step) {
        keep(null, step.key, step.previous)
        continue
      }
      const { model, id, previous } = step
      const { rows } = table(model)
      const current = rows.get(id)
      if (previous === undefined) rows.delete(id)
      else rows.set(id, previous)
      reindex(model, current, previous)
    }
  }

  async function run<T> (work: (store: Store) => Promise<T>): Promise<T> {
    const journal: Undo[] = []
    const claimed = new Set<string>()
    const store: Store = {
      ...reads,
      create: async (model, fields) => create(journal, model, fields),
      update: async (model, id, fields, how) => update(journal, model, id, fields, how),
      remove: async (model, id, how) => remove(journal, model, id, how),
      claimKey: async key => claimKey(claimed, key),
      keepResponse: async (key, fingerprint, response, expiresAt) => keepResponse(journal, key, fingerprint, response, expiresAt),
      purgeKeys: async before => purgeKeys(journal, before),
      // Claiming and purging jobs, and reading and purging the change log, are done outside a
      // transaction (JobStore, Store): its store leaves them out.
      addJob: async job => addJob(journal, job),
      holdJob,
      finishJob: async (id, state, outcome, keepUntil) => finishJob(journal, id, state, outcome, keepUntil),
      getJob,
      // The last step of a transaction's work (see Store): nothing after it can fail, so nothing to undo.
      appendChanges: async changes => { changeLog.append(changes) },
      // A transaction inside this one joins it.
      transaction: async inner => await inner(store),
      // The store that began the transaction owns the tables.
      async close () {}
    }
    // Its claims end with it, once its writes are kept or undone.
    const release = () => { for (const key of claimed) claims.delete(key) }
    try {
      const result = await work(store)
      release()
      return result
    } catch (error) {
      undo(journal)
      release()
      throw error
    }
  }

  // Outside a transaction a write happens at once, unless transactions are queued: then after them.
  return {
    ...reads,
    async create (model, fields) {
      return waiting === 0 ? create(null, model, fields) : await serialize(() => create(null, model, fields))
    },
    async update (model, id, fields, how) {
      return waiting === 0 ? update(null, model, id, fields, how) : await serialize(() => update(null, model, id, fields, how))
    },
    async remove (model, id, how) {
      return waiting === 0 ? remove(null, model, id, how) : await serialize(() => remove(null, model, id, how))
    },
    claimKey: async key => claimKey(null, key),
    async keepResponse (key, fingerprint, response, expiresAt) {
      if (waiting === 0) keepResponse(null, key, fingerprint, response, expiresAt)
      else await serialize(() => keepResponse(null, key, fingerprint, response, expiresAt))
    },
    async purgeKeys (before) {
      return waiting === 0 ? purgeKeys(null, before) : await serialize(() => purgeKeys(null, before))
    },
    async addJob (job) {
      if (waiting === 0) addJob(null, job)
      else await serialize(() => addJob(null, job))
    },
    async claimJobs (kinds, limit, leaseMillis) {
      return waiting === 0 ? claimJobs(kinds, limit, leaseMillis) : await serialize(() => claimJobs(kinds, limit, leaseMillis))
    },
    // Outside a transaction nothing is held: it only says whether the attempt is still the job's.
    holdJob,
    async finishJob (id, state, outcome, keepUntil) {
      if (waiting === 0) finishJob(null, id, state, outcome, keepUntil)
      else await serialize(() => finishJob(null, id, state, outcome, keepUntil))
    },
    getJob,
    async purgeJobs (before) {
      return waiting === 0 ? purgeJobs(before) : await serialize(() => purgeJobs(before))
    },
    transaction: async work => await serialize(async () => await run(work)),
    async appendChanges (changes) {
      await serialize(() => { changeLog.append(changes) })
    },
    readChanges: async query => changeLog.read(query),
    purgeChanges: async before => changeLog.purge(before),
    async close () {
      tables.clear()
      kept.clear()
      jobs.clear()
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

/** A kept job as the contract shows it: its JSON copied out, without the bookkeeping. */
function shownJob ({ leaseUntil, keepUntil, ...job }: KeptJob): Job {
  return { ...job, payload: copy(job.payload), outcome: copy(job.outcome) }
}
