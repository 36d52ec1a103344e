// The query-parameter table (lib/query/parameters.ts; spec "Query parameters on collections",
// "Sorting", "Paging"): every bound, enum and default it documents is what parseListQuery and
// parseItemQuery enforce, and the served OpenAPI document shows each entry as the table has it.
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { defineResource, memoryStore } from '../../lib/index.js'
import type { ResourceDefinition, Store } from '../../lib/index.js'
import { buildRegistry } from '../../lib/registry/index.js'
import type { ResourceModel } from '../../lib/registry/model.js'
import type { JsonSchema } from '../../lib/registry/derive.js'
import { createCursorCodec } from '../../lib/paging/cursor.js'
import { parseItemQuery, parseListQuery } from '../../lib/query/list-query.js'
import type { RawQuery } from '../../lib/query/list-query.js'
import { itemParameterNames, listParameterNames, listValuedNames, odataParameters, parameterSchemas, queryParameters } from '../../lib/query/parameters.js'
import { demoResources } from '../../demo/schemas/index.js'
import { buildApp } from '../helpers/app.js'
import type { TObject } from '@sinclair/typebox'
import { inlined } from '../helpers/openapi.js'

type Json = Record<string, any>

/** Beside the demo's: no relations, a JSON field (not sortable), a field named like a paging parameter, small page sizes. */
function withNotes (store: Store): Array<ResourceDefinition<TObject>> {
  const notes = defineResource({
    name: 'notes',
    singular: 'note',
    store,
    maxPageSize: 7,
    defaultPageSize: 3,
    schema: Type.Object({
      id: Type.Readonly(Type.String()),
      page: Type.Integer(),
      body: Type.Optional(Type.Object({}, { additionalProperties: true }))
    }, { additionalProperties: false })
  })
  return [...demoResources(store), notes] as Array<ResourceDefinition<TObject>>
}

const models = buildRegistry(withNotes(memoryStore()))
const context = { cursor: createCursorCodec({ secrets: ['a-unit-test-secret-0123'] }), defaultPaging: 'token' as const }

interface Refusal { readonly status: number, readonly invalidParams: ReadonlyArray<{ name: string, reason: string }> }

/** The status and problems of a refused query, or null when it is accepted. */
function refusal (fn: () => unknown): Refusal | null {
  try {
    fn()
    return null
  } catch (error) {
    return { status: (error as { statusCode: number }).statusCode, invalidParams: (error as Refusal).invalidParams }
  }
}

/** What a parsed query means: its link text aside, which repeats the parameters as sent. */
const meaning = (parsed: unknown) => ({ ...(parsed as object), stableQuery: undefined })

interface Reader { readonly operation: string, readonly read: (raw: RawQuery) => unknown }
const readers = (model: ResourceModel, name: string): Reader[] => [
  { operation: 'LIST', read: raw => parseListQuery(model, raw, context, `/v1/${model.name}`) },
  ...(itemParameterNames.has(name) ? [{ operation: 'RETRIEVE', read: (raw: RawQuery) => parseItemQuery(model, raw) }] : [])
]

// The keywords the checks below know; a new one in the table must come with its check.
const checked = new Set(['type', 'minimum', 'maximum', 'default', 'description', 'items', 'minItems', 'uniqueItems', 'not', 'enum', 'anyOf'])

for (const model of models) {
  t.test(`${model.name}: each documented bound, enum and default is what the parser enforces`, async t => {
    for (const parameter of [...Object.values(queryParameters), ...odataParameters.values()]) {
      const { name } = parameter
      const schema = parameter.schema(model)
      for (const { operation, read } of readers(model, name)) {
        const accepts = (value: string, why: string) => t.equal(refusal(() => read({ [name]: value })), null, `${operation} ${name}=${value}: ${why}`)
        const refuses = (value: string, why: string) => t.match(refusal(() => read({ [name]: value })), { status: 400, invalidParams: [{ name }] }, `${operation} ${name}=${value} is 400 naming ${name}: ${why}`)
        if (schema === undefined) {
          // Left out of the document: no value is accepted.
          refuses('anything', 'not offered')
          continue
        }
        t.same(Object.keys(schema).filter(keyword => !checked.has(keyword)), [], `${name}: every keyword is checked`)
        t.type(schema.description, 'string', `${name} is described`)
        if (schema.type === 'integer') {
          const minimum = schema.minimum as number
          const maximum = schema.maximum as number
          accepts(String(minimum), 'the minimum')
          accepts(String(maximum), 'the maximum')
          refuses(String(maximum + 1), 'past the maximum')
          refuses(minimum === 0 ? '-1' : String(minimum - 1), 'below the minimum')
          refuses('1.5', 'not an integer')
        } else if (schema.type === 'boolean') {
          accepts('true', 'a boolean')
          accepts('false', 'a boolean')
          refuses('yes', 'not a boolean')
        } else if (schema.type === 'array') {
          const items = schema.items as JsonSchema
          t.equal(items.type, 'string')
          const values = items.enum as string[]
          for (const value of values) accepts(value, 'in the enum')
          refuses('nope', 'not in the enum')
          t.equal(schema.minItems, 1)
          refuses('', 'an empty list')
          if (schema.uniqueItems === true) refuses(`${values[0]},${values[0]}`, 'uniqueItems')
          else if (schema.not !== undefined) {
            // sort's `not`: no field twice, in any direction.
            refuses(`${values[0]},${values[0]}`, 'a field twice')
            refuses(`${values[0]},-${values[0]}`, 'a field twice, in both directions')
          } else t.same(meaning(read({ [name]: `${values[0]},${values[0]}` })), meaning(read({ [name]: values[0] })), `${operation} ${name}: a repeated item counts once`)
        } else if (Array.isArray(schema.anyOf)) {
          // total: a boolean, or one of the texts of the enum beside it (estimated).
          const [boolean, texts] = schema.anyOf as JsonSchema[]
          t.same(boolean, { type: 'boolean' }, `${name}: a boolean first`)
          accepts('true', 'a boolean')
          accepts('false', 'a boolean')
          for (const value of texts.enum as string[]) accepts(value, 'in the enum')
          refuses('nope', 'neither a boolean nor in the enum')
        } else {
          t.same(schema, { type: 'string', description: schema.description }, `${name}: a string without bounds`)
        }
        // OpenAPI's default is what the server assumes when the parameter is absent.
        if (schema.default !== undefined) t.same(read({}), read({ [name]: String(schema.default) }), `${operation} ${name}: absent means ${String(schema.default)}`)
      }
    }
  })
}

