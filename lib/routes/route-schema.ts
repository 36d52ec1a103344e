// Complete route schemas, one function per operation (spec "Operations", "Query parameters on
// collections"; headers and problems from http-prose.ts): the OpenAPI document is
// their by-product. Only bodies are validated and only success bodies serialized by
// them; query strings, headers and error responses are documentation (lib/index.ts, problem.ts).
import type { FieldModel, RelationModel, ResourceModel } from '../registry/model.js'
import { createSchema, documentedBodySchema, modifySchema, replaceSchema, schemaNames } from '../registry/derive.js'
import type { JsonSchema } from '../registry/derive.js'
import { hasHooks } from '../rules/compile.js'
import type { ResolvedOptions } from '../options.js'
import type { ResolvedRateLimit } from '../security/rate-limit.js'
import { listProduced, produced } from '../http/negotiation.js'
import { listParameterNames, parameterSchemas } from '../query/parameters.js'
import { queryCapabilitiesSchema } from '../query/capabilities.js'
import { bodyTypes } from '../http/body-types.js'
import { lidSchema, localIdSchema } from './batch.js'
import type { OperationContext } from '../operations/context.js'
import { operationTable } from '../operations/table.js'
import type { BodyWrite } from '../operations/table.js'
import { etagListPattern, headerSchemas } from '../headers.js'
import { componentHint, componentNames, idempotentReplayed, preferenceApplied, problems, requestHeaders, requestId, validators } from './http-prose.js'

/** What the schemas depend on beyond the model. */
export interface SchemaOptions {
  readonly errorFormat: ResolvedOptions['errorFormat']
  readonly requireIfMatch: boolean
  /** Credentials are checked: 401 applies. */
  readonly authenticated: boolean
  /** How requests are rate limited (429 applies, with these fields); null when they are not. */
  readonly rateLimit: Pick<ResolvedRateLimit, 'fields' | 'retryAfter'> | null
  /** The API or the resource is deprecated (Deprecation, Sunset and Link headers on its responses). */
  readonly deprecated: boolean
  /** Origins are allowed: an OPTIONS with Access-Control-Request-Method is a CORS preflight, 204. */
  readonly corsPreflight: boolean
  /** Handlers have a time limit: 503 applies everywhere. */
  readonly timeLimited: boolean
  /** The resource's hooks may refuse a write (rules/types.ts): 409 and 422 apply to its writes. */
  readonly businessRules: boolean
  /** POST and PATCH take Idempotency-Key (idempotency.ts). */
  readonly idempotency: boolean
}

/** The schema options of one resource's routes (or of the plugin's other routes, without a model). */
export function schemaOptionsFor (context: OperationContext, model?: ResourceModel): SchemaOptions {
  const { options } = context
  return {
    errorFormat: options.errorFormat,
    requireIfMatch: model?.requireIfMatch ?? options.requireIfMatch,
    authenticated: options.auth !== null,
    rateLimit: options.rateLimit,
    deprecated: options.deprecation !== undefined || (model !== undefined && options.resourcePolicies.get(model.name)?.deprecation !== undefined),
    corsPreflight: options.cors.origins.length > 0,
    timeLimited: options.handlerTimeout !== undefined,
    businessRules: model !== undefined && hasHooks(context.rulesOf(model)),
    idempotency: options.idempotency !== null
  }
}

/** `a book`, `an author`: for summaries. */
const a = (noun: string) => `${/^[aeiou]/i.test(noun) ? 'an' : 'a'} ${noun}`

/** `book-reviews` → `BookReviews`, for operationIds. */
const pascal = (name: string) => name.split(/[-_]/).map(part => part.charAt(0).toUpperCase() + part.slice(1)).join('')

// The formats resource routes answer in, by Accept (http/negotiation.ts).
const successTypes = [...produced]
// A LIST's, its exports' too (operations/export.ts); openapi/ gives those their own schemas.
const listTypes = [...listProduced]

/** A simple filter's value: the field's type; `null` matches absent values of non-string fields. */
function filterValue (field: FieldModel): JsonSchema {
  const formats: Record<string, JsonSchema> = {
    string: { type: 'string' },
    integer: { type: 'integer' },
    number: { type: 'number' },
    boolean: { type: 'boolean' },
    date: { type: 'string', format: 'date' },
    datetime: { type: 'string', format: 'date-time' }
  }
  const value = formats[field.type]
  return field.nullable && field.type !== 'string' ? { anyOf: [value, { type: 'string', enum: ['null'] }] } : value
}

