// Derives every wire schema of a resource from its one authored schema, never a second by hand:
// create, replace and modify inputs, the response shape, and the single and collection envelopes.
import type { TSchema } from '@sinclair/typebox'
import type { ResourceModel, View } from './model.js'

export type JsonSchema = Record<string, unknown>

export interface EnvelopeOptions {
  /** `nested`: `data.{singular}`; `flat`: the resource directly in `data` (spec "Shape of data"). */
  readonly singleResource: 'nested' | 'flat'
  readonly links: 'array' | 'object'
}

/** Component names, as they appear in OpenAPI: `Book`, `BookCreate`, `BookList` … */
export function schemaNames (model: ResourceModel) {
  const base = model.singular[0].toUpperCase() + model.singular.slice(1)
  return {
    resource: base,
    create: `${base}Create`,
    replace: `${base}Replace`,
    modify: `${base}Patch`,
    single: `${base}Item`,
    list: `${base}List`
  } as const
}

const forbidden = (what: string): JsonSchema => ({ not: {}, description: `${what} is set by the server and must not be sent.` })

/** Without `default`: the validator would fill omitted fields in (wrong for PATCH) and the serializer would invent absent ones (wrong for `fields=`). */
function withoutDefault (schema: TSchema | JsonSchema): JsonSchema {
  const { default: _default, ...rest } = schema
  return rest
}

/** POST body: read-only fields (the id first) are refused, not silently dropped. */
export function createSchema (model: View): JsonSchema {
  return inputSchema(model, 'none')
}

/** PUT body: as for create, but the id may be repeated when it equals the path's. */
export function replaceSchema (model: View): JsonSchema {
  return inputSchema(model, 'id')
}

/**
 * A PATCH's merged result (RFC 7396 §2: the whole resource after the merge): as for replace, but
 * the server-owned fields the stored record holds pass unchanged. The patch schema refuses them
 * from the client, so here they can only come from the store.
 */
export function mergedSchema (model: View): JsonSchema {
  return inputSchema(model, 'all')
}

function inputSchema (model: View, readOnly: 'none' | 'id' | 'all'): JsonSchema {
  const properties: Record<string, unknown> = {}
  const required: string[] = []
  for (const field of model.fields.values()) {
    if (field.name === model.idField && readOnly !== 'none') properties[field.name] = { type: 'string' }
    else if (field.readOnly) properties[field.name] = readOnly === 'all' ? withoutDefault(field.schema) : forbidden(field.name)
    else properties[field.name] = field.schema
    if (field.required && !field.readOnly) required.push(field.name)
  }
  return { type: 'object', properties, required, additionalProperties: false }
}

/** PATCH body (RFC 7396): any subset of fields; null removes a member. The merged result is validated against mergedSchema. */
export function modifySchema (model: View): JsonSchema {
  const properties: Record<string, unknown> = {}
  for (const field of model.fields.values()) {
    if (field.name === model.idField) properties[field.name] = { type: 'string' }
    else if (field.readOnly) properties[field.name] = forbidden(field.name)
    else properties[field.name] = orNull(patchOf(field.schema))
  }
  return { type: 'object', properties, additionalProperties: false }
}

/**
 * A body as the OpenAPI document shows it: what the server takes (the schemas above, which also
 * pick the error each refusal names), written for generated clients. Server-set fields are left
 * out, and `additionalProperties: false` refuses them (`not: {}` reads as a member of type
 * `unknown`); the id of PUT and PATCH may repeat the path's; a PATCH sets null only where removing
 * the member leaves a valid merged result.
 */
export function documentedBodySchema (model: ResourceModel, operation: 'create' | 'replace' | 'modify'): JsonSchema {
  const properties: Record<string, unknown> = {}
  const required: string[] = []
  for (const field of model.fields.values()) {
    if (field.name === model.idField && operation !== 'create') {
      properties[field.name] = { type: 'string', description: `May repeat the ${model.idField} of the path; any other value is 400.` }
    } else if (field.readOnly) {
      continue
    } else if (operation === 'modify') {
      // A nullable field's schema admits null already; a required one's must not (null removes it).
      const patch = patchOf(field.schema, true)
      properties[field.name] = field.required ? withoutNull(patch) : field.nullable ? patch : orNull(patch)
    } else {
      properties[field.name] = defaultBelow(field.schema)
      if (field.required) required.push(field.name)
    }
  }
  return { type: 'object', properties, ...(operation === 'modify' ? {} : { required }), additionalProperties: false }
}

/**
 * A member's `default` one level down, in an allOf of one: openapi-typescript reads a `default`
 * beside a component's property as "always present" (its defaultNonNullable, meant for responses)
 * and would require the member in the body's type; validators and renderers read both the same.
 */
function defaultBelow (schema: TSchema | JsonSchema): JsonSchema {
  return schema.default === undefined ? schema : { allOf: [schema] }
}

const orNull = (schema: JsonSchema): JsonSchema => ({ anyOf: [schema, { type: 'null' }] })

/** A nullable schema's other branches: a merge patch cannot set null (RFC 7396 §2), only remove. */
function withoutNull (schema: JsonSchema): JsonSchema {
  if (!Array.isArray(schema.anyOf)) return schema
  const { anyOf, ...rest } = schema
  const values = (anyOf as JsonSchema[]).filter(variant => variant.type !== 'null')
  return values.length === 1 ? { ...rest, ...values[0] } : { ...rest, anyOf: values }
}

// Which members are present, and how many, is the merged object's business, not the patch's.
const mergedOnly = new Set(['required', 'minProperties', 'maxProperties', 'dependentRequired', 'dependencies'])

