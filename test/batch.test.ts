// Batch (docs/demo-contract.md "Safe retries and atomic writes", the Batch part): `POST /v1/batch` seen
// from a client. On every store (memory, PGlite, PostgreSQL when DATABASE_URL is set): the
// contract's example and its results, all or nothing when a later operation fails, hooks inside
// the batch's transaction, Idempotency-Key. On the memory store: the body's shape, the plan's
// checks, If-Match, authorization per operation, row and field rules, media types, the options
// and the OpenAPI document.
import t from 'tap'
import type { Test } from 'tap'
import { Type } from '@sinclair/typebox'
import type { PGlite } from '@electric-sql/pglite'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { defineResource, memoryStore, pgliteStore, postgresStore } from '../lib/index.js'
import type { AuthorizationCheck, Store } from '../lib/index.js'
import { demoResources } from '../demo/schemas/index.js'
import { openPglite } from './stores/pglite-db.js'
import { runSchemas } from './stores/run-schemas.js'
import { buildApp, json, pick, seed } from './helpers/app.js'
import type { Seeded } from './helpers/app.js'
import { auth, testAuth } from './helpers/auth.js'
import type { TestPrincipal } from './helpers/auth.js'
import { as, asJson, build } from './helpers/rules-app.js'
import { inlined } from './helpers/openapi.js'

type Json = Record<string, any>

const connectionString = process.env.DATABASE_URL
const schemas = connectionString === undefined ? undefined : runSchemas(t, connectionString)
let schemaCount = 0

// One PGlite for the file (starting one takes seconds); each app gets a schema of its own.
let pglite: Promise<PGlite> | undefined
function sharedPglite (): Promise<PGlite> {
  if (pglite === undefined) {
    pglite = openPglite()
    t.teardown(async () => { await (await pglite as PGlite).close() })
  }
  return pglite
}

/** A fresh, empty store, closed when the test ends. */
type Opener = (t: Test) => Promise<Store>

const stores: Array<[string, Opener]> = [
  ['memory', async () => memoryStore()],
  ['PGlite', async t => {
    const store = await pgliteStore({ db: await sharedPglite(), schema: `batch_${++schemaCount}` })
    t.teardown(() => store.close())
    return store
  }]
]
if (connectionString !== undefined && schemas !== undefined) {
  stores.push(['PostgreSQL', async t => {
    const store = await postgresStore({ connectionString, schema: `${schemas.prefix}_${++schemaCount}` })
    t.teardown(() => store.close())
    return store
  }])
}

/** POST /v1/batch with these operations (or, given a string, this raw body). */
async function batch (app: FastifyInstance, operations: unknown[] | string, headers: Record<string, string> = json): Promise<LightMyRequestResponse> {
  const payload = typeof operations === 'string' ? operations : JSON.stringify({ operations })
  return await app.inject({ method: 'POST', url: '/v1/batch', headers, payload })
}

/** Everything a client can read of the demo's authors and books: both full LISTs, and each record's ETag. */
async function snapshot (app: FastifyInstance, headers: Record<string, string> = {}) {
  const state: Json = {}
  for (const name of ['authors', 'books']) {
    const list = await app.inject({ url: `/v1/${name}?pageSize=100&sort=id`, headers })
    state[name] = list.json()
    for (const record of list.json().data[name]) state[`${name}/${record.id as string}`] = (await app.inject({ url: `/v1/${name}/${record.id as string}`, headers })).headers.etag
  }
  return state
}

/** The problem a single request answered, as a batch whose operation `index` made that request answers it. */
function asOperation (single: Json, index: number): Json {
  const { instance, ...problem } = single
  if (problem.invalidParams !== undefined) problem.invalidParams = problem.invalidParams.map((param: Json) => ({ name: `operations/${index}/${param.name as string}`, reason: param.reason }))
  return { ...problem, instance: '/v1/batch', operation: index }
}

/** A problem+json answer with this status. */
function isProblem (t: Test, res: LightMyRequestResponse, status: number, what = `${status}`) {
  t.equal(res.statusCode, status, what)
  t.match(res.headers['content-type'], /^application\/problem\+json/, `${what}: a problem`)
}

const patchJson = { 'content-type': 'application/merge-patch+json' }