/**
 * Repeated, a simple filter matches any of its values: documented as an array, which generated
 * clients send repeated. What they do is said once, in LIST's description.
 */
const repeatable = (field: FieldModel): JsonSchema => ({ type: 'array', items: filterValue(field), minItems: 1 })
const simpleFilterProse = 'Any other parameter is a simple filter, named after a field or a related resource\'s field (author.country): the field equals the value; repeated, any of the values.'

function simpleFilters (model: ResourceModel): Record<string, JsonSchema> {
  const filters: Record<string, JsonSchema> = {}
  for (const field of model.fields.values()) {
    if (field.type !== 'json' && !listParameterNames.has(field.name)) filters[field.name] = repeatable(field)
  }
  for (const relation of model.relations.values()) {
    for (const field of relation.target.fields.values()) {
      if (field.type !== 'json') filters[`${relation.name}.${field.name}`] = repeatable(field)
    }
  }
  return filters
}

/** The name of a model's query parameter in the document's components: `Book.sort`, `Book.author.country`. */
export const parameterComponent = (model: ResourceModel, name: string) => `${pascal(model.singular)}.${name}`

/** A model's parameters, each with the name of its shared entry in the document. */
function named (model: ResourceModel, properties: Record<string, JsonSchema>): Record<string, JsonSchema> {
  return Object.fromEntries(Object.entries(properties).map(([name, schema]) => [name, { ...schema, [componentHint]: parameterComponent(model, name) }]))
}

function listQuerystring (model: ResourceModel): JsonSchema {
  return {
    type: 'object',
    properties: named(model, { ...parameterSchemas(model, 'list'), ...simpleFilters(model) }),
    additionalProperties: false,
    // Simple filters repeat the parameter (`year=1999&year=2000`), what generated clients send by
    // default; the lists (`sort=-year,title`) are documented comma-separated, explode false
    // (openapi/components.ts), and may be repeated too (query/parameters.ts).
    style: 'form',
    explode: true
  }
}

function itemQuerystring (model: ResourceModel): JsonSchema {
  return { type: 'object', properties: named(model, parameterSchemas(model, 'retrieve')), additionalProperties: false, style: 'form', explode: true }
}

/** The path's id, shared in the document as `BookId`. */
const idParams = (model: ResourceModel): JsonSchema =>
  ({ type: 'object', properties: { id: { type: 'string', description: `The ${model.singular}'s ${model.idField}.`, [componentHint]: `${pascal(model.singular)}Id` } }, required: ['id'] })

const bodySchemas = { create: createSchema, replace: replaceSchema, modify: modifySchema } as const

/**
 * A write's body: validated by the server's schema (registry/derive.ts), documented by the one
 * written for clients. The $id names the component (openapi/index.ts); each route's body is
 * compiled once, by one Ajv.
 */
function bodyOf (model: ResourceModel, operation: 'create' | 'replace' | 'modify') {
  const name = schemaNames(model)[operation]
  return {
    body: { $id: name, ...bodySchemas[operation](model) },
    documentedBody: { $id: name, ...documentedBodySchema(model, operation) }
  }
}

function linkRels (model: ResourceModel): string {
  const related = [...model.relations.keys()].map(name => `\`${name}\``).join(', ')
  return related === '' ? '' : ` With include, one link per related resource, rel ${related}.`
}

const groups = (model: ResourceModel) => ' With apply: one object per group.'

function tagged (model: ResourceModel, options: SchemaOptions, operationId: string, summary: string, description: string) {
  return { operationId, summary, description, tags: [model.name], ...(options.deprecated ? { deprecated: true } : {}) }
}

/** A write's description, with what the application's hooks add. */
const writeProse = (options: SchemaOptions, description: string) => options.businessRules
  ? `${description} Business rules of the application may refuse it: 409 or 422, invalidParams naming the fields.`
  : description

// Each schema's `response` holds what Fastify serializes: the success envelopes, as `$ref`s to
// the shared schemas. `documentedResponses` holds the rest (errors, 204, 304, OPTIONS): the
// problem renderer serializes errors itself (problem.ts), so compiling a serializer for each would
// only slow the boot (benchmarks/README.md measured it); openapi/index.ts merges them into the
// document.

