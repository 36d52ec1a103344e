// The eight operations of spec "Endpoints → Operations": status,
// headers and body of LIST, RETRIEVE, CREATE, REPLACE, MODIFY, DELETE, RETRIEVE HEADERS and
// QUERY CAPABILITIES; server-assigned ids; merge-patch; referential rules; nested collections.
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { defineResource, memoryStore } from '../lib/index.js'
import { buildRegistry } from '../lib/registry/index.js'
import { buildApp, create, json, pick, seed } from './helpers/app.js'

const LAST_MODIFIED = 'Wed, 01 May 2024 12:00:00 GMT'
const JSON_TYPE = 'application/json; charset=utf-8'
const uuidV7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

t.test('LIST answers 200 with every book in the collection envelope', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const res = await app.inject({ url: '/v1/books' })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], JSON_TYPE)
  const { meta, data, links } = res.json()
  t.same({ meta, data }, { meta: { pageSize: 20 }, data: { books, pageSize: 20 } })
  // The full set of page links is list-paging's concern; self is always there.
  t.match(links, [{ rel: 'self', href: '/v1/books?pageSize=20' }])
})

t.test('RETRIEVE answers 200 with the resource, its ETag and Last-Modified', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const res = await app.inject({ url: `/v1/books/${books[0].id}` })
  t.equal(res.statusCode, 200)
  t.same(pick(res.headers, 'etag', 'last-modified', 'content-type'), { etag: '"1"', 'last-modified': LAST_MODIFIED, 'content-type': JSON_TYPE })
  t.same(res.json(), { data: { book: books[0] } })
})

t.test('CREATE answers 201 with Location under the prefix, ETag and the stored resource', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const res = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload: { title: 'The Lathe of Heaven', authorId: authors[0].id } })
  t.equal(res.statusCode, 201)
  const book = res.json().data.book
  t.same(pick(res.headers, 'location', 'etag', 'last-modified', 'content-type'), {
    location: `/v1/books/${book.id}`, etag: '"1"', 'last-modified': LAST_MODIFIED, 'content-type': JSON_TYPE
  })
  // Optional nullable fields left out are stored as null; `available` takes its default; the
  // server sets the derived values of a book without reviews.
  t.same(book, { id: book.id, title: 'The Lathe of Heaven', authorId: authors[0].id, year: null, rating: null, available: true, reviewCount: 0, averageRating: null })
  const read = await app.inject({ url: res.headers.location as string })
  t.same(read.json(), { data: { book } })
})

t.test('CREATE uses the resource\'s own id generator and encodes the id in Location', async t => {
  const app = await buildApp(t, {
    resources: store => [defineResource({
      name: 'tags',
      singular: 'tag',
      schema: Type.Object({ id: Type.Readonly(Type.String()), label: Type.String() }, { additionalProperties: false }),
      store,
      generateId: () => 'a b/c'
    })]
  })
  const res = await app.inject({ method: 'POST', url: '/v1/tags', headers: json, payload: { label: 'x' } })
  t.same({ status: res.statusCode, location: res.headers.location, id: res.json().data.tag.id }, { status: 201, location: '/v1/tags/a%20b%2Fc', id: 'a b/c' })
})

t.test('REPLACE answers 200 with the new state; omitted optional fields are cleared, server-set ones kept', async t => {
  const app = await buildApp(t)
  const { books, authors } = await seed(app)
  const res = await app.inject({ method: 'PUT', url: `/v1/books/${books[0].id}`, headers: json, payload: { title: 'Renamed', authorId: authors[1].id, year: 2000 } })
  t.equal(res.statusCode, 200)
  t.same(pick(res.headers, 'etag', 'last-modified', 'content-type'), { etag: '"2"', 'last-modified': LAST_MODIFIED, 'content-type': JSON_TYPE })
  const expected = { id: books[0].id, title: 'Renamed', authorId: authors[1].id, year: 2000, rating: null, available: true, reviewCount: 0, averageRating: null }
  t.same(res.json(), { data: { book: expected } })
  t.same((await app.inject({ url: `/v1/books/${books[0].id}` })).json(), { data: { book: expected } })
})

t.test('MODIFY answers 200 with the merged resource for application/merge-patch+json', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const res = await app.inject({ method: 'PATCH', url: `/v1/books/${books[0].id}`, headers: { 'content-type': 'application/merge-patch+json' }, payload: { rating: 5 } })
  t.equal(res.statusCode, 200)
  t.same(pick(res.headers, 'etag', 'content-type'), { etag: '"2"', 'content-type': JSON_TYPE })
  t.same(res.json(), { data: { book: { ...books[0], rating: 5 } } })
})