for (const [name, open] of stores) {
  t.test(`${name}: the contract's example runs in order, and every result is the single request's answer`, async t => {
    const app = await buildApp(t, { store: await open(t) })
    const { authors, books } = await seed(app)
    const bookBefore = await app.inject({ url: `/v1/books/${books[0].id}` })
    const res = await batch(app, [
      { op: 'create', resource: 'authors', lid: 'a1', data: { name: 'Ann' } },
      { op: 'create', resource: 'books', lid: 'b1', data: { title: 'T', authorId: { lid: 'a1' } } },
      { op: 'modify', resource: 'books', id: books[0].id, ifMatch: bookBefore.headers.etag, data: { year: 2001 } },
      { op: 'replace', resource: 'authors', id: authors[1].id, data: { name: 'Bo' } },
      { op: 'delete', resource: 'books', id: { lid: 'b1' } }
    ])
    t.equal(res.statusCode, 200)
    t.same(pick(res.headers, 'content-type', 'location', 'etag'), { 'content-type': 'application/json; charset=utf-8', location: undefined, etag: undefined })
    const { results } = res.json().data
    t.same(Object.keys(res.json()), ['data'])
    t.equal(results.length, 5, 'one result per operation')

    const [author, book, modified, replaced, deleted] = results
    t.same(Object.keys(author).sort(), ['data', 'etag', 'location', 'status'])
    t.match(author, { status: 201, location: /^\/v1\/authors\/[^/]+$/, etag: '"1"', data: { author: { name: 'Ann' } } })
    t.equal(author.location, `/v1/authors/${author.data.author.id as string}`)
    t.match(book, { status: 201, etag: '"1"', data: { book: { title: 'T', authorId: author.data.author.id, available: true, reviewCount: 0, averageRating: null } } })
    t.equal(book.location, `/v1/books/${book.data.book.id as string}`)
    t.same(Object.keys(modified).sort(), ['data', 'etag', 'status'])
    t.match(modified, { status: 200, etag: '"2"', data: { book: { id: books[0].id, title: books[0].title, year: 2001 } } })
    t.match(replaced, { status: 200, etag: '"2"' })
    t.same(replaced.data, { author: { id: authors[1].id, name: 'Bo', born: null, country: null } }, 'replace clears what the data does not carry')
    t.same(deleted, { status: 204 })

    // What GET answers afterwards is what the results said.
    for (const [result, url] of [[author, author.location], [modified, `/v1/books/${books[0].id}`], [replaced, `/v1/authors/${authors[1].id}`]]) {
      const now = await app.inject({ url })
      t.same({ status: now.statusCode, etag: now.headers.etag, data: now.json().data }, { status: 200, etag: result.etag, data: result.data }, `GET ${url as string}`)
    }
    const gone = await app.inject({ url: book.location })
    isProblem(t, gone, 404, 'the book created then deleted does not exist')
    t.equal((await app.inject({ url: `/v1/books?filter=${encodeURIComponent("title eq 'T'")}&total=true` })).json().meta.total, 0)
  })

  t.test(`${name}: a failing later operation leaves nothing written, and the answer is its own problem with its index`, async t => {
    const app = await buildApp(t, { store: await open(t) })
    const { authors, books } = await seed(app)
    const etag = (await app.inject({ url: `/v1/books/${books[0].id}` })).headers.etag as string
    const before = await snapshot(app)
    // Writes that succeed on their own, before the failing one: a create, a create naming it, a modify and a delete.
    const leading = [
      { op: 'create', resource: 'authors', lid: 'a1', data: { name: 'Ann' } },
      { op: 'create', resource: 'books', lid: 'b1', data: { title: 'T', authorId: { lid: 'a1' } } },
      { op: 'modify', resource: 'books', id: books[0].id, ifMatch: etag, data: { year: 2001 } },
      { op: 'delete', resource: 'books', id: books[2].id }
    ]
    const failing: Array<[string, number, Json, () => Promise<LightMyRequestResponse>]> = [
      ['412 from a wrong ifMatch', 412, { op: 'modify', resource: 'books', id: books[1].id, ifMatch: '"99"', data: { year: 1 } },
        () => app.inject({ method: 'PATCH', url: `/v1/books/${books[1].id}`, headers: { ...patchJson, 'if-match': '"99"' }, payload: { year: 1 } })],
      ['404 for a record that does not exist', 404, { op: 'replace', resource: 'authors', id: 'no-such-author', data: { name: 'X' } },
        () => app.inject({ method: 'PUT', url: '/v1/authors/no-such-author', headers: json, payload: { name: 'X' } })],
      ['422 for a made-up authorId', 422, { op: 'create', resource: 'books', data: { title: 'U', authorId: 'made-up' } },
        () => app.inject({ method: 'POST', url: '/v1/books', headers: json, payload: { title: 'U', authorId: 'made-up' } })],
      ['400 for invalid data', 400, { op: 'modify', resource: 'books', id: books[1].id, data: { title: '', rating: 9 } },
        () => app.inject({ method: 'PATCH', url: `/v1/books/${books[1].id}`, headers: patchJson, payload: { title: '', rating: 9 } })],
      ['409 for deleting an author who has books', 409, { op: 'delete', resource: 'authors', id: authors[0].id },
        () => app.inject({ method: 'DELETE', url: `/v1/authors/${authors[0].id}` })]
    ]
    for (const [what, status, operation, single] of failing) {
      const res = await batch(app, [...leading, operation])
      isProblem(t, res, status, what)
      const alone = await single()
      t.equal(alone.statusCode, status, `${what}: the single request answers ${status} too`)
      t.same(res.json(), asOperation(alone.json(), 4), `${what}: the single request's problem, with operation 4 and prefixed invalidParams`)
      t.same(await snapshot(app), before, `${what}: nothing is written`)
    }
    t.match((await batch(app, [...leading, failing[3][2]])).json().invalidParams, [{ name: 'operations/4/title' }], 'names are prefixed operations/<index>/')
  })

  t.test(`${name}: hooks run inside the batch's transaction and roll back with it`, async t => {
    const { app, topic } = await build(t, await open(t))
    const topicBefore = await app.inject({ url: `/v1/topics/${topic.id as string}?expand=posts`, headers: as('root') })
    const unchanged = async (what: string) => {
      const now = await app.inject({ url: `/v1/topics/${topic.id as string}?expand=posts`, headers: as('root') })
      t.same({ etag: now.headers.etag, body: now.json() }, { etag: topicBefore.headers.etag, body: topicBefore.json() }, `${what}: the topic and its posts are unchanged`)
    }
    const post = (title: string) => ({ op: 'create', resource: 'posts', data: { topicId: topic.id, title } })

    // afterWrite recounts the topic's posts: the next operation sees the count and the topic's new version.
    const stale = await batch(app, [post('one'), { op: 'modify', resource: 'topics', id: topic.id, ifMatch: topicBefore.headers.etag, data: { name: 'Renamed' } }], asJson('ann'))
    isProblem(t, stale, 412, 'the ETag read before the batch no longer holds once the hook wrote the topic')
    t.equal(stale.json().operation, 1)
    await unchanged('412')

    const refused = await batch(app, [post('fine'), post('forbidden')], asJson('ann'))
    isProblem(t, refused, 409, 'beforeWrite refuses the second post')
    t.match(refused.json(), { operation: 1, invalidParams: [{ name: 'operations/1/title', reason: 'is taken' }] })
    await unchanged('409 from beforeWrite')

    const exploded = await batch(app, [post('fine'), post('explode after')], asJson('ann'))
    isProblem(t, exploded, 500, 'afterWrite throws after writing the topic')
    t.notOk('operation' in exploded.json(), 'a server error is not an operation\'s problem')
    t.notMatch(exploded.body, /halfway/, 'nor does it echo the error')
    await unchanged('500 from afterWrite')

    const done = await batch(app, [post('one'), post('two'), { op: 'modify', resource: 'topics', id: topic.id, data: { name: 'Renamed' } }], asJson('ann'))
    t.equal(done.statusCode, 200)
    const [one, two, renamed] = done.json().data.results
    t.match(one.data.post, { title: 'one', ownerId: 'ann', createdAt: String, updatedAt: String })
    t.match(two.data.post, { title: 'two', ownerId: 'ann' })
    t.same(renamed.data.topic, { id: topic.id, name: 'Renamed', postCount: 5 }, 'the later operation reads the count both creates left')
    const now = await app.inject({ url: `/v1/topics/${topic.id as string}`, headers: as('root') })
    t.same({ etag: now.headers.etag, topic: now.json().data.topic }, { etag: renamed.etag, topic: renamed.data.topic })
  })

  t.test(`${name}: Idempotency-Key on a batch replays its answer and writes nothing twice; another body is 422`, async t => {
    const app = await buildApp(t, { store: await open(t) })
    const { books } = await seed(app)
    const keyed = { ...json, 'idempotency-key': '"batch-1"' }
    const operations = [
      { op: 'create', resource: 'authors', lid: 'a1', data: { name: 'Keyed' } },
      { op: 'create', resource: 'books', data: { title: 'Keyed book', authorId: { lid: 'a1' } } },
      { op: 'modify', resource: 'books', id: books[0].id, data: { year: 2001 } }
    ]
    const first = await batch(app, operations, keyed)
    t.equal(first.statusCode, 200)
    t.notOk('idempotent-replayed' in first.headers)
    const after = await snapshot(app)
    const again = await batch(app, operations, keyed)
    t.same({ status: again.statusCode, replayed: again.headers['idempotent-replayed'], body: again.body }, { status: 200, replayed: 'true', body: first.body })
    t.same(await snapshot(app), after, 'nothing is written a second time')
    const other = await batch(app, [operations[0]], keyed)
    isProblem(t, other, 422, 'the same key with another body')
    t.match(other.json().detail, /another request body/)
    t.same(await snapshot(app), after)
    const failed = await batch(app, [operations[0], { op: 'delete', resource: 'books', id: 'none' }], { ...json, 'idempotency-key': '"batch-2"' })
    isProblem(t, failed, 404, 'a failing keyed batch')
    t.same(await snapshot(app), after, 'writes nothing')
    const retried = await batch(app, [operations[0], { op: 'delete', resource: 'books', id: 'none' }], { ...json, 'idempotency-key': '"batch-2"' })
    t.same([retried.statusCode, retried.headers['idempotent-replayed']], [404, undefined], 'and its answer is not kept: the retry runs again')
    for (const body of ['{}', JSON.stringify({ operations: [{ ...operations[0], resource: 'publishers' }] })]) {
      const malformed = await batch(app, body, { ...json, 'idempotency-key': '"batch-3"' })
      isProblem(t, malformed, 400, `a keyed batch of another shape: ${body}`)
      t.equal(malformed.headers['idempotent-replayed'], undefined)
    }
  })
}