// A collection exists and has no validators of its own (operations/reads.ts, RFC 9110 §13.2.2).
const collectionConditions = {
  304: { type: 'null', description: 'Not Modified: If-None-Match is *; no body.', headers: requestId }
}
const collectionPrecondition = { 412: 'If-Match names an entity tag (a collection has none), or If-None-Match is * on a write.' }

export function listRouteSchema (model: ResourceModel, options: SchemaOptions) {
  const names = schemaNames(model)
  return {
    ...tagged(model, options, `list${pascal(model.name)}`, `List ${model.name}`,
      `LIST: a page of ${model.name}, filtered, sorted and paged by the query language. An empty result is 200 with an empty array. ${simpleFilterProse}`),
    querystring: listQuerystring(model),
    headers: requestHeaders('list', options),
    produces: listTypes,
    response: {
      200: { $ref: `${names.list}#`, description: `A page of ${model.name}.${linkRels(model)}${groups(model)}`, headers: requestId }
    },
    documentedResponses: {
      ...collectionConditions,
      ...problems(options, operationTable.list.problems, {
        400: 'a query parameter or header is invalid (unknown field, bad filter, pageSize above maxPageSize, a token from another query); invalidParams names each one.',
        ...collectionPrecondition
      })
    }
  }
}

export function nestedListRouteSchema (parent: ResourceModel, relation: RelationModel, options: SchemaOptions) {
  const child = relation.target
  return {
    ...tagged(parent, options, `list${pascal(parent.singular)}${pascal(relation.name)}`, `List ${a(parent.singular)}'s ${relation.name}`,
      `LIST of the ${relation.name} whose ${relation.field} is this ${parent.singular}, with the same query language and links as /${child.name}. ${simpleFilterProse}`),
    params: idParams(parent),
    querystring: listQuerystring(child),
    headers: requestHeaders('list', options),
    produces: listTypes,
    response: {
      200: { $ref: `${schemaNames(child).list}#`, description: `A page of the ${parent.singular}'s ${relation.name}.${linkRels(child)}${groups(child)}`, headers: requestId }
    },
    documentedResponses: {
      ...collectionConditions,
      // The parent the path names may not exist.
      ...problems(options, [...operationTable.list.problems, 404], { 404: `no ${parent.singular} with this ${parent.idField}.`, ...collectionPrecondition })
    }
  }
}

export function retrieveRouteSchema (model: ResourceModel, options: SchemaOptions) {
  const names = schemaNames(model)
  return {
    ...tagged(model, options, `get${pascal(model.singular)}`, `Retrieve ${a(model.singular)}`,
      `RETRIEVE one ${model.singular}; conditional with If-None-Match or If-Modified-Since.`),
    params: idParams(model),
    querystring: itemQuerystring(model),
    headers: requestHeaders('retrieve', options),
    produces: successTypes,
    response: {
      200: { $ref: `${names.single}#`, description: `The ${model.singular}.${linkRels(model)}`, headers: { ...validators, ...requestId } }
    },
    documentedResponses: {
      304: { type: 'null', description: 'Not Modified: the representation matches If-None-Match (or If-Modified-Since); no body.', headers: { ...validators, ...requestId } },
      ...problems(options, operationTable.retrieve.problems, { 404: `no ${model.singular} with this ${model.idField}.`, 412: 'If-Match or If-Unmodified-Since does not hold.' })
    }
  }
}

/**
 * A body write's problems (operations/table.ts) and what the resource adds: 422 where a relation
 * field can name a missing resource (or an Idempotency-Key meets another body), 409 and 422 for
 * business rules, 428 where If-Match is required (a write of an existing record).
 */
function writeStatuses (model: ResourceModel, options: SchemaOptions, operation: BodyWrite): number[] {
  const entry = operationTable[operation]
  const result: number[] = [...entry.problems]
  if ([...model.relations.values()].some(relation => relation.kind === 'one') || options.businessRules || (entry.keyed && options.idempotency)) result.push(422)
  if (options.businessRules) result.push(409)
  if (options.requireIfMatch && entry.place === 'item') result.push(428)
  return result
}

/** What Idempotency-Key adds to a POST or PATCH, when it is on. */
function keyed (options: SchemaOptions, model: ResourceModel): { replayed: Record<string, JsonSchema>, busy: string, refine: Record<number, string> } {
  if (!options.idempotency) return { replayed: {}, busy: '', refine: {} }
  const dangling = [...model.relations.values()].some(relation => relation.kind === 'one') ? ', or the body refers to a record that does not exist' : ''
  return {
    replayed: idempotentReplayed,
    busy: ', or a request with this Idempotency-Key is still being processed',
    refine: { 422: `this Idempotency-Key was used with another body${dangling}.` }
  }
}