t.test('MODIFY accepts application/json with a charset parameter as a merge patch', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const res = await app.inject({ method: 'PATCH', url: `/v1/books/${books[1].id}`, headers: { 'content-type': 'application/json; charset=utf-8' }, payload: { year: 1970 } })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { data: { book: { ...books[1], year: 1970 } } })
})

t.test('DELETE answers 204 with no body, and the resource is gone', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const res = await app.inject({ method: 'DELETE', url: `/v1/books/${books[0].id}` })
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.same(pick(res.headers, 'content-type', 'content-length', 'etag'), { 'content-type': undefined, 'content-length': undefined, etag: undefined })
  t.equal((await app.inject({ url: `/v1/books/${books[0].id}` })).statusCode, 404)
})

t.test('RETRIEVE HEADERS answers the headers of GET on a resource and no body', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const get = await app.inject({ url: `/v1/books/${books[0].id}` })
  const head = await app.inject({ method: 'HEAD', url: `/v1/books/${books[0].id}` })
  const names = ['etag', 'last-modified', 'content-type', 'content-length']
  t.equal(head.statusCode, 200)
  t.same(pick(head.headers, ...names), pick(get.headers, ...names))
  t.equal(head.body, '')
})

t.test('HEAD on a collection answers the headers of GET and no body', async t => {
  const app = await buildApp(t)
  await seed(app)
  const get = await app.inject({ url: '/v1/books' })
  const head = await app.inject({ method: 'HEAD', url: '/v1/books' })
  t.equal(head.statusCode, 200)
  t.same(pick(head.headers, 'content-type', 'content-length'), pick(get.headers, 'content-type', 'content-length'))
  t.equal(head.body, '')
})

// What the books' query parameters accept (query/capabilities.ts; capabilities.test.ts covers the rest).
const bookFields = ['id', 'title', 'authorId', 'year', 'rating', 'available', 'reviewCount', 'averageRating']
const bookQuery = {
  filterable: bookFields,
  searchable: ['title'],
  sortable: bookFields,
  fields: bookFields,
  expandable: ['author', 'reviews'],
  includable: ['author', 'reviews'],
  pageSize: { default: 20, max: 100 }
}

t.test('QUERY CAPABILITIES on a collection lists its methods in Allow and in the body, and what its query parameters accept', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ method: 'OPTIONS', url: '/v1/books' })
  t.equal(res.statusCode, 200)
  t.same(pick(res.headers, 'allow', 'content-type'), { allow: 'GET, HEAD, POST, OPTIONS', 'content-type': JSON_TYPE })
  t.same(res.json(), { data: { methods: ['GET', 'HEAD', 'POST', 'OPTIONS'], ...bookQuery } })
})

t.test('QUERY CAPABILITIES on a resource lists its methods in Allow and in the body; an unknown id is 404', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const res = await app.inject({ method: 'OPTIONS', url: `/v1/books/${books[0].id}` })
  t.equal(res.statusCode, 200)
  t.equal(res.headers.allow, 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS')
  t.same(res.json(), { data: { methods: ['GET', 'HEAD', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] } })
  const missing = await app.inject({ method: 'OPTIONS', url: '/v1/books/any-id' })
  t.same({ status: missing.statusCode, detail: missing.json().detail }, { status: 404, detail: 'book any-id was not found.' })
})

t.test('QUERY CAPABILITIES on a nested collection lists its read-only methods and what its query parameters accept; an unknown parent is 404', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const res = await app.inject({ method: 'OPTIONS', url: `/v1/authors/${authors[0].id}/books` })
  t.same({ status: res.statusCode, allow: res.headers.allow, body: res.json() }, { status: 200, allow: 'GET, HEAD, OPTIONS', body: { data: { methods: ['GET', 'HEAD', 'OPTIONS'], ...bookQuery } } })
  t.equal((await app.inject({ method: 'OPTIONS', url: '/v1/authors/any-id/books' })).statusCode, 404)
})