t.test('a body that is not a list of operations of this shape is a 400 naming the member', async t => {
  const app = await buildApp(t, { batch: { maxOperations: 3 } })
  const create = { op: 'create', resource: 'authors', data: { name: 'Ann' } }
  const cases: Array<[string, string, string, RegExp]> = [
    ['an array', '[]', '(body)', /must be object/],
    ['a string', '"operations"', '(body)', /must be object/],
    ['null', 'null', '(body)', /must be object/],
    ['no operations', '{}', 'operations', /required/],
    ['operations not a list', '{"operations":{"op":"create"}}', 'operations', /must be array/],
    ['an empty list', '{"operations":[]}', 'operations', /fewer than 1/],
    ['more than maxOperations', JSON.stringify({ operations: [create, create, create, create] }), 'operations', /more than 3/],
    ['an operation that is not an object', '{"operations":["create"]}', 'operations/0', /must be object/],
    ['an unknown op', JSON.stringify({ operations: [create, { ...create, op: 'upsert' }] }), 'operations/1/op', /allowed values/],
    ['no op', JSON.stringify({ operations: [{ resource: 'authors', data: {} }] }), 'operations/0/op', /required/],
    ['an unknown resource', JSON.stringify({ operations: [{ ...create, resource: 'publishers' }] }), 'operations/0/resource', /allowed values/],
    ['no resource', JSON.stringify({ operations: [{ op: 'create', data: {} }] }), 'operations/0/resource', /required/],
    ['an extra member in an operation', JSON.stringify({ operations: [{ ...create, when: 'now' }] }), 'operations/0/when', /not/],
    ['an extra member beside operations', JSON.stringify({ operations: [create], atomic: true }), 'atomic', /not/],
    ['data that is not an object', JSON.stringify({ operations: [{ ...create, data: [] }] }), 'operations/0/data', /must be object/],
    ['an empty id', JSON.stringify({ operations: [{ op: 'delete', resource: 'authors', id: '' }] }), 'operations/0/id', /./],
    ['an empty lid', JSON.stringify({ operations: [{ ...create, lid: '' }] }), 'operations/0/lid', /fewer than 1/],
    ['a lid of 256 characters', JSON.stringify({ operations: [{ ...create, lid: 'l'.repeat(256) }] }), 'operations/0/lid', /more than 255/],
    ['a local id with another member', JSON.stringify({ operations: [create, { op: 'delete', resource: 'authors', id: { lid: 'a', x: 1 } }] }), 'operations/1/id', /./],
    ['ifMatch not a string', JSON.stringify({ operations: [{ op: 'delete', resource: 'authors', id: 'x', ifMatch: 3 }] }), 'operations/0/ifMatch', /must be string/]
  ]
  const before = await snapshot(app)
  for (const [what, body, member, reason] of cases) {
    const res = await batch(app, body)
    isProblem(t, res, 400, what)
    t.match(res.json(), { status: 400, type: '/v1/problems/body-invalid', invalidParams: [{ name: member, reason }] }, what)
    t.notOk('operation' in res.json(), `${what}: no operation is to blame`)
  }
  t.same(await snapshot(app), before)
  const three = await batch(app, [create, create, create])
  t.equal(three.statusCode, 200, 'maxOperations operations are taken')
  t.equal(three.json().data.results.length, 3)
})

