// ResourceModel: everything registration learns about one resource, read by routes, queries and
// stores. Pure data; built by registry/index.ts from a ResourceDefinition.
import type { TObject, TSchema } from '@sinclair/typebox'
import type { FilterNode } from '../query/filter/ast.js'
import type { ResourceOperation } from '../operations/table.js'

/** The scalar kinds queries understand; `json` is an object or array (filterable only by null). */
export type FieldType = 'string' | 'integer' | 'number' | 'boolean' | 'date' | 'datetime' | 'json'

export interface FieldModel {
  readonly name: string
  readonly type: FieldType
  readonly nullable: boolean
  readonly required: boolean
  readonly readOnly: boolean
  readonly schema: TSchema
}

export interface RelationModel {
  readonly name: string
  /** `one`: this record points at one target through `field` (its own foreign key, e.g. book.authorId).
   *  `many`: target records point at this one through their `field` (e.g. author → books.authorId). */
  readonly kind: 'one' | 'many'
  readonly target: ResourceModel
  readonly field: string
}

/** The operations a resource may expose (operations/table.ts). */
export type Operation = ResourceOperation

export interface ResourceModel {
  /** Plural, as in the path: `books`. */
  readonly name: string
  /** `book`: the key of a single resource in `data`. */
  readonly singular: string
  readonly idField: string
  readonly schema: TObject
  readonly fields: ReadonlyMap<string, FieldModel>
  /** Always returned whatever `fields` asks: the id and the schema's required fields. */
  readonly mandatory: readonly string[]
  readonly relations: ReadonlyMap<string, RelationModel>
  readonly defaultPageSize: number
  readonly maxPageSize: number
  readonly operations: ReadonlySet<Operation>
  /** Creates the id of a new record. */
  readonly generateId: () => string
  /** The resource's own If-Match requirement; undefined defers to the plugin option. */
  readonly requireIfMatch?: boolean
  /**
   * Set on a caller's view of a resource (rules/view.ts): only records matching this filter exist
   * in it. Stores AND it into every read of the model, also where a relation of another reaches it.
   */
  readonly visible?: FilterNode
  /** The fields of the registered model a view leaves out: the caller may not read them. */
  readonly hidden?: ReadonlySet<string>
  /** The registered model a view was made from; unset on the registered model itself. */
  readonly base?: ResourceModel
}

export interface RelationDefinition {
  /** `one`: `field` is this resource's foreign key; `many`: `field` is the target's foreign key to this one. */
  readonly kind: 'one' | 'many'
  /** The target resource's name (plural). */
  readonly resource: string
  readonly field: string
}

/** What a resource definition says of its records (everything but where they are kept). */
export interface ResourceShape<S extends TObject = TObject> {
  /** Plural name, used in paths: `books`. */
  readonly name: string
  /** Singular name, the key of one resource in `data`: `book`. */
  readonly singular: string
  readonly schema: S
  /** Server-assigned identifier field; must be a read-only string. Default `id`. */
  readonly idField?: string | undefined
  /** Default 20. */
  readonly defaultPageSize?: number | undefined
  /** Default 100. */
  readonly maxPageSize?: number | undefined
  /** Operations to expose; the others answer 405. Default: all. */
  readonly operations?: readonly Operation[] | undefined
  readonly relations?: Readonly<Record<string, RelationDefinition>> | undefined
  /** Creates the id of a new record. Default: UUIDv7 (time-ordered). */
  readonly generateId?: (() => string) | undefined
  /** PUT, PATCH and DELETE without If-Match get 428; overrides the plugin's `requireIfMatch`. */
  readonly requireIfMatch?: boolean | undefined
}