t.test('sort: each field ascending, descending or with +, but once; JSON fields cannot be sorted', async t => {
  const [, books] = models
  const notes = models.find(model => model.name === 'notes') as ResourceModel
  const parse = (model: ResourceModel, sort: string) => parseListQuery(model, { sort }, context, '/v1/x').query.sort
  t.same(parse(books, '+year'), parse(books, 'year'))
  t.same(parse(books, '-year'), [{ field: 'year', direction: 'desc' }, { field: 'id', direction: 'desc' }])
  t.same(refusal(() => parse(books, 'year,-year'))?.invalidParams, [{ name: 'sort', reason: "'year' appears more than once" }])
  t.same((queryParameters.sort.schema(notes)?.items as JsonSchema).enum, ['id', '-id', '+id', 'page', '-page', '+page'])
  t.same(refusal(() => parse(notes, 'body'))?.invalidParams, [{ name: 'sort', reason: "'body' cannot be sorted" }])
})

t.test('pageSize is bounded by the model, the positions by 2^53 - 1', async t => {
  const notes = models.find(model => model.name === 'notes') as ResourceModel
  t.match(queryParameters.pageSize.schema(notes), { minimum: 0, maximum: 7, default: 3 })
  for (const name of ['offset', 'pageOffset', 'page'] as const) t.equal(queryParameters[name].schema(notes)?.maximum, Number.MAX_SAFE_INTEGER)
})

t.test('a repeated parameter is reported once, in the order of the table; lists may repeat', async t => {
  const [, books] = models
  for (const table of [Object.values(queryParameters), [...odataParameters.values()]]) {
    const names = table.map(parameter => parameter.name)
    const raw = Object.fromEntries(names.map(name => [name, ['1', '2']]))
    const lists = new Set(table.filter(parameter => parameter.list).map(parameter => parameter.name))
    t.same(refusal(() => parseListQuery(books, raw, context, '/v1/books'))?.invalidParams.filter(problem => problem.reason === 'must be given at most once').map(problem => problem.name),
      names.filter(name => !lists.has(name)))
  }
  t.same(Object.values(queryParameters).filter(parameter => parameter.list).map(parameter => parameter.name).sort(), ['expand', 'fields', 'include', 'sort'], 'fields, sort, expand and include read a repetition as a comma list')
  t.same([...odataParameters.values()].filter(parameter => parameter.list).map(parameter => parameter.name).sort(), ['$expand', '$orderby', '$select'], 'and so do their OData names')
  t.same([...itemParameterNames], ['fields', 'expand', 'include', '$select', '$expand'])
  t.same([...listParameterNames].filter(name => name.startsWith('$')), ['$select', '$filter', '$apply', '$search', '$orderby', '$skip', '$top', '$count', '$expand'])
})

t.test('the served document shows each parameter as the table has it', async t => {
  const app = await buildApp(t, { resources: withNotes })
  const document = inlined((await app.inject({ url: '/v1/openapi.json' })).json())
  const byName = (model: string) => models.find(one => one.name === model) as ResourceModel
  const operations: Array<[string, string, ResourceModel, 'list' | 'retrieve']> = [
    ['/books', 'get', byName('books'), 'list'],
    ['/books', 'head', byName('books'), 'list'],
    ['/authors', 'get', byName('authors'), 'list'],
    ['/authors/{id}/books', 'get', byName('books'), 'list'],
    ['/notes', 'get', byName('notes'), 'list'],
    ['/books/{id}', 'get', byName('books'), 'retrieve'],
    ['/books/{id}', 'head', byName('books'), 'retrieve'],
    ['/authors/{id}', 'get', byName('authors'), 'retrieve'],
    ['/notes/{id}', 'get', byName('notes'), 'retrieve']
  ]
  for (const [path, method, model, operation] of operations) {
    const documented: Record<string, JsonSchema> = {}
    for (const parameter of document.paths[path][method].parameters as Json[]) {
      if (parameter.in !== 'query' || !listParameterNames.has(parameter.name)) continue
      // Lists comma-separated, as the spec writes them (the server reads them repeated too); the
      // others in a query's default style, form exploded, which the document leaves unsaid.
      const list = listValuedNames.has(parameter.name)
      t.same({ required: parameter.required, style: parameter.style, explode: parameter.explode }, { required: undefined, style: list ? 'form' : undefined, explode: list ? false : undefined },
        `${method} ${path} ${String(parameter.name)}: ${list ? 'comma-separated' : 'form, exploded'}`)
      documented[parameter.name] = { ...parameter.schema, description: parameter.description }
    }
    t.same(documented, parameterSchemas(model, operation), `${method} ${path}`)
  }
  t.notOk('expand' in parameterSchemas(byName('notes'), 'list'), 'no relations, no expand')
  t.ok('page' in parameterSchemas(byName('notes'), 'list'), 'a field named page is the paging parameter')
})
