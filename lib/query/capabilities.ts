// What a collection's query parameters accept, as QUERY CAPABILITIES reports it beside the methods
// (spec "Operations": OPTIONS; "Query parameters on collections", "Sorting", "Paging"): read from
// the same model the parsers of parameters.ts check against, so it lists exactly what they take.
import type { View } from '../registry/model.js'
import type { JsonSchema } from '../registry/derive.js'
import { sortableFields } from './parameters.js'

export interface QueryCapabilities {
  /** Fields `filter` and the simple filters may name (an object or array field only against null). */
  readonly filterable: readonly string[]
  /** Fields `sort` may name. */
  readonly sortable: readonly string[]
  /** Fields `fields` may select. */
  readonly fields: readonly string[]
  /** Relations `expand` may embed. */
  readonly expandable: readonly string[]
  /** Relations `include` may link. */
  readonly includable: readonly string[]
  readonly pageSize: { readonly default: number, readonly max: number }
}

/** A model as one caller sees it (rules/view.ts): a field or relation hidden from it is not listed. */
export function queryCapabilities (model: View): QueryCapabilities {
  const fields = [...model.fields.keys()]
  const relations = [...model.relations.keys()]
  return {
    filterable: fields,
    sortable: sortableFields(model),
    fields,
    expandable: relations,
    includable: relations,
    pageSize: { default: model.defaultPageSize, max: model.maxPageSize }
  }
}

// An enum names at least one value (JSON Schema validation §6.1.2): an empty list is said by maxItems.
const names = (values: readonly string[], description: string): JsonSchema => values.length === 0
  ? { type: 'array', items: { type: 'string' }, maxItems: 0, description }
  : { type: 'array', items: { type: 'string', enum: [...values] }, description }

/**
 * The members above as the document describes them, from the registered model: a caller the
 * rules hide fields from gets a subset of each list.
 */
export function queryCapabilitiesSchema (model: View): { properties: Record<string, JsonSchema>, required: string[] } {
  const all = queryCapabilities(model)
  const size = (of: string, value: number): JsonSchema => ({ type: 'integer', enum: [value], description: `${of} (pageSize).` })
  const properties: Record<string, JsonSchema> = {
    filterable: names(all.filterable, 'Fields `filter` and the simple filters may name; a related resource\'s through its relation (author/name).'),
    sortable: names(all.sortable, 'Fields `sort` may name.'),
    fields: names(all.fields, `Fields \`fields\` may select; ${model.mandatory.join(', ')} always come.`),
    expandable: names(all.expandable, 'Relations `expand` may embed.'),
    includable: names(all.includable, 'Relations `include` may link.'),
    pageSize: {
      type: 'object',
      properties: { default: size('Items per page when pageSize is absent', all.pageSize.default), max: size('The largest pageSize accepted', all.pageSize.max) },
      required: ['default', 'max'],
      description: 'Page sizes.'
    }
  }
  return { properties, required: Object.keys(properties) }
}