const saved = (model: ResourceModel, what: string) => ({ $ref: `${schemaNames(model).single}#`, description: what, headers: { ...validators, ...preferenceApplied, ...requestId } })
/** REPLACE and MODIFY under Prefer: return=minimal. */
const savedMinimal = (what: string) => ({ 204: { type: 'null', description: `${what} (Prefer: return=minimal); no body.`, headers: { ...validators, ...preferenceApplied, ...requestId } } })

export function createRouteSchema (model: ResourceModel, options: SchemaOptions) {
  return {
    ...tagged(model, options, `create${pascal(model.singular)}`, `Create ${a(model.singular)}`,
      writeProse(options, `CREATE ${a(model.singular)}; the server assigns the ${model.idField}, and a body that sets it is 400. With Prefer: return=minimal, the 201 has no body.`)),
    headers: requestHeaders('create', options),
    ...bodyOf(model, 'create'),
    consumes: [...bodyTypes.create],
    produces: successTypes,
    response: {
      201: {
        ...saved(model, `Created: the new ${model.singular}.`),
        headers: { Location: { ...headerSchemas('Location').Location, description: `Relative URL of the new ${model.singular}.` }, ...validators, ...preferenceApplied, ...keyed(options, model).replayed, ...requestId }
      }
    },
    documentedResponses: problems(options, writeStatuses(model, options, 'create'), {
      409: `${a(model.singular)} with the generated ${model.idField} already exists${keyed(options, model).busy}.`,
      ...keyed(options, model).refine,
      ...collectionPrecondition
    })
  }
}

export function replaceRouteSchema (model: ResourceModel, options: SchemaOptions) {
  return {
    ...tagged(model, options, `replace${pascal(model.singular)}`, `Replace ${a(model.singular)}`,
      writeProse(options, `REPLACE ${a(model.singular)} with the body; the body may repeat the ${model.idField}, never change it.`)),
    params: idParams(model),
    headers: requestHeaders('replace', options),
    ...bodyOf(model, 'replace'),
    consumes: [...bodyTypes.replace],
    produces: successTypes,
    response: { 200: saved(model, `The ${model.singular} as replaced.`) },
    documentedResponses: {
      ...savedMinimal('Replaced'),
      ...problems(options, writeStatuses(model, options, 'replace'), {
        404: `no ${model.singular} with this ${model.idField}.`,
        409: 'others changed the resource too often to apply this replacement; retry.'
      })
    }
  }
}

export function modifyRouteSchema (model: ResourceModel, options: SchemaOptions) {
  return {
    ...tagged(model, options, `modify${pascal(model.singular)}`, `Modify ${a(model.singular)}`,
      writeProse(options, `MODIFY ${a(model.singular)} with a JSON merge patch (RFC 7396): members given replace, null removes, others stay; the result must be ${a(`valid ${model.singular}`)}.`)),
    params: idParams(model),
    headers: requestHeaders('modify', options),
    ...bodyOf(model, 'modify'),
    consumes: [...bodyTypes.modify],
    produces: successTypes,
    response: { 200: saved(model, `The ${model.singular} as modified.`) },
    documentedResponses: {
      ...savedMinimal('Modified'),
      ...problems(options, writeStatuses(model, options, 'modify'), {
        404: `no ${model.singular} with this ${model.idField}.`,
        409: `others changed the resource too often to apply this patch${keyed(options, model).busy}; retry.`,
        ...keyed(options, model).refine
      })
    }
  }
}

export function deleteRouteSchema (model: ResourceModel, options: SchemaOptions) {
  const children = [...model.relations.values()].filter(relation => relation.kind === 'many')
  const statuses = [...operationTable.delete.problems, ...(children.length > 0 || options.businessRules ? [409] : []), ...(options.businessRules ? [422] : []), ...(options.requireIfMatch ? [428] : [])]
  return {
    ...tagged(model, options, `delete${pascal(model.singular)}`, `Delete ${a(model.singular)}`,
      writeProse(options, `DELETE ${a(model.singular)}; conditional with If-Match.`)),
    params: idParams(model),
    headers: requestHeaders('delete', options),
    documentedResponses: {
      204: { type: 'null', description: 'Deleted; no body.', headers: requestId },
      ...problems(options, statuses, {
        404: `no ${model.singular} with this ${model.idField}.`,
        // Without children, only the application's business rules answer 409.
        409: children.length === 0 ? 'a business rule of the application refuses it.' : `the ${model.singular} still has ${children.map(relation => relation.name).join(' or ')}; delete or move them first.`
      })
    }
  }
}