t.test('the plan is checked before anything runs: 400 naming the operation\'s member', async t => {
  const Note = Type.Object({ id: Type.Readonly(Type.String()), text: Type.String() }, { additionalProperties: false })
  const elsewhere = memoryStore()
  const app = await buildApp(t, {
    resources: store => [
      ...demoResources(store),
      defineResource({ name: 'notes', singular: 'note', schema: Note, store, operations: ['list', 'retrieve', 'create'] }),
      defineResource({ name: 'memos', singular: 'memo', schema: Note, store: elsewhere })
    ]
  })
  const { authors, books } = await seed(app)
  const before = await snapshot(app)
  const author = { op: 'create', resource: 'authors', lid: 'a1', data: { name: 'Ann' } }
  const cases: Array<[string, unknown[], string, RegExp]> = [
    ['an id on create', [{ ...author, id: 'mine' }], 'operations/0/id', /set by the server; name the new record with lid/],
    ['no id on replace', [author, { op: 'replace', resource: 'authors', data: { name: 'B' } }], 'operations/1/id', /required by replace/],
    ['no id on modify', [{ op: 'modify', resource: 'authors', data: { name: 'B' } }], 'operations/0/id', /required by modify/],
    ['no id on delete', [{ op: 'delete', resource: 'authors' }], 'operations/0/id', /required by delete/],
    ['a lid on a modify', [author, { op: 'modify', resource: 'authors', id: { lid: 'a1' }, lid: 'a2', data: { name: 'B' } }], 'operations/1/lid', /use it in id/],
    ['a lid on a delete', [{ op: 'delete', resource: 'books', id: books[0].id, lid: 'b' }], 'operations/0/lid', /use it in id/],
    ['data on delete', [{ op: 'delete', resource: 'books', id: books[0].id, data: {} }], 'operations/0/data', /not taken by delete/],
    ['no data on create', [{ op: 'create', resource: 'authors' }], 'operations/0/data', /required by create/],
    ['no data on replace', [{ op: 'replace', resource: 'authors', id: authors[0].id }], 'operations/0/data', /required by replace/],
    ['no data on modify', [{ op: 'modify', resource: 'authors', id: authors[0].id }], 'operations/0/data', /required by modify/],
    ['a duplicate lid', [author, { ...author, data: { name: 'B' } }], 'operations/1/lid', /'a1' names an earlier create's record already/],
    ['an unknown lid in id', [author, { op: 'delete', resource: 'authors', id: { lid: 'a2' } }], 'operations/1/id', /names no record an earlier create of this batch made \(lid 'a2'\)/],
    ['a lid used before its create', [{ op: 'delete', resource: 'authors', id: { lid: 'a1' } }, author], 'operations/0/id', /names no record/],
    ['an unknown lid in a relation field', [author, { op: 'create', resource: 'books', data: { title: 'T', authorId: { lid: 'nobody' } } }], 'operations/1/authorId', /names no record/],
    ['the lid of another resource in id', [author, { op: 'delete', resource: 'books', id: { lid: 'a1' } }], 'operations/1/id', /names one of authors \(lid 'a1'\), where one of books is expected/],
    ['the lid of another resource in a relation field', [author, { op: 'create', resource: 'books', lid: 'b1', data: { title: 'T', authorId: { lid: 'a1' } } }, { op: 'create', resource: 'books', data: { title: 'U', authorId: { lid: 'b1' } } }], 'operations/2/authorId', /names one of books \(lid 'b1'\), where one of authors is expected/],
    ['an op the resource does not serve', [author, { op: 'modify', resource: 'notes', id: 'n', data: { text: 'x' } }], 'operations/1/op', /notes cannot be modified here/],
    ['a resource kept in another store', [author, { op: 'create', resource: 'memos', data: { text: 'x' } }], 'operations/1/resource', /another store than authors; a batch is one transaction of one store/]
  ]
  for (const [what, operations, member, reason] of cases) {
    const res = await batch(app, operations)
    isProblem(t, res, 400, what)
    const index = Number(member.split('/')[1])
    t.match(res.json(), { status: 400, type: '/v1/problems/body-invalid', operation: index, invalidParams: [{ name: member, reason }] }, what)
    t.equal(res.json().invalidParams.length, 1, `${what}: one member named`)
  }
  t.same(await snapshot(app), before, 'nothing is written')
  const served = await batch(app, [{ op: 'create', resource: 'notes', lid: 'n1', data: { text: 'x' } }])
  t.equal(served.statusCode, 200, 'an op the resource serves')
  const alone = await batch(app, [{ op: 'create', resource: 'memos', data: { text: 'x' } }])
  t.equal(alone.statusCode, 200, 'a batch of the other store alone runs in that store')
  t.equal((await app.inject({ url: '/v1/memos?total=true' })).json().meta.total, 1)
})

t.test('ifMatch is the If-Match header of the single request: *, a list, a weak tag, a malformed one', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const url = `/v1/books/${books[0].id}`
  const modify = (ifMatch: string, year: number) => ({ op: 'modify', resource: 'books', id: books[0].id, ifMatch, data: { year } })
  const star = await batch(app, [modify('*', 1)])
  t.same([star.statusCode, star.json().data.results[0].etag], [200, '"2"'], '* matches a record that exists')
  const list = await batch(app, [modify('"7", "2" , "9"', 2)])
  t.same([list.statusCode, list.json().data.results[0].etag], [200, '"3"'], 'a list holding the current tag')
  const weak = await batch(app, [modify('W/"3"', 3)])
  isProblem(t, weak, 412, 'a weak tag never matches (strong comparison)')
  t.equal(weak.json().operation, 0)
  const chained = await batch(app, [modify('"3"', 4), modify('"4"', 5)])
  t.same(chained.json().data.results.map((result: Json) => result.etag), ['"4"', '"5"'], 'the second operation sees the version the first wrote')
  const starMissing = await batch(app, [{ op: 'delete', resource: 'books', id: 'none', ifMatch: '*' }])
  isProblem(t, starMissing, 412, '* on a record that does not exist')
  const malformed = await batch(app, [modify('3', 6)])
  isProblem(t, malformed, 400, 'a malformed ifMatch')
  t.match(malformed.json(), { operation: 0, invalidParams: [{ name: 'operations/0/ifMatch', reason: /quoted entity tags/ }] })
  const current = await app.inject({ url })
  t.same([current.headers.etag, current.json().data.book.year], ['"5"', 5])
})

