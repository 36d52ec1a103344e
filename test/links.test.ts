// Links in collection responses (spec "Response envelope" link object, "Page links",
// "Versioning" 1): an array of {rel, href} or an object keyed by rel, `self` always, and every
// href a working relative URL inside the same prefix.
import t, { type Test } from 'tap'
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import apiConventions, { memoryStore } from '../lib/index.js'
import { demoResources } from '../demo/schemas/index.js'
import { buildApp, seed } from './helpers/app.js'
import { get, hrefOf, linksOf, seedMany } from './helpers/list-app.js'

/** Follows every link reachable from `start`, breadth first, up to `limit` requests; returns the hrefs seen. */
async function crawl (t: Test, app: FastifyInstance, start: string[], limit = 300): Promise<Set<string>> {
  const seen = new Set<string>(start)
  const queue = [...start]
  while (queue.length > 0 && seen.size <= limit) {
    const url = queue.shift() as string
    const res = await get(app, url)
    if (res.statusCode !== 200) {
      t.fail(`${url} answered ${res.statusCode}`)
      continue
    }
    for (const link of linksOf(res.json())) {
      if (typeof link.rel !== 'string' || typeof link.href !== 'string') t.fail(`malformed link ${JSON.stringify(link)}`)
      // Relative, same versioned namespace, no scheme or host (Versioning 1).
      if (!/^\/v1\/[a-z]/.test(link.href)) t.fail(`${link.href} is not a relative URL under /v1`)
      if (!seen.has(link.href)) {
        seen.add(link.href)
        queue.push(link.href)
      }
    }
  }
  return seen
}

t.test('links are an array of {rel, href} by default', async t => {
  const app = await buildApp(t)
  await seedMany(app, 3)
  const res = await get(app, '/v1/books?pageSize=1')
  t.ok(Array.isArray(res.json().links))
  for (const link of res.json().links) t.same(Object.keys(link).sort(), ['href', 'rel'])
})

t.test('lastLink: false leaves `last` out of token and offset pages, and nothing else', async t => {
  const rels = (res: { json: () => unknown }) => linksOf(res.json() as never).map(link => link.rel)
  const lean = await buildApp(t, { lastLink: false })
  const full = await buildApp(t)
  for (const app of [lean, full]) await seedMany(app, 5)
  for (const url of ['/v1/books?pageSize=2', '/v1/books?pageSize=2&offset=2', '/v1/books?pageSize=2&offset=4', '/v1/books?pageSize=10']) {
    const expected = rels(await get(full, url)).filter(rel => rel !== 'last')
    t.same(rels(await get(lean, url)), expected, url)
  }
  t.ok(rels(await get(full, '/v1/books?pageSize=2')).includes('last'), 'the default has it')
  const next = hrefOf((await get(lean, '/v1/books?pageSize=2')).json(), 'next') as string
  t.same(rels(await get(lean, next)), ['self', 'first', 'prev', 'next'], 'a middle token page')
})

t.test('links: object keys navigation links by rel, and related links by relation as arrays', async t => {
  const app = await buildApp(t, { links: 'object' })
  const { authors, books } = await seed(app)
  const res = await get(app, '/v1/books?pageSize=2&include=author')
  const links = res.json().links
  t.notOk(Array.isArray(links))
  t.same(Object.keys(links), ['self', 'first', 'next', 'last', 'author'])
  t.same(links.self, { rel: 'self', href: '/v1/books?include=author&pageSize=2' })
  t.same(links.first, { rel: 'first', href: '/v1/books?include=author&pageSize=2' })
  t.match(links.next, { rel: 'next', href: /^\/v1\/books\?include=author&pageSize=2&token=/ })
  t.same(links.author, [
    { rel: 'author', href: `/v1/authors/${authors[0].id}`, book: books[0].id },
    { rel: 'author', href: `/v1/authors/${authors[0].id}`, book: books[1].id }
  ])
  const offset = await get(app, '/v1/books?offset=2&pageSize=2')
  t.same(Object.keys(offset.json().links), ['self', 'first', 'prev', 'last'])
  const item = await get(app, `/v1/books/${books[0].id}?include=author`)
  t.same(item.json().links, { author: [{ rel: 'author', href: `/v1/authors/${authors[0].id}`, book: books[0].id }] })
})

t.test('self is always present, also for an empty page, pageSize=0 and past the end', async t => {
  const app = await buildApp(t)
  await seedMany(app, 2)
  for (const url of ['/v1/books', '/v1/books?title=none', '/v1/books?pageSize=0', '/v1/books?offset=99', '/v1/authors?pageOffset=4']) {
    const res = await get(app, url)
    t.equal(res.statusCode, 200)
    t.ok(hrefOf(res.json(), 'self'), url)
  }
})

t.test('self repeats the request in canonical form', async t => {
  const app = await buildApp(t)
  await seedMany(app, 2)
  const res = await get(app, '/v1/books?total=true&sort=-year&filter=year%20ne%20null&available=true&fields=year&pageSize=1')
  t.equal(hrefOf(res.json(), 'self'), '/v1/books?filter=year%20ne%20null&available=true&sort=-year&fields=year&total=true&pageSize=1')
  t.same((await get(app, hrefOf(res.json(), 'self') as string)).json().data, res.json().data, 'and reading it again gives the same page')
})