for (const [method, payload] of [['GET', undefined], ['PUT', { title: 'x', authorId: 'y' }], ['PATCH', { title: 'x' }], ['DELETE', undefined]] as const) {
  t.test(`${method} on an unknown id answers a 404 problem naming the resource`, async t => {
    const app = await buildApp(t)
    const res = await app.inject({ method, url: '/v1/books/no-such-book', headers: payload === undefined ? {} : json, payload })
    t.equal(res.statusCode, 404)
    t.match(res.headers['content-type'], /^application\/problem\+json/)
    t.same(res.json(), { type: '/v1/problems/not-found', title: 'Not Found', status: 404, detail: 'book no-such-book was not found.', instance: '/v1/books/no-such-book' })
  })
}

t.test('ids are UUIDv7 and sort in creation order', async t => {
  const app = await buildApp(t)
  const ids: string[] = []
  for (let i = 0; i < 20; i++) ids.push((await create(app, 'authors', { name: `Author ${i}` })).id)
  for (const id of ids) t.match(id, uuidV7)
  t.same([...ids].sort(), ids)
})

t.test('CREATE with a client id answers 400 naming id', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: { id: 'mine', name: 'N' } })
  t.equal(res.statusCode, 400)
  t.same(res.json().invalidParams, [{ name: 'id', reason: 'is read-only and set by the server' }])
  t.same((await app.inject({ url: '/v1/authors' })).json().data.authors, [])
})

t.test('REPLACE with a body id that differs from the path answers 400 naming id', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const res = await app.inject({ method: 'PUT', url: `/v1/authors/${authors[0].id}`, headers: json, payload: { id: authors[1].id, name: 'N' } })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { type: '/v1/problems/id-mismatch', status: 400, invalidParams: [{ name: 'id', reason: 'must equal the id in the path' }] })
  t.same((await app.inject({ url: `/v1/authors/${authors[0].id}` })).json().data.author, authors[0])
})

t.test('REPLACE with a body id equal to the path succeeds', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const res = await app.inject({ method: 'PUT', url: `/v1/authors/${authors[0].id}`, headers: json, payload: { id: authors[0].id, name: 'N' } })
  t.equal(res.statusCode, 200)
  t.same(res.json().data.author, { id: authors[0].id, name: 'N', born: null, country: null })
})

t.test('MODIFY with a body id that differs from the path answers 400 naming id', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const res = await app.inject({ method: 'PATCH', url: `/v1/authors/${authors[0].id}`, headers: json, payload: { id: 'other' } })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { invalidParams: [{ name: 'id' }] })
})

t.test('MODIFY with a body id equal to the path succeeds', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const res = await app.inject({ method: 'PATCH', url: `/v1/authors/${authors[0].id}`, headers: json, payload: { id: authors[0].id, country: 'GB' } })
  t.equal(res.statusCode, 200)
  t.same(res.json().data.author, { ...authors[0], country: 'GB' })
})

// A resource with a second server-owned field: mass assignment of it is refused, not dropped.
const Note = Type.Object({
  id: Type.Readonly(Type.String()),
  text: Type.String(),
  reviewedBy: Type.ReadonlyOptional(Type.String())
}, { additionalProperties: false })
const notes = { resources: (store: Parameters<typeof defineResource>[0]['store']) => [defineResource({ name: 'notes', singular: 'note', schema: Note, store })] }

for (const [method, url] of [['POST', '/v1/notes'], ['PUT', '/v1/notes/:id'], ['PATCH', '/v1/notes/:id']] as const) {
  t.test(`${method} setting another read-only field answers 400 naming it`, async t => {
    const app = await buildApp(t, notes)
    const note = await create(app, 'notes', { text: 'hello' })
    const res = await app.inject({ method, url: url.replace(':id', note.id), headers: json, payload: { text: 'hi', reviewedBy: 'me' } })
    t.equal(res.statusCode, 400)
    t.same(res.json().invalidParams, [{ name: 'reviewedBy', reason: 'is read-only and set by the server' }])
    t.same((await app.inject({ url: `/v1/notes/${note.id}` })).json().data.note, note)
  })
}

t.test('MODIFY of a record whose read-only field the server set keeps that field and answers 200', async t => {
  const store = memoryStore()
  const app = await buildApp(t, { ...notes, store })
  const [model] = buildRegistry(notes.resources(store))
  // Server-owned values reach a record only from the server side: here, straight through the store.
  await store.create(model, { id: 'n1', text: 'hello', reviewedBy: 'editor' })
  const res = await app.inject({ method: 'PATCH', url: '/v1/notes/n1', headers: json, payload: { text: 'hi' } })
  t.same(pick(res.headers, 'content-type', 'etag'), { 'content-type': JSON_TYPE, etag: '"2"' })
  t.same({ status: res.statusCode, note: res.json().data.note }, { status: 200, note: { id: 'n1', text: 'hi', reviewedBy: 'editor' } })
  t.same((await app.inject({ url: '/v1/notes/n1' })).json().data.note, { id: 'n1', text: 'hi', reviewedBy: 'editor' })
})