t.test('requireIfMatch: a replace, modify or delete without ifMatch is 428 naming the operation; a create needs none', async t => {
  const app = await buildApp(t, { requireIfMatch: true })
  const { books } = await seed(app)
  const before = await snapshot(app)
  const create = { op: 'create', resource: 'authors', lid: 'a1', data: { name: 'Ann' } }
  for (const operation of [
    { op: 'modify', resource: 'books', id: books[0].id, data: { year: 1 } },
    { op: 'replace', resource: 'authors', id: { lid: 'a1' }, data: { name: 'Bo' } },
    { op: 'delete', resource: 'books', id: books[1].id }
  ]) {
    const res = await batch(app, [create, operation])
    isProblem(t, res, 428, operation.op)
    t.match(res.json(), { status: 428, operation: 1, detail: /requires If-Match/ }, operation.op)
  }
  t.same(await snapshot(app), before)
  const withTags = await batch(app, [create, { op: 'replace', resource: 'authors', id: { lid: 'a1' }, ifMatch: '"1"', data: { name: 'Bo' } }, { op: 'delete', resource: 'authors', id: { lid: 'a1' }, ifMatch: '"2"' }])
  t.same(withTags.json().data.results.map((result: Json) => result.status), [201, 200, 204])
})

/** Creates the seed authors and books with credentials (the plain seed sends none). */
async function seedAs (app: FastifyInstance, headers: Record<string, string>): Promise<Seeded> {
  const post = async (resources: string, body: object) => {
    const res = await app.inject({ method: 'POST', url: `/v1/${resources}`, headers, payload: body })
    return res.json().data[resources === 'authors' ? 'author' : 'book']
  }
  const authors = [await post('authors', { name: 'Ursula K. Le Guin' }), await post('authors', { name: 'Janet Frame' })]
  const books = [await post('books', { title: 'The Dispossessed', authorId: authors[0].id }), await post('books', { title: 'Owls Do Cry', authorId: authors[1].id })]
  return { authors, books }
}

