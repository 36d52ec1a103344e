// Related resources (spec "Shape of data" → nested resources, "Query parameters on collections",
// "Page links" 5): expand and include, one batched store call per relation
// per page, and nested collections /{parents}/{id}/{children}.
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { defineResource } from '../lib/index.js'
import type { Store } from '../lib/index.js'
import { buildApp, create, seed } from './helpers/app.js'
import { get, hrefOf, idsOf, linksOf, relsOf, seedMany, spyStore, walk } from './helpers/list-app.js'
import type { Item } from './helpers/list-app.js'

async function fixture (t: Parameters<typeof buildApp>[0]) {
  const store = spyStore()
  const app = await buildApp(t, { store })
  const seeded = await seed(app)
  store.getManyCalls.length = 0
  return { app, store, ...seeded }
}

t.test('expand=author embeds each book\'s author, fetched in one call for the page', async t => {
  const { app, store, authors, books } = await fixture(t)
  const res = await get(app, '/v1/books?expand=author')
  t.equal(res.statusCode, 200)
  const served = res.json().data.books as Item[]
  t.same(served.map(book => book.author), [authors[0], authors[0], authors[1], authors[2]])
  t.same(served[0], { ...books[0], author: authors[0] })
  t.equal(store.getManyCalls.length, 1)
  t.same(store.getManyCalls[0].resource, 'authors')
  t.same([...store.getManyCalls[0].values].sort(), authors.map(a => a.id).sort(), 'each id once')
})

t.test('expand=books embeds each author\'s books, an empty array for none, in one call', async t => {
  const { app, store, authors, books } = await fixture(t)
  const loner = await create(app, 'authors', { name: 'No Books Yet' })
  store.getManyCalls.length = 0
  const res = await get(app, '/v1/authors?expand=books')
  const served = res.json().data.authors as Item[]
  t.same(served.map(author => (author.books as Item[]).map(book => book.title)), [
    ['The Dispossessed', 'The Left Hand of Darkness'], ['Owls Do Cry'], ['Solaris'], []
  ])
  t.same((served[0].books as Item[])[0], books[0])
  t.same(store.getManyCalls, [{ resource: 'books', field: 'authorId', values: [...authors.map(a => a.id), loner.id] }])
})

t.test('include=author returns author links naming the book, and each href works', async t => {
  const { app, authors, books } = await fixture(t)
  const res = await get(app, '/v1/books?include=author&pageSize=2')
  const body = res.json()
  t.notOk('author' in body.data.books[0], 'include does not embed')
  const related = linksOf(body).filter(link => link.rel === 'author')
  t.same(related, [
    { rel: 'author', href: `/v1/authors/${authors[0].id}`, book: books[0].id },
    { rel: 'author', href: `/v1/authors/${authors[0].id}`, book: books[1].id }
  ])
  for (const link of related) {
    const followed = await get(app, link.href)
    t.equal(followed.statusCode, 200)
    t.same(followed.json().data.author, authors[0])
  }
  t.same(relsOf(body), ['self', 'first', 'next', 'last', 'author', 'author'])
})

t.test('include=books returns one link per child, naming the author', async t => {
  const { app, authors, books } = await fixture(t)
  const res = await get(app, '/v1/authors?include=books&pageSize=2')
  t.same(linksOf(res.json()).filter(link => link.rel === 'books'), [
    { rel: 'books', href: `/v1/books/${books[0].id}`, author: authors[0].id },
    { rel: 'books', href: `/v1/books/${books[1].id}`, author: authors[0].id },
    { rel: 'books', href: `/v1/books/${books[2].id}`, author: authors[1].id }
  ])
})

t.test('expand and include of one relation share one call; repeated names count once', async t => {
  const { app, store } = await fixture(t)
  const res = await get(app, '/v1/books?expand=author,author&include=author')
  t.equal(res.statusCode, 200)
  t.equal(store.getManyCalls.length, 1)
  t.equal(linksOf(res.json()).filter(link => link.rel === 'author').length, 4)
  t.ok((res.json().data.books as Item[]).every(book => typeof book.author === 'object'))
})