t.test('special characters in filter values survive a round trip through links', async t => {
  const app = await buildApp(t)
  const { author } = await seedMany(app, 0)
  for (const title of ['A & B', 'x=y?z', "it's 100%", 'Ünïcødé #1', 'plus+sign']) {
    await app.inject({ method: 'POST', url: '/v1/books', payload: { title, authorId: author.id } })
    await app.inject({ method: 'POST', url: '/v1/books', payload: { title, authorId: author.id } })
  }
  for (const title of ['A & B', 'x=y?z', "it's 100%", 'Ünïcødé #1', 'plus+sign']) {
    const quoted = `title eq '${title.replaceAll("'", "''")}'`
    for (const query of [`title=${encodeURIComponent(title)}`, `filter=${encodeURIComponent(quoted)}`]) {
      const first = await get(app, `/v1/books?${query}&pageSize=1`)
      t.equal(first.json().data.books[0].title, title, query)
      const next = await get(app, hrefOf(first.json(), 'next') as string)
      t.equal(next.statusCode, 200, query)
      t.same(next.json().data.books.map((b: { title: string }) => b.title), [title], query)
    }
  }
})

t.test('a simple-filter value holding a control character stays one value in every link', async t => {
  const app = await buildApp(t)
  const { author } = await seedMany(app, 0)
  // No book is titled 'A\u0001B', so nothing matches; but 'A' and 'B' would, if a link split the
  // value in two. (NUL itself is refused: no store keeps it.)
  for (const title of ['A', 'B']) {
    t.equal((await app.inject({ method: 'POST', url: '/v1/books', payload: { title, authorId: author.id } })).statusCode, 201)
  }
  for (const paging of ['', '&offset=0', '&pageOffset=2']) {
    const seen = await crawl(t, app, [`/v1/books?title=A%01B&pageSize=1${paging}`])
    t.ok(seen.size > 0)
    for (const href of seen) {
      t.equal(new URL(href, 'http://localhost').searchParams.getAll('title').join(), 'A\u0001B', href)
      const res = await get(app, href)
      t.same({ status: res.statusCode, books: res.json().data.books }, { status: 200, books: [] }, href)
    }
  }
})

t.test('every href in token mode is a working relative URL under the prefix', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  await seedMany(app, 6)
  const seen = await crawl(t, app, [
    '/v1/books?pageSize=2&include=author&sort=-year',
    '/v1/authors?pageSize=1&include=books&expand=books',
    `/v1/authors/${authors[0].id}/books?pageSize=1&include=author`
  ])
  t.ok([...seen].some(href => href.includes('token=')), 'token links were followed')
  t.ok([...seen].some(href => /^\/v1\/authors\/[^/?]+$/.test(href)), 'author links were followed')
  t.ok([...seen].some(href => /^\/v1\/books\/[^/?]+$/.test(href)), 'book links were followed')
})

t.test('every href in offset mode is a working relative URL under the prefix', async t => {
  const app = await buildApp(t, { links: 'object' })
  const { authors } = await seed(app)
  await seedMany(app, 6)
  const seen = await crawl(t, app, [
    '/v1/books?offset=1&pageSize=3&total=true&include=author',
    '/v1/books?page=2&pageSize=2',
    `/v1/authors/${authors[0].id}/books?pageOffset=1&pageSize=1`
  ])
  t.ok([...seen].some(href => href.includes('pageOffset=')))
  t.ok([...seen].some(href => href.includes('offset=')))
})

t.test('hrefs follow the prefix the plugin is registered under', async t => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(apiConventions, { prefix: '/api/v2', resources: demoResources(memoryStore()), cursorSecret: 'a-test-secret-of-enough-length' })
  const author = (await app.inject({ method: 'POST', url: '/api/v2/authors', payload: { name: 'A' } })).json().data.author
  await app.inject({ method: 'POST', url: '/api/v2/books', payload: { title: 'T', authorId: author.id } })
  await app.inject({ method: 'POST', url: '/api/v2/books', payload: { title: 'U', authorId: author.id } })
  const res = await app.inject({ url: '/api/v2/books?pageSize=1&include=author' })
  for (const link of linksOf(res.json())) {
    t.match(link.href, /^\/api\/v2\//)
    t.equal((await app.inject({ url: link.href })).statusCode, 200, link.href)
  }
})

t.test('a prefix with a trailing slash builds every URL without the doubled slash', async t => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(apiConventions, { prefix: '/v1/', resources: demoResources(memoryStore()), cursorSecret: 'a-test-secret-of-enough-length' })
  const created = await app.inject({ method: 'POST', url: '/v1/authors', payload: { name: 'A' } })
  const author = created.json().data.author
  t.equal(created.headers.location, `/v1/authors/${author.id}`)
  for (const title of ['T', 'U', 'V']) await app.inject({ method: 'POST', url: '/v1/books', payload: { title, authorId: author.id } })
  const page = await app.inject({ url: '/v1/books?pageSize=1&include=author' })
  const links = linksOf(page.json())
  t.ok(links.some(link => link.rel === 'next'), 'there is a next page')
  for (const link of links) {
    t.match(link.href, /^\/v1\/[^/]/)
    t.notMatch(link.href, /\/\//)
    t.equal((await app.inject({ url: link.href })).statusCode, 200, link.href)
  }
  const missing = await app.inject({ url: '/v1/books/nope' })
  t.same({ status: missing.statusCode, type: missing.json().type }, { status: 404, type: '/v1/problems/not-found' })
  t.equal((await app.inject({ url: missing.json().type })).statusCode, 200)
  const problems = await app.inject({ url: '/v1/problems/' })
  t.match(problems.body, 'href="/v1/problems/not-found"')
  t.notMatch(problems.body, '/v1//')
  const document = (await app.inject({ url: '/v1/openapi.json' })).json()
  t.same(document.servers, [{ url: '/v1' }])
  const docs = await app.inject({ url: '/v1/docs/', headers: { accept: 'text/html' } })
  t.equal(docs.statusCode, 200)
  t.match(docs.body, /"url": "\/v1\/openapi.json"/, 'the page loads the served document')
  t.equal((await app.inject({ method: 'POST', url: '/v1/docs/' })).headers.allow, 'GET, HEAD')
})