t.test('authorization: auth.authorize is asked about each operation as its single request would ask', async t => {
  const checks: Array<Omit<AuthorizationCheck<TestPrincipal>, 'request'> & { url: string }> = []
  let refuse: string | null = null
  const app = await buildApp(t, {
    auth: testAuth({
      authorize: ({ request, ...check }) => {
        checks.push({ ...check, url: request.url })
        return check.principal.right === 'write' ? `${check.operation} ${check.resource}` !== refuse : check.method === 'GET'
      }
    })
  })
  const { authors, books } = await seedAs(app, auth.writeJson)
  checks.length = 0
  const operations = [
    { op: 'create', resource: 'authors', lid: 'a1', data: { name: 'Ann' } },
    { op: 'create', resource: 'books', lid: 'b1', data: { title: 'T', authorId: { lid: 'a1' } } },
    { op: 'modify', resource: 'books', id: books[0].id, data: { year: 2001 } },
    { op: 'replace', resource: 'authors', id: authors[1].id, data: { name: 'Bo' } },
    { op: 'delete', resource: 'books', id: { lid: 'b1' } }
  ]
  const res = await batch(app, operations, auth.writeJson)
  t.equal(res.statusCode, 200)
  const created = res.json().data.results[1].data.book
  const writer = { id: 'writer', right: 'write' }
  t.same(checks, [
    { principal: writer, resource: 'authors', operation: 'create', method: 'POST', id: undefined, record: undefined, url: '/v1/batch' },
    { principal: writer, resource: 'books', operation: 'create', method: 'POST', id: undefined, record: undefined, url: '/v1/batch' },
    { principal: writer, resource: 'books', operation: 'modify', method: 'PATCH', id: books[0].id, record: books[0], url: '/v1/batch' },
    { principal: writer, resource: 'authors', operation: 'replace', method: 'PUT', id: authors[1].id, record: authors[1], url: '/v1/batch' },
    { principal: writer, resource: 'books', operation: 'delete', method: 'DELETE', id: created.id, record: created, url: '/v1/batch' }
  ], 'once per operation, in order, with the record as it stands in the batch (the book its create made)')

  checks.length = 0
  const missing = await batch(app, [{ op: 'delete', resource: 'books', id: 'none' }], auth.writeJson)
  isProblem(t, missing, 404)
  t.match(checks, [{ operation: 'delete', id: 'none', record: null }], 'a record that does not exist reaches the check as null')

  const before = await snapshot(app, auth.read)
  refuse = 'delete books'
  // Local ids belong to one batch: the same operations run again.
  const refused = await batch(app, operations, auth.writeJson)
  isProblem(t, refused, 403, 'a refused operation')
  t.same(refused.json(), { type: '/v1/problems/forbidden', title: 'Forbidden', status: 403, detail: 'These credentials do not allow deleting books.', instance: '/v1/batch', operation: 4 })
  t.same(await snapshot(app, auth.read), before, 'nothing written')
  refuse = null

  checks.length = 0
  const reader = await batch(app, operations, auth.readJson)
  isProblem(t, reader, 403, 'a read caller')
  t.match(reader.json(), { operation: 0, detail: 'These credentials do not allow creating authors.' })
  t.same(checks.map(check => check.operation), ['create'], 'refused at its first operation')
  t.same(await snapshot(app, auth.read), before)
  const anonymous = await batch(app, operations)
  isProblem(t, anonymous, 401, 'no credentials')
})

t.test('an authorize that rejects with a 403 refuses the operation', async t => {
  const app = await buildApp(t, {
    auth: testAuth({ authorize: async ({ operation }) => { if (operation === 'replace') throw Object.assign(new Error('no'), { statusCode: 403 }); return true } })
  })
  const { authors } = await seedAs(app, auth.writeJson)
  const res = await batch(app, [{ op: 'modify', resource: 'authors', id: authors[0].id, data: { country: 'NZ' } }, { op: 'replace', resource: 'authors', id: authors[0].id, data: { name: 'X' } }], auth.writeJson)
  isProblem(t, res, 403)
  t.equal(res.json().operation, 1)
  t.equal((await app.inject({ url: `/v1/authors/${authors[0].id}`, headers: auth.read })).headers.etag, '"1"', 'the modify before it is undone')
})