const preflight = {
  type: 'null',
  description: 'A CORS preflight (Origin on the allow-list and Access-Control-Request-Method), answered before authentication; no body.',
  headers: headerSchemas('Access-Control-Allow-Origin', 'Access-Control-Allow-Methods', 'Access-Control-Allow-Headers', 'Access-Control-Max-Age')
}

/**
 * QUERY CAPABILITIES of one path; `subject` names it in the operationId: ['book'] → `bookCapabilities`;
 * on a collection's path, `collection` is its resource, whose query capabilities the body adds.
 */
export function capabilitiesRouteSchema (model: ResourceModel, subject: readonly string[], methods: readonly string[], options: SchemaOptions, collection?: ResourceModel) {
  const which = pascal(subject.join('-'))
  // An item's path, or a nested collection's, names a record of `model`, which must exist.
  const namesRecord = subject.length === 2 || subject[0] === model.singular
  const what = subject.length === 2 ? `${a(subject[0])}'s ${subject[1]}` : namesRecord ? a(model.singular) : model.name
  return {
    ...tagged(model, options, `${which.charAt(0).toLowerCase()}${which.slice(1)}Capabilities`, `Query capabilities of ${what}`,
      // What the body's members hold, the 405 of other methods and the 204 of a preflight are said where they are documented.
      `QUERY CAPABILITIES: the methods this path allows, in Allow and in the body${collection === undefined ? '' : ', and what the collection\'s query parameters accept, leaving out what the caller may not read'}.`),
    ...(namesRecord ? { params: idParams(model) } : {}),
    headers: requestHeaders('capabilities', options),
    produces: successTypes,
    documentedResponses: {
      200: {
        ...capabilitiesBody(collection),
        description: `The allowed methods (${methods.join(', ')})${collection === undefined ? '' : ' and the query capabilities'}.`,
        headers: { Allow: { ...headerSchemas('Allow').Allow, description: `The allowed methods: ${methods.join(', ')}.` }, ...requestId }
      },
      ...(options.corsPreflight ? { 204: preflight } : {}),
      ...(namesRecord ? problems(options, [...operationTable.capabilities.problems, 404], { 404: `no ${model.singular} with this ${model.idField}.` }) : problems(options, operationTable.capabilities.problems))
    }
  }
}

/** The body, one schema per collection (and one for every other path): its methods are in the description and in Allow. */
function capabilitiesBody (collection: ResourceModel | undefined): JsonSchema {
  const methodList = { type: 'array', items: { type: 'string' }, description: 'The methods this path allows, as Allow lists them.' }
  const name = `${collection === undefined ? '' : pascal(collection.singular)}Capabilities`
  const query = collection === undefined ? { properties: {}, required: [] } : queryCapabilitiesSchema(collection)
  return {
    type: 'object',
    properties: { data: { type: 'object', properties: { methods: methodList, ...query.properties }, required: ['methods', ...query.required] } },
    required: ['data'],
    [componentHint]: name
  }
}

// Once in the document, where the batch's operations refer to them (openapi/index.ts adds them
// beside the Batch): the local id, and the id and ifMatch every operation of every resource takes.
const component = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` })
const localId = component(componentNames.localId)
export const batchComponents: Readonly<Record<string, JsonSchema>> = {
  [componentNames.localId]: {
    ...localIdSchema,
    properties: { lid: { ...lidSchema, description: 'The lid of an earlier create in this batch.' } },
    description: 'The id of the record an earlier create of this batch named with this lid: a record of the resource this id or field names.'
  },
  [componentNames.batchId]: { anyOf: [{ type: 'string', minLength: 1 }, localId], description: 'The id of the record the operation writes, or the local id of one an earlier create made.' },
  // On a create, as If-Match on POST: `*` holds, a list of tags fails (a collection has none).
  [componentNames.batchIfMatch]: { type: 'string', pattern: etagListPattern, description: 'As the If-Match header of the single request.' }
}

/**
 * An operation's `data`: the route's documented body, where a relation field may hold a local id
 * too; the body's own component where the resource has no such field (and the route serves it).
 */
function batchData (model: ResourceModel, operation: 'create' | 'replace' | 'modify'): JsonSchema {
  const body = documentedBodySchema(model, operation)
  const fields = [...model.relations.values()].filter(relation => relation.kind === 'one').map(relation => relation.field)
  if (fields.length === 0) return { $ref: `#/components/schemas/${schemaNames(model)[operation]}` }
  const properties = { ...(body.properties as Record<string, JsonSchema>) }
  for (const field of fields) properties[field] = { anyOf: [properties[field], localId] }
  return { ...body, properties }
}

