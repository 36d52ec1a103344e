// The response envelope (spec "Response envelope", "Shape of data", "Page links"): one resource
// under data.{singular} or directly in data, collections under data.{plural} with paging numbers in
// meta and data, links as an array or keyed object, expand and include, and serialization only of
// schema fields.
import t from 'tap'
import { memoryStore } from '../lib/index.js'
import type { Store } from '../lib/index.js'
import { buildApp, create, json, seed } from './helpers/app.js'
import { demoResources } from '../demo/schemas/index.js'

t.test('singleResource flat puts the resource directly in data on every single-resource answer', async t => {
  const app = await buildApp(t, { singleResource: 'flat' })
  const { authors } = await seed(app)
  const created = await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: { name: 'N' } })
  const read = await app.inject({ url: `/v1/authors/${authors[0].id}` })
  const replaced = await app.inject({ method: 'PUT', url: `/v1/authors/${authors[1].id}`, headers: json, payload: { name: 'R' } })
  const patched = await app.inject({ method: 'PATCH', url: `/v1/authors/${authors[2].id}`, headers: json, payload: { country: 'DE' } })
  t.same(created.json(), { data: { id: created.json().data.id, name: 'N', born: null, country: null } })
  t.same(read.json(), { data: authors[0] })
  t.same(replaced.json(), { data: { id: authors[1].id, name: 'R', born: null, country: null } })
  t.same(patched.json(), { data: { ...authors[2], country: 'DE' } })
})

t.test('an empty collection answers 200 with an empty array', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ url: '/v1/books' })
  t.equal(res.statusCode, 200)
  const { meta, data, links } = res.json()
  t.same({ meta, data }, { meta: { pageSize: 20 }, data: { books: [], pageSize: 20 } })
  t.match(links, [{ rel: 'self', href: '/v1/books?pageSize=20' }])
})

t.test('offset paging repeats pageSize and pageOffset in data and links prev and next', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const res = await app.inject({ url: '/v1/books?pageSize=2&offset=1' })
  t.same(res.json(), {
    meta: { pageSize: 2, offset: 1, pageOffset: 1 },
    data: { books: [books[1], books[2]], pageSize: 2, pageOffset: 1 },
    links: [
      { rel: 'self', href: '/v1/books?pageSize=2&offset=1' },
      { rel: 'first', href: '/v1/books?pageSize=2&offset=0' },
      { rel: 'prev', href: '/v1/books?pageSize=2&offset=0' },
      { rel: 'next', href: '/v1/books?pageSize=2&offset=3' }
    ]
  })
})

t.test('total=true adds total to meta and a last link', async t => {
  const app = await buildApp(t)
  await seed(app)
  const res = await app.inject({ url: '/v1/books?pageSize=3&offset=0&total=true' })
  const body = res.json()
  t.same(body.meta, { pageSize: 3, offset: 0, pageOffset: 1, total: 4 })
  t.equal(body.total, undefined)
  t.same(body.links.map((l: { rel: string }) => l.rel), ['self', 'first', 'next', 'last'])
  t.equal(body.links[3].href, '/v1/books?total=true&pageSize=3&offset=3')
})

t.test('totalAtRoot repeats total at the root of the collection body', async t => {
  const app = await buildApp(t, { totalAtRoot: true })
  await seed(app)
  const res = await app.inject({ url: '/v1/books?total=true' })
  t.same({ root: res.json().total, meta: res.json().meta.total }, { root: 4, meta: 4 })
  t.equal((await app.inject({ url: '/v1/books' })).json().total, undefined)
})

t.test('pageOffset paging keeps pageOffset in its links and knows the last page', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const res = await app.inject({ url: '/v1/books?pageSize=2&pageOffset=2' })
  t.same(res.json(), {
    meta: { pageSize: 2, offset: 2, pageOffset: 2 },
    data: { books: [books[2], books[3]], pageSize: 2, pageOffset: 2 },
    links: [
      { rel: 'self', href: '/v1/books?pageSize=2&pageOffset=2' },
      { rel: 'first', href: '/v1/books?pageSize=2&pageOffset=1' },
      { rel: 'prev', href: '/v1/books?pageSize=2&pageOffset=1' },
      { rel: 'last', href: '/v1/books?pageSize=2&pageOffset=2' }
    ]
  })
})

