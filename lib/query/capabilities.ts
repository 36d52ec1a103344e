// What a collection's query parameters accept, as QUERY CAPABILITIES reports it beside the methods
// (spec "Operations": OPTIONS; "Query parameters on collections", "Sorting", "Paging"): each member
// is the capability an entry of parameters.ts declares, read from the same model its parser checks
// against, so it lists exactly what the parsers take.
import type { View } from '../registry/model.js'
import type { JsonSchema } from '../registry/derive.js'
import { byPart } from './parameters.js'
import type { Capability } from './parameters.js'

/**
 * filterable, sortable, fields, expandable, includable and pageSize ({ default, max }): the
 * fields and relations each parameter may name, and the page sizes.
 */
export type QueryCapabilities = Readonly<Record<string, unknown>>

const capabilities: readonly Capability[] = byPart.flatMap(({ definition }) => definition.capability ?? [])

/** A model as one caller sees it (rules/view.ts): a field or relation hidden from it is not listed. */
export function queryCapabilities (model: View): QueryCapabilities {
  return Object.fromEntries(capabilities.map(capability => [capability.member, capability.of(model)]))
}

/**
 * The members above as the document describes them, from the registered model: a caller the
 * rules hide fields from gets a subset of each list.
 */
export function queryCapabilitiesSchema (model: View): { properties: Record<string, JsonSchema>, required: string[] } {
  const properties = Object.fromEntries(capabilities.map(capability => [capability.member, capability.schema(model)]))
  return { properties, required: Object.keys(properties) }
}
