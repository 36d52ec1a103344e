// The operation core (STYLE "Operations are a core, entry points are adapters"): every operation
// performed through lib/operations without Fastify answers what the HTTP route answers for the
// same request: the status, the headers the operation decides, and the body (or the problem).
import t from 'tap'
import type { Test } from 'tap'
import type { FastifyRequest, InjectOptions } from 'fastify'
import { memoryStore } from '../lib/index.js'
import { resolveOptions } from '../lib/options.js'
import { buildRegistry } from '../lib/registry/index.js'
import { assignStores } from '../lib/operations/stores.js'
import { createOperationContext } from '../lib/operations/context.js'
import { createOperations } from '../lib/operations/index.js'
import { operationInput } from '../lib/operations/input.js'
import type { OperationInput, Outcome } from '../lib/operations/input.js'
import type { ResourceOperation } from '../lib/operations/table.js'
import { parseTagList } from '../lib/http/conditional.js'
import { fingerprintOf, scopedKey } from '../lib/idempotency.js'
import { demoResources } from '../demo/schemas/index.js'
import { buildApp, json, seed, testClock } from './helpers/app.js'
import { auth, testAuth } from './helpers/auth.js'
import type { TestPrincipal } from './helpers/auth.js'
import type { AuthorizationCheck } from '../lib/index.js'

const secret = 'a-test-secret-of-enough-length'
// These options have no `auth.authorize`: there is no check to make.
const unchecked = { authorized: true } as const

/** An app over a memory store, and the core of the same options over the same store, without a server. */
async function setup (t: Test) {
  const clock = testClock()
  const store = memoryStore({ now: clock.now })
  const app = await buildApp(t, { store, clock })
  const options = resolveOptions({ cursorSecret: secret, resources: demoResources(store) })
  const models = buildRegistry(options.resources)
  const logged: unknown[] = []
  const core = createOperations(createOperationContext(options, models, assignStores(options.resources, models), '/v1'), { error: details => logged.push(details) }, '/v1/problems/')
  return { app, core, clock, seeded: await seed(app), logged }
}

// Sealed paging tokens carry a random nonce: equal positions, different texts.
const withoutTokens = (value: unknown) => JSON.parse(JSON.stringify(value).replace(/token=[\w-]+/g, 'token=…').replace(/"token":"[\w-]+"/g, '"token":"…"'))

/** What a client sees of an HTTP answer, in the outcome's terms: the headers an operation decides, and the parsed body. */
function answerOf (res: { statusCode: number, headers: Record<string, unknown>, body: string }, names: readonly string[]) {
  const headers = Object.fromEntries(names.filter(name => res.headers[name] !== undefined).map(name => [name, res.headers[name]]))
  return { status: res.statusCode, headers, body: res.body === '' ? null : withoutTokens(JSON.parse(res.body)) }
}

const decided = ['etag', 'last-modified', 'location', 'preference-applied', 'allow', 'content-type'] as const
function outcomeOf (outcome: Outcome) {
  const headers = { ...outcome.headers }
  // The route's serializer adds the content type of a body; an outcome names only a problem's.
  if (outcome.body !== null && headers['content-type'] === undefined) headers['content-type'] = 'application/json; charset=utf-8'
  return { status: outcome.status, headers, body: outcome.body === null ? null : withoutTokens(outcome.body) }
}

interface Case {
  readonly name: string
  readonly http: InjectOptions
  readonly resource: string
  readonly operation: ResourceOperation
  readonly input: Partial<OperationInput>
  /** The two runs write different records: their ids differ, and nothing else. */
  readonly newId?: boolean
  /** The two runs write one record in turn: HTTP's answer names the version after the core's. */
  readonly again?: boolean
}