/** One oneOf branch per resource and operation it serves; `served(model, op)` says which. */
function batchOperation (model: ResourceModel, op: 'create' | 'replace' | 'modify' | 'delete'): JsonSchema {
  const target = op === 'create'
    ? { lid: { ...lidSchema, description: `A name for the new ${model.singular}, for later operations of this batch.` } }
    : { id: component(componentNames.batchId) }
  return {
    title: `${op} ${model.name}`,
    type: 'object',
    properties: {
      op: { type: 'string', enum: [op] },
      resource: { type: 'string', enum: [model.name] },
      ...target,
      ifMatch: component(componentNames.batchIfMatch),
      ...(op === 'delete' ? {} : { data: batchData(model, op) })
    },
    required: ['op', 'resource', ...(op === 'create' ? [] : ['id']), ...(op === 'delete' ? [] : ['data'])],
    additionalProperties: false
  }
}

const batchResult: JsonSchema = {
  type: 'object',
  properties: {
    status: { type: 'integer', enum: [200, 201, 204], description: 'The status the single request would have answered.' },
    location: { type: 'string', description: 'create: the relative URL of the new record.' },
    etag: { type: 'string', description: 'The ETag of the record as written (not after delete).' },
    data: { type: 'object', description: 'The record as written, as the single request answers it (not after delete).' }
  },
  required: ['status']
}

export function batchRouteSchema (models: readonly ResourceModel[], served: (model: ResourceModel, op: 'create' | 'replace' | 'modify' | 'delete') => boolean, maxOperations: number, options: SchemaOptions) {
  const branches = models.flatMap(model => (['create', 'replace', 'modify', 'delete'] as const).filter(op => served(model, op)).map(op => batchOperation(model, op)))
  return {
    operationId: 'batch',
    summary: 'Run several writes at once, all or nothing',
    description: `BATCH: up to ${maxOperations} creates, replaces, modifies (JSON merge patch) and deletes of any resources, in order, in one transaction: if one fails, none is written, and the answer is that operation's problem with \`operation\` (its index) and invalidParams names prefixed \`operations/<index>/\`. \`lid\` names the record a create makes; \`{ "lid": "…" }\` stands for its id in a later operation's \`id\` or relation field. Every rule of the single requests applies to each operation (authorization, row and field rules, business rules, If-Match as \`ifMatch\`).`,
    tags: ['batch'],
    headers: requestHeaders('batch', options),
    // Validated by the handler (routes/batch.ts), which names each operation's problems; this is the documented shape.
    documentedBody: {
      $id: componentNames.batch,
      type: 'object',
      properties: { operations: { type: 'array', minItems: 1, maxItems: maxOperations, items: { oneOf: branches } } },
      required: ['operations'],
      additionalProperties: false
    },
    consumes: ['application/json'],
    produces: ['application/json'],
    documentedResponses: {
      200: {
        type: 'object',
        properties: { data: { type: 'object', properties: { results: { type: 'array', items: batchResult } }, required: ['results'] } },
        required: ['data'],
        description: 'Every operation succeeded: one result per operation, in order.',
        headers: { ...(options.idempotency ? idempotentReplayed : {}), ...requestId }
      },
      ...problems(options, [400, 403, 404, 409, 412, 413, 415, 422, ...(options.requireIfMatch ? [428] : []), 503], {
        400: 'the body is not a list of operations of this shape (or holds more than the limit), or an operation\'s data is invalid; invalidParams names each member, prefixed operations/<index>/.',
        403: 'an operation is not allowed to these credentials.',
        404: 'an operation names a record that does not exist.',
        409: `an operation conflicts with the current state${options.idempotency ? ', or a request with this Idempotency-Key is still being processed' : ''}.`,
        412: 'an operation\'s ifMatch does not hold.',
        422: `an operation refers to a record that does not exist, or a business rule refuses it${options.idempotency ? '; or this Idempotency-Key was used with another body' : ''}.`
      }, false)
    }
  }
}