t.test('one call per relation per page while paging, with only that page\'s keys', async t => {
  const store = spyStore()
  const app = await buildApp(t, { store })
  const first = await seedMany(app, 3)
  const second = await seedMany(app, 3)
  store.getManyCalls.length = 0
  const pages = await walk(app, '/v1/books?expand=author&pageSize=2', 'next')
  t.equal(pages.length, 3)
  t.match(hrefOf(pages[0], 'next'), /expand=author/)
  t.same(store.getManyCalls.map(call => call.values), [[first.author.id], [first.author.id, second.author.id], [second.author.id]])
})

t.test('an empty page or pageSize=0 makes no related call', async t => {
  const { app, store } = await fixture(t)
  t.same((await get(app, '/v1/books?expand=author&title=none')).json().data.books, [])
  t.same((await get(app, '/v1/authors?include=books&pageSize=0')).json().data.authors, [])
  t.equal(store.getManyCalls.length, 0)
})

t.test('unknown relation names are 400 naming expand or include', async t => {
  const { app, books } = await fixture(t)
  for (const [query, name, reason] of [
    ['expand=publisher', 'expand', "unknown relation 'publisher'"],
    ['include=authors', 'include', "unknown relation 'authors'"],
    ['expand=author,', 'expand', "unknown relation ''"],
    ['include=title', 'include', "unknown relation 'title'"],
    ['expand=author&expand=publisher', 'expand', "unknown relation 'publisher'"]
  ]) {
    for (const url of [`/v1/books?${query}`, `/v1/books/${books[0].id}?${query}`]) {
      const res = await get(app, url)
      t.equal(res.statusCode, 400, url)
      t.match(res.headers['content-type'], /^application\/problem\+json/)
      t.match(res.json(), { status: 400, invalidParams: [{ name, reason }] }, url)
    }
  }
})

t.test('expand and include repeated read as comma-separated', async t => {
  const { app, authors, books } = await fixture(t)
  for (const path of ['/v1/books', `/v1/books/${books[0].id}`, `/v1/authors/${authors[0].id}`]) {
    const relation = path.startsWith('/v1/authors') ? 'books' : 'author'
    const repeated = await get(app, `${path}?expand=${relation}&expand=${relation}&include=${relation}&include=${relation}`)
    const comma = await get(app, `${path}?expand=${relation}&include=${relation}`)
    t.equal(repeated.statusCode, 200, path)
    t.same(repeated.json().data, comma.json().data, `${path}: a name given twice counts once`)
    t.same(repeated.json().links.filter((link: { rel: string }) => link.rel === relation), comma.json().links.filter((link: { rel: string }) => link.rel === relation))
  }
})

t.test('RETRIEVE expands and includes too', async t => {
  const { app, store, authors, books } = await fixture(t)
  const book = await get(app, `/v1/books/${books[3].id}?expand=author&include=author`)
  t.same(book.json().data.book, { ...books[3], author: authors[2] })
  t.same(book.json().links, [{ rel: 'author', href: `/v1/authors/${authors[2].id}`, book: books[3].id }])
  const author = await get(app, `/v1/authors/${authors[0].id}?expand=books`)
  t.same((author.json().data.author.books as Item[]).map(b => b.id), [books[0].id, books[1].id])
  t.equal(store.getManyCalls.length, 2)
})

