// Methods and paths (spec "Operations" rule 3): every unsupported method on a
// known path is 405 with Allow, including non-standard methods and operations a read-only
// resource switches off; unknown paths are 404 problems.
import t from 'tap'
import type { InjectOptions } from 'fastify'
import { buildApp, json, pick, seed } from './helpers/app.js'
import { auth, testAuth } from './helpers/auth.js'
import { demoResources } from '../demo/schemas/index.js'

const COLLECTION = 'GET, HEAD, POST, OPTIONS'
const ITEM = 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS'

const cases: ReadonlyArray<readonly [string, string, string]> = [
  ['DELETE', '/v1/books', COLLECTION],
  ['PATCH', '/v1/books', COLLECTION],
  ['PUT', '/v1/books', COLLECTION],
  ['POST', '/v1/books/some-id', ITEM],
  ['PROPFIND', '/v1/books', COLLECTION],
  ['PROPFIND', '/v1/books/some-id', ITEM],
  ['POST', '/v1/authors/some-id/books', 'GET, HEAD, OPTIONS'],
  ['DELETE', '/v1/problems/not-found', 'GET, HEAD'],
  ['POST', '/v1/problems', 'GET, HEAD']
]

for (const [method, url, allow] of cases) {
  t.test(`${method} ${url} answers 405 with Allow: ${allow}`, async t => {
    const app = await buildApp(t)
    const res = await app.inject({ method: method as 'GET', url, headers: json, payload: method === 'PROPFIND' ? undefined : {} })
    t.equal(res.statusCode, 405)
    t.same(pick(res.headers, 'allow', 'content-type'), { allow, 'content-type': 'application/problem+json; charset=utf-8' })
    t.same(res.json(), {
      type: '/v1/problems/method-not-allowed',
      title: 'Method Not Allowed',
      status: 405,
      detail: `Method ${method} is not allowed here; allowed: ${allow}.`,
      instance: url
    })
  })
}

t.test('a path answers 405 as the router reaches it: the problem pages\' alias, a percent-encoded name', async t => {
  const app = await buildApp(t)
  // Fastify's router serves GET on both (the alias, and /v1/book%73 as /v1/books): other methods are 405 there.
  for (const [url, allow] of [['/v1/problems/', 'GET, HEAD'], ['/v1/book%73', COLLECTION]]) {
    const res = await app.inject({ method: 'DELETE', url })
    t.same({ status: res.statusCode, allow: res.headers.allow }, { status: 405, allow }, url)
  }
})

t.test('the 405 index takes the host\'s router settings, in either spelling', async t => {
  for (const server of [{ ignoreTrailingSlash: true }, { routerOptions: { ignoreTrailingSlash: true } }]) {
    const app = await buildApp(t, { server })
    t.equal((await app.inject({ url: '/v1/books/' })).statusCode, 200, 'the router serves the collection with a trailing slash')
    const res = await app.inject({ method: 'DELETE', url: '/v1/books/' })
    t.same({ status: res.statusCode, allow: res.headers.allow }, { status: 405, allow: COLLECTION }, JSON.stringify(server))
  }
})

t.test('an error of the host\'s carrying one of the codes with another status keeps that status\'s title', async t => {
  const gone = () => { throw Object.assign(new Error('That book is gone.'), { code: 'API_ERR_NOT_FOUND', statusCode: 410 }) }
  const app = await buildApp(t, { auth: testAuth({ authorize: gone }) })
  const res = await app.inject({ url: '/v1/books', headers: auth.write })
  t.match(res.json(), { status: 410, title: 'Gone', type: '/v1/problems/not-found', detail: 'That book is gone.' })
})

t.test('405 ignores the query string when matching the path', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ method: 'DELETE', url: '/v1/books?filter=x' })
  t.same({ status: res.statusCode, allow: res.headers.allow, instance: res.json().instance }, { status: 405, allow: COLLECTION, instance: '/v1/books' })
})

const readOnly = {
  resources: (store: Parameters<typeof demoResources>[0]) =>
    demoResources(store).map(r => r.name === 'books' ? { ...r, operations: ['list', 'retrieve'] as const } : r)
}

for (const [method, url, allow] of [
  ['POST', '/v1/books', 'GET, HEAD, OPTIONS'],
  ['PUT', '/v1/books/:id', 'GET, HEAD, OPTIONS'],
  ['PATCH', '/v1/books/:id', 'GET, HEAD, OPTIONS'],
  ['DELETE', '/v1/books/:id', 'GET, HEAD, OPTIONS']
] as const) {
  t.test(`${method} on a read-only resource answers 405 with Allow: ${allow}`, async t => {
    const app = await buildApp(t, readOnly)
    const { authors } = await seed(await buildApp(t)) // ids only; the read-only app has no writes
    const res = await app.inject({ method, url: url.replace(':id', authors[0].id), headers: json, payload: { title: 'x', authorId: authors[0].id } })
    t.equal(res.statusCode, 405)
    t.same(pick(res.headers, 'allow'), { allow })
  })
}

t.test('a read-only resource still answers LIST, RETRIEVE and OPTIONS', async t => {
  const app = await buildApp(t, readOnly)
  const list = await app.inject({ url: '/v1/books' })
  const item = await app.inject({ url: '/v1/books/missing' })
  const options = await app.inject({ method: 'OPTIONS', url: '/v1/books' })
  const itemOptions = await app.inject({ method: 'OPTIONS', url: '/v1/books/missing' })
  t.same([list.statusCode, item.statusCode, options.statusCode, itemOptions.statusCode], [200, 404, 200, 404])
  t.same(options.json().data.methods, ['GET', 'HEAD', 'OPTIONS'])
})

