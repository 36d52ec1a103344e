// Unit tests for lib/registry/derive.ts (spec "Shape of data": the identifier is server-assigned):
// the create, replace, modify and response schemas and the envelopes, all derived from one authored
// schema.
import t from 'tap'
import { Type } from '@sinclair/typebox'
import type { TObject } from '@sinclair/typebox'
import { defineResource, memoryStore } from '../../lib/index.js'
import type { ResourceModel } from '../../lib/index.js'
import { buildRegistry } from '../../lib/registry/index.js'
import {
  createSchema, documentedBodySchema, linksSchema, listEnvelopeSchema, mergedSchema, modifySchema, pageMetaSchema, replaceSchema, responseSchema, schemaNames, singleEnvelopeSchema
} from '../../lib/registry/derive.js'
import { demoResources } from '../../demo/schemas/index.js'

const store = memoryStore()
const [authors, books] = buildRegistry(demoResources(store))
const refOf = (model: ResourceModel) => `${schemaNames(model).resource}#`
/** The schema as JSON sees it: TypeBox's symbol keys are not part of what is compiled or published. */
const plain = (value: unknown) => JSON.parse(JSON.stringify(value))

function modelOf (schema: TObject): ResourceModel {
  return buildRegistry([defineResource({ name: 'things', singular: 'thing', schema, store })])[0]
}

t.test('schemaNames capitalise the singular for every component', async t => {
  t.same(schemaNames(books), { resource: 'Book', create: 'BookCreate', replace: 'BookReplace', modify: 'BookPatch', single: 'BookItem', list: 'BookList' })
})

t.test('the create schema forbids the id and requires the required writable fields', async t => {
  const schema = createSchema(books)
  t.match(schema, { type: 'object', additionalProperties: false, required: ['title', 'authorId'] })
  t.match((schema.properties as Record<string, unknown>).id, { not: {}, description: 'id is set by the server and must not be sent' })
  // Defaults stay on create: the validator fills `available` in.
  t.match((schema.properties as Record<string, unknown>).available, { type: 'boolean', default: true })
})

t.test('the replace schema lets the id through as a string for the route to compare', async t => {
  const schema = replaceSchema(books)
  t.same((schema.properties as Record<string, unknown>).id, { type: 'string' })
  t.same(schema.required, ['title', 'authorId'])
})

t.test('other read-only fields are forbidden on create, replace and modify', async t => {
  const model = modelOf(Type.Object({ id: Type.Readonly(Type.String()), text: Type.String(), reviewedBy: Type.ReadonlyOptional(Type.String()) }, { additionalProperties: false }))
  for (const schema of [createSchema(model), replaceSchema(model), modifySchema(model)]) {
    t.match((schema.properties as Record<string, unknown>).reviewedBy, { not: {} })
  }
})

t.test('the merged schema lets the stored read-only fields through, without defaults, and requires what replace requires', async t => {
  const model = modelOf(Type.Object({ id: Type.Readonly(Type.String()), text: Type.String(), reviewedBy: Type.ReadonlyOptional(Type.String({ default: 'nobody' })) }, { additionalProperties: false }))
  const schema = mergedSchema(model)
  t.same(plain(schema), {
    type: 'object',
    properties: { id: { type: 'string' }, text: { type: 'string' }, reviewedBy: { type: 'string' } },
    required: ['text'],
    additionalProperties: false
  })
})

t.test('the modify schema requires nothing, allows null everywhere but the id, and drops defaults', async t => {
  const schema = modifySchema(books)
  const properties = schema.properties as Record<string, Record<string, unknown>>
  t.equal(schema.required, undefined)
  t.equal(schema.additionalProperties, false)
  t.same(properties.id, { type: 'string' })
  t.same(plain(properties.available), { anyOf: [{ type: 'boolean' }, { type: 'null' }] })
  t.match(properties.title, { anyOf: [{ type: 'string', minLength: 1, maxLength: 500 }, { type: 'null' }] })
})

t.test('the modify schema lets nested members be left out or null at every depth, without defaults', async t => {
  const model = modelOf(Type.Object({
    id: Type.Readonly(Type.String()),
    meta: Type.Optional(Type.Object({
      a: Type.Integer(),
      inner: Type.Object({ c: Type.String({ default: 'd' }) }, { additionalProperties: false, minProperties: 1 })
    }, { additionalProperties: false }))
  }, { additionalProperties: false }))
  const meta = (modifySchema(model).properties as Record<string, unknown>).meta
  t.same(plain(meta), {
    anyOf: [{
      type: 'object',
      additionalProperties: false,
      properties: {
        a: { anyOf: [{ type: 'integer' }, { type: 'null' }] },
        inner: {
          anyOf: [{
            type: 'object',
            additionalProperties: false,
            properties: { c: { anyOf: [{ type: 'string' }, { type: 'null' }] } }
          }, { type: 'null' }]
        }
      }
    }, { type: 'null' }]
  })
})