/**
 * What may patch a value of `schema` (RFC 7396 §2): an object patch merges member by member, so
 * at every depth a member may be left out, be null (removed) or patch that member in turn; any
 * other value replaces the old one whole and keeps its schema. Defaults go at every depth, or the
 * validator would write them into the patch and so over the stored members. `exact` (the
 * document's) allows null only on members the merged result may lack; the validator lets the
 * merged result refuse the others, naming them as missing.
 */
function patchOf (schema: TSchema | JsonSchema, exact = false): JsonSchema {
  const { oneOf, ...rest } = withoutDefault(schema)
  const patch: JsonSchema = Object.fromEntries(Object.entries(rest).filter(([keyword]) => !mergedOnly.has(keyword)))
  const relax = (member: JsonSchema) => patchOf(member, exact)
  // Relaxed branches may overlap, so oneOf becomes anyOf; the merged result is still held to oneOf.
  const variants = rest.anyOf ?? oneOf
  if (Array.isArray(variants)) patch.anyOf = variants.map(relax)
  if (Array.isArray(rest.allOf)) patch.allOf = rest.allOf.map(relax)
  const required = exact && Array.isArray(rest.required) ? rest.required as string[] : []
  for (const keyword of ['properties', 'patternProperties']) {
    const members = rest[keyword] as Record<string, JsonSchema> | undefined
    if (members !== undefined) {
      patch[keyword] = Object.fromEntries(Object.entries(members).map(([name, member]) =>
        [name, keyword === 'properties' && required.includes(name) ? relax(member) : orNull(relax(member))]))
    }
  }
  if (typeof rest.additionalProperties === 'object') patch.additionalProperties = orNull(relax(rest.additionalProperties as JsonSchema))
  return patch
}

/** `anyOf: [T, null]` as `type: [T, 'null']`: fast-json-stringify resolves anyOf by validating each value at run time. */
function serializable (schema: TSchema): JsonSchema {
  const plain = withoutDefault(schema)
  const variants = schema.anyOf as TSchema[] | undefined
  if (variants?.length !== 2) return plain
  const value = variants.find(v => v.type !== 'null')
  if (value === undefined || typeof value.type !== 'string' || value.anyOf !== undefined || !variants.some(v => v.type === 'null')) return plain
  const { anyOf: _anyOf, ...outer } = plain
  return { ...outer, ...withoutDefault(value), type: [value.type, 'null'] }
}

/** A resource as served: only mandatory fields are required, so `fields=` may leave the others out; related resources may be embedded by `expand`. */
export function responseSchema (model: ResourceModel, refOf: (model: ResourceModel) => string): JsonSchema {
  const properties: Record<string, unknown> = {}
  for (const field of model.fields.values()) {
    properties[field.name] = field.readOnly ? { ...serializable(field.schema), readOnly: true } : serializable(field.schema)
  }
  for (const relation of model.relations.values()) {
    const target = { $ref: refOf(relation.target) }
    properties[relation.name] = relation.kind === 'one' ? { anyOf: [target, { type: 'null' }] } : { type: 'array', items: target }
  }
  return { type: 'object', properties, required: [...model.mandatory], additionalProperties: false }
}

/**
 * Links to related resources (`include`) carry a member naming the record they belong to, keyed by
 * its resource's singular (spec "Link object"): `{ rel: 'author', href, book: '<id>' }`. Named, not
 * left to additionalProperties, which the serializer would look for on every link with a key loop.
 */
function linkOf (model: ResourceModel): JsonSchema {
  return {
    type: 'object',
    properties: { rel: { type: 'string' }, href: { type: 'string' }, [model.singular]: { type: 'string' } },
    required: ['rel', 'href'],
    additionalProperties: false
  }
}

export function linksSchema (format: EnvelopeOptions['links'], model: ResourceModel): JsonSchema {
  const link = linkOf(model)
  if (format === 'array') return { type: 'array', items: link }
  // Keyed by relation: navigation rels hold one link, relation names an array of them.
  return { type: 'object', additionalProperties: { anyOf: [link, { type: 'array', items: link }] } }
}

export function singleEnvelopeSchema (model: ResourceModel, resourceRef: string, options: EnvelopeOptions): JsonSchema {
  const resource = { $ref: resourceRef }
  const data = options.singleResource === 'nested'
    ? { type: 'object', properties: { [model.singular]: resource }, required: [model.singular] }
    : resource
  return { type: 'object', properties: { data, links: linksSchema(options.links, model) }, required: ['data'] }
}

const pagingNumbers = {
  pageSize: { type: 'integer', minimum: 0 },
  offset: { type: 'integer', minimum: 0 },
  pageOffset: { type: 'integer', minimum: 1 }
}

/** A page's `meta`, the same for every resource: one shared schema (and document component), which each list envelope refers to. */
export const pageMetaSchema: JsonSchema = {
  $id: 'PageMeta',
  type: 'object',
  properties: { ...pagingNumbers, total: { type: 'integer', minimum: 0 }, totalEstimated: { type: 'boolean', const: true, description: 'total=estimated: total is the database\'s estimate (10,000 or more), not a count.' } },
  required: ['pageSize']
}

export function listEnvelopeSchema (model: ResourceModel, resourceRef: string, options: EnvelopeOptions & { totalAtRoot: boolean }): JsonSchema {
  const properties: Record<string, unknown> = {
    meta: { $ref: `${String(pageMetaSchema.$id)}#` },
    data: {
      type: 'object',
      properties: { [model.name]: { type: 'array', items: { $ref: resourceRef } }, pageSize: pagingNumbers.pageSize, pageOffset: pagingNumbers.pageOffset },
      required: [model.name, 'pageSize']
    },
    links: linksSchema(options.links, model)
  }
  if (options.totalAtRoot) properties.total = { type: 'integer', minimum: 0 }
  return { type: 'object', properties, required: ['meta', 'data', 'links'] }
}
