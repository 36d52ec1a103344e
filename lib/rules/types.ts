// What an application adds to a resource (docs/rules.md): which records and fields each caller
// sees and changes, the values the server sets, and hooks that run in the write's transaction.
// `P` is the principal the authentication verifiers return (null when a route has no caller).
import type { Fields } from '../stores/store.js'
import type { WriteOperation } from '../operations/table.js'

export type { WriteOperation }

/**
 * Which records a caller may see (or change): a filter in the language clients use, where
 * `@principal.<name>` stands for that value of the caller (null when it has none), e.g.
 * `private eq false or ownerId eq @principal.user`; or a function of the caller returning such a
 * filter, or null for every record.
 */
export type RowRule<P> = string | ((principal: P | null) => string | null)

/** Whether a caller may read (and so select, filter and sort by) a field, and write it. Default: yes. */
export interface FieldRule<P> {
  readonly read?: ((principal: P | null) => boolean) | undefined
  readonly write?: ((principal: P | null) => boolean) | undefined
  /**
   * True: the CREATE answer carries the field even where `read` refuses it, on every path that
   * creates (a route, a batch, MCP, a 202's result), and no later answer does: a value shown once,
   * such as a signing secret. Default false.
   */
  readonly shownOnCreate?: boolean | undefined
}

export interface ResourceRules<T, P> {
  /** The records a caller may see; the others do not exist for it (404, not counted, never embedded). */
  readonly read?: RowRule<P> | undefined
  /** Among the visible records, those a caller may change (REPLACE, MODIFY, DELETE: else 403) and create. Default: all. */
  readonly write?: RowRule<P> | undefined
  readonly fields?: { readonly [K in Extract<keyof T, string>]?: FieldRule<P> } | undefined
}

export interface ServerValueContext<T, P> {
  readonly principal: P | null
  readonly operation: WriteOperation
  /** The stored record a REPLACE or MODIFY changes; null on CREATE. */
  readonly previous: T | null
  /** The time of the write, one value for every field it sets. */
  readonly now: Date
}

/** A read-only field the server fills: on CREATE only (then it never changes) or on every write. */
export interface ServerValue<V, T, P> {
  readonly on: 'create' | 'write'
  /** `'now'`: the time of the write (for a date-time field); or a function of the write. */
  readonly value: 'now' | ServerValueFunction<V, T, P>
}

// A method's parameters are compared both ways, so a definition typed by its own schema still
// fits where any resource definition is taken (options.resources).
type ServerValueFunction<V, T, P> = { compute (context: ServerValueContext<T, P>): V }['compute']

/**
 * The store of the written resource, inside the write's transaction: what a hook reads and writes
 * here commits or rolls back with the write. Unrestricted by rules, and writes made here run no hooks.
 */
export interface Transaction {
  /** `lock`: hold the record against other writers until the transaction ends. */
  get (resource: string, id: string, options?: { readonly lock?: boolean }): Promise<Fields | null>
  /** Records matching a filter (the clients' language), in id order unless `sort` says otherwise (`-year,title`). */
  list (resource: string, options?: { readonly filter?: string, readonly sort?: string, readonly limit?: number }): Promise<Fields[]>
  create (resource: string, fields: Fields): Promise<Fields>
  /** Sets the given fields of a record, keeping the others; an error when it does not exist. */
  update (resource: string, id: string, changes: Fields): Promise<Fields>
  /** False when there was no such record. */
  remove (resource: string, id: string): Promise<boolean>
}

export interface WriteEvent<T, P> {
  readonly operation: WriteOperation
  readonly principal: P | null
  readonly id: string
  /** The record as it will be written (before) or was written (after); null on DELETE. */
  readonly record: T | null
  /** The record before the write; null on CREATE. */
  readonly previous: T | null
  readonly tx: Transaction
}

/**
 * Both run inside the write's transaction, for every path that writes (never for reads). Throw one
 * of the package's `errors` (ConflictError, UnprocessableError …, with `errors.withInvalidParams`
 * naming fields) to refuse the write with that problem; any throw leaves nothing written.
 */
export interface WriteHooks<T, P> {
  /** Business rules: what must hold before the write. */
  beforeWrite? (event: WriteEvent<T, P>): void | Promise<void>
  /** Derived values: what else changes with the write. */
  afterWrite? (event: WriteEvent<T, P>): void | Promise<void>
}

/** What a resource definition may add (define.ts). */
export interface ApplicationRules<T, P> {
  readonly rules?: ResourceRules<T, P> | undefined
  readonly serverValues?: { readonly [K in keyof T]?: ServerValue<T[K], T, P> } | undefined
  readonly hooks?: WriteHooks<T, P> | undefined
}
