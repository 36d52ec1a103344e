// Turns resource definitions into frozen ResourceModels at registration, failing at boot with a
// precise error when a definition cannot be served as the conventions demand.
import { ReadonlyKind } from '@sinclair/typebox'
import type { TObject, TSchema } from '@sinclair/typebox'
import { ResourceInvalidError } from '../errors.js'
import { knownKeys, refuseUnknownKeys } from '../options-check.js'
import type { ApplicationRules } from '../rules/types.js'
import { newUuidV7 } from './uuid.js'
import type { FieldModel, FieldType, Operation, RelationDefinition, RelationModel, ResourceModel, ResourceShape } from './model.js'

export const allOperations: readonly Operation[] = ['list', 'retrieve', 'create', 'replace', 'modify', 'delete']
const namePattern = /^[a-z][a-zA-Z0-9_-]*$/
const fieldPattern = /^[A-Za-z_][A-Za-z0-9_]*$/

// A definition also names its `store` (define.ts) and its application rules (rules/compile.ts), which the registry does not read.
const definitionKeys = knownKeys({
  name: true,
  singular: true,
  schema: true,
  idField: true,
  defaultPageSize: true,
  maxPageSize: true,
  operations: true,
  relations: true,
  generateId: true,
  requireIfMatch: true,
  searchable: true,
  store: true,
  rules: true,
  serverValues: true,
  hooks: true
} satisfies Record<keyof ResourceShape | 'store' | keyof ApplicationRules<unknown, unknown>, true>)
const relationKeys = knownKeys({ kind: true, resource: true, field: true } satisfies Record<keyof RelationDefinition, true>)

export function buildRegistry (definitions: readonly ResourceShape[]): ResourceModel[] {
  const relationSlots = new Map<string, Map<string, RelationModel>>()
  const models = definitions.map(definition => {
    const relations = new Map<string, RelationModel>()
    relationSlots.set(definition.name, relations)
    return buildModel(definition, relations)
  })
  const byName = new Map(models.map(model => [model.name, model]))
  if (byName.size !== models.length) throw new ResourceInvalidError('names', 'two resources share one name')
  if (new Set(models.map(m => m.singular)).size !== models.length) throw new ResourceInvalidError('names', 'two resources share one singular name')
  for (const definition of definitions) {
    const relations = relationSlots.get(definition.name) as Map<string, RelationModel>
    const model = byName.get(definition.name) as ResourceModel
    for (const [name, relation] of Object.entries(definition.relations ?? {})) {
      relations.set(name, resolveRelation(model, name, relation, byName))
    }
  }
  return models
}

function resolveRelation (model: ResourceModel, name: string, relation: NonNullable<ResourceShape['relations']>[string], byName: Map<string, ResourceModel>): RelationModel {
  const where = `${model.name}.relations.${name}`
  refuseUnknownKeys(relation, relationKeys, where, message => new ResourceInvalidError(where, message))
  const target = byName.get(relation.resource)
  if (target === undefined) throw new ResourceInvalidError(where, `names unknown resource '${relation.resource}'`)
  if (relation.kind !== 'one' && relation.kind !== 'many') throw new ResourceInvalidError(where, `kind must be 'one' or 'many', received '${String(relation.kind)}'`)
  if (!fieldPattern.test(name) || model.fields.has(name)) throw new ResourceInvalidError(where, 'a relation name must be an identifier that is not also a field')
  const holder = relation.kind === 'one' ? model : target
  if (!holder.fields.has(relation.field)) throw new ResourceInvalidError(where, `field '${relation.field}' is not a field of ${holder.name}`)
  return Object.freeze({ name, kind: relation.kind, target, field: relation.field })
}