t.test('pageSize=0 answers an empty page with no navigation beyond self and first', async t => {
  const app = await buildApp(t, { paging: 'offset' })
  await seed(app)
  const res = await app.inject({ url: '/v1/books?pageSize=0&total=true' })
  t.same(res.json(), {
    meta: { pageSize: 0, offset: 0, pageOffset: 1, total: 4 },
    data: { books: [], pageSize: 0, pageOffset: 1 },
    links: [{ rel: 'self', href: '/v1/books?total=true&pageSize=0&offset=0' }, { rel: 'first', href: '/v1/books?total=true&pageSize=0&offset=0' }]
  })
})

t.test('token paging walks forward with next and back with prev', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const rels = (body: { links: Array<{ rel: string }> }) => body.links.map(l => l.rel)
  const href = (body: { links: Array<{ rel: string, href: string }> }, rel: string) => body.links.find(l => l.rel === rel)?.href as string

  const first = (await app.inject({ url: '/v1/books?pageSize=2' })).json()
  t.same(first.data.books, [books[0], books[1]])
  t.notOk(rels(first).includes('prev'))
  t.match(href(first, 'next'), /^\/v1\/books\?pageSize=2&token=[\w-]+$/)

  const second = (await app.inject({ url: href(first, 'next') })).json()
  t.same({ items: second.data.books, meta: second.meta }, { items: [books[2], books[3]], meta: { pageSize: 2 } })
  t.notOk(rels(second).includes('next'))
  t.equal(href(second, 'self'), href(first, 'next'))

  const back = (await app.inject({ url: href(second, 'prev') })).json()
  t.same(back.data.books, [books[0], books[1]])
  t.notOk(rels(back).includes('prev'))
})

t.test('token paging backwards from the middle keeps a prev link', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const href = (body: { links: Array<{ rel: string, href: string }> }, rel: string) => body.links.find(l => l.rel === rel)?.href as string
  const one = (await app.inject({ url: '/v1/books?pageSize=1' })).json()
  const two = (await app.inject({ url: href(one, 'next') })).json()
  const three = (await app.inject({ url: href(two, 'next') })).json()
  const backToTwo = (await app.inject({ url: href(three, 'prev') })).json()
  t.same(backToTwo.data.books, [books[1]])
  t.match(backToTwo.links.map((l: { rel: string }) => l.rel), ['self', 'first', 'prev', 'next'])
})

t.test('links object keys navigation links by rel', async t => {
  const app = await buildApp(t, { links: 'object' })
  await seed(app)
  const res = await app.inject({ url: '/v1/books?pageSize=2&offset=0' })
  t.same(res.json().links, {
    self: { rel: 'self', href: '/v1/books?pageSize=2&offset=0' },
    first: { rel: 'first', href: '/v1/books?pageSize=2&offset=0' },
    next: { rel: 'next', href: '/v1/books?pageSize=2&offset=2' }
  })
})

t.test('expand embeds the related author in each book of a list', async t => {
  const app = await buildApp(t)
  const { authors, books } = await seed(app)
  const res = await app.inject({ url: '/v1/books?expand=author&pageSize=2' })
  t.same(res.json().data.books, [{ ...books[0], author: authors[0] }, { ...books[1], author: authors[0] }])
})

t.test('expand on RETRIEVE embeds the related resource and changes the ETag', async t => {
  const app = await buildApp(t)
  const { authors, books } = await seed(app)
  const res = await app.inject({ url: `/v1/books/${books[2].id}?expand=author` })
  t.same(res.json(), { data: { book: { ...books[2], author: authors[1] } } })
  t.match(res.headers.etag, /^"1\.[\w-]+"$/)
})

t.test('expand of a one-to-many relation embeds the children, empty when none', async t => {
  const app = await buildApp(t)
  const { authors, books } = await seed(app)
  const lonely = await create(app, 'authors', { name: 'No Books' })
  const res = await app.inject({ url: '/v1/authors?expand=books&pageSize=10' })
  t.same(res.json().data.authors, [
    { ...authors[0], books: [books[0], books[1]] },
    { ...authors[1], books: [books[2]] },
    { ...authors[2], books: [books[3]] },
    { ...lonely, books: [] }
  ])
})

