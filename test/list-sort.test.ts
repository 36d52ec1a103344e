// LIST with `sort=` (spec "Sorting", "Paging stability" 1): ascending by default,
// `-` for descending, NULL lowest, the id as the final tie-breaker in the last key's direction,
// unknown or unsortable fields 400.
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { defineResource, memoryStore } from '../lib/index.js'
import { buildApp, create, seed } from './helpers/app.js'
import { get, hrefOf, idsOf, walk } from './helpers/list-app.js'
import type { Item } from './helpers/list-app.js'

async function sorted (app: Awaited<ReturnType<typeof buildApp>>, sort: string, key = 'title', resource = 'books'): Promise<unknown[]> {
  const res = await get(app, `/v1/${resource}?sort=${encodeURIComponent(sort)}&pageSize=100`)
  if (res.statusCode !== 200) throw new Error(`${sort}: ${res.statusCode} ${res.body}`)
  return (res.json().data[resource] as Item[]).map(item => item[key])
}

async function fixture (t: Parameters<typeof buildApp>[0]) {
  const app = await buildApp(t)
  return { app, ...await seed(app) }
}

t.test('without sort, items come in id order', async t => {
  const { app, books } = await fixture(t)
  const res = await get(app, '/v1/books')
  t.same(idsOf(res.json()), books.map(b => b.id).sort())
})

t.test('sort is ascending by default and descending with a dash', async t => {
  const { app } = await fixture(t)
  t.same(await sorted(app, 'title'), ['Owls Do Cry', 'Solaris', 'The Dispossessed', 'The Left Hand of Darkness'])
  t.same(await sorted(app, '-title'), ['The Left Hand of Darkness', 'The Dispossessed', 'Solaris', 'Owls Do Cry'])
  t.same(await sorted(app, 'year', 'year'), [1957, 1961, 1969, 1974])
  t.same(await sorted(app, '-year', 'year'), [1974, 1969, 1961, 1957])
  t.same(await sorted(app, '+year', 'year'), [1957, 1961, 1969, 1974], 'an explicit plus is ascending')
  t.same(await sorted(app, 'available', 'available'), [false, true, true, true], 'false before true')
  t.same(await sorted(app, 'born', 'name', 'authors'), ['Stanisław Lem', 'Janet Frame', 'Ursula K. Le Guin'], 'dates')
})

t.test('NULL sorts below every value: first ascending, last descending', async t => {
  const { app } = await fixture(t)
  t.same(await sorted(app, 'rating', 'rating'), [null, 4.2, 4.5, 4.6])
  t.same(await sorted(app, '-rating', 'rating'), [4.6, 4.5, 4.2, null])
  t.same(await sorted(app, '-born', 'born', 'authors'), ['1929-10-21', '1924-08-28', null])
})

t.test('later expressions order the items that tie on earlier ones', async t => {
  const { app, authors } = await fixture(t)
  await create(app, 'books', { title: 'Aardvark', authorId: authors[1].id, year: 1974, rating: 1 })
  t.same(await sorted(app, '-year,title'), ['Aardvark', 'The Dispossessed', 'The Left Hand of Darkness', 'Solaris', 'Owls Do Cry'])
  t.same(await sorted(app, '-year,-title'), ['The Dispossessed', 'Aardvark', 'The Left Hand of Darkness', 'Solaris', 'Owls Do Cry'])
  t.same(await sorted(app, 'available, -rating'), ['Solaris', 'The Left Hand of Darkness', 'The Dispossessed', 'Aardvark', 'Owls Do Cry'], 'spaces around names are ignored')
})

t.test('the id breaks every remaining tie, in the direction of the last sort key', async t => {
  const { app, authors } = await fixture(t)
  const twins = []
  for (let i = 0; i < 5; i++) twins.push((await create(app, 'books', { title: 'Twin', authorId: authors[0].id, year: 2000 })).id)
  const ascending = [...twins].sort()
  const twinIds = async (sort: string) => {
    const res = await get(app, `/v1/books?${sort === '' ? '' : `sort=${sort}&`}title=Twin`)
    return idsOf(res.json())
  }
  const descending = [...ascending].reverse()
  t.same(await twinIds(''), ascending, 'without sort, ascending')
  t.same(await twinIds('title'), ascending)
  t.same(await twinIds('-title'), descending)
  t.same(await twinIds('-year,-title'), descending)
  t.same(await twinIds('-year,title'), ascending, 'only the last key counts')
  t.same(await twinIds('year,-title'), descending)
  t.same(await twinIds('-id'), descending, 'sorting on the id itself is allowed, in either direction')
  t.same(await twinIds('-title,id'), ascending, 'a named id keeps its own direction')
  t.same(await twinIds('-title,-id'), descending)
})