t.test('every operation through the core answers what its HTTP route answers', async t => {
  const { app, core, seeded, clock, logged } = await setup(t)
  clock.advance(1000)
  const [dispossessed, leftHand, owls, solaris] = seeded.books
  const author = seeded.authors[0]
  const missing = '018cc251-f400-7000-8000-0000000000ff'
  const etagOf = async (id: string) => (await app.inject({ url: `/v1/books/${id}` })).headers.etag as string
  const stale = '"9.stale"'
  const cases: Case[] = [
    { name: 'LIST', http: { method: 'GET', url: '/v1/books?sort=-year&pageSize=2&fields=title,year' }, resource: 'books', operation: 'list', input: { query: { sort: '-year', pageSize: '2', fields: 'title,year' } } },
    { name: 'LIST filtered, with total and expand', http: { method: 'GET', url: '/v1/books?filter=year%20lt%201970&total=true&expand=author' }, resource: 'books', operation: 'list', input: { query: { filter: 'year lt 1970', total: 'true', expand: 'author' } } },
    { name: 'LIST refused: a bad filter', http: { method: 'GET', url: '/v1/books?filter=year%20lt' }, resource: 'books', operation: 'list', input: { query: { filter: 'year lt' } } },
    { name: 'LIST, If-None-Match: *', http: { method: 'GET', url: '/v1/authors', headers: { 'if-none-match': '*' } }, resource: 'authors', operation: 'list', input: { preconditions: { ifNoneMatch: parseTagList('*', 'If-None-Match') } } },
    { name: 'RETRIEVE', http: { method: 'GET', url: `/v1/books/${dispossessed.id}?include=author` }, resource: 'books', operation: 'retrieve', input: { id: dispossessed.id, query: { include: 'author' } } },
    { name: 'RETRIEVE, not modified', http: { method: 'GET', url: `/v1/books/${leftHand.id}`, headers: { 'if-none-match': await etagOf(leftHand.id) } }, resource: 'books', operation: 'retrieve', input: { id: leftHand.id, preconditions: { ifNoneMatch: parseTagList(await etagOf(leftHand.id), 'If-None-Match') } } },
    { name: 'RETRIEVE, none there', http: { method: 'GET', url: `/v1/books/${missing}` }, resource: 'books', operation: 'retrieve', input: { id: missing } },
    { name: 'CREATE', http: { method: 'POST', url: '/v1/books', headers: json, payload: { title: 'Made', authorId: author.id, year: 2001 } }, resource: 'books', operation: 'create', input: { body: { title: 'Made', authorId: author.id, year: 2001 } }, newId: true },
    { name: 'CREATE, return=minimal', http: { method: 'POST', url: '/v1/authors', headers: { ...json, prefer: 'return=minimal' }, payload: { name: 'Minimal' } }, resource: 'authors', operation: 'create', input: { body: { name: 'Minimal' }, returnPreference: 'minimal' }, newId: true },
    { name: 'CREATE refused: the schema', http: { method: 'POST', url: '/v1/books', headers: json, payload: { title: '', authorId: author.id, colour: 'red' } }, resource: 'books', operation: 'create', input: { body: { title: '', authorId: author.id, colour: 'red' } } },
    { name: 'CREATE refused: an unknown author', http: { method: 'POST', url: '/v1/books', headers: json, payload: { title: 'Orphan', authorId: missing } }, resource: 'books', operation: 'create', input: { body: { title: 'Orphan', authorId: missing } } },
    { name: 'MODIFY', again: true, http: { method: 'PATCH', url: `/v1/books/${owls.id}`, headers: json, payload: { rating: 3.5 } }, resource: 'books', operation: 'modify', input: { id: owls.id, body: { rating: 3.5 } } },
    { name: 'MODIFY, a stale If-Match', http: { method: 'PATCH', url: `/v1/books/${owls.id}`, headers: { ...json, 'if-match': stale }, payload: { rating: 1 } }, resource: 'books', operation: 'modify', input: { id: owls.id, body: { rating: 1 }, preconditions: { ifMatch: parseTagList(stale, 'If-Match') } } },
    { name: 'REPLACE, return=minimal', again: true, http: { method: 'PUT', url: `/v1/books/${solaris.id}`, headers: { ...json, prefer: 'return=minimal' }, payload: { title: 'Solaris', authorId: seeded.authors[2].id } }, resource: 'books', operation: 'replace', input: { id: solaris.id, body: { title: 'Solaris', authorId: seeded.authors[2].id }, returnPreference: 'minimal' } },
    { name: 'REPLACE refused: another id in the body', http: { method: 'PUT', url: `/v1/books/${solaris.id}`, headers: json, payload: { id: missing, title: 'Solaris', authorId: seeded.authors[2].id } }, resource: 'books', operation: 'replace', input: { id: solaris.id, body: { id: missing, title: 'Solaris', authorId: seeded.authors[2].id } } },
    { name: 'DELETE refused: the author has books', http: { method: 'DELETE', url: `/v1/authors/${author.id}` }, resource: 'authors', operation: 'delete', input: { id: author.id } },
    { name: 'DELETE, none there', http: { method: 'DELETE', url: `/v1/books/${missing}` }, resource: 'books', operation: 'delete', input: { id: missing } }
  ]
  for (const c of cases) {
    // Each side writes what it writes in the same second of the clock, so validators agree.
    const viaCore = outcomeOf(await core.perform(c.resource, c.operation, operationInput({ principal: null, ...c.input }), unchecked))
    const viaHttp = answerOf(await app.inject(c.http) as unknown as { statusCode: number, headers: Record<string, unknown>, body: string }, decided)
    if (c.newId === true) {
      // The records the two runs made differ by their ids only.
      const idOf = (location: unknown) => String(location).split('/').pop() as string
      const coreId = idOf(viaCore.headers.location)
      const httpId = idOf(viaHttp.headers.location)
      t.not(coreId, httpId, `${c.name}: two records were made`)
      t.same(JSON.parse(JSON.stringify(viaCore).replaceAll(coreId, 'ID')), JSON.parse(JSON.stringify(viaHttp).replaceAll(httpId, 'ID')), c.name)
    } else if (c.again === true) {
      const next = String(viaCore.headers.etag).replace(/^"(\d+)/, (_, version: string) => `"${Number(version) + 1}`)
      t.same({ ...viaCore, headers: { ...viaCore.headers, etag: next } }, viaHttp, c.name)
    } else {
      t.same(viaCore, viaHttp, c.name)
    }
  }
  // The MODIFY and REPLACE above ran twice: through the core first, then HTTP (versions 2 and 3).
  t.equal((await app.inject({ url: `/v1/books/${owls.id}` })).headers.etag, '"3"')
  t.same(logged, [], 'nothing failed on the server')
})

t.test('DELETE through the core removes what HTTP then cannot find', async t => {
  const { app, core, seeded } = await setup(t)
  const [book] = seeded.books
  const outcome = await core.perform('books', 'delete', operationInput({ principal: null, id: book.id }), unchecked)
  t.same(outcome, { status: 204, headers: {}, body: null })
  t.equal((await app.inject({ url: `/v1/books/${book.id}` })).statusCode, 404)
})

t.test('an unknown resource, and an operation a resource does not serve, are the routes\' 404 and 405', async t => {
  const store = memoryStore()
  const served: Record<string, ResourceOperation[]> = { authors: ['list', 'retrieve'], books: ['list', 'create', 'retrieve', 'modify'] }
  const options = resolveOptions({ cursorSecret: secret, resources: demoResources(store).map(resource => resource.name in served ? { ...resource, operations: served[resource.name] } : resource) })
  const models = buildRegistry(options.resources)
  const core = createOperations(createOperationContext(options, models, assignStores(options.resources, models), '/v1'), { error () {} }, '/v1/problems/')
  t.match(await core.perform('planets', 'list', operationInput({ principal: null }), unchecked), { status: 404, headers: { 'content-type': 'application/problem+json; charset=utf-8' }, body: { status: 404, instance: '/v1/planets' } })
  t.match(await core.perform('authors', 'delete', operationInput({ principal: null, id: 'x' }), unchecked), { status: 405, headers: { allow: 'GET, HEAD, OPTIONS' }, body: { status: 405, instance: '/v1/authors/x' } })
  t.match(await core.perform('authors', 'create', operationInput({ principal: null, body: { name: 'N' } }), unchecked), { status: 405, headers: { allow: 'GET, HEAD, OPTIONS' }, body: { instance: '/v1/authors' } })
  t.match(await core.perform('books', 'delete', operationInput({ principal: null, id: 'x' }), unchecked), { status: 405, headers: { allow: 'GET, HEAD, PATCH, OPTIONS' } })
  t.match(await core.perform('books', 'replace', operationInput({ principal: null, id: 'x' }), unchecked), { status: 405, body: { detail: 'Method PUT is not allowed here; allowed: GET, HEAD, PATCH, OPTIONS.' } })
})

t.test('a server error through the core is logged and answered as the generic 500', async t => {
  const store = memoryStore()
  const options = resolveOptions({ cursorSecret: secret, resources: demoResources(store) })
  const models = buildRegistry(options.resources)
  const failing = { ...store, get: async () => { throw new Error('the disk is on fire') } }
  const logged: unknown[] = []
  const core = createOperations(createOperationContext(options, models, () => failing, '/v1'), { error: details => logged.push(details) }, '/v1/problems/')
  const outcome = await core.perform('books', 'retrieve', operationInput({ principal: null, id: 'x' }), unchecked)
  t.match(outcome, { status: 500, body: { status: 500, detail: String } })
  t.notMatch(JSON.stringify(outcome.body), /fire/, 'the cause is not echoed')
  t.equal(logged.length, 1, 'and it is logged')
})

t.test('an operation run from outside a route is authorized as its route authorizes it', async t => {
  const store = memoryStore()
  const checks: Array<Omit<AuthorizationCheck<TestPrincipal>, 'request' | 'principal'>> = []
  // Writers may do anything but delete books; readers may read.
  const authorization = testAuth({
    authorize: ({ request, principal, ...check }) => {
      checks.push(check)
      return principal.right === 'write' ? `${check.operation} ${check.resource}` !== 'delete books' : check.method === 'GET'
    }
  })
  const app = await buildApp(t, { store, auth: authorization })
  const options = resolveOptions({ cursorSecret: secret, resources: demoResources(store), auth: authorization })
  const models = buildRegistry(options.resources)
  const core = createOperations(createOperationContext(options, models, assignStores(options.resources, models), '/v1'), { error () {} }, '/v1/problems/')
  const writer: TestPrincipal = { id: 'writer', right: 'write' }
  const reader: TestPrincipal = { id: 'reader', right: 'read' }
  const made = await app.inject({ method: 'POST', url: '/v1/authors', headers: auth.writeJson, payload: { name: 'Ann' } })
  const author = made.json().data.author
  const book = (await app.inject({ method: 'POST', url: '/v1/books', headers: auth.writeJson, payload: { title: 'T', authorId: author.id } })).json().data.book
  const request = {} as FastifyRequest
  checks.length = 0

  const refusedDelete = await core.perform('books', 'delete', operationInput({ principal: writer, id: book.id }), { request })
  const refusedDeleteHttp = await app.inject({ method: 'DELETE', url: `/v1/books/${book.id}`, headers: auth.write })
  t.same(outcomeOf(refusedDelete), answerOf(refusedDeleteHttp, decided), 'a refused DELETE is the route\'s 403')
  t.equal(refusedDelete.status, 403)
  t.same(checks, [
    { resource: 'books', operation: 'delete', method: 'DELETE', id: book.id, record: book },
    { resource: 'books', operation: 'delete', method: 'DELETE', id: book.id, record: book }
  ], 'the check is shown the same operation, id and record by both ways in')

  const readerCreate = await core.perform('authors', 'create', operationInput({ principal: reader, body: { name: 'Bo' } }), { request })
  t.same(outcomeOf(readerCreate), answerOf(await app.inject({ method: 'POST', url: '/v1/authors', headers: auth.readJson, payload: { name: 'Bo' } }), decided), 'a reader\'s CREATE is the route\'s 403')
  t.match(readerCreate, { status: 403, body: { detail: 'These credentials do not allow creating authors.' } })
  // The check comes before the body: a refused caller learns nothing of the schema.
  t.match(await core.perform('authors', 'create', operationInput({ principal: reader, body: { colour: 'red' } }), { request }), { status: 403 })
  t.match(await core.perform('books', 'retrieve', operationInput({ principal: reader, id: book.id }), { request }), { status: 200, body: { data: { book: { id: book.id } } } })

  checks.length = 0
  t.match(await core.perform('books', 'delete', operationInput({ principal: writer, id: book.id }), { authorized: true }), { status: 204 }, 'work authorized when it was accepted is not asked again')
  t.same(checks, [])
})

t.test('an Idempotency-Key through the core is the route\'s: one key, one write, one kept answer', async t => {
  const { app, core } = await setup(t)
  const body = { name: 'Keyed' }
  // No authentication in these options: the caller's part of the key is null, as the route's is.
  const idempotency = { key: scopedKey(null, 'POST', '/v1/authors', 'k-1'), fingerprint: fingerprintOf('application/json', body) }
  const first = await core.perform('authors', 'create', operationInput({ principal: null, body }), { ...unchecked, idempotency })
  t.equal(first.status, 201)
  const again = await core.perform('authors', 'create', operationInput({ principal: null, body }), { ...unchecked, idempotency })
  t.same(again, { status: 201, headers: { ...first.headers, 'idempotent-replayed': 'true' }, body: first.body }, 'a retry through the core replays the answer')
  const overHttp = await app.inject({ method: 'POST', url: '/v1/authors', headers: { ...json, 'idempotency-key': 'k-1' }, payload: body })
  t.equal(overHttp.statusCode, 201)
  t.equal(overHttp.headers['idempotent-replayed'], 'true', 'a retry over HTTP replays the answer the core kept')
  t.equal(overHttp.headers.location, first.headers.location)
  const authors = (await app.inject({ url: '/v1/authors?filter=name%20eq%20%27Keyed%27' })).json().data.authors
  t.equal(authors.length, 1, 'one record was made')

  const otherBody = { name: 'Other' }
  const refused = await core.perform('authors', 'create', operationInput({ principal: null, body: otherBody }), { ...unchecked, idempotency: { ...idempotency, fingerprint: fingerprintOf('application/json', otherBody) } })
  const refusedHttp = await app.inject({ method: 'POST', url: '/v1/authors', headers: { ...json, 'idempotency-key': 'k-1' }, payload: otherBody })
  t.same(outcomeOf(refused), answerOf(refusedHttp, decided), 'another body under the key is the route\'s 422')
  t.equal(refused.status, 422)

  // A refusal is not kept: the key runs again once the request is right.
  const missing = '018cc251-f400-7000-8000-0000000000ff'
  const bookKey = { key: scopedKey(null, 'POST', '/v1/books', 'k-2'), fingerprint: 'any' }
  t.equal((await core.perform('books', 'create', operationInput({ principal: null, body: { title: 'T', authorId: missing } }), { ...unchecked, idempotency: bookKey })).status, 422)
  t.equal((await core.perform('books', 'create', operationInput({ principal: null, body: { title: 'T', authorId: first.created } }), { ...unchecked, idempotency: bookKey })).status, 201)
  // REPLACE is idempotent by itself: a key changes nothing.
  const replaced = await core.perform('authors', 'replace', operationInput({ principal: null, id: String(first.created), body: { name: 'Again' } }), { ...unchecked, idempotency })
  t.equal(replaced.status, 200)
  t.equal(replaced.headers['idempotent-replayed'], undefined)
})

t.test('a keyed run through the core logs a failed purge of expired keys and still answers', async t => {
  const store = memoryStore()
  // Purging runs after a keyed write at most once a minute per store: this store's first one fails.
  const failing = { ...store, purgeKeys: async () => { throw new Error('the purge failed') } }
  const options = resolveOptions({ cursorSecret: secret, resources: demoResources(failing) })
  const models = buildRegistry(options.resources)
  const logged: unknown[] = []
  const core = createOperations(createOperationContext(options, models, assignStores(options.resources, models), '/v1'), { error: (details, message) => logged.push([details, message]) }, '/v1/problems/')
  const body = { name: 'Purged' }
  const idempotency = { key: scopedKey(null, 'POST', '/v1/authors', 'k-purge'), fingerprint: fingerprintOf('application/json', body) }
  t.match(await core.perform('authors', 'create', operationInput({ principal: null, body }), { ...unchecked, idempotency }), { status: 201 })
  await new Promise(resolve => setImmediate(resolve))
  t.match(logged, [[{ err: { message: 'the purge failed' } }, 'api-conventions: purging expired Idempotency-Keys failed']])
})