t.test('row and field rules apply to each operation as to its single request', async t => {
  const { app, topic, annPublic, annPrivate } = await build(t)
  const posts = async () => (await app.inject({ url: '/v1/posts?pageSize=100&sort=id', headers: as('root') })).json()
  const before = await posts()
  const create = { op: 'create', resource: 'posts', lid: 'p1', data: { topicId: topic.id, title: 'by bob' } }
  const cases: Array<[string, Json, () => Promise<LightMyRequestResponse>]> = [
    ['a row hidden from the caller is 404', { op: 'modify', resource: 'posts', id: annPrivate.id, data: { title: 'x' } },
      () => app.inject({ method: 'PATCH', url: `/v1/posts/${annPrivate.id}`, headers: asJson('bob'), payload: { title: 'x' } })],
    ['a hidden row on delete is 404', { op: 'delete', resource: 'posts', id: annPrivate.id },
      () => app.inject({ method: 'DELETE', url: `/v1/posts/${annPrivate.id}`, headers: as('bob') })],
    ['a row the caller cannot write is 403', { op: 'replace', resource: 'posts', id: annPublic.id, data: { topicId: topic.id, title: 'x' } },
      () => app.inject({ method: 'PUT', url: `/v1/posts/${annPublic.id}`, headers: asJson('bob'), payload: { topicId: topic.id, title: 'x' } })],
    ['a hidden field in data', { op: 'create', resource: 'posts', data: { topicId: topic.id, title: 'x', secret: 's' } },
      () => app.inject({ method: 'POST', url: '/v1/posts', headers: asJson('bob'), payload: { topicId: topic.id, title: 'x', secret: 's' } })],
    ['a field the caller reads but may not write', { op: 'modify', resource: 'posts', id: { lid: 'p1' }, data: { pinned: true } },
      () => app.inject({ method: 'POST', url: '/v1/posts', headers: asJson('bob'), payload: { topicId: topic.id, title: 'x', pinned: true } })],
    ['a server-set field in data', { op: 'create', resource: 'posts', data: { topicId: topic.id, title: 'x', ownerId: 'ann' } },
      () => app.inject({ method: 'POST', url: '/v1/posts', headers: asJson('bob'), payload: { topicId: topic.id, title: 'x', ownerId: 'ann' } })]
  ]
  for (const [what, operation, single] of cases) {
    const res = await batch(app, [create, operation], asJson('bob'))
    const alone = await single()
    t.same(res.json(), asOperation(alone.json(), 1), `${what}: the single request's problem (${alone.statusCode})`)
    t.equal(res.statusCode, alone.statusCode)
  }
  t.same(await posts(), before, 'nothing written')

  const hidden = await batch(app, [{ op: 'create', resource: 'posts', data: { topicId: topic.id, title: 'x', secret: 's' } }], asJson('bob'))
  const unknown = await batch(app, [{ op: 'create', resource: 'posts', data: { topicId: topic.id, title: 'x', madeUp: 's' } }], asJson('bob'))
  t.equal(hidden.statusCode, 400)
  t.same(hidden.json(), { ...unknown.json(), invalidParams: unknown.json().invalidParams.map((param: Json) => ({ ...param, name: 'operations/0/secret' })) }, 'a hidden field is refused exactly as an unknown one')
  const admin = await batch(app, [{ op: 'create', resource: 'posts', data: { topicId: topic.id, title: 'root', secret: 's', pinned: true } }], asJson('root'))
  t.match(admin.json().data.results[0], { status: 201, data: { post: { secret: 's', pinned: true, ownerId: 'root' } } }, 'an admin writes and reads them')

  const mine = await batch(app, [create, { op: 'modify', resource: 'posts', id: { lid: 'p1' }, data: { private: true } }], asJson('bob'))
  t.equal(mine.statusCode, 200)
  const [made, changed] = mine.json().data.results
  t.match(made.data.post, { title: 'by bob', ownerId: 'bob', createdAt: String, updatedAt: String }, 'server values are applied')
  t.notOk('secret' in made.data.post, 'a field hidden from the caller is not in its results')
  t.match(changed, { status: 200, etag: /^"2\./, data: { post: { id: made.data.post.id, private: true, ownerId: 'bob' } } })
  const read = await app.inject({ url: `/v1/posts/${made.data.post.id as string}`, headers: as('bob') })
  t.same(read.json().data, changed.data, 'the result is what the caller reads')
  const single = await app.inject({ method: 'PATCH', url: `/v1/posts/${made.data.post.id as string}`, headers: { ...as('bob'), ...patchJson, 'if-match': changed.etag }, payload: { private: true } })
  t.equal(single.statusCode, 200, 'the result\'s ETag is taken as If-Match')
  t.equal(single.headers.etag, changed.etag.replace('"2.', '"3.'), 'and has the variant of the single PATCH\'s ETag for this caller')
  t.equal((await app.inject({ url: `/v1/posts/${made.data.post.id as string}`, headers: as('ann') })).statusCode, 404, 'and others do not see the private post')
})

t.test('a batch takes application/json only (415) and answers JSON only (406)', async t => {
  const app = await buildApp(t)
  const body = JSON.stringify({ operations: [{ op: 'create', resource: 'authors', data: { name: 'Ann' } }] })
  for (const type of ['text/plain', 'application/merge-patch+json', 'application/xml', 'application/x-www-form-urlencoded']) {
    const res = await app.inject({ method: 'POST', url: '/v1/batch', headers: { 'content-type': type }, payload: body })
    isProblem(t, res, 415, type)
    t.match(res.json(), { invalidParams: [{ name: 'Content-Type' }], detail: /send one of: application\/json\.$/ }, type)
  }
  const xml = await app.inject({ method: 'POST', url: '/v1/batch', headers: { ...json, accept: 'application/xml' }, payload: body })
  isProblem(t, xml, 406, 'Accept: application/xml')
  t.match(xml.json(), { status: 406, detail: /available: application\/json\.$/ })
  const charset = await app.inject({ method: 'POST', url: '/v1/batch', headers: { 'content-type': 'application/json; charset=utf-8', accept: 'application/xml;q=0.5, application/json' }, payload: body })
  t.equal(charset.statusCode, 200, 'JSON with a charset, JSON among the accepted types')
  t.equal((await app.inject({ url: '/v1/authors?total=true' })).json().meta.total, 1, 'only that batch wrote')
  const get = await app.inject({ url: '/v1/batch' })
  isProblem(t, get, 405, 'GET')
  t.equal(get.headers.allow, 'POST')
})

t.test('options: batch: false serves no batch endpoint; maxOperations; bad values fail registration', async t => {
  const off = await buildApp(t, { batch: false })
  isProblem(t, await batch(off, [{ op: 'create', resource: 'authors', data: { name: 'Ann' } }]), 404, 'batch: false')
  t.notOk('/batch' in (await off.inject({ url: '/v1/openapi.json' })).json().paths)
  const Item = Type.Object({ id: Type.Readonly(Type.String()), text: Type.String() }, { additionalProperties: false })
  const named = (store: Store) => [defineResource({ name: 'batch', singular: 'batchItem', schema: Item, store })]
  const withResource = await buildApp(t, { batch: false, resources: named })
  t.equal((await withResource.inject({ method: 'POST', url: '/v1/batch', headers: json, payload: { text: 'x' } })).statusCode, 201, 'with batch: false, a resource may be named batch')
  await t.rejects(buildApp(t, { resources: named }), { code: 'API_ERR_RESOURCE_INVALID', message: /batch: its path \/batch is the batch endpoint's; rename the resource or set batch: false/ })

  for (const value of [0, -1, 1.5, '3', Number.POSITIVE_INFINITY]) {
    await t.rejects(buildApp(t, { batch: { maxOperations: value as number } }), { code: 'API_ERR_OPTIONS_INVALID', message: new RegExp(`batch\\.maxOperations must be a positive integer, received ${JSON.stringify(value) as string}`) }, `maxOperations ${String(value)}`)
  }
  for (const value of [true, 'on', 100]) {
    await t.rejects(buildApp(t, { batch: value as never }), { code: 'API_ERR_OPTIONS_INVALID', message: /batch must be false or an object/ }, `batch: ${String(value)}`)
  }
  await t.rejects(buildApp(t, { batch: { maxOperation: 3 } as never }), { code: 'API_ERR_OPTIONS_INVALID', message: /batch\.maxOperation is not a known key; did you mean "maxOperations"\?/ })
  await t.rejects(buildApp(t, { batch: { atomic: true } as never }), { code: 'API_ERR_OPTIONS_INVALID', message: /batch\.atomic is not a known key/ })

  const defaults = await buildApp(t)
  const create = { op: 'create', resource: 'authors', data: { name: 'Ann' } }
  const hundred = await batch(defaults, Array.from({ length: 100 }, () => create))
  t.equal(hundred.statusCode, 200, '100 operations by default')
  const more = await batch(defaults, Array.from({ length: 101 }, () => create))
  isProblem(t, more, 400, '101')
  t.match(more.json().invalidParams, [{ name: 'operations', reason: /more than 100/ }])
  t.equal((await defaults.inject({ url: '/v1/authors?total=true' })).json().meta.total, 100)
})

t.test('the OpenAPI document describes POST /batch with one branch per resource and operation it serves', async t => {
  const Note = Type.Object({ id: Type.Readonly(Type.String()), text: Type.String(), bookId: Type.String() }, { additionalProperties: false })
  const app = await buildApp(t, {
    batch: { maxOperations: 7 },
    resources: store => [
      ...demoResources(store),
      defineResource({ name: 'notes', singular: 'note', schema: Note, store, operations: ['list', 'create', 'delete'], relations: { book: { kind: 'one', resource: 'books', field: 'bookId' } } })
    ]
  })
  const document = inlined((await app.inject({ url: '/v1/openapi.json' })).json())
  const post = document.paths['/batch'].post
  t.same(Object.keys(document.paths['/batch']), ['post'])
  t.equal(post.operationId, 'batch')
  t.same(Object.keys(post.requestBody.content), ['application/json'])
  t.same(post.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/Batch' })
  t.same(Object.keys(post.responses['200'].content), ['application/json'])
  for (const status of ['400', '403', '404', '409', '412', '415', '422']) t.ok(post.responses[status], `${status} is documented`)
  const { operations } = document.components.schemas.Batch.properties
  t.same([operations.type, operations.minItems, operations.maxItems], ['array', 1, 7])
  const branches: Json[] = operations.items.oneOf
  const titles = ['authors', 'books', 'reviews'].flatMap(resource => ['create', 'replace', 'modify', 'delete'].map(op => `${op} ${resource}`))
  t.same(branches.map(branch => branch.title), [...titles, 'create notes', 'delete notes'])
  const branch = (title: string) => branches.find(one => one.title === title) as Json
  t.same(branch('create books').required, ['op', 'resource', 'data'])
  t.same(branch('modify books').required, ['op', 'resource', 'id', 'data'])
  t.same(branch('delete notes').required, ['op', 'resource', 'id'])
  t.notOk('data' in branch('delete notes').properties)
  t.ok('lid' in branch('create books').properties)
  t.notOk('lid' in branch('replace books').properties)
  t.ok('ifMatch' in branch('replace books').properties)
  const lid = { type: 'object', required: ['lid'], additionalProperties: false }
  const localId = { $ref: '#/components/schemas/LocalId' }
  t.match(document.components.schemas.LocalId, { ...lid, properties: { lid: { type: 'string' } } }, 'one schema for a local id')
  t.match(branch('create books').properties.data.properties.authorId.anyOf, [{ type: 'string' }, localId], 'a relation field accepts {lid}')
  t.match(branch('create notes').properties.data.properties.bookId.anyOf, [{ type: 'string' }, localId])
  t.same(branch('modify books').properties.id, { $ref: '#/components/schemas/BatchId' }, 'every id is one schema')
  t.match(document.components.schemas.BatchId.anyOf, [{ type: 'string' }, localId], 'which accepts {lid} too')
  t.same(branch('create books').properties.ifMatch, { $ref: '#/components/schemas/BatchIfMatch' }, 'so is every ifMatch')
  t.same(branch('create authors').properties.data, { $ref: '#/components/schemas/AuthorCreate' }, 'without a relation field, the create body itself')
})
