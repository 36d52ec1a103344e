// The store contract (CONTRIBUTING.md "a store"): what every backend implements. Free of HTTP
// concerns; receives queries already parsed and checked against the model, never raw query strings.
import type { ResourceModel, View } from '../registry/model.js'
import type { ListQuery } from '../query/store-query.js'
import type { JobStore } from './jobs.js'
import type { AggregateQuery, GroupPage } from '../query/apply/ast.js'

export type Fields = Record<string, unknown>

/** A record as stored: its fields plus the revision the ETag derives from. */
export interface StoredRecord<T extends Fields = Fields> {
  readonly data: T
  /** Increases by one on every write; starts at 1. */
  readonly version: number
  /** Time of the last write. */
  readonly modifiedAt: Date
  /** Its relevance to the search a LIST ordered by it (query/search.ts RELEVANCE); absent otherwise. */
  readonly rank?: number
}

// The parsed query a store receives is query/'s (store-query.ts); named here too, as part of the contract.
export type { ListQuery, PageWindow, SortKey } from '../query/store-query.js'
export type { AggregateQuery, GroupPage } from '../query/apply/ast.js'

export interface Page {
  /** In the query's sort order, also for `before` windows. */
  readonly items: readonly StoredRecord[]
  /** More matches lie beyond the page in the direction it was read. */
  readonly hasMore: boolean
  /** Set when the query asked for it. */
  readonly total?: number
  /** `total` is the database's estimate, not a count (ListQuery.total `estimated`). */
  readonly totalEstimated?: boolean
}

export interface ReadOptions {
  /**
   * Inside a transaction: lock the record against other writers until the transaction ends
   * (`SELECT … FOR UPDATE`). Outside one it only reads.
   */
  readonly lock?: boolean
}

export interface WriteOptions {
  /** Compare-and-set: write only when the stored version still equals this. */
  readonly ifVersion?: number
  /** What the change feed records an update as (changes/recording.ts); default `modify`. */
  readonly operation?: 'replace' | 'modify'
  /** To a store that `writesChanges`: the change this write records, kept by the write's own statement. */
  readonly change?: ChangeNote
}

/** The change a write records, on a store that writes it with the record (Store.writesChanges). */
export interface ChangeNote {
  readonly id: string
  /**
   * The record before the write, as the change keeps it: an update's is given (null: none kept);
   * a remove's is the record removed, kept when true.
   */
  readonly previous: Fields | null | boolean
}

/** One change as a store's change log keeps it (docs/changes.md): the record after a committed write. */
export interface ChangeRecord {
  /** Where the change sits in commit order: a decimal integer, opaque to clients. */
  readonly position: string
  readonly id: string
  /** The resource's name (plural, as in the path). */
  readonly resource: string
  readonly recordId: string
  readonly operation: 'create' | 'replace' | 'modify' | 'delete'
  readonly version: number
  readonly at: Date
  /** The record as written (every field); null for a delete. */
  readonly data: Fields | null
  /** The record before the write, kept only where visibility may differ (row rules); else null. */
  readonly previous: Fields | null
}

/** A change before it has a position: what a transaction appends. */
export type NewChange = Omit<ChangeRecord, 'position'>

export interface ChangeQuery {
  /** Changes after this position (a decimal integer); null from the oldest kept. */
  readonly after: bigint | null
  readonly limit: number
  /** Only these resources; null for every one. */
  readonly resources: readonly string[] | null
}

export interface ChangeRead {
  /** In position order, at most `limit`. */
  readonly changes: readonly ChangeRecord[]
  /** More changes match beyond these (read at once, `limit` did not reach them). */
  readonly hasMore: boolean
  /** The last position removed by purgeChanges ('0' when none): a reader after an earlier one has missed changes. */
  readonly purgedThrough: string
  /** The last position committed, of any resource ('0' when none). */
  readonly head: string
}

/** What `update`/`remove` report when `ifVersion` no longer matches. */
export const VERSION_MISMATCH = Symbol('version mismatch')

/** A response kept under an Idempotency-Key, sent again to a retry (its body as the handler returned it). */
export interface KeptResponse {
  readonly status: number
  /** Lower-case names: `location`, `etag`, `last-modified`, `preference-applied`. */
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
}

/** What the plugin will ask of a store beyond its models' records. */
export interface PrepareFeatures {
  /** Idempotency-Key is on: `claimKey` and `keepResponse` will be called. Default true. */
  readonly idempotencyKeys?: boolean
  /** Asynchronous work is on: the job methods (stores/jobs.ts) will be called. Default false. */
  readonly jobs?: boolean
  /** The change feed is on: the change log's methods will be called. Default false. */
  readonly changes?: boolean
}

/** What claiming a key finds (see Store.claimKey). */
export type KeyClaim =
  | { readonly kind: 'free' }
  | { readonly kind: 'busy' }
  | { readonly kind: 'kept', readonly fingerprint: string, readonly response: KeptResponse }