t.test('the modify schema relaxes objects inside unions, intersections, records and open objects, and keeps arrays whole', async t => {
  const point = { type: 'object', properties: { x: { type: 'integer' } }, required: ['x'] }
  const loosePoint = { type: 'object', properties: { x: { anyOf: [{ type: 'integer' }, { type: 'null' }] } } }
  const model = modelOf(Type.Object({
    id: Type.Readonly(Type.String()),
    either: Type.Unsafe<unknown>({ oneOf: [point, { type: 'string' }] }),
    both: Type.Unsafe<unknown>({ allOf: [point, { type: 'object', required: ['y'], dependentRequired: { y: ['x'] } }] }),
    byName: Type.Unsafe<unknown>({ type: 'object', patternProperties: { '^n': point }, maxProperties: 3 }),
    open: Type.Unsafe<unknown>({ type: 'object', additionalProperties: point, dependencies: { a: ['b'] } }),
    list: Type.Array(Type.Object({ x: Type.Integer() }))
  }, { additionalProperties: false }))
  const properties = plain(modifySchema(model).properties) as Record<string, { anyOf: unknown[] }>
  t.same(properties.either.anyOf[0], { anyOf: [loosePoint, { type: 'string' }] })
  t.same(properties.both.anyOf[0], { allOf: [loosePoint, { type: 'object' }] })
  t.same(properties.byName.anyOf[0], { type: 'object', patternProperties: { '^n': { anyOf: [loosePoint, { type: 'null' }] } } })
  t.same(properties.open.anyOf[0], { type: 'object', additionalProperties: { anyOf: [loosePoint, { type: 'null' }] } })
  t.same(properties.list.anyOf[0], { type: 'array', items: { type: 'object', properties: { x: { type: 'integer' } }, required: ['x'] } })
})

t.test('the response schema requires only mandatory fields and marks the id read-only', async t => {
  const schema = responseSchema(books, refOf)
  const properties = schema.properties as Record<string, Record<string, unknown>>
  t.same(schema.required, ['id', 'title', 'authorId'])
  t.equal(schema.additionalProperties, false)
  t.match(properties.id, { type: 'string', readOnly: true })
  t.same(plain(properties.available), { type: 'boolean' })
})

t.test('the response schema turns a nullable union into a type list, keeping outer and inner keywords', async t => {
  const schema = responseSchema(books, refOf)
  const properties = schema.properties as Record<string, Record<string, unknown>>
  t.same(plain(properties.year), { type: ['integer', 'null'] })
  t.same(plain(properties.rating), { type: ['number', 'null'], minimum: 0, maximum: 5 })
  const described = modelOf(Type.Object({
    id: Type.Readonly(Type.String()),
    note: Type.Union([Type.String({ maxLength: 3 }), Type.Null()], { description: 'a note', default: null })
  }, { additionalProperties: false }))
  t.same(plain((responseSchema(described, refOf).properties as Record<string, unknown>).note), { description: 'a note', maxLength: 3, type: ['string', 'null'] })
})

t.test('unions the type list cannot express are kept as they are, without defaults', async t => {
  const model = modelOf(Type.Object({
    id: Type.Readonly(Type.String()),
    three: Type.Union([Type.String(), Type.Integer(), Type.Null()]),
    noNull: Type.Union([Type.String(), Type.Integer()], { default: 'x' }),
    onlyNull: Type.Union([Type.Null(), Type.Null()]),
    nested: Type.Union([Type.Union([Type.String(), Type.Integer()]), Type.Null()]),
    typed: Type.Unsafe<unknown>({ anyOf: [{ type: 'string', anyOf: [{ minLength: 1 }, { maxLength: 0 }] }, { type: 'null' }] })
  }, { additionalProperties: false }))
  const properties = responseSchema(model, refOf).properties as Record<string, Record<string, unknown>>
  for (const name of ['three', 'noNull', 'onlyNull', 'nested', 'typed']) {
    t.ok(Array.isArray(properties[name].anyOf), `${name} keeps anyOf`)
    t.equal(properties[name].default, undefined, `${name} has no default`)
  }
})

