// The PostgreSQL store: the Store contract (stores/store.ts) over any database reachable
// through one small query interface (a pg Pool or PGlite), with the query compiled to SQL and
// referential, conflict and availability failures mapped from SQLSTATE codes, never pre-checked.
// Idempotency keys: claimed with a transaction-scoped advisory lock, kept in a table of the schema.
// The work queue's jobs (stores/jobs.ts): a table of the schema too (sql/jobs.ts).
import { createHash } from 'node:crypto'
import type { ResourceModel, View } from '../../registry/model.js'
import type { FilterNode } from '../../query/filter/ast.js'
import { ConflictError, QueryInvalidError, StoreUnavailableError, UnprocessableError, withHeaders, withInvalidParams } from '../../errors.js'
import { hasChildrenError, missingRelatedError } from '../referential.js'
import { VERSION_MISMATCH } from '../store.js'
import type { ChangeQuery, ChangeRead, Fields, KeptResponse, KeyClaim, ListQuery, NewChange, Page, PoolStats, PrepareFeatures, ReadOptions, Store, StoredRecord, WriteOptions } from '../store.js'
import type { Job, NewJob } from '../jobs.js'
import { JOBS_TABLE, jobOf, jobStatements, migrateJobs } from './jobs.js'
import { changeParams, changeStatements, decodeChanges, migrateChanges } from './changes.js'
import type { ChangeStatements } from './changes.js'
import { compileExport, compileFilter, compileList } from './compile.js'
import { handedOver } from './hand-over.js'
import { compileAggregate } from './aggregate.js'
import type { AggregateQuery, GroupPage } from '../../query/apply/ast.js'
import type { CompileContext, CompiledList } from './compile.js'
import { foreignKeyName, KEYS_TABLE, migrate, migrateKeys } from './ddl.js'
import { CHANGES_TABLE } from './changes.js'
import { arrayCast, columnRef, MAIN, resolveTable, writeParam, writeSlot, writeValue } from './table.js'
import { unstorableText } from '../../values/storable.js'
import type { Column, Table, TableMapping } from './table.js'
import { ident, join, raw, Slot, Sql, sql, template, toQuery } from './sql.js'
import type { Template } from './sql.js'
import type { ReadRouter } from './replica.js'
import { currentCaller, isWriting } from '../caller.js'

/** What the store needs from a driver: rows as arrays in select-list order. */
export type QueryFunction = (text: string, values: readonly unknown[]) => Promise<unknown[][]>

export interface SqlDatabase {
  readonly query: QueryFunction
  /** The driver drops a leading U+FEFF from every text it decodes: the store reads text with one more. */
  readonly dropsLeadingBom?: boolean
  /** Runs `work` on one connection between BEGIN and COMMIT (ROLLBACK when it throws). */
  transaction<T> (work: (query: QueryFunction) => Promise<T>): Promise<T>
  /** The pool's use, when the driver has a pool (node-postgres; PGlite is one connection). */
  readonly poolStats?: () => PoolStats
  /** Closes the pool or PGlite instance when the store created it, not when it was given one. */
  close (): Promise<void>
}

export interface SqlStoreSettings {
  readonly schema: string
  readonly tables: Readonly<Record<string, TableMapping>>
  /** Create and upgrade tables before first use; false only checks them. */
  readonly migrate: boolean
  readonly caseCollation: string
  readonly retryAfterSeconds: number
}

type Failure = 'list' | 'read' | 'write' | 'delete'

// Driver errors without a SQLSTATE that mean the connection, not the statement, failed.
const unreachableCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED'])
const unreachableMessage = /connection|terminated|timeout|not queryable|closed/i

/**
 * SQLSTATE classes 08 (connection), 53 (insufficient resources) and 57 (operator intervention:
 * shutdown, crash, cancelled), serialization failures and deadlocks are worth retrying: 503.
 */
export function isUnavailable (error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown, message?: unknown }
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return /^(08|53|57)/.test(code) || code === '40001' || code === '40P01'
  return (typeof code === 'string' && unreachableCodes.has(code)) || (typeof message === 'string' && unreachableMessage.test(message))
}

/** `total=estimated`: from this many rows the planner's estimate stands for the count (docs/export.md). */
const ESTIMATED_FROM = 10_000
/** Rows an export's cursor fetches at a time: a round trip per batch, the batch's memory at most. */
const EXPORT_BATCH = 500
const EXPORT_CURSOR = 'api_export'