t.test('sort applies across token pages, ties included', async t => {
  const { app, authors } = await fixture(t)
  for (let i = 0; i < 6; i++) await create(app, 'books', { title: `Same ${i % 2}`, authorId: authors[0].id, year: 1969 })
  const pages = await walk(app, '/v1/books?sort=-year,rating&pageSize=2', 'next')
  const items = pages.flatMap(page => page.data.books as Item[])
  const expected = (await sorted(app, '-year,rating', 'id'))
  t.same(items.map(item => item.id), expected)
  t.equal(new Set(expected).size, 10)
  t.equal(pages.length, 5)
  t.match(hrefOf(pages[0], 'next'), /sort=-year%2Crating&pageSize=2&token=/)
})

t.test('unknown, relational, repeated or empty sort expressions are 400 naming sort', async t => {
  const { app } = await fixture(t)
  const cases: Array<[string, RegExp]> = [
    ['titel', /unknown field 'titel'/],
    ['author', /unknown field 'author'/],
    ['author.name', /unknown field 'author.name'/],
    ['title,-title', /'title' appears more than once/],
    ['-', /unknown field ''/],
    ['title,', /unknown field ''/],
    ['', /unknown field ''/],
    ['--title', /unknown field '-title'/]
  ]
  for (const [sort, reason] of cases) {
    const res = await get(app, `/v1/books?sort=${encodeURIComponent(sort)}`)
    t.equal(res.statusCode, 400, sort)
    t.match(res.headers['content-type'], /^application\/problem\+json/)
    t.match(res.json(), { status: 400, invalidParams: [{ name: 'sort', reason }] }, sort)
  }
  const twice = await get(app, '/v1/books?sort=title&sort=-title')
  t.equal(twice.statusCode, 400)
  t.same(twice.json().invalidParams, [{ name: 'sort', reason: "'title' appears more than once" }])
})

t.test('sort repeated reads as sort comma-separated, and a token opens with either form', async t => {
  const { app, authors } = await fixture(t)
  for (let i = 0; i < 4; i++) await create(app, 'books', { title: `Same ${i % 2}`, authorId: authors[0].id, year: 1969 })
  t.same(await sorted(app, '-year,title', 'id'), (await get(app, '/v1/books?sort=-year&sort=title&pageSize=100')).json().data.books.map((book: Item) => book.id))
  const pages = await walk(app, '/v1/books?sort=-year&sort=title&pageSize=3', 'next')
  t.same(pages.flatMap(page => page.data.books as Item[]).map(item => item.id), await sorted(app, '-year,title', 'id'))
  t.match(hrefOf(pages[0], 'next'), /^\/v1\/books\?sort=-year&sort=title&pageSize=3&token=/, 'links keep the form sent')
  const token = new URL(hrefOf(pages[0], 'next') as string, 'http://x').searchParams.get('token') as string
  const comma = await get(app, `/v1/books?sort=-year,title&pageSize=3&token=${encodeURIComponent(token)}`)
  t.same(comma.json().data, pages[1].data, 'the token is bound to the order, not to how it was written')
})

t.test('a field holding objects or arrays cannot be sorted', async t => {
  const store = memoryStore()
  const notes = defineResource({
    name: 'notes',
    singular: 'note',
    store,
    schema: Type.Object({ id: Type.Readonly(Type.String()), tags: Type.Array(Type.String()) }, { additionalProperties: false })
  })
  const app = await buildApp(t, { store, resources: () => [notes] })
  const res = await get(app, '/v1/notes?sort=tags')
  t.equal(res.statusCode, 400)
  t.match(res.json().invalidParams, [{ name: 'sort', reason: "'tags' cannot be sorted" }])
})