t.test('include returns related resources as links carrying the parent id', async t => {
  const app = await buildApp(t)
  const { authors, books } = await seed(app)
  const res = await app.inject({ url: `/v1/authors/${authors[0].id}?include=books` })
  t.same(res.json(), {
    data: { author: authors[0] },
    links: [
      { rel: 'books', href: `/v1/books/${books[0].id}`, author: authors[0].id },
      { rel: 'books', href: `/v1/books/${books[1].id}`, author: authors[0].id }
    ]
  })
})

t.test('include with links object groups related links under the relation name', async t => {
  const app = await buildApp(t, { links: 'object' })
  const { authors, books } = await seed(app)
  const res = await app.inject({ url: '/v1/books?include=author&pageSize=2&offset=0&fields=title' })
  const links = res.json().links
  t.same(links.author, [
    { rel: 'author', href: `/v1/authors/${authors[0].id}`, book: books[0].id },
    { rel: 'author', href: `/v1/authors/${authors[0].id}`, book: books[1].id }
  ])
  t.same(Object.keys(links), ['self', 'first', 'next', 'author'])
})

t.test('a one-to-one relation whose target cannot be found expands to null and adds no link', async t => {
  const inner = memoryStore()
  // A store that has lost the authors (for example, read from a lagging replica).
  const store: Store = { ...inner, getMany: async (model, field, values) => model.name === 'authors' ? [] : await inner.getMany(model, field, values) }
  const app = await buildApp(t, { store })
  const { books } = await seed(app)
  const res = await app.inject({ url: `/v1/books/${books[3].id}?include=author&expand=author` })
  t.same(res.json(), { data: { book: { ...books[3], author: null } } })
})

t.test('fields projects a resource but always keeps the mandatory fields', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const res = await app.inject({ url: `/v1/books/${books[0].id}?fields=year` })
  t.same(res.json(), { data: { book: { id: books[0].id, title: books[0].title, authorId: books[0].authorId, year: 1974 } } })
})

t.test('members a store returns beyond the schema are never served', async t => {
  const inner = memoryStore()
  const store: Store = {
    ...inner,
    async get (model, id) {
      const record = await inner.get(model, id)
      return record === null ? null : { ...record, data: { ...record.data, passwordHash: 'secret' } }
    }
  }
  const app = await buildApp(t, { store })
  const author = await create(app, 'authors', { name: 'N' })
  const res = await app.inject({ url: `/v1/authors/${author.id}` })
  t.same(res.json(), { data: { author } })
  t.notMatch(res.body, /secret/)
})

t.test('expand on an empty collection answers 200 with an empty array', async t => {
  const app = await buildApp(t)
  const books = await app.inject({ url: '/v1/books?expand=author&include=author' })
  const authors = await app.inject({ url: '/v1/authors?expand=books' })
  t.same([books.statusCode, books.json().data.books, authors.statusCode, authors.json().data.authors], [200, [], 200, []])
})

t.test('a one-to-one relation with a null key expands to null without a lookup', async t => {
  const { Type } = await import('@sinclair/typebox')
  const { defineResource } = await import('../lib/index.js')
  const Team = Type.Object({ id: Type.Readonly(Type.String()), name: Type.String() }, { additionalProperties: false })
  const Player = Type.Object({ id: Type.Readonly(Type.String()), teamId: Type.Optional(Type.Union([Type.String(), Type.Null()])) }, { additionalProperties: false })
  const inner = memoryStore()
  let lookups = 0
  const store: Store = { ...inner, getMany: async (...args) => { lookups++; return await inner.getMany(...args) } }
  const app = await buildApp(t, {
    store,
    resources: s => [
      defineResource({ name: 'teams', singular: 'team', schema: Team, store: s }),
      defineResource({ name: 'players', singular: 'player', schema: Player, store: s, relations: { team: { kind: 'one', resource: 'teams', field: 'teamId' } } })
    ]
  })
  const player = await create(app, 'players', {})
  const res = await app.inject({ url: `/v1/players/${player.id}?expand=team` })
  t.same(res.json(), { data: { player: { id: player.id, teamId: null, team: null } } })
  t.equal(lookups, 0)
})