/** Owners and pets where the pet's owner is optional, to show null keys and projections. */
function petResources (store: Store) {
  const owners = defineResource({
    name: 'owners',
    singular: 'owner',
    store,
    schema: Type.Object({ id: Type.Readonly(Type.String()), name: Type.String() }, { additionalProperties: false }),
    relations: { pets: { kind: 'many', resource: 'pets', field: 'ownerId' } }
  })
  const pets = defineResource({
    name: 'pets',
    singular: 'pet',
    store,
    schema: Type.Object({
      id: Type.Readonly(Type.String()),
      name: Type.String(),
      ownerId: Type.Optional(Type.Union([Type.String(), Type.Null()]))
    }, { additionalProperties: false }),
    relations: { owner: { kind: 'one', resource: 'owners', field: 'ownerId' } }
  })
  return [owners, pets]
}

t.test('embedded and included children come in id order, whatever order the store returns them in', async t => {
  let next = 9
  const app = await buildApp(t, {
    // Each pet gets a smaller id than the one before, so creation order is the reverse of id order.
    resources: store => petResources(store).map(definition => definition.name === 'pets' ? { ...definition, generateId: () => `p${next--}` } : definition)
  })
  const owner = await create(app, 'owners', { name: 'Ann' })
  for (const name of ['Rex', 'Fido', 'Tom']) await create(app, 'pets', { name, ownerId: owner.id })
  const res = await get(app, '/v1/owners?expand=pets&include=pets')
  t.same((res.json().data.owners[0].pets as Item[]).map(pet => pet.id), ['p7', 'p8', 'p9'])
  t.same(linksOf(res.json()).filter(link => link.rel === 'pets').map(link => link.href), ['/v1/pets/p7', '/v1/pets/p8', '/v1/pets/p9'])
})

t.test('a missing many-to-one key embeds null and links nothing', async t => {
  const store = spyStore()
  const app = await buildApp(t, { store, resources: petResources })
  await create(app, 'pets', { name: 'Stray' })
  const res = await get(app, '/v1/pets?expand=owner&include=owner')
  t.equal(res.json().data.pets[0].owner, null)
  t.same(relsOf(res.json()), ['self', 'first', 'last'])
  t.equal(store.getManyCalls.length, 0, 'no keys, no call')
})

t.test('fields keeps the key an expanded or included relation follows', async t => {
  const app = await buildApp(t, { resources: petResources })
  const owner = await create(app, 'owners', { name: 'Ann' })
  const pet = await create(app, 'pets', { name: 'Rex', ownerId: owner.id })
  const list = await get(app, '/v1/pets?fields=name&expand=owner')
  t.same(list.json().data.pets, [{ id: pet.id, name: 'Rex', ownerId: owner.id, owner }])
  const one = await get(app, `/v1/pets/${pet.id}?fields=name&include=owner`)
  t.same(one.json().data.pet, { id: pet.id, name: 'Rex', ownerId: owner.id })
  t.same(one.json().links, [{ rel: 'owner', href: `/v1/owners/${owner.id}`, pet: pet.id }])
  const plain = await get(app, '/v1/pets?fields=name')
  t.same(plain.json().data.pets, [{ id: pet.id, name: 'Rex' }], 'without a relation the key is not added')
})

