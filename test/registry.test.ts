// Resource definitions: a definition the conventions cannot serve stops registration with
// API_ERR_RESOURCE_INVALID naming the resource and what is wrong; good ones become models whose
// fields, ids and limits the routes rely on.
import t from 'tap'
import { Type } from '@sinclair/typebox'
import type { TObject } from '@sinclair/typebox'
import { defineResource, memoryStore } from '../lib/index.js'
import type { ResourceDefinition, Store } from '../lib/index.js'
import { buildRegistry } from '../lib/registry/index.js'
import { assignStores } from '../lib/operations/stores.js'
import { Book } from '../demo/schemas/books.js'
import { Author } from '../demo/schemas/authors.js'
import { demoResources } from '../demo/schemas/index.js'
import { buildApp, create, json } from './helpers/app.js'

const store = memoryStore()
const base = { name: 'books', singular: 'book', schema: Book, store } as const

/** Builds the registry and assigns the stores, from definitions given loosely typed, as JavaScript callers may. */
const build = (...definitions: unknown[]) => () => assignStores(definitions as ResourceDefinition<TObject>[], buildRegistry(definitions as ResourceDefinition<TObject>[]))

const bad: ReadonlyArray<readonly [string, unknown[], RegExp]> = [
  ['a name that is not a path segment', [{ ...base, name: 'Books!' }], /Invalid resource Books!: name must match/],
  ['a name that is not a string', [{ ...base, name: 7 }], /Invalid resource 7: name must match/],
  ['a singular equal to the name', [{ ...base, singular: 'books' }], /singular must match .* and differ from name, received 'books'/],
  ['a missing singular', [{ ...base, singular: undefined }], /singular must match/],
  ['a schema that is not an object schema', [{ ...base, schema: Type.String() }], /schema must be a TypeBox Type.Object/],
  ['a missing schema', [{ ...base, schema: undefined }], /schema must be a TypeBox Type.Object/],
  ['a schema that allows unknown members', [{ ...base, schema: Type.Object({ id: Type.Readonly(Type.String()) }, { additionalProperties: true }) }], /must not allow additional properties/],
  ['a schema that allows unknown members of a type', [{ ...base, schema: Type.Object({ id: Type.Readonly(Type.String()) }, { additionalProperties: Type.String() }) }], /must not allow additional properties/],
  ['a missing store', [{ ...base, store: undefined }], /store must implement the Store interface/],
  ['a store without list', [{ ...base, store: { get () {} } }], /store must implement the Store interface/],
  ['a field name that is not an identifier', [{ ...base, schema: Type.Object({ id: Type.Readonly(Type.String()), 'first-name': Type.String() }, { additionalProperties: false }) }], /field name 'first-name' must be an identifier/],
  ['no id field', [{ ...base, schema: Type.Object({ title: Type.String() }, { additionalProperties: false }) }], /id field 'id' must be a read-only, non-null string/],
  ['an id that is not read-only', [{ ...base, schema: Type.Object({ id: Type.String() }, { additionalProperties: false }) }], /id field 'id' must be a read-only/],
  ['an id that is not a string', [{ ...base, schema: Type.Object({ id: Type.Readonly(Type.Integer()) }, { additionalProperties: false }) }], /id field 'id' must be/],
  ['a nullable id', [{ ...base, schema: Type.Object({ id: Type.Readonly(Type.Union([Type.String(), Type.Null()])) }, { additionalProperties: false }) }], /id field 'id' must be/],
  ['an idField that names no field', [{ ...base, idField: 'isbn' }], /id field 'isbn' must be/],
  ['a maxPageSize below 1', [{ ...base, maxPageSize: 0 }], /maxPageSize must be a positive integer, received 0/],
  ['a fractional maxPageSize', [{ ...base, maxPageSize: 2.5 }], /maxPageSize must be a positive integer, received 2.5/],
  ['a defaultPageSize above maxPageSize', [{ ...base, defaultPageSize: 50, maxPageSize: 10 }], /defaultPageSize must be an integer from 0 to maxPageSize, received 50/],
  ['a negative defaultPageSize', [{ ...base, defaultPageSize: -1 }], /defaultPageSize must be an integer from 0 to maxPageSize, received -1/],
  ['a fractional defaultPageSize', [{ ...base, defaultPageSize: 1.5 }], /defaultPageSize must be an integer/],
  ['an unknown operation', [{ ...base, operations: ['list', 'purge'] }], /unknown operation 'purge'/],
  ['a requireIfMatch that is not a boolean', [{ ...base, requireIfMatch: 'yes' }], /requireIfMatch must be a boolean, received "yes"/],
  ['a generateId that is not a function', [{ ...base, generateId: 'uuid' }], /generateId must be a function/],
  ['two resources with one name', [base, { ...base, singular: 'tome' }], /Invalid resource names: two resources share one name/],
  ['two resources with one singular', [base, { ...base, name: 'tomes' }], /Invalid resource names: two resources share one singular name/]
]

