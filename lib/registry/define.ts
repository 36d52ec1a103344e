// The resource definition a user writes (one TypeBox schema plus relations and limits), and
// the helper that keeps its record type inferred from the schema.
import type { Static, TObject } from '@sinclair/typebox'
import type { Operation } from './model.js'
import type { Store } from '../stores/store.js'

export interface RelationDefinition {
  /** `one`: `field` is this resource's foreign key; `many`: `field` is the target's foreign key to this one. */
  readonly kind: 'one' | 'many'
  /** The target resource's name (plural). */
  readonly resource: string
  readonly field: string
}

export interface ResourceDefinition<S extends TObject = TObject> {
  /** Plural name, used in paths: `books`. */
  readonly name: string
  /** Singular name, the key of one resource in `data`: `book`. */
  readonly singular: string
  readonly schema: S
  readonly store: Store
  /** Server-assigned identifier field; must be a read-only string. Default `id`. */
  readonly idField?: string
  /** Default 20. */
  readonly defaultPageSize?: number
  /** Default 100. */
  readonly maxPageSize?: number
  /** Operations to expose; the others answer 405. Default: all. */
  readonly operations?: readonly Operation[]
  readonly relations?: Readonly<Record<string, RelationDefinition>>
  /** Creates the id of a new record. Default: UUIDv7 (time-ordered). */
  readonly generateId?: () => string
  /** PUT, PATCH and DELETE without If-Match get 428; overrides the plugin's `requireIfMatch`. */
  readonly requireIfMatch?: boolean
}

/** The record type of a resource, inferred from its schema. */
export type RecordOf<D> = D extends ResourceDefinition<infer S> ? Static<S> : never

/**
 * Declares a resource; returns the definition unchanged, typed by its schema.
 * @example
 * const books = defineResource({ name: 'books', singular: 'book', schema: Book, store })
 */
export function defineResource<S extends TObject> (definition: ResourceDefinition<S>): ResourceDefinition<S> {
  return definition
}