t.test('nested collections', async t => {
  t.test('list only the parent\'s children', async t => {
    const { app, authors, books } = await fixture(t)
    const res = await get(app, `/v1/authors/${authors[0].id}/books`)
    t.equal(res.statusCode, 200)
    t.same(res.json().data, { books: [books[0], books[1]], pageSize: 20 })
    t.equal(hrefOf(res.json(), 'self'), `/v1/authors/${authors[0].id}/books?pageSize=20`)
    t.same((await get(app, `/v1/authors/${authors[1].id}/books`)).json().data.books, [books[2]])
  })

  t.test('an existing parent without children gives an empty 200', async t => {
    const { app } = await fixture(t)
    const loner = await create(app, 'authors', { name: 'No Books Yet' })
    const res = await get(app, `/v1/authors/${loner.id}/books`)
    t.equal(res.statusCode, 200)
    t.same(res.json().data.books, [])
  })

  t.test('a parent that does not exist is 404', async t => {
    const { app } = await fixture(t)
    const res = await get(app, '/v1/authors/nobody/books')
    t.equal(res.statusCode, 404)
    t.match(res.headers['content-type'], /^application\/problem\+json/)
    t.match(res.json(), { status: 404, instance: '/v1/authors/nobody/books' })
  })

  t.test('filter, simple filters, sort, fields, expand and total work as on the top-level collection', async t => {
    const { app, authors } = await fixture(t)
    await create(app, 'books', { title: 'Always Coming Home', authorId: authors[0].id, year: 1985 })
    const base = `/v1/authors/${authors[0].id}/books`
    const titles = async (query: string) => ((await get(app, `${base}?${query}`)).json().data.books as Item[]).map(b => b.title)
    t.same(await titles('sort=-year'), ['Always Coming Home', 'The Dispossessed', 'The Left Hand of Darkness'])
    t.same(await titles(`filter=${encodeURIComponent('year lt 1980')}&sort=title`), ['The Dispossessed', 'The Left Hand of Darkness'])
    t.same(await titles('year=1969'), ['The Left Hand of Darkness'])
    t.same(await titles(`authorId=${authors[1].id}`), [], 'the scope cannot be widened')
    const res = await get(app, `${base}?fields=year&expand=author&total=true&pageSize=1`)
    t.same(res.json().meta, { pageSize: 1, total: 3 })
    t.same(Object.keys(res.json().data.books[0]).sort(), ['author', 'authorId', 'id', 'title', 'year'])
    const bad = await get(app, `${base}?sort=nope&titel=x`)
    t.equal(bad.statusCode, 400)
    t.same(bad.json().invalidParams.map((p: { name: string }) => p.name), ['sort', 'titel'])
  })

  t.test('token and offset links stay under the nested path and walk every child once', async t => {
    const app = await buildApp(t)
    const { author, books } = await seedMany(app, 7)
    await seedMany(app, 3) // another author's books must not appear
    const base = `/v1/authors/${author.id}/books`
    const tokenPages = await walk(app, `${base}?pageSize=3`, 'next')
    t.same(tokenPages.flatMap(p => idsOf(p)), books.map(b => b.id))
    const offsetPages = await walk(app, `${base}?offset=0&pageSize=3`, 'next')
    t.same(offsetPages.flatMap(p => idsOf(p)), books.map(b => b.id))
    const back = await walk(app, hrefOf(tokenPages[2], 'self') as string, 'prev')
    t.same(back.reverse().flatMap(p => idsOf(p)), books.map(b => b.id))
    for (const page of [...tokenPages, ...offsetPages]) {
      for (const link of linksOf(page)) t.ok(link.href.startsWith(`${base}?`), link.href)
    }
  })

  t.test('a token from one parent is refused under another', async t => {
    const app = await buildApp(t)
    const one = await seedMany(app, 3)
    const two = await seedMany(app, 3)
    const next = hrefOf((await get(app, `/v1/authors/${one.author.id}/books?pageSize=1`)).json(), 'next') as string
    const res = await get(app, next.replace(one.author.id, two.author.id))
    t.equal(res.statusCode, 400)
    t.match(res.json().invalidParams, [{ name: 'token', reason: 'token was issued for a different query' }])
    const top = await get(app, next.replace(`/authors/${one.author.id}/books`, '/books'))
    t.equal(top.statusCode, 400, 'nor at the top-level collection')
  })

  t.test('HEAD and OPTIONS are served; writes are 405', async t => {
    const { app, authors } = await fixture(t)
    const url = `/v1/authors/${authors[0].id}/books`
    const head = await app.inject({ method: 'HEAD', url })
    t.equal(head.statusCode, 200)
    t.equal(head.body, '')
    const options = await app.inject({ method: 'OPTIONS', url })
    t.equal(options.statusCode, 200)
    t.equal(options.headers.allow, 'GET, HEAD, OPTIONS')
    const post = await app.inject({ method: 'POST', url, payload: {} })
    t.equal(post.statusCode, 405)
  })
})