t.test('a write-only collection answers 405 to GET with Allow: POST, OPTIONS', async t => {
  const app = await buildApp(t, {
    resources: store => demoResources(store).map(r => r.name === 'authors' ? { ...r, operations: ['create'] as const } : r)
  })
  const list = await app.inject({ url: '/v1/authors' })
  const item = await app.inject({ url: '/v1/authors/x' })
  t.same([list.statusCode, list.headers.allow, item.statusCode, item.headers.allow], [405, 'POST, OPTIONS', 405, 'OPTIONS'])
})

for (const url of ['/v1/nothing', '/v1/books/some-id/extra', '/v1']) {
  t.test(`GET ${url} answers a 404 problem`, async t => {
    const app = await buildApp(t)
    const res = await app.inject({ url })
    t.equal(res.statusCode, 404)
    t.same(res.headers.allow, undefined)
    t.match(res.json(), { type: '/v1/problems/not-found', title: 'Not Found', status: 404, instance: url })
  })
}

t.test('an unknown path answers 404 whatever the method', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ method: 'PROPFIND', url: '/v1/nothing' })
  t.same({ status: res.statusCode, detail: res.json().detail }, { status: 404, detail: '/v1/nothing was not found.' })
})

// An empty id names no record: the path is not found, not a record with a blank name.
const emptyIds: ReadonlyArray<readonly [string, string]> = [
  ['GET', '/v1/books/'],
  ['HEAD', '/v1/books/'],
  ['PUT', '/v1/books/'],
  ['PATCH', '/v1/books/'],
  ['DELETE', '/v1/books/'],
  ['OPTIONS', '/v1/books/'],
  ['POST', '/v1/books/'],
  ['GET', '/v1/authors//books'],
  ['OPTIONS', '/v1/authors//books'],
  ['GET', '/v1/books/?fields=title']
]
for (const [method, url] of emptyIds) {
  t.test(`${method} ${url} answers 404 naming the path`, async t => {
    const app = await buildApp(t)
    // A body and its type, so that PUT and PATCH would be checked if the route were served.
    const res = await app.inject({ method: method as 'GET', url, ...(method === 'PUT' || method === 'PATCH' ? { headers: json, payload: {} } : {}) })
    const path = url.split('?', 1)[0]
    t.same({ status: res.statusCode, allow: res.headers.allow, type: res.headers['content-type'] }, { status: 404, allow: undefined, type: 'application/problem+json; charset=utf-8' })
    if (method === 'HEAD') return
    t.same(res.json(), { type: '/v1/problems/not-found', title: 'Not Found', status: 404, detail: `${path} was not found.`, instance: path })
  })
}

t.test('an empty id is not found even without the body a write needs', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ method: 'PUT', url: '/v1/books/' })
  t.same({ status: res.statusCode, detail: res.json().detail }, { status: 404, detail: '/v1/books/ was not found.' })
})

// Fastify checks a body (and a QUERY's Content-Type) before the not-found handler runs.
const routeLess: ReadonlyArray<readonly [string, InjectOptions, number, string | undefined]> = [
  ['QUERY without Content-Type on an item', { method: 'QUERY', url: '/v1/books/some-id' }, 405, ITEM],
  ['broken JSON posted to an item', { method: 'POST', url: '/v1/books/some-id', headers: json, payload: '{bad' }, 405, ITEM],
  ['a body of an unparsed type sent to an unknown path', { method: 'POST', url: '/v1/nothing', headers: { 'content-type': 'text/weird' }, payload: 'x' }, 404, undefined],
  ['broken JSON posted to an unknown path', { method: 'POST', url: '/v1/nothing', headers: json, payload: '{bad' }, 404, undefined],
  ['a body over bodyLimit sent to an unknown path', { method: 'PUT', url: '/v1/nothing', headers: json, payload: JSON.stringify({ x: 'y'.repeat(200) }) }, 404, undefined],
  ['a malformed Date header on an unknown path', { method: 'GET', url: '/v1/nothing', headers: { date: 'yesterday' } }, 404, undefined],
  ['OPTIONS with broken JSON on an unknown path', { method: 'OPTIONS', url: '/v1/nothing', headers: json, payload: '{bad' }, 404, undefined],
  ['OPTIONS with a malformed Date header on a path without OPTIONS', { method: 'OPTIONS', url: '/v1/openapi.json', headers: { date: 'yesterday' } }, 405, 'GET, HEAD']
]
for (const [name, request, status, allow] of routeLess) {
  t.test(`${name} answers ${status}, not a complaint about the body or headers`, async t => {
    const app = await buildApp(t, { server: { bodyLimit: 100 } })
    const res = await app.inject(request)
    t.same({ status: res.statusCode, allow: res.headers.allow, type: res.headers['content-type'] }, { status, allow, type: 'application/problem+json; charset=utf-8' })
    t.equal(res.json().type, status === 404 ? '/v1/problems/not-found' : '/v1/problems/method-not-allowed')
  })
}

t.test('the edge\'s refusals still come first on an unknown path', async t => {
  const app = await buildApp(t, { maxQueryLength: 10 })
  const res = await app.inject({ method: 'POST', url: `/v1/nothing?${'q'.repeat(20)}`, headers: json, payload: '{bad' })
  t.same({ status: res.statusCode, type: res.json().type }, { status: 414, type: '/v1/problems/uri-too-long' })
})

t.test('the plugin\'s handlers do not reach the host\'s other routes', async t => {
  const app = await buildApp(t)
  // Outside the plugin's scope the host's own not-found handler answers, not a problem document.
  const res = await app.inject({ url: '/elsewhere' })
  t.equal(res.statusCode, 404)
  t.match(res.headers['content-type'], /^application\/json/)
})
