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

/** A relation as a caller sees it (View): to its view of the target. */
export interface ViewRelation {
  readonly name: string
  /** `one`: this record points at one target through `field` (its own foreign key, e.g. book.authorId).
   *  `many`: target records point at this one through their `field` (e.g. author → books.authorId). */
  readonly kind: 'one' | 'many'
  readonly target: View
  readonly field: string
}

/** A relation of a registered model: to the registered target. */
export interface RelationModel extends ViewRelation {
  readonly target: ResourceModel
}

/** The operations a resource may expose (operations/table.ts). */
export type Operation = ResourceOperation

/**
 * A resource as one caller may read it (rules/view.ts): the records it may see, the fields and
 * relations it may read. Reads (queries, stores' `list`, `get`, `getMany`, the envelope) take a
 * view; writes take the registered `model`. A registered model is itself the view of a caller
 * who may read everything.
 */
export interface View {
  /** The registered model this is a view of: its table, its rules, what writes take. */
  readonly model: ResourceModel
  /** Plural, as in the path: `books`. */
  readonly name: string
  /** `book`: the key of a single resource in `data`. */
  readonly singular: string
  readonly idField: string
  /** The fields the caller may read. */
  readonly fields: ReadonlyMap<string, FieldModel>
  /** Always returned whatever `fields` asks: the id and the schema's required fields. */
  readonly mandatory: readonly string[]
  /** The relations the caller may follow, each to its view of the target. */
  readonly relations: ReadonlyMap<string, ViewRelation>
  readonly defaultPageSize: number
  readonly maxPageSize: number
  /**
   * Only records matching this filter exist in the view; undefined: every record. Stores AND it
   * into every read of the view, also where a relation of another view reaches it.
   */
  readonly visible?: FilterNode | undefined
  /** The fields of the registered model the view leaves out (the caller may not read them); undefined: none. */
  readonly hidden?: ReadonlySet<string> | undefined
}

/** A registered resource: what its definition says, and what writes take. */
export interface ResourceModel extends View {
  /** Itself: a registered model is the view that hides nothing. */
  readonly model: ResourceModel
  readonly schema: TObject
  readonly relations: ReadonlyMap<string, RelationModel>
  readonly operations: ReadonlySet<Operation>
  /** Creates the id of a new record. */
  readonly generateId: () => string
  /** The resource's own If-Match requirement; undefined defers to the plugin option. */
  readonly requireIfMatch?: boolean
  /** The text fields `search=` matches (query/search.ts), in the order given; empty: no search. */
  readonly searchable: readonly string[]
  /** A registered model hides no record and no field. */
  readonly visible?: undefined
  readonly hidden?: undefined
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
  /** String fields `search=` matches by words (docs/query-language.md, "Search"). Default: none, and `search` is refused. */
  readonly searchable?: readonly string[] | undefined
}