/** The top plan's row estimate from `EXPLAIN (FORMAT JSON)`, whose json both drivers parse. */
function planRows (explained: unknown): number {
  return Math.round((explained as Array<{ Plan: { 'Plan Rows': number } }>)[0].Plan['Plan Rows'])
}

/** Attempts of a transaction that meets serialization failures or deadlocks. */
const TRANSACTION_ATTEMPTS = 3

/** What a transaction's store throws on meeting a table not yet prepared; never leaves `transaction`. */
class TableNotPrepared extends Error {}

/** Stand for the tables beside the models' (kept responses, the work queue's, the change log) among those a transaction met unprepared. */
const KEYS = Symbol('the table of kept responses')
const JOBS = Symbol('the table of jobs')
const CHANGES = Symbol('the change log')
type SideTable = typeof KEYS | typeof JOBS | typeof CHANGES
type Unprepared = Array<ResourceModel | SideTable>

/** A table beside the models' (kept responses, jobs, the change log), its readiness shared by a store and its transactions' stores. */
interface KeysTable {
  readonly ref: Sql
  ready: Promise<void> | undefined
  prepared: boolean
}

const BUSY: KeyClaim = Object.freeze({ kind: 'busy' })
const FREE: KeyClaim = Object.freeze({ kind: 'free' })

/**
 * The SQL store. `transaction` hands its work a store of the same class bound to the transaction's
 * connection: it shares this one's tables (resolved, prepared, their compile context).
 */
export class SqlStore implements Store {
  readonly #db: SqlDatabase
  readonly #settings: SqlStoreSettings
  // Not readonly: a transaction's store takes these of the store that began it (#bound).
  #tables = new WeakMap<ResourceModel, Table>()
  #ready = new WeakMap<ResourceModel, Promise<void>>()
  /** Registered models whose tables are ready: no promise to wait for. */
  #prepared = new Set<ResourceModel>()
  #context: CompileContext
  /** Where statements run: the database, or the connection of the transaction this store belongs to. */
  #query: QueryFunction
  /** In a transaction's store: the models it met whose tables were not prepared (see transaction). */
  #unprepared: Unprepared | undefined
  /** Shared with its transactions' stores, as the tables are. */
  #keys: KeysTable
  #jobs: KeysTable
  #changes: KeysTable
  readonly #changeStatements: ChangeStatements
  /** With a read replica: where each caller's reads run. A transaction's store reads where it writes. */
  readonly #reads: ReadRouter | undefined
  /** Lists compiled by query object: the routes keep one per query and view (listRequestFor). */
  readonly #compiledLists = new WeakMap<ListQuery, { readonly view: View, readonly compiled: CompiledList }>()

  constructor (db: SqlDatabase, settings: SqlStoreSettings, reads?: ReadRouter) {
    this.#db = db
    this.#settings = settings
    this.#reads = reads
    this.#context = { tableOf: model => this.#tableOf(model), caseCollation: settings.caseCollation }
    this.#query = db.query
    this.#keys = { ref: ident(settings.schema, KEYS_TABLE), ready: undefined, prepared: false }
    this.#jobs = { ref: ident(settings.schema, JOBS_TABLE), ready: undefined, prepared: false }
    this.#changes = { ref: ident(settings.schema, CHANGES_TABLE), ready: undefined, prepared: false }
    this.#changeStatements = changeStatements(settings.schema, db.dropsLeadingBom === true)
  }

  /** A store running its statements through `query`, on this store's tables. */
  #bound (query: QueryFunction, unprepared: Unprepared): SqlStore {
    const store = new SqlStore(this.#db, this.#settings)
    store.#tables = this.#tables
    store.#ready = this.#ready
    store.#prepared = this.#prepared
    store.#context = this.#context
    store.#query = query
    store.#unprepared = unprepared
    store.#keys = this.#keys
    store.#jobs = this.#jobs
    store.#changes = this.#changes
    return store
  }

  #resolve (model: ResourceModel, nullable?: ReadonlySet<string>): Table {
    return resolveTable(model, this.#settings.schema, this.#settings.tables[model.name], { nullable, dropsLeadingBom: this.#db.dropsLeadingBom })
  }

