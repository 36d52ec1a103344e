// The resource definition a user writes (one TypeBox schema plus relations and limits, and the
// store that keeps its records), and the helper that keeps its record type inferred from the schema.
import type { Static, TObject } from '@sinclair/typebox'
import type { ResourceShape } from './registry/model.js'
import type { Store } from './stores/store.js'
import type { ApplicationRules } from './rules/types.js'

export type { RelationDefinition } from './registry/model.js'

/**
 * `P` is the principal the authentication verifiers return, inferred from the rule and hook
 * functions' parameters (docs/rules.md). Its default stays `any` here so that a definition of any
 * principal fits `options.resources`; defineResource's is `unknown`, so that an unannotated
 * `principal => principal.tenant` does not compile unchecked.
 */
export interface ResourceDefinition<S extends TObject = TObject, P = any> extends ResourceShape<S>, ApplicationRules<Static<S>, P> {
  readonly store: Store
}

/** The record type of a resource, inferred from its schema. */
export type RecordOf<D> = D extends ResourceDefinition<infer S> ? Static<S> : never

/**
 * Declares a resource; returns the definition unchanged, typed by its schema.
 * @example
 * const books = defineResource({ name: 'books', singular: 'book', schema: Book, store })
 */
export function defineResource<S extends TObject, P = unknown> (definition: ResourceDefinition<S, P> & { readonly relations?: OwnForeignKeys<Static<S>> | undefined }): ResourceDefinition<S, P> {
  return definition
}

/**
 * A `one` relation's `field` is a field of the record (its foreign key), checked where the
 * resource is defined. A `many` relation's `field` belongs to the target, and `resource` names
 * another definition: the plugin checks both when it registers, since Fastify's `register` gives
 * its options no type that could relate one resource to the others.
 */
type OwnForeignKeys<T> = Readonly<Record<string, { readonly kind: 'one', readonly field: Extract<keyof T, string> } | { readonly kind: 'many' }>>