t.test('relations appear in the response schema as embeddable resources', async t => {
  const bookProperties = responseSchema(books, refOf).properties as Record<string, unknown>
  const authorProperties = responseSchema(authors, refOf).properties as Record<string, unknown>
  t.same(bookProperties.author, { anyOf: [{ $ref: 'Author#' }, { type: 'null' }] })
  t.same(authorProperties.books, { type: 'array', items: { $ref: 'Book#' } })
})

t.test('links are an array of link objects or an object keyed by relation; a link may name the record it belongs to', async t => {
  const link = { type: 'object', properties: { rel: { type: 'string' }, href: { type: 'string' }, book: { type: 'string' } }, required: ['rel', 'href'], additionalProperties: false }
  t.same(linksSchema('array', books), { type: 'array', items: link })
  t.same(linksSchema('object', books), { type: 'object', additionalProperties: { anyOf: [link, { type: 'array', items: link }] } })
})

t.test('the single envelope nests the resource under its singular, or puts it in data', async t => {
  t.same(singleEnvelopeSchema(books, 'Book#', { singleResource: 'nested', links: 'array' }).properties, {
    data: { type: 'object', properties: { book: { $ref: 'Book#' } }, required: ['book'] },
    links: linksSchema('array', books)
  })
  t.same((singleEnvelopeSchema(books, 'Book#', { singleResource: 'flat', links: 'object' }).properties as Record<string, unknown>).data, { $ref: 'Book#' })
})

t.test('the list envelope has meta, data with the plural and paging numbers, links, and total only when asked', async t => {
  const plain = listEnvelopeSchema(books, 'Book#', { singleResource: 'nested', links: 'array', totalAtRoot: false })
  t.same(plain.required, ['meta', 'data', 'links'])
  t.match(plain.properties, {
    meta: { $ref: 'PageMeta#' },
    data: { required: ['books', 'pageSize'], properties: { books: { type: 'array', items: { $ref: 'Book#' } } } }
  })
  t.match(pageMetaSchema, { $id: 'PageMeta', required: ['pageSize'], properties: { pageSize: { type: 'integer' }, offset: { type: 'integer' }, pageOffset: { minimum: 1 }, total: { type: 'integer' } } }, 'one meta for every list')
  t.equal((plain.properties as Record<string, unknown>).total, undefined)
  const atRoot = listEnvelopeSchema(books, 'Book#', { singleResource: 'nested', links: 'array', totalAtRoot: true })
  t.same((atRoot.properties as Record<string, unknown>).total, { type: 'integer', minimum: 0 })
})

t.test('documented bodies leave server-set fields out, keep defaults optional and allow null only where a patch may remove', async t => {
  const model = modelOf(Type.Object({
    id: Type.Readonly(Type.String()),
    stamp: Type.ReadonlyOptional(Type.String()),
    name: Type.String(),
    label: Type.Union([Type.String(), Type.Null()]),
    tag: Type.Union([Type.String(), Type.Number(), Type.Null()]),
    note: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    count: Type.Optional(Type.Integer({ default: 0 })),
    spec: Type.Optional(Type.Object({ a: Type.Number(), b: Type.Optional(Type.Number()) }))
  }))
  const create = plain(documentedBodySchema(model, 'create'))
  t.same(Object.keys(create.properties), ['name', 'label', 'tag', 'note', 'count', 'spec'], 'no id, no server-set field')
  t.same(create.required, ['name', 'label', 'tag'])
  t.same(create.properties.count, { allOf: [{ type: 'integer', default: 0 }] })
  t.equal(create.additionalProperties, false)
  const replace = plain(documentedBodySchema(model, 'replace'))
  t.match(replace.properties.id, { type: 'string', description: /repeat the id of the path/ })
  t.same(replace.required, create.required)
  const patch = plain(documentedBodySchema(model, 'modify'))
  t.equal(patch.required, undefined)
  t.same(patch.properties.name, { type: 'string' }, 'required: no null')
  t.same(patch.properties.label, { type: 'string' }, 'required and nullable: null would remove it, so no null either')
  t.same(patch.properties.tag, { anyOf: [{ type: 'string' }, { type: 'number' }] })
  t.same(patch.properties.note, { anyOf: [{ type: 'string' }, { type: 'null' }] }, 'nullable: null once')
  t.same(patch.properties.count, { anyOf: [{ type: 'integer' }, { type: 'null' }] }, 'optional: null removes it; no default')
  t.same(patch.properties.spec.anyOf[0].properties, { a: { type: 'number' }, b: { anyOf: [{ type: 'number' }, { type: 'null' }] } }, 'and so inside objects')
})