t.test('MODIFY with null removes an optional field', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const res = await app.inject({ method: 'PATCH', url: `/v1/books/${books[0].id}`, headers: json, payload: { year: null, title: 'T' } })
  t.equal(res.statusCode, 200)
  t.same(res.json().data.book, { ...books[0], year: null, title: 'T' })
})

t.test('MODIFY with null on a field with a default restores the default', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const res = await app.inject({ method: 'PATCH', url: `/v1/books/${books[3].id}`, headers: json, payload: { available: null } })
  t.equal(res.statusCode, 200)
  t.same(res.json().data.book, { ...books[3], available: true })
})

t.test('MODIFY with null on a required field answers 400 naming it and writes nothing', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const res = await app.inject({ method: 'PATCH', url: `/v1/books/${books[0].id}`, headers: json, payload: { title: null, year: 1 } })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { type: '/v1/problems/body-invalid', invalidParams: [{ name: 'title', reason: 'is required' }] })
  t.same((await app.inject({ url: `/v1/books/${books[0].id}` })).json().data.book, books[0])
})

t.test('MODIFY with an unknown field answers 400 naming it', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const res = await app.inject({ method: 'PATCH', url: `/v1/books/${books[0].id}`, headers: json, payload: { subtitle: 'x' } })
  t.equal(res.statusCode, 400)
  t.same(res.json().invalidParams, [{ name: 'subtitle', reason: 'is not a field of this resource' }])
})

t.test('MODIFY with a value of the wrong type answers 400 naming the field', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const res = await app.inject({ method: 'PATCH', url: `/v1/books/${books[0].id}`, headers: json, payload: { year: 'soon' } })
  t.equal(res.statusCode, 400)
  t.same(res.json().invalidParams, [{ name: 'year', reason: 'must be integer or must be null' }])
})

// RFC 7396 on nested objects: a nested patch merges member by member and null
// removes a nested member; only the merged result is held to the schema.
const Gadget = Type.Object({
  id: Type.Readonly(Type.String()),
  name: Type.String({ minLength: 1 }),
  meta: Type.Optional(Type.Object({ a: Type.Optional(Type.Integer()), b: Type.Optional(Type.String()) }, { additionalProperties: false })),
  spec: Type.Optional(Type.Object({
    a: Type.Optional(Type.Integer()),
    b: Type.String(),
    unit: Type.Optional(Type.String({ default: 'cm' }))
  }, { additionalProperties: false }))
}, { additionalProperties: false })
const gadgets = { resources: (store: Parameters<typeof defineResource>[0]['store']) => [defineResource({ name: 'gadgets', singular: 'gadget', schema: Gadget, store })] }
const mergePatchJson = { 'content-type': 'application/merge-patch+json' }

async function oneGadget (t: Parameters<typeof buildApp>[0], fields: object) {
  const app = await buildApp(t, gadgets)
  const gadget = await create(app, 'gadgets', { name: 'g', ...fields })
  const url = `/v1/gadgets/${gadget.id}`
  return { app, gadget, url, read: async () => (await app.inject({ url })).json().data.gadget }
}

t.test('MODIFY with null on a nested member removes it and answers 200 with the merged resource', async t => {
  const { app, gadget, url, read } = await oneGadget(t, { meta: { a: 1, b: 'x' } })
  const res = await app.inject({ method: 'PATCH', url, headers: mergePatchJson, payload: { meta: { a: null } } })
  t.same(pick(res.headers, 'content-type', 'etag'), { 'content-type': JSON_TYPE, etag: '"2"' })
  t.same({ status: res.statusCode, gadget: res.json().data.gadget }, { status: 200, gadget: { id: gadget.id, name: 'g', meta: { b: 'x' } } })
  t.same(await read(), { id: gadget.id, name: 'g', meta: { b: 'x' } })
})