for (const [what, definitions, message] of bad) {
  t.test(`${what} is refused with API_ERR_RESOURCE_INVALID`, async t => {
    t.throws(build(...definitions), { code: 'API_ERR_RESOURCE_INVALID', message })
  })
}

const authors = { name: 'authors', singular: 'author', schema: Author, store } as const
const relations: ReadonlyArray<readonly [string, Record<string, unknown>, RegExp]> = [
  ['an unknown target resource', { author: { kind: 'one', resource: 'writers', field: 'authorId' } }, /books.relations.author: names unknown resource 'writers'/],
  ['an unknown kind', { author: { kind: 'some', resource: 'authors', field: 'authorId' } }, /kind must be 'one' or 'many', received 'some'/],
  ['a name that is also a field', { title: { kind: 'one', resource: 'authors', field: 'authorId' } }, /a relation name must be an identifier that is not also a field/],
  ['a name that is not an identifier', { 'the-author': { kind: 'one', resource: 'authors', field: 'authorId' } }, /a relation name must be an identifier/],
  ['a one-relation field missing from this resource', { author: { kind: 'one', resource: 'authors', field: 'writerId' } }, /field 'writerId' is not a field of books/],
  ['a many-relation field missing from the target', { fans: { kind: 'many', resource: 'authors', field: 'bookId' } }, /field 'bookId' is not a field of authors/]
]

for (const [what, definition, message] of relations) {
  t.test(`a relation with ${what} is refused with API_ERR_RESOURCE_INVALID`, async t => {
    t.throws(build(authors, { ...base, relations: definition }), { code: 'API_ERR_RESOURCE_INVALID', message })
  })
}

t.test('a relation between resources in different stores is refused', async t => {
  t.throws(build({ ...authors, store: memoryStore() }, { ...base, relations: { author: { kind: 'one', resource: 'authors', field: 'authorId' } } }),
    { code: 'API_ERR_RESOURCE_INVALID', message: /books and authors must share one store/ })
})

t.test('a bad resource rejects plugin registration', async t => {
  await t.rejects(buildApp(t, { resources: (s: Store) => [{ ...demoResources(s)[0], maxPageSize: 0 }] }), { code: 'API_ERR_RESOURCE_INVALID' })
})

t.test('a model knows its fields\' types, nullability, requiredness and read-only marks', async t => {
  const Thing = Type.Object({
    id: Type.Readonly(Type.String()),
    name: Type.String(),
    day: Type.Optional(Type.Union([Type.String({ format: 'date' }), Type.Null()])),
    at: Type.String({ format: 'date-time' }),
    count: Type.Integer(),
    ratio: Type.Optional(Type.Number()),
    flag: Type.Boolean(),
    tags: Type.Array(Type.String()),
    meta: Type.Optional(Type.Object({})),
    raw: Type.Unsafe<string | null>({ type: ['string', 'null'] }),
    stamp: Type.Unsafe<string>({ type: 'string', readOnly: true })
  }, { additionalProperties: false })
  const [model] = buildRegistry([defineResource({ name: 'things', singular: 'thing', schema: Thing, store })])
  const described = Object.fromEntries([...model.fields.values()].map(f => [f.name, [f.type, f.nullable, f.required, f.readOnly]]))
  t.same(described, {
    id: ['string', false, true, true],
    name: ['string', false, true, false],
    day: ['date', true, false, false],
    at: ['datetime', false, true, false],
    count: ['integer', false, true, false],
    ratio: ['number', false, false, false],
    flag: ['boolean', false, true, false],
    tags: ['json', false, true, false],
    meta: ['json', false, false, false],
    raw: ['string', true, true, false],
    stamp: ['string', false, true, true]
  })
  t.same(model.mandatory, ['id', 'name', 'at', 'count', 'flag', 'tags', 'raw', 'stamp'])
  t.match(model, { idField: 'id', defaultPageSize: 20, maxPageSize: 100, requireIfMatch: undefined })
  t.same([...model.operations], ['list', 'retrieve', 'create', 'replace', 'modify', 'delete'])
  t.ok(Object.isFrozen(model))
})

