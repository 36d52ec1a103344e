// LIST with simple filters `?{field}=value` and `?{related}.{field}=value` (spec "Query parameters
// on collections"): coerced to the field's type, ANDed, typos answered with 400.
import t from 'tap'
import { buildApp, create, seed } from './helpers/app.js'
import { get, hrefOf } from './helpers/list-app.js'
import type { Item } from './helpers/list-app.js'

async function names (app: Awaited<ReturnType<typeof buildApp>>, query: string, resource = 'books', key = 'title'): Promise<unknown[]> {
  const res = await get(app, `/v1/${resource}?${query}`)
  if (res.statusCode !== 200) throw new Error(`${query}: ${res.statusCode} ${res.body}`)
  return (res.json().data[resource] as Item[]).map(item => item[key])
}

async function fixture (t: Parameters<typeof buildApp>[0]) {
  const app = await buildApp(t)
  return { app, ...await seed(app) }
}

t.test('a simple filter matches the named field exactly', async t => {
  const { app, authors } = await fixture(t)
  t.same(await names(app, 'title=Solaris'), ['Solaris'])
  t.same(await names(app, 'title=solaris'), [], 'string matching is exact')
  t.same(await names(app, `authorId=${authors[0].id}`), ['The Dispossessed', 'The Left Hand of Darkness'])
  t.same(await names(app, 'title=The%20Dispossessed'), ['The Dispossessed'], 'values are URL-decoded')
})

t.test('values are coerced to the field type', async t => {
  const { app } = await fixture(t)
  t.same(await names(app, 'year=1961'), ['Solaris'], 'integer')
  t.same(await names(app, 'rating=4.5'), ['The Dispossessed'], 'number')
  t.same(await names(app, 'rating=45e-1'), ['The Dispossessed'], 'number with exponent')
  t.same(await names(app, 'available=false'), ['Solaris'], 'boolean')
  t.same(await names(app, 'born=1924-08-28', 'authors', 'name'), ['Janet Frame'], 'date')
})

t.test('null matches null in non-string fields; in string fields it is the text null', async t => {
  const { app } = await fixture(t)
  t.same(await names(app, 'rating=null'), ['Owls Do Cry'])
  t.same(await names(app, 'born=null', 'authors', 'name'), ['Stanisław Lem'])
  await create(app, 'books', { title: 'null', authorId: (await names(app, 'name=Janet%20Frame', 'authors', 'id'))[0] })
  t.same(await names(app, 'title=null'), ['null'])
})

t.test('several simple filters combine with AND; a repeated one matches any of its values', async t => {
  const { app, authors } = await fixture(t)
  t.same(await names(app, `authorId=${authors[0].id}&year=1974`), ['The Dispossessed'])
  t.same(await names(app, `authorId=${authors[0].id}&year=1961`), [])
  t.same(await names(app, 'year=1961&year=1957'), ['Owls Do Cry', 'Solaris'])
  t.same(await names(app, 'rating=null&rating=4.2'), ['Owls Do Cry', 'Solaris'])
})

t.test('dotted names filter on a related resource', async t => {
  const { app } = await fixture(t)
  t.same(await names(app, 'author.country=NZ'), ['Owls Do Cry'])
  t.same(await names(app, 'author.name=Stanis%C5%82aw%20Lem'), ['Solaris'])
  t.same(await names(app, 'author.born=null'), ['Solaris'])
  t.same(await names(app, 'author.country=US&available=true'), ['The Dispossessed', 'The Left Hand of Darkness'])
  // To-many: an author matches when any of their books does.
  t.same(await names(app, 'books.year=1969', 'authors', 'name'), ['Ursula K. Le Guin'])
  t.same(await names(app, 'books.available=false', 'authors', 'name'), ['Stanisław Lem'])
})

t.test('simple filters combine with filter= and stay in page links', async t => {
  const { app } = await fixture(t)
  const res = await get(app, `/v1/books?author.country=US&filter=${encodeURIComponent('year gt 1970')}&pageSize=1`)
  t.same(res.json().data.books.map((b: Item) => b.title), ['The Dispossessed'])
  t.equal(hrefOf(res.json(), 'self'), '/v1/books?filter=year%20gt%201970&author.country=US&pageSize=1')
  const repeated = await get(app, '/v1/books?year=1961&year=1957&pageSize=1')
  const next = hrefOf(repeated.json(), 'next') as string
  t.match(next, /^\/v1\/books\?year=1961&year=1957&pageSize=1&token=/)
  const second = await get(app, next)
  t.equal(second.statusCode, 200)
  t.same(second.json().data.books.map((b: Item) => b.title), ['Solaris'])
})

t.test('a value that does not fit the field type is 400 naming the field', async t => {
  const { app } = await fixture(t)
  const cases: Array<[string, string, RegExp]> = [
    ['year=abc', 'year', /'abc' is not an integer/],
    ['year=1961.5', 'year', /not an integer/],
    ['year=', 'year', /'' is not an integer/],
    ['year=99999999999999999', 'year', /not an integer/],
    ['rating=high', 'rating', /'high' is not a number/],
    ['rating=1e999', 'rating', /not a number/],
    ['available=yes', 'available', /'yes' is not 'true' or 'false'/],
    ['available=null', 'available', /not 'true' or 'false'/],
    ['born=1929-02-30', 'born', /not a date/],
    ['born=yesterday', 'born', /not a date/],
    ['author.born=1929-13-01', 'author.born', /not a date/]
  ]
  for (const [query, name, reason] of cases) {
    const resource = query.startsWith('born') ? 'authors' : 'books'
    const res = await get(app, `/v1/${resource}?${query}`)
    t.equal(res.statusCode, 400, query)
    t.match(res.headers['content-type'], /^application\/problem\+json/)
    t.match(res.json(), { status: 400, invalidParams: [{ name, reason }] }, query)
  }
})

t.test('unknown query parameters are 400, so typos never pass silently', async t => {
  const { app } = await fixture(t)
  for (const [query, name] of [['titel=Solaris', 'titel'], ['pagesize=2', 'pagesize'], ['author.nope=1', 'author.nope'], ['nope.country=NZ', 'nope.country'], ['author=x', 'author'], ['author.books.title=x', 'author.books.title']]) {
    const res = await get(app, `/v1/books?${query}`)
    t.equal(res.statusCode, 400, query)
    t.match(res.json(), { invalidParams: [{ name, reason: 'unknown query parameter or field' }] }, query)
  }
  const several = await get(app, '/v1/books?titel=x&yaer=1&year=x')
  t.same(several.json().invalidParams.map((p: { name: string }) => p.name).sort(), ['titel', 'year', 'yaer'].sort())
})

t.test('unknown query parameters on RETRIEVE are 400 too', async t => {
  const { app, books } = await fixture(t)
  const res = await get(app, `/v1/books/${books[0].id}?title=x`)
  t.equal(res.statusCode, 400)
  t.match(res.json(), { invalidParams: [{ name: 'title', reason: 'unknown query parameter' }] })
})