t.test('MODIFY of one nested member keeps the others, required and defaulted ones included', async t => {
  const { app, gadget, url, read } = await oneGadget(t, { spec: { a: 1, b: 'x', unit: 'in' } })
  const res = await app.inject({ method: 'PATCH', url, headers: mergePatchJson, payload: { spec: { a: 2 } } })
  const merged = { id: gadget.id, name: 'g', spec: { a: 2, b: 'x', unit: 'in' } }
  t.same(pick(res.headers, 'content-type', 'etag'), { 'content-type': JSON_TYPE, etag: '"2"' })
  t.same({ status: res.statusCode, gadget: res.json().data.gadget }, { status: 200, gadget: merged })
  t.same(await read(), merged)
})

for (const [name, fields, patch] of [
  ['removing a required nested member', { spec: { a: 1, b: 'x' } }, { spec: { b: null } }],
  ['adding a nested object without its required members', {}, { spec: { a: 1 } }]
] as const) {
  t.test(`MODIFY ${name} answers a 400 problem naming it and writes nothing`, async t => {
    const { app, url, read } = await oneGadget(t, fields)
    const before = await read()
    const res = await app.inject({ method: 'PATCH', url, headers: mergePatchJson, payload: patch })
    t.same(pick(res.headers, 'content-type', 'etag'), { 'content-type': 'application/problem+json; charset=utf-8', etag: undefined })
    t.same(res.json(), {
      type: '/v1/problems/body-invalid',
      title: 'Bad Request',
      status: 400,
      detail: 'The request body does not match the resource schema.',
      instance: url,
      invalidParams: [{ name: 'spec.b', reason: 'is required' }]
    })
    t.same(await read(), before)
  })
}

t.test('MODIFY with null on a required field of a resource with nested objects answers 400 naming it', async t => {
  const { app, url, read } = await oneGadget(t, { meta: { a: 1 } })
  const before = await read()
  const res = await app.inject({ method: 'PATCH', url, headers: mergePatchJson, payload: { name: null, meta: { a: 2 } } })
  t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
  t.match(res.json(), { type: '/v1/problems/body-invalid', status: 400, instance: url, invalidParams: [{ name: 'name', reason: 'is required' }] })
  t.same(await read(), before)
})

t.test('MODIFY with a nested member the schema does not have answers 400 naming it, even when null', async t => {
  const { app, url, read } = await oneGadget(t, { meta: { a: 1 } })
  const before = await read()
  const res = await app.inject({ method: 'PATCH', url, headers: mergePatchJson, payload: { meta: { zzz: null } } })
  t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
  t.match(res.json(), { type: '/v1/problems/body-invalid', status: 400, instance: url })
  t.same(res.json().invalidParams, [{ name: 'meta.zzz', reason: 'is not a field of this resource' }])
  t.same(await read(), before)
})

t.test('MODIFY with a wrong value inside a nested object names that member only, not the object', async t => {
  const { app, url, read } = await oneGadget(t, { meta: { a: 1 } })
  const before = await read()
  const res = await app.inject({ method: 'PATCH', url, headers: mergePatchJson, payload: { meta: { a: 'x' } } })
  t.same({ status: res.statusCode, type: res.headers['content-type'] }, { status: 400, type: 'application/problem+json; charset=utf-8' })
  t.same(res.json().invalidParams, [{ name: 'meta.a', reason: 'must be integer or must be null' }])
  t.same(await read(), before)
})

// A store of the host's stamps the server-owned field on create.
const stampingStore = (store: Parameters<typeof defineResource>[0]['store']) => ({
  ...store,
  create: (model: Parameters<typeof store.create>[0], fields: Parameters<typeof store.create>[1]) => store.create(model, { ...fields, reviewedBy: 'editor' })
})
const stampedNotes = { resources: (store: Parameters<typeof defineResource>[0]['store']) => [defineResource({ name: 'notes', singular: 'note', schema: Note, store: stampingStore(store) })] }