t.test('a schema without required fields still makes the id mandatory', async t => {
  const Loose = Type.Object({ id: Type.ReadonlyOptional(Type.String()), note: Type.Optional(Type.String()) }, { additionalProperties: false })
  const [model] = buildRegistry([defineResource({ name: 'loose', singular: 'loosely', schema: Loose, store })])
  t.same(model.mandatory, ['id'])
  t.same([...model.fields.values()].map(f => f.required), [false, false])
})

t.test('relations resolve to the target model on both sides', async t => {
  const [authorModel, bookModel] = buildRegistry(demoResources(store))
  t.match(authorModel.relations.get('books'), { name: 'books', kind: 'many', target: bookModel, field: 'authorId' })
  t.match(bookModel.relations.get('author'), { name: 'author', kind: 'one', target: authorModel, field: 'authorId' })
})

t.test('a custom idField is the id the API assigns, addresses and refuses from clients', async t => {
  const Isbn = Type.Object({ isbn: Type.Readonly(Type.String()), title: Type.String() }, { additionalProperties: false })
  let next = 0
  const app = await buildApp(t, {
    resources: s => [defineResource({ name: 'editions', singular: 'edition', schema: Isbn, store: s, idField: 'isbn', generateId: () => `978-${++next}` })]
  })
  const created = await app.inject({ method: 'POST', url: '/v1/editions', headers: json, payload: { title: 'T' } })
  t.same({ status: created.statusCode, location: created.headers.location, body: created.json() }, { status: 201, location: '/v1/editions/978-1', body: { data: { edition: { isbn: '978-1', title: 'T' } } } })
  const refused = await app.inject({ method: 'POST', url: '/v1/editions', headers: json, payload: { isbn: 'mine', title: 'T' } })
  t.same(refused.json().invalidParams, [{ name: 'isbn', reason: 'is read-only and set by the server' }])
  const mismatch = await app.inject({ method: 'PUT', url: '/v1/editions/978-1', headers: json, payload: { isbn: '978-9', title: 'T' } })
  t.same(mismatch.json().invalidParams, [{ name: 'isbn', reason: 'must equal the id in the path' }])
  const edition = await create(app, 'editions', { title: 'Second' })
  t.same(edition, { isbn: '978-2', title: 'Second' })
})

t.test('a minimal schema registers as written: no additionalProperties, a plain readOnly id', async t => {
  const Fastify = (await import('fastify')).default
  const apiConventions = (await import('../lib/index.js')).default
  const Book = Type.Object({ id: Type.String({ readOnly: true }), title: Type.String({ minLength: 1 }), year: Type.Optional(Type.Union([Type.Integer(), Type.Null()])) })
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(apiConventions, {
    prefix: '/v1',
    resources: [defineResource({ name: 'books', singular: 'book', schema: Book, store: memoryStore(), defaultPageSize: 20, maxPageSize: 100 })]
  })
  const created = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload: { title: 'Dune', year: 1965 } })
  t.equal(created.statusCode, 201)
  t.match(created.json(), { data: { book: { title: 'Dune', year: 1965 } } })
  const unknown = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload: { title: 'Dune', colour: 'red' } })
  t.match({ status: unknown.statusCode, body: unknown.json() }, { status: 400, body: { invalidParams: [{ name: 'colour' }] } }, 'unknown members are refused all the same')
  const withId = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload: { id: 'x', title: 'Dune' } })
  t.match({ status: withId.statusCode, body: withId.json() }, { status: 400, body: { invalidParams: [{ name: 'id' }] } })
})