/**
 * Reads take a caller's view (registry/model.ts View, made by rules/view.ts; a registered model
 * is the view of a caller who may read everything): its records are those of `view.model`, the
 * registered model, that match `view.visible` when set, in `list`, `get` and `getMany`, and where
 * a filter path reaches the view through a relation of another one. Writes take the registered
 * model: the plugin checks rules before it writes.
 */
export interface Store extends Partial<JobStore> {
  list (view: View, query: ListQuery): Promise<Page>
  /**
   * Optional: `apply=` (docs/aggregates.md), the view's records grouped and aggregated in the
   * backend, with the memory store's results (query/apply/evaluate.ts). Without it `apply` is a 400.
   */
  aggregate? (view: View, query: AggregateQuery): Promise<GroupPage>
  get (view: View, id: string, options?: ReadOptions): Promise<StoredRecord | null>
  /**
   * Optional, for exports (docs/export.md): every record `list` would page through for this query
   * (its filter, its sort and the view's rows; `window`, `limit` and `total` are ignored), in
   * order, read as the consumer asks for them, so that memory stays flat. A consumer that stops
   * early (`return()`) ends the read: the SQL store closes its cursor and rolls back. Without it
   * the plugin pages through `list`.
   */
  exportList? (view: View, query: ListQuery): AsyncIterable<StoredRecord>
  /** Records with the given values in `field` (batched lookups for expand/include), in no set order. */
  getMany (view: View, field: string, values: readonly unknown[]): Promise<readonly StoredRecord[]>
  /** `fields` includes the id; the caller assigns it. */
  create (model: ResourceModel, fields: Fields, how?: Pick<WriteOptions, 'change'>): Promise<StoredRecord>
  /** Replaces all fields; null when the id does not exist. */
  update (model: ResourceModel, id: string, fields: Fields, how?: WriteOptions): Promise<StoredRecord | null | typeof VERSION_MISMATCH>
  remove (model: ResourceModel, id: string, how?: WriteOptions): Promise<boolean | typeof VERSION_MISMATCH>
  /**
   * Runs `work` as one transaction: what it does through the store it receives is kept together or
   * not at all (undone when `work` throws). Serialization failures and deadlocks are retried a few
   * times, so `work` must be safe to run again. A transaction inside one joins it.
   */
  transaction<T> (work: (store: Store) => Promise<T>): Promise<T>
  /**
   * Idempotency-Key (draft-ietf-httpapi-idempotency-key-header), called on the store a transaction
   * hands its work: `claimKey` holds `key` (an opaque digest) against every other transaction until
   * this one ends, answering `busy` when another holds it now, else the response kept under it and
   * not yet expired, if any. `keepResponse` keeps one in the same transaction as the write it
   * answers, so that both are kept or neither. `purgeKeys` deletes those expired before `now`
   * (called now and then, never awaited by a request) and says how many.
   */
  claimKey (key: string): Promise<KeyClaim>
  keepResponse (key: string, fingerprint: string, response: KeptResponse, expiresAt: Date): Promise<void>
  purgeKeys (now: Date): Promise<number>
  /**
   * Optional, the change log (docs/changes.md), which the plugin's `changes` option needs.
   * `appendChanges` is called on a transaction's store as the last step of its work: the changes
   * get positions in the order their transactions commit, so a reader of `readChanges` never meets
   * a position while a transaction that will commit an earlier one is still open.
   * `purgeChanges` removes the changes made before `before` and says how many.
   */
  appendChanges? (changes: readonly NewChange[]): Promise<void>
  /**
   * Instead of `appendChanges`: true when create, update and remove keep `how.change` in the
   * change log in the write's own statement (the SQL store), so that one write needs no
   * transaction for its change.
   */
  readonly writesChanges?: boolean
  readChanges? (query: ChangeQuery): Promise<ChangeRead>
  purgeChanges? (before: Date): Promise<number>
  /**
   * Optional: called once at start-up with the models the store serves, so that a store that
   * must check or create tables fails start-up, not requests, when it cannot serve a schema.
   */
  prepare? (models: readonly ResourceModel[], features?: PrepareFeatures): Promise<void>
  /**
   * Optional: true when the store sends each caller's reads where that caller's own writes are
   * visible (read replicas). The plugin then runs every request in its caller's scope, which the
   * store reads with `currentCaller()` (stores/caller.ts).
   */
  readonly routesReadsByCaller?: boolean
  /** Optional: the use of the store's connection pools by name (`primary`, …), read when metrics are scraped. */
  poolStats? (): Readonly<Record<string, PoolStats>>
  close (): Promise<void>
}

/** The state of one connection pool at the moment it is read. */
export interface PoolStats {
  /** Connections open, busy or idle. */
  readonly total: number
  readonly idle: number
  /** Requests waiting for a connection: the pool is exhausted while this is above 0. */
  readonly waiting: number
  /** A replica's pool: how far it was behind at its last check, in milliseconds; undefined while it cannot be reached. */
  readonly lagMillis?: number | undefined
  /** A replica's pool: whether reads go to it (reachable, and within the lag bound). */
  readonly usable?: boolean | undefined
}