t.test('REPLACE and MODIFY keep the server-owned read-only fields a record holds; a body cannot set them', async t => {
  const app = await buildApp(t, stampedNotes)
  const note = await create(app, 'notes', { text: 'first' })
  t.same(note, { id: note.id, text: 'first', reviewedBy: 'editor' })
  const url = `/v1/notes/${note.id}`
  const replaced = await app.inject({ method: 'PUT', url, headers: json, payload: { text: 'second' } })
  t.same({ status: replaced.statusCode, etag: replaced.headers.etag, note: replaced.json().data.note }, { status: 200, etag: '"2"', note: { id: note.id, text: 'second', reviewedBy: 'editor' } })
  const modified = await app.inject({ method: 'PATCH', url, headers: { 'content-type': 'application/merge-patch+json' }, payload: { text: 'third' } })
  t.same(modified.json().data.note, { id: note.id, text: 'third', reviewedBy: 'editor' })
  const refused = await app.inject({ method: 'PUT', url, headers: json, payload: { text: 'fourth', reviewedBy: 'me' } })
  t.same({ status: refused.statusCode, invalidParams: refused.json().invalidParams }, { status: 400, invalidParams: [{ name: 'reviewedBy', reason: 'is read-only and set by the server' }] })
  t.same((await app.inject({ url })).json().data.note, { id: note.id, text: 'third', reviewedBy: 'editor' })
})

t.test('CREATE of a book with an unknown authorId answers 422 naming authorId', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload: { title: 'T', authorId: 'nobody' } })
  t.equal(res.statusCode, 422)
  t.same(res.json(), {
    type: '/v1/problems/unprocessable',
    title: 'Unprocessable Entity',
    status: 422,
    detail: "authorId refers to author 'nobody', which does not exist.",
    instance: '/v1/books',
    invalidParams: [{ name: 'authorId', reason: 'no author has this id' }]
  })
})

t.test('REPLACE and MODIFY to an unknown authorId answer 422 and write nothing', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const put = await app.inject({ method: 'PUT', url: `/v1/books/${books[0].id}`, headers: json, payload: { title: 'T', authorId: 'nobody' } })
  const patch = await app.inject({ method: 'PATCH', url: `/v1/books/${books[0].id}`, headers: json, payload: { authorId: 'nobody' } })
  t.same([put.statusCode, patch.statusCode], [422, 422])
  t.same(patch.json().invalidParams, [{ name: 'authorId', reason: 'no author has this id' }])
  const read = await app.inject({ url: `/v1/books/${books[0].id}` })
  t.same({ etag: read.headers.etag, book: read.json().data.book }, { etag: '"1"', book: books[0] })
})

t.test('DELETE of an author who still has books answers 409 and keeps the author', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const res = await app.inject({ method: 'DELETE', url: `/v1/authors/${authors[0].id}` })
  t.equal(res.statusCode, 409)
  t.match(res.json(), { type: '/v1/problems/conflict', status: 409, detail: 'This author still has books; delete or move them first.' })
  t.equal((await app.inject({ url: `/v1/authors/${authors[0].id}` })).statusCode, 200)
})

t.test('DELETE of an author without books answers 204', async t => {
  const app = await buildApp(t)
  const author = await create(app, 'authors', { name: 'Nobody Yet' })
  t.equal((await app.inject({ method: 'DELETE', url: `/v1/authors/${author.id}` })).statusCode, 204)
})

t.test('a nested collection lists only the parent\'s children', async t => {
  const app = await buildApp(t)
  const { authors, books } = await seed(app)
  const res = await app.inject({ url: `/v1/authors/${authors[0].id}/books` })
  t.equal(res.statusCode, 200)
  t.same(res.json().data.books, [books[0], books[1]])
  t.same(res.json().links[0], { rel: 'self', href: `/v1/authors/${authors[0].id}/books?pageSize=20` })
})

t.test('a nested collection combines the parent scope with a filter', async t => {
  const app = await buildApp(t)
  const { authors, books } = await seed(app)
  const res = await app.inject({ url: `/v1/authors/${authors[0].id}/books?filter=${encodeURIComponent('year lt 1970')}` })
  t.same(res.json().data.books, [books[1]])
})

t.test('a nested collection of an unknown parent answers 404', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ url: '/v1/authors/nobody/books' })
  t.equal(res.statusCode, 404)
  t.equal(res.json().detail, 'author nobody was not found.')
})

t.test('LIST filters on a field of a related resource with a dotted name', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const res = await app.inject({ url: '/v1/books?author.country=NZ' })
  t.same(res.json().data.books, [books[2]])
})

t.test('LIST filters on a field of related children with a dotted name', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const res = await app.inject({ url: '/v1/authors?books.year=1961' })
  t.same(res.json().data.authors, [authors[2]])
})

t.test('LIST filters on a related field that is null for some related records', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const res = await app.inject({ url: '/v1/books?author.born=1929-10-21' })
  t.same(res.json().data.books, [books[0], books[1]])
})