  #tableOf (model: ResourceModel): Table {
    let table = this.#tables.get(model)
    if (table === undefined) this.#tables.set(model, table = this.#resolve(model))
    return table
  }

  /**
   * Checks, creates or upgrades the tables of these models now rather than on first use, so that
   * a table that cannot serve its schema stops start-up with a TypeError naming table and column.
   * The table of kept responses too, so that it exists before the first request with an
   * Idempotency-Key. An unreachable database is left to the first request, which answers 503 and
   * tries again.
   */
  async prepare (models: readonly ResourceModel[], features: PrepareFeatures = {}): Promise<void> {
    const unlessUnavailable = (error: unknown) => {
      if ((error as { code?: unknown }).code !== 'API_ERR_STORE_UNAVAILABLE') throw error
    }
    for (const model of models) await this.#prepare(model).catch(unlessUnavailable)
    // Without Idempotency-Key the table is never used, so `migrate: false` need not have it.
    if (features.idempotencyKeys !== false) await this.#prepareKeys().catch(unlessUnavailable)
    if (features.jobs === true) await this.#prepareKeys(JOBS).catch(unlessUnavailable)
    if (features.changes === true) await this.#prepareKeys(CHANGES).catch(unlessUnavailable)
  }

  /** A table beside the models' (kept responses, jobs, the change log), checked and created if missing before first use, as #prepare does a model's. */
  async #prepareKeys (which: SideTable = KEYS): Promise<void> {
    const keys = which === KEYS ? this.#keys : which === JOBS ? this.#jobs : this.#changes
    if (keys.prepared) return
    if (this.#unprepared !== undefined) {
      this.#unprepared.push(which)
      throw new TableNotPrepared(`${String(which.description)} is not prepared`)
    }
    if (keys.ready === undefined) {
      const { schema, migrate: alter } = this.#settings
      const migrateTable = which === KEYS ? migrateKeys : which === JOBS ? migrateJobs : migrateChanges
      const check = async (query: QueryFunction) => await migrateTable(fragment => run(query, fragment), schema, { alter })
      const ready = (alter ? this.#db.transaction(check) : check(this.#db.query)).then(() => { keys.prepared = true })
      keys.ready = ready
      ready.catch(() => { keys.ready = undefined })
    }
    await keys.ready.catch((error: unknown) => { throw this.#unavailable(error) })
  }

  /** The model's table, checked and created or upgraded (with every table related to it) before first use. */
  async #prepare (model: ResourceModel): Promise<Table> {
    // Not on a transaction's connection, whose work may yet roll back: transaction() prepares it first.
    if (this.#unprepared !== undefined && !this.#prepared.has(model)) {
      this.#unprepared.push(model)
      throw new TableNotPrepared(`the table of ${model.name} is not prepared`)
    }
    let ready = this.#ready.get(model)
    if (ready === undefined) {
      const models = connected(model)
      const tables = models.map(m => this.#tableOf(m))
      const { schema, migrate: alter } = this.#settings
      const upgrade = async (query: QueryFunction) => await migrate(fragment => run(query, fragment), schema, tables, m => this.#tableOf(m), { alter, caseCollation: this.#settings.caseCollation })
      ready = (alter ? this.#db.transaction(upgrade) : upgrade(this.#db.query)).then(nullable => {
        // Columns the database still lets hold NULL sort and page as nullable, whatever the schema says.
        for (const [table, columns] of nullable) this.#tables.set(table.model, this.#resolve(table.model, columns))
        for (const m of models) this.#prepared.add(m)
      })
      for (const m of models) this.#ready.set(m, ready)
      // A failed upgrade (the database was down, say) is tried again by the next request.
      ready.catch(() => { for (const m of models) this.#ready.delete(m) })
    }
    await ready.catch(error => { throw this.#translate(error, 'read', model) })
    return this.#tableOf(model)
  }

  /** The plugin runs requests in their caller's scope for such a store (stores/caller.ts). */
  get routesReadsByCaller (): boolean {
    return this.#reads !== undefined
  }

  /** Where a read outside a transaction runs: the replica, unless the caller must see its own writes. */
  #readQuery (): QueryFunction | Promise<QueryFunction> {
    return this.#reads === undefined || isWriting() ? this.#query : this.#reads.queryFor(currentCaller())
  }

  /** After a write outside a transaction, or a transaction's commit: the caller's reads follow it. */
  async #wrote (): Promise<void> {
    await this.#reads?.wrote(currentCaller())
  }

  /** `statement` (a fragment, or a Template with its slots' values) where `query` runs it; a failure as this model's problem. */
  async #run (statement: Sql | Template, failure: Failure, model: ResourceModel, fields?: Fields, query: QueryFunction = this.#query, slots: readonly unknown[] = []): Promise<unknown[][]> {
    try {
      return statement instanceof Sql ? await run(query, statement) : await query(statement.text, statement.fill(slots))
    } catch (error) {
      throw this.#translate(error, failure, model, fields)
    }
  }

  /** A statement on a table beside the models' (kept responses, jobs, the change log): no model's errors to map, only unavailability. */
  async #runKeys (fragment: Sql, which: SideTable = KEYS): Promise<unknown[][]> {
    await this.#prepareKeys(which)
    try {
      return await run(this.#query, fragment)
    } catch (error) {
      throw this.#unavailable(error)
    }
  }

  #compiledList (table: Table, query: ListQuery, view: View): CompiledList {
    const kept = this.#compiledLists.get(query)
    if (kept?.view === view) return kept.compiled
    const compiled = compileList(table, query, this.#context, view)
    this.#compiledLists.set(query, { view, compiled })
    return compiled
  }

  /** A driver error that means the database is unavailable as a 503; others as they are. */
  #unavailable (error: unknown): unknown {
    return isUnavailable(error)
      ? withHeaders(Object.assign(new StoreUnavailableError(), { cause: error }), { 'retry-after': String(this.#settings.retryAfterSeconds) })
      : error
  }

  #translate (error: unknown, failure: Failure, model: ResourceModel, fields: Fields = {}): unknown {
    if (isUnavailable(error)) return this.#unavailable(error)
    const { code, constraint } = error as { code?: string, constraint?: string }
    const table = this.#tableOf(model)
    if (code === '23505') return new ConflictError(`A ${model.singular} with this ${constraint === `${table.name}_pkey` ? 'id' : 'value'} already exists.`)
    if (code === '23503' && failure === 'write') {
      const parents = [...model.relations.values()].filter(r => r.kind === 'one' && fields[r.field] != null)
      const relation = parents.find(r => constraint === foreignKeyName(table.name, column(table, r.field).name)) ?? parents[0]
      return relation === undefined
        ? new UnprocessableError(`This ${model.singular} refers to a record that does not exist.`)
        : missingRelatedError(relation, fields[relation.field])
    }
    if (code === '23503') {
      const children = [...model.relations.values()].filter(r => r.kind === 'many')
      const relation = children.find(r => constraint === foreignKeyName(this.#tableOf(r.target).name, column(this.#tableOf(r.target), r.field).name)) ?? children[0]
      return relation === undefined
        ? new ConflictError(`This ${model.singular} is still referred to by other records.`)
        : hasChildrenError(relation, model.singular)
    }
    // Data exceptions: a value PostgreSQL cannot hold or compare (a NUL character, a date out of range).
    if (code?.startsWith('22') === true && failure === 'list') {
      return withInvalidParams(new QueryInvalidError(), [{ name: 'filter', reason: 'a value is outside what the database can compare' }])
    }
    if (code?.startsWith('22') === true && failure === 'write') {
      return new UnprocessableError(`A value of this ${model.singular} is outside what the database can store.`)
    }
    return error
  }

  async list (view: View, query: ListQuery): Promise<Page> {
    const { model } = view
    const table = await this.#prepare(model)
    const compiled = this.#compiledList(table, query, view)
    const on = await this.#readQuery()
    const rows = await this.#run(compiled.page, 'list', model, undefined, on)
    const hasMore = rows.length > query.limit
    const items = rows.slice(0, query.limit).map(row => compiled.ranked ? Object.freeze({ ...compiled.decode(row), rank: Number(row[row.length - 1]) }) : compiled.decode(row))
    if (compiled.reversed) items.reverse()
    let total: number | undefined
    if (compiled.count !== undefined) {
      const { window } = query
      // On the last offset page the count is known without asking (unless the offset overshot).
      if (window.kind === 'offset' && !hasMore && (items.length > 0 || window.offset === 0)) return { items, hasMore, total: window.offset + items.length }
      if (compiled.estimate !== undefined) {
        const estimate = planRows((await this.#run(compiled.estimate, 'list', model, undefined, on))[0][0])
        if (estimate >= ESTIMATED_FROM) return { items, hasMore, total: estimate, totalEstimated: true }
      }
      total = Number((await this.#run(compiled.count, 'list', model, undefined, on))[0][0])
    }
    return { items, hasMore, total }
  }

  /**
   * An export (docs/export.md): the rows through a cursor, FETCHed a batch at a time as the
   * consumer reads, inside one transaction (`DECLARE` lives as long as its transaction, so this
   * works through a transaction pooler too). A consumer that stops makes the transaction throw:
   * it rolls back, which closes the cursor. Runs where the store writes: a replica's pool is not
   * held for the length of a download.
   */
  async * exportList (view: View, query: ListQuery): AsyncGenerator<StoredRecord> {
    const { model } = view
    const table = await this.#prepare(model)
    const rows = compileExport(table, query, this.#context, view)
    const fetch = raw(`FETCH ${EXPORT_BATCH} FROM ${EXPORT_CURSOR}`)
    const batches = handedOver<StoredRecord>(async hand => {
      await this.#db.transaction(async on => {
        await run(on, sql`DECLARE ${raw(EXPORT_CURSOR)} NO SCROLL CURSOR FOR ${rows}`)
        for (;;) {
          const batch = await run(on, fetch)
          if (batch.length > 0) await hand(batch.map(row => table.decode(row)))
          if (batch.length < EXPORT_BATCH) break
        }
        await run(on, raw(`CLOSE ${EXPORT_CURSOR}`))
      })
    })
    try {
      yield * batches
    } catch (error) {
      throw this.#translate(error, 'list', model)
    }
  }

  /** `apply=` in one statement (aggregate.ts), and the groups counted in a second when asked. */
  async aggregate (view: View, query: AggregateQuery): Promise<GroupPage> {
    const { model } = view
    const table = await this.#prepare(model)
    const compiled = compileAggregate(table, query, this.#context, view)
    const on = await this.#readQuery()
    const rows = await this.#run(compiled.page, 'list', model, undefined, on)
    const hasMore = rows.length > query.limit
    const groups = rows.slice(0, query.limit).map(row => compiled.decode(row))
    if (!query.total) return { groups, hasMore }
    // On the last page the count is known without asking (unless the offset overshot); without groupby there is one group.
    const total = compiled.count === undefined
      ? 1
      : !hasMore && (groups.length > 0 || query.offset === 0)
          ? query.offset + groups.length
          : Number((await this.#run(compiled.count, 'list', model, undefined, on))[0][0])
    return { groups, hasMore, total }
  }

  // RETRIEVE's read, the most frequent call: once the table is ready, one query and one promise
  // step, with text made once per table (each async layer cost more than the rest of the call).
  get (view: View, id: string, options?: ReadOptions): Promise<StoredRecord | null> {
    if (view.visible !== undefined || options?.lock === true) return this.#getWhere(view, id, options?.lock === true)
    // A view that hides no rows reads as its registered model: one statement, text made once.
    const { model } = view
    if (!this.#prepared.has(model)) return this.#prepare(model).then(() => this.get(view, id))
    const table = this.#tableOf(model)
    if (!isStorable(id)) return Promise.resolve(null)
    const on = this.#readQuery()
    const rows = typeof on === 'function' ? on(table.selectById, [id]) : on.then(query => query(table.selectById, [id]))
    return rows.then(
      rows => rows.length === 0 ? null : table.decode(rows[0]),
      (error: unknown) => { throw this.#translate(error, 'read', model) })
  }

  /** A view's record (only when visible), or one to lock until the transaction ends. */
  async #getWhere (view: View, id: string, lock: boolean): Promise<StoredRecord | null> {
    const { model } = view
    const table = await this.#prepare(model)
    if (!isStorable(id)) return null
    const where = view.visible === undefined ? idEquals(table, id) : sql`${idEquals(table, id)} AND ${this.#visible(table, view.visible)}`
    // A record read to be locked is read where it will be written.
    const on = lock ? this.#query : await this.#readQuery()
    const rows = await this.#run(sql`SELECT ${table.selectList} FROM ${table.ref} AS ${ident(MAIN)} WHERE ${where}${raw(lock ? ` FOR UPDATE OF ${MAIN}` : '')}`, 'read', model, undefined, on)
    return rows.length === 0 ? null : table.decode(rows[0])
  }

  /** The condition a view's records meet, on the table aliased `t0`: in the statement, so indexes serve it. */
  #visible (table: Table, visible: FilterNode): Sql {
    return compileFilter(table, visible, this.#context)
  }

  async getMany (view: View, field: string, values: readonly unknown[]): Promise<readonly StoredRecord[]> {
    const { model } = view
    const table = await this.#prepare(model)
    if (values.length === 0) return []
    const col = column(table, field)
    const ref = columnRef(MAIN, col)
    const listed = values.filter(value => value != null)
    // One `= ANY($1)` query per relation per page, in the database; null matches null, as in memory.
    const nulls = listed.length < values.length ? sql` OR ${ref} IS NULL` : sql``
    const matches = sql`${ref} = ANY(${listed}::${arrayCast(col.field.type)})${nulls}`
    const where = view.visible === undefined ? matches : sql`(${matches}) AND ${this.#visible(table, view.visible)}`
    const rows = await this.#run(sql`SELECT ${table.selectList} FROM ${table.ref} AS ${ident(MAIN)} WHERE ${where}`, 'read', model, undefined, await this.#readQuery())
    return rows.map(row => table.decode(row))
  }

  /** create, update and remove keep `how.change` with the write, in its statement (changes.ts recorded). */
  readonly writesChanges = true

  // The most frequent write: its statement's text is made once per table and shape (with its change
  // or without), and each create gives only the values.
  async create (model: ResourceModel, fields: Fields, how: WriteOptions = {}): Promise<StoredRecord> {
    const table = await this.#prepare(model)
    const values = [...table.columns.values()].map(col => writeParam(col, fields[col.field.name]))
    const { change } = how
    if (change !== undefined) {
      await this.#changeLogReady()
      const { id, previous } = changeParams(change)
      values.push(id, previous)
    }
    const statement = createStatement(table, change === undefined ? null : this.#changeStatements)
    const rows = await this.#run(statement, 'write', model, fields, this.#query, values)
    await this.#wrote()
    return table.decode(rows[0])
  }

  async update (model: ResourceModel, id: string, fields: Fields, how: WriteOptions = {}): Promise<StoredRecord | null | typeof VERSION_MISMATCH> {
    const table = await this.#prepare(model)
    if (!isStorable(id)) return null
    const sets = [...table.columns.values()].filter(col => col !== table.id).map(col => sql`${ident(col.name)} = ${writeValue(col, fields[col.field.name])}`)
    sets.push(sql`${ident(table.version)} = ${ident(MAIN, table.version)} + 1`, sql`${ident(table.modifiedAt)} = now()`)
    // Compare-and-set in the statement itself, so If-Match cannot race.
    const update = sql`UPDATE ${table.ref} AS ${ident(MAIN)} SET ${join(sets, ', ')} WHERE ${idEquals(table, id)}${versionEquals(table, how)}`
    const rows = await this.#run(await this.#returning(table, update, how.operation ?? 'modify', how, table.selectList), 'write', model, fields)
    if (rows.length > 0) {
      await this.#wrote()
      return table.decode(rows[0])
    }
    return await this.#missOrMismatch(table, id, how)
  }

  async remove (model: ResourceModel, id: string, how: WriteOptions = {}): Promise<boolean | typeof VERSION_MISMATCH> {
    const table = await this.#prepare(model)
    if (!isStorable(id)) return false
    // Children still pointing here make the foreign key refuse: 409, with no read-then-delete race.
    const remove = sql`DELETE FROM ${table.ref} AS ${ident(MAIN)} WHERE ${idEquals(table, id)}${versionEquals(table, how)}`
    const rows = await this.#run(await this.#returning(table, remove, 'delete', how, sql`1`), 'delete', model)
    if (rows.length > 0) {
      await this.#wrote()
      return true
    }
    return (await this.#missOrMismatch(table, id, how)) ?? false
  }

  /** `write` answering `returning`, with the change `how` asks for kept by the same statement. */
  async #returning (table: Table, write: Sql, operation: NewChange['operation'], how: WriteOptions, returning: Sql): Promise<Sql> {
    if (how.change === undefined) return sql`${write} RETURNING ${returning}`
    await this.#changeLogReady()
    return this.#changeStatements.recorded(table, write, operation, changeParams(how.change), returning)
  }

  /** Before the first write that keeps its change: the change log's tables. */
  async #changeLogReady (): Promise<void> {
    if (!this.#changes.prepared) await this.#prepareKeys(CHANGES)
  }

  /** After a write touched no row: either answer was true when the statement ran. */
  async #missOrMismatch (table: Table, id: string, how: WriteOptions): Promise<null | typeof VERSION_MISMATCH> {
    if (how.ifVersion === undefined) return null
    const rows = await this.#run(sql`SELECT 1 FROM ${table.ref} AS ${ident(MAIN)} WHERE ${idEquals(table, id)}`, 'read', table.model)
    return rows.length > 0 ? VERSION_MISMATCH : null
  }

  /**
   * Holds the key with a transaction-scoped advisory lock, so it is free again however the
   * transaction ends, and no session state is left behind (a transaction-mode pooler may give
   * each transaction another connection). The lock's two int4 keys come from a digest of schema
   * and key: stores on other schemas of the database never hold each other's keys, and the
   * single-bigint locks of migrations never meet them. Outside a transaction it runs as one of its
   * own, which holds the key only while it looks.
   */
  async claimKey (key: string): Promise<KeyClaim> {
    if (this.#unprepared === undefined) return await this.transaction(async tx => await tx.claimKey(key))
    const digest = createHash('sha256').update(`fastify-api-conventions idempotency ${this.#settings.schema}\u0000${key}`).digest()
    const [[held]] = await this.#runKeys(sql`SELECT pg_try_advisory_xact_lock(${digest.readInt32BE(0)}::integer, ${digest.readInt32BE(4)}::integer)`)
    // A statement after the lock's: its snapshot sees what the transaction that last held the key
    // committed. (Under REPEATABLE READ it may not; keeping the response over that row is then a
    // serialization failure, and the transaction runs again.) A key held by another transaction
    // with an answer kept is being replayed there: this request replays it too.
    const rows = await this.#runKeys(sql`SELECT fingerprint, response::text FROM ${this.#keys.ref} WHERE key = ${key}::text AND expires_at > now()`)
    if (rows.length === 0) return held === true ? FREE : BUSY
    const [fingerprint, response] = rows[0] as [string, string]
    return { kind: 'kept', fingerprint, response: JSON.parse(response) as KeptResponse }
  }

  /** Replaces what is kept under the key, also an entry not yet purged. */
  async keepResponse (key: string, fingerprint: string, response: KeptResponse, expiresAt: Date): Promise<void> {
    await this.#runKeys(sql`INSERT INTO ${this.#keys.ref} (key, fingerprint, response, expires_at)
      VALUES (${key}::text, ${fingerprint}::text, ${JSON.stringify(response)}::json, ${expiresAt.toISOString()}::timestamptz)
      ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, response = excluded.response, expires_at = excluded.expires_at`)
  }

  /** One statement over the index on expires_at; the count comes back as one row, not the rows deleted. */
  async purgeKeys (now: Date): Promise<number> {
    const [[count]] = await this.#runKeys(sql`WITH purged AS (DELETE FROM ${this.#keys.ref} WHERE expires_at < ${now.toISOString()}::timestamptz RETURNING 1)
      SELECT count(*) FROM purged`)
    return Number(count)
  }

  async addJob (job: NewJob): Promise<void> {
    await this.#runKeys(jobStatements.add(this.#jobs.ref, job), JOBS)
  }

  /** Outside a transaction: the claim commits at once, so the lease counts from now. */
  async claimJobs (kinds: readonly string[], limit: number, leaseMillis: number): Promise<readonly Job[]> {
    return (await this.#runKeys(jobStatements.claim(this.#jobs.ref, kinds, limit, leaseMillis), JOBS)).map(jobOf)
  }

  async holdJob (id: string, attempt: number): Promise<boolean> {
    return (await this.#runKeys(jobStatements.hold(this.#jobs.ref, id, attempt), JOBS)).length > 0
  }

  async finishJob (id: string, state: 'succeeded' | 'failed', outcome: unknown, keepUntil: Date): Promise<void> {
    await this.#runKeys(jobStatements.finish(this.#jobs.ref, id, state, outcome, keepUntil), JOBS)
  }

  /** On the primary: a job's state is what its caller must see at once. */
  async getJob (id: string): Promise<Job | null> {
    const rows = await this.#runKeys(jobStatements.get(this.#jobs.ref, id), JOBS)
    return rows.length === 0 ? null : jobOf(rows[0])
  }

  async purgeJobs (now: Date): Promise<number> {
    const [[count]] = await this.#runKeys(jobStatements.purge(this.#jobs.ref, now), JOBS)
    return Number(count)
  }

  /** The log's changes after `query.after`, once those committed unnumbered have their positions (stores/sql/changes.ts). */
  async readChanges (query: ChangeQuery): Promise<ChangeRead> {
    await this.#runKeys(this.#changeStatements.numbering, CHANGES)
    return decodeChanges(await this.#runKeys(this.#changeStatements.read(query), CHANGES), query.limit)
  }

  async purgeChanges (before: Date): Promise<number> {
    const [[count]] = await this.#runKeys(this.#changeStatements.purge(before), CHANGES)
    return Number(count)
  }

  /**
   * Runs `work` in one PostgreSQL transaction at the server's default isolation, READ COMMITTED:
   * each statement sees what was committed before it began, so work that reads a record to write
   * it again locks it first (`get(model, id, { lock: true })`). A serialization failure or deadlock
   * (SQLSTATE 40001, 40P01) runs the transaction again after a short random wait, up to three
   * attempts in all; then it is a 503, as when the database is unavailable. Tables are prepared
   * outside transactions: when `work` meets one that is not, it is undone, the table prepared, and
   * `work` run again. A transaction on the store `work` receives joins this one. `work` reads and
   * writes through that store: this one runs on other connections (on PGlite, it waits for the
   * transaction to end).
   */
  async transaction<T> (work: (store: Store) => Promise<T>): Promise<T> {
    if (this.#unprepared !== undefined) return await work(this)
    for (let attempt = 1; ; attempt++) {
      const unprepared: Unprepared = []
      let workFailed = false
      try {
        const result = await this.#db.transaction(async query => {
          let result: T
          try {
            result = await work(this.#bound(query, unprepared))
          } catch (error) {
            workFailed = true
            throw error
          }
          // Work that went on past a table it could not use (it caught the error) is undone too.
          if (unprepared.length > 0) throw new TableNotPrepared('work met tables not prepared')
          return result
        })
        await this.#wrote()
        return result
      } catch (error) {
        if (unprepared.length > 0) {
          for (const model of unprepared) await (typeof model === 'symbol' ? this.#prepareKeys(model) : this.#prepare(model))
          attempt--
        } else if (attempt >= TRANSACTION_ATTEMPTS || !isRetryable(error)) {
          // What work threw is already the store's answer; BEGIN, COMMIT or the connection failing is the driver's.
          throw workFailed ? error : this.#unavailable(error)
        } else {
          await new Promise(resolve => setTimeout(resolve, (5 + Math.random() * 45) * attempt))
        }
      }
    }
  }

  poolStats (): Readonly<Record<string, PoolStats>> {
    const replica = this.#reads?.poolStats()
    return { ...this.#db.poolStats !== undefined && { primary: this.#db.poolStats() }, ...replica !== undefined && { replica } }
  }

  /** A transaction's store closes nothing: the store that began it owns the database. */
  async close (): Promise<void> {
    if (this.#unprepared !== undefined) return
    await this.#reads?.close()
    await this.#db.close()
  }
}

/** A serialization failure or deadlock, from the driver or as the store's 503 caused by one. */
function isRetryable (error: unknown): boolean {
  const { code, cause } = (error ?? {}) as { code?: unknown, cause?: { code?: unknown } }
  return [code, cause?.code].some(value => value === '40001' || value === '40P01')
}

/** Create's statements by table, without a change and with one (a table is of one schema, so of one change log). */
const createStatements = new WeakMap<Table, { without?: Template, with?: Template }>()

/**
 * A table's INSERT answering the record, and with `changes`, keeping its change too: its slots are
 * the columns' values (writeParam) in the table's order, then the change's id and record before
 * (changeParams; a create has none).
 */
function createStatement (table: Table, changes: ChangeStatements | null): Template {
  let made = createStatements.get(table)
  if (made === undefined) createStatements.set(table, made = {})
  const shape = changes === null ? 'without' : 'with'
  let statement = made[shape]
  if (statement === undefined) {
    const columns = [...table.columns.values()]
    const names = join([...columns.map(col => ident(col.name)), ident(table.version), ident(table.modifiedAt)], ', ')
    const insert = sql`INSERT INTO ${table.ref} AS ${ident(MAIN)} (${names}) VALUES (${join(columns.map((col, i) => writeSlot(col, new Slot(i))), ', ')}, 1, now())`
    const change = { id: new Slot(columns.length), previous: new Slot(columns.length + 1) }
    made[shape] = statement = template(changes === null ? sql`${insert} RETURNING ${table.selectList}` : changes.recorded(table, insert, 'create', change, table.selectList))
  }
  return statement
}

async function run (query: QueryFunction, fragment: Sql): Promise<unknown[][]> {
  const { text, values } = toQuery(fragment)
  return await query(text, values)
}

/** The registered model and every one reachable through relations: their tables are created together. */
function connected (model: ResourceModel): ResourceModel[] {
  const seen = new Set([model])
  for (const m of seen) for (const relation of m.relations.values()) seen.add(relation.target)
  return [...seen]
}

function column (table: Table, field: string): Column {
  return table.columns.get(field) as Column
}

/** No stored id holds what PostgreSQL cannot keep (values/storable.ts unstorableText). */
function isStorable (text: string): boolean {
  return unstorableText(text) === undefined
}

function idEquals (table: Table, id: string): Sql {
  return sql`${ident(MAIN, table.id.name)} = ${id}::text`
}

function versionEquals (table: Table, how: WriteOptions): Sql {
  return how.ifVersion === undefined ? sql`` : sql` AND ${ident(MAIN, table.version)} = ${how.ifVersion}::integer`
}