t.test('embedded children are ordered by id whatever order the store returns them in', async t => {
  let next = 100
  const app = await buildApp(t, {
    // Ids that count down, so the store's insertion order is the reverse of id order.
    resources: s => demoResources(s).map(r => r.name === 'books' ? { ...r, generateId: () => `book-${String(next--).padStart(4, '0')}` } : r)
  })
  const author = await create(app, 'authors', { name: 'Prolific' })
  for (const title of ['First', 'Second', 'Third']) await create(app, 'books', { title, authorId: author.id })
  const res = await app.inject({ url: `/v1/authors/${author.id}?expand=books` })
  t.same(res.json().data.author.books.map((b: { id: string }) => b.id), ['book-0098', 'book-0099', 'book-0100'])
})

t.test('an offset past the end answers 200 with an empty page and no next link', async t => {
  const app = await buildApp(t)
  await seed(app)
  const res = await app.inject({ url: '/v1/books?pageSize=2&offset=10' })
  t.equal(res.statusCode, 200)
  t.same(res.json().data.books, [])
  t.notOk(res.json().links.some((l: { rel: string }) => l.rel === 'next'))
})

t.test('pageOffset paging with pageSize=0 links first to page 1', async t => {
  const app = await buildApp(t)
  await seed(app)
  const res = await app.inject({ url: '/v1/books?pageSize=0&pageOffset=3' })
  t.equal(res.statusCode, 200)
  t.match(res.json().links, [{ rel: 'self' }, { rel: 'first', href: '/v1/books?pageSize=0&pageOffset=1' }])
})

t.test('token paging with pageSize=0 answers an empty page linking only self and first', async t => {
  const app = await buildApp(t)
  await seed(app)
  const res = await app.inject({ url: '/v1/books?pageSize=0' })
  t.same(res.json().data.books, [])
  t.same(res.json().links.map((l: { rel: string }) => l.rel), ['self', 'first'])
})

t.test('a page read backwards that was emptied meanwhile links next to the first page', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const href = (body: { links: Array<{ rel: string, href: string }> }, rel: string) => body.links.find(l => l.rel === rel)?.href as string
  const first = (await app.inject({ url: '/v1/books?pageSize=2' })).json()
  const second = (await app.inject({ url: href(first, 'next') })).json()
  for (const book of books.slice(0, 2)) await app.inject({ method: 'DELETE', url: `/v1/books/${book.id}` })
  const emptied = (await app.inject({ url: href(second, 'prev') })).json()
  t.same(emptied.data.books, [])
  t.equal(href(emptied, 'next'), '/v1/books?pageSize=2')
})

t.test('reading back from a page whose first item was deleted still returns the items before it', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const href = (body: { links: Array<{ rel: string, href: string }> }, rel: string) => body.links.find(l => l.rel === rel)?.href as string
  const first = (await app.inject({ url: '/v1/books?pageSize=2' })).json()
  const second = (await app.inject({ url: href(first, 'next') })).json()
  await app.inject({ method: 'DELETE', url: `/v1/books/${books[2].id}` })
  const back = (await app.inject({ url: href(second, 'prev') })).json()
  t.same(back.data.books, [books[0], books[1]])
})

t.test('reading back from before every remaining item answers an empty page', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const href = (body: { links: Array<{ rel: string, href: string }> }, rel: string) => body.links.find(l => l.rel === rel)?.href as string
  const first = (await app.inject({ url: '/v1/books?pageSize=2' })).json()
  const second = (await app.inject({ url: href(first, 'next') })).json()
  for (const book of books.slice(0, 3)) await app.inject({ method: 'DELETE', url: `/v1/books/${book.id}` })
  const back = await app.inject({ url: href(second, 'prev') })
  t.same({ status: back.statusCode, books: back.json().data.books }, { status: 200, books: [] })
})
