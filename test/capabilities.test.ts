// QUERY CAPABILITIES of a collection (spec "Operations": OPTIONS; "Query parameters on
// collections", "Sorting", "Paging"): beside the methods, what filter, sort, fields, expand and
// include accept and the page sizes, from the schema and as the caller sees it, and the document's
// description of that body.
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { defineResource } from '../lib/index.js'
import { buildApp } from './helpers/app.js'
import { as, build } from './helpers/rules-app.js'

// An object field (sortable by nothing), its own page sizes, no relations.
const Note = Type.Object({
  id: Type.Readonly(Type.String()),
  text: Type.String(),
  tags: Type.Optional(Type.Array(Type.String()))
}, { additionalProperties: false })
const notes = { resources: store => [defineResource({ name: 'notes', singular: 'note', schema: Note, store, defaultPageSize: 5, maxPageSize: 50 })] } satisfies Parameters<typeof buildApp>[1]

t.test('a collection lists what each query parameter accepts, from its schema: no sort by an array, no relations, its own page sizes', async t => {
  const app = await buildApp(t, notes)
  const res = await app.inject({ method: 'OPTIONS', url: '/v1/notes' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), {
    data: {
      methods: ['GET', 'HEAD', 'POST', 'OPTIONS'],
      filterable: ['id', 'text', 'tags'],
      searchable: [],
      sortable: ['id', 'text'],
      fields: ['id', 'text', 'tags'],
      expandable: [],
      includable: [],
      pageSize: { default: 5, max: 50 }
    }
  })
})

t.test('what the capabilities list is what the parameters take', async t => {
  const app = await buildApp(t, notes)
  const { data } = (await app.inject({ method: 'OPTIONS', url: '/v1/notes' })).json()
  const listed = await app.inject({ url: `/v1/notes?sort=${data.sortable.join(',')}&fields=${data.fields.join(',')}&pageSize=${data.pageSize.max}` })
  t.equal(listed.statusCode, 200)
  const beyond = await app.inject({ url: `/v1/notes?sort=tags&pageSize=${data.pageSize.max + 1}` })
  t.same(beyond.json().invalidParams.map((param: { name: string }) => param.name).sort(), ['pageSize', 'sort'], 'an unlisted sort field and a larger page are refused')
})

t.test('an item\'s path lists its methods only', async t => {
  const app = await buildApp(t, notes)
  const note = (await app.inject({ method: 'POST', url: '/v1/notes', payload: { text: 'x' } })).json().data.note
  t.same((await app.inject({ method: 'OPTIONS', url: `/v1/notes/${note.id}` })).json(), { data: { methods: ['GET', 'HEAD', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] } })
})

t.test('a field hidden from the caller is not listed; a caller who may read it sees it listed', async t => {
  const { app, topic } = await build(t)
  const listOf = async (who: 'ann' | 'root', url: string) => (await app.inject({ method: 'OPTIONS', url, headers: as(who) })).json().data
  const everything = ['id', 'topicId', 'title', 'private', 'secret', 'pinned', 'ownerId', 'createdAt', 'updatedAt']
  const visible = everything.filter(name => name !== 'secret')
  for (const url of ['/v1/posts', `/v1/topics/${topic.id as string}/posts`]) {
    const ann = await listOf('ann', url)
    t.same([ann.filterable, ann.sortable, ann.fields], [visible, visible, visible], `${url} for a caller the rules hide secret from`)
    const root = await listOf('root', url)
    t.same([root.filterable, root.sortable, root.fields], [everything, everything, everything], `${url} for an admin`)
    // Asked again: the same answer (kept per view).
    t.same(await listOf('ann', url), ann)
  }
})

t.test('the document describes the body of a collection\'s capabilities, and the answer validates against it', async t => {
  const app = await buildApp(t, notes)
  const document = (await app.inject({ url: '/v1/openapi.json' })).json()
  const component = (media: { schema: { $ref: string } }) => document.components.schemas[media.schema.$ref.slice('#/components/schemas/'.length)]
  t.same(document.paths['/notes'].options.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/NoteCapabilities' }, 'a component per collection')
  const schema = component(document.paths['/notes'].options.responses['200'].content['application/json'])
  t.same(schema.properties.data.required, ['methods', 'filterable', 'searchable', 'sortable', 'fields', 'expandable', 'includable', 'pageSize'])
  t.same(schema.properties.data.properties.sortable.items.enum, ['id', 'text'])
  t.match(schema.properties.data.properties.expandable, { type: 'array', items: { type: 'string' }, maxItems: 0, description: 'Relations `expand` may embed.' })
  t.equal(schema.properties.data.properties.expandable.items.enum, undefined, 'an empty list, without an empty enum')
  t.same(schema.properties.data.properties.pageSize.properties.max.enum, [50])
  const validate = new Ajv2020({ strict: false }).compile(schema)
  t.ok(validate((await app.inject({ method: 'OPTIONS', url: '/v1/notes' })).json()), JSON.stringify(validate.errors))
  const item = component(document.paths['/notes/{id}'].options.responses['200'].content['application/json'])
  t.same(item.properties.data.required, ['methods'], 'an item\'s describes the methods only')
})