function buildModel (definition: ResourceShape, relations: Map<string, RelationModel>): ResourceModel {
  const { name, singular, schema } = definition
  const where = String(name)
  refuseUnknownKeys(definition, definitionKeys, where, message => new ResourceInvalidError(where, message))
  if (typeof name !== 'string' || !namePattern.test(name)) throw new ResourceInvalidError(where, `name must match ${namePattern}, received '${String(name)}'`)
  if (typeof singular !== 'string' || !namePattern.test(singular) || singular === name) throw new ResourceInvalidError(where, `singular must match ${namePattern} and differ from name, received '${String(singular)}'`)
  if (schema?.type !== 'object' || typeof schema.properties !== 'object') throw new ResourceInvalidError(where, 'schema must be a TypeBox Type.Object')
  // Unknown members are always refused (the derived schemas list the fields); a schema that asks
  // to keep them could not be honoured, so it is refused rather than silently narrowed.
  if (schema.additionalProperties !== undefined && schema.additionalProperties !== false) {
    throw new ResourceInvalidError(where, 'schema must not allow additional properties: unknown members are refused, and the store keeps only the declared fields')
  }
  const fields = new Map<string, FieldModel>()
  for (const [fieldName, fieldSchema] of Object.entries(schema.properties)) {
    if (!fieldPattern.test(fieldName)) throw new ResourceInvalidError(where, `field name '${fieldName}' must be an identifier`)
    fields.set(fieldName, describeField(schema, fieldName, fieldSchema))
  }
  const idField = definition.idField ?? 'id'
  const id = fields.get(idField)
  if (id === undefined || id.type !== 'string' || !id.readOnly || id.nullable) {
    throw new ResourceInvalidError(where, `id field '${idField}' must be a read-only, non-null string (Type.Readonly(Type.String()))`)
  }
  const defaultPageSize = definition.defaultPageSize ?? 20
  const maxPageSize = definition.maxPageSize ?? 100
  if (!Number.isInteger(maxPageSize) || maxPageSize < 1) throw new ResourceInvalidError(where, `maxPageSize must be a positive integer, received ${String(maxPageSize)}`)
  if (!Number.isInteger(defaultPageSize) || defaultPageSize < 0 || defaultPageSize > maxPageSize) {
    throw new ResourceInvalidError(where, `defaultPageSize must be an integer from 0 to maxPageSize, received ${String(defaultPageSize)}`)
  }
  const operations = definition.operations ?? allOperations
  const unknownOperation = operations.find(op => !allOperations.includes(op))
  if (unknownOperation !== undefined) throw new ResourceInvalidError(where, `unknown operation '${String(unknownOperation)}'`)
  const requireIfMatch = definition.requireIfMatch
  if (requireIfMatch !== undefined && typeof requireIfMatch !== 'boolean') throw new ResourceInvalidError(where, `requireIfMatch must be a boolean, received ${JSON.stringify(requireIfMatch)}`)
  const generateId = definition.generateId ?? newUuidV7
  if (typeof generateId !== 'function') throw new ResourceInvalidError(where, 'generateId must be a function returning a new id')
  const searchable = definition.searchable ?? []
  if (!Array.isArray(searchable) || searchable.some(field => fields.get(field)?.type !== 'string') || new Set(searchable).size !== searchable.length) {
    throw new ResourceInvalidError(where, `searchable must list string fields of the schema, each once, received ${JSON.stringify(searchable)}`)
  }
  const mandatory = [idField, ...[...fields.values()].filter(f => f.required && f.name !== idField).map(f => f.name)]
  const model: ResourceModel = Object.freeze({
    // A registered model is its own view: that of a caller who may read every record and field.
    get model () { return model },
    name,
    singular,
    idField,
    schema,
    fields,
    mandatory,
    relations,
    defaultPageSize,
    maxPageSize,
    operations: new Set(operations),
    generateId,
    requireIfMatch,
    searchable: Object.freeze([...searchable])
  })
  return model
}

function describeField (object: TObject, name: string, schema: TSchema): FieldModel {
  const variants: TSchema[] = Array.isArray(schema.anyOf) ? schema.anyOf : [schema]
  const types = variants.flatMap(v => Array.isArray(v.type) ? v.type : [v.type])
  const nullable = types.includes('null')
  const main = variants.find(v => v.type !== 'null') ?? schema
  const mainType = types.find(t => t !== 'null')
  return Object.freeze({
    name,
    type: fieldType(mainType, main.format),
    nullable,
    required: (object.required ?? []).includes(name),
    readOnly: schema.readOnly === true || schema[ReadonlyKind] === 'Readonly',
    schema
  })
}

function fieldType (type: unknown, format: unknown): FieldType {
  if (type === 'string') return format === 'date' ? 'date' : format === 'date-time' ? 'datetime' : 'string'
  if (type === 'integer' || type === 'number' || type === 'boolean') return type
  return 'json'
}
