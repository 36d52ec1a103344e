// The parsed-filter cache is shared by every client of a process (spec "Advanced filtering
// (`filter`)", "Query parameters on collections": values coerced, 400 on a value that does not fit;
// syntax errors are 400 naming `filter`): a request holding U+0000 or U+0001, or an empty
// `filter=`, must not answer for another request, nor another's tree for it. Each sequence runs in
// order on one app, so a poisoned entry would show.
import t, { type Test } from 'tap'
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import apiConventions, { memoryStore, pgliteStore } from '../lib/index.js'
import { demoResources } from '../demo/schemas/index.js'
import type { Store } from '../lib/index.js'
import { buildApp, create } from './helpers/app.js'
import { get } from './helpers/list-app.js'
import type { Item } from './helpers/list-app.js'
import { openPglite } from './stores/pglite-db.js'

async function fixture (t: Test, store?: Store) {
  const app = await buildApp(t, { store })
  const author = await create(app, 'authors', { name: 'Cache' })
  for (const [title, year, available] of [['A', 2000, true], ['B', null, true], ['C', 1990, true], ['d', 1990, false]] as const) {
    await create(app, 'books', { title, year, available, authorId: author.id })
  }
  return app
}

async function titles (t: Test, app: FastifyInstance, query: string, expected: string[]) {
  const res = await get(app, `/v1/books?${query}`)
  t.equal(res.statusCode, 200, query)
  t.same((res.json().data.books as Item[]).map(book => book.title), expected, query)
}

async function rejects (t: Test, app: FastifyInstance, query: string, invalidParams: Array<{ name: string, reason: string | RegExp }>) {
  const res = await get(app, `/v1/books?${query}`)
  t.equal(res.statusCode, 400, query)
  t.match(res.headers['content-type'], /^application\/problem\+json/)
  t.match(res.json(), { status: 400, invalidParams }, query)
  t.equal(res.json().invalidParams.length, invalidParams.length, `${query}: nothing else is reported`)
}

t.test('a value holding U+0001 does not answer for the same field given twice', async t => {
  const app = await fixture(t)
  await titles(t, app, 'title=C%01d', [])
  await titles(t, app, 'title=C&title=d', ['C', 'd'])
  await titles(t, app, 'title=C%01d', [])
})

// No stored text holds U+0000, so a value with one is refused, naming it (list-query.ts comparable).
const nul = [{ name: 'title', reason: 'cannot contain the NUL character, which no stored text holds' }]

t.test('a value holding U+0000 does not answer for two simple filters', async t => {
  const app = await fixture(t)
  await rejects(t, app, 'title=B%00year=null', nul)
  await titles(t, app, 'title=B&year=null', ['B'])
  await rejects(t, app, 'title=B%00year=null', nul)
  await rejects(t, app, 'title=A%00year=2000', nul)
  await titles(t, app, 'title=A&year=2000', ['A'])
})

t.test('an empty filter= stays a syntax error after the same simple filter alone was served', async t => {
  const app = await fixture(t)
  await titles(t, app, 'title=A', ['A'])
  await rejects(t, app, 'filter=&title=A', [{ name: 'filter', reason: 'unexpected end of filter at position 0' }])
  await rejects(t, app, 'filter=', [{ name: 'filter', reason: 'unexpected end of filter at position 0' }])
  await titles(t, app, 'title=A', ['A'])
})

t.test('U+0000 inside filter= stays an error after the query it would split into was served', async t => {
  const app = await fixture(t)
  await titles(t, app, `filter=${encodeURIComponent('year eq 2000')}&title=A&available=true`, ['A'])
  await rejects(t, app, `filter=${encodeURIComponent('year eq 2000\u0000available=true')}&title=A`, [
    { name: 'filter', reason: /NUL/ }
  ])
})

t.test('U+0000 inside a boolean value stays an error after the query it would split into was served', async t => {
  const app = await fixture(t)
  await titles(t, app, 'available=true&title=A&year=2000', ['A'])
  await rejects(t, app, 'available=true%00title=A&year=2000', [
    { name: 'available', reason: /NUL/ }
  ])
  await titles(t, app, 'available=true&title=A&year=2000', ['A'])
})

t.test('a missing filter and an empty one are different requests in either order', async t => {
  const app = await fixture(t)
  await rejects(t, app, 'filter=&title=A', [{ name: 'filter', reason: 'unexpected end of filter at position 0' }])
  await titles(t, app, 'title=A', ['A'])
})

t.test('on PGlite, a refused value does not make the query it would split into fail', async t => {
  const db = await openPglite()
  t.teardown(() => db.close())
  const app = await fixture(t, await pgliteStore({ db, schema: 'filter_cache' }))
  // That request alone is refused, naming what it sent, as on the memory store.
  await rejects(t, app, 'title=A%00year=2000', nul)
  await titles(t, app, 'title=A&year=2000', ['A'])
  await titles(t, app, 'title=C%01d', [])
  await titles(t, app, 'title=C&title=d', ['C', 'd'])
})

// Parsed queries are kept per query for a caller's view (list-query.ts listRequestFor): keyed by
// what request.query holds when the route reads it, so a host hook that narrows it per caller
// (here by a header) never gets another caller's answer for the same URL.
t.test('a host hook that changes request.query per request is answered by what it put there', async t => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  app.addHook('preValidation', function narrowToTenant (request, _reply, done) {
    const tenant = request.headers['x-tenant']
    if (typeof tenant === 'string') (request.query as Record<string, string>).title = tenant
    done()
  })
  await app.register(apiConventions, { prefix: '/v1', cursorSecret: 'a-test-secret-of-enough-length', resources: demoResources(memoryStore()) })
  const author = await create(app, 'authors', { name: 'Tenant' })
  for (const title of ['A', 'B']) await create(app, 'books', { title, authorId: author.id })
  const titlesFor = async (tenant?: string) => {
    const res = await app.inject({ url: '/v1/books?sort=title', headers: tenant === undefined ? {} : { 'x-tenant': tenant } })
    t.equal(res.statusCode, 200)
    return (res.json().data.books as Item[]).map(book => book.title)
  }
  t.same(await titlesFor('A'), ['A'])
  t.same(await titlesFor('B'), ['B'])
  t.same(await titlesFor(), ['A', 'B'])
  t.same(await titlesFor('A'), ['A'])
})
