// `fields=` on LIST and RETRIEVE (spec "Query parameters on collections": fields): the
// requested fields plus the mandatory ones, nothing more — the compiled serializer adds nothing back.
import t from 'tap'
import { buildApp, seed } from './helpers/app.js'
import { get, hrefOf, withParam } from './helpers/list-app.js'

async function fixture (t: Parameters<typeof buildApp>[0]) {
  const app = await buildApp(t)
  return { app, ...await seed(app) }
}

t.test('fields returns the requested fields plus id and the required ones', async t => {
  const { app, books, authors } = await fixture(t)
  const res = await get(app, '/v1/books?fields=year&sort=year&pageSize=1')
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  t.same(res.json().data.books, [{ id: books[2].id, title: 'Owls Do Cry', authorId: authors[1].id, year: 1957 }])
  const authorsRes = await get(app, '/v1/authors?fields=country&pageSize=1')
  t.same(authorsRes.json().data.authors, [{ id: authors[0].id, name: 'Ursula K. Le Guin', country: 'US' }])
})

t.test('mandatory fields alone, when only they are asked for', async t => {
  const { app, books } = await fixture(t)
  const res = await get(app, '/v1/books?fields=id&pageSize=1')
  t.same(res.json().data.books, [{ id: books[0].id, title: books[0].title, authorId: books[0].authorId }])
})

t.test('a default in the schema is not written back for a field left out', async t => {
  const { app } = await fixture(t)
  // `available` has `default: true`; the serializer would invent it if the response schema kept the default.
  const res = await get(app, '/v1/books?fields=title')
  for (const book of res.json().data.books) t.notOk('available' in book)
  t.notOk(res.body.includes('available'))
})

t.test('null values of selected fields are returned as null', async t => {
  const { app } = await fixture(t)
  const res = await get(app, '/v1/books?fields=rating&rating=null')
  t.same(Object.keys(res.json().data.books[0]).sort(), ['authorId', 'id', 'rating', 'title'])
  t.equal(res.json().data.books[0].rating, null)
})

t.test('names may be repeated or padded with spaces', async t => {
  const { app, books } = await fixture(t)
  const res = await get(app, '/v1/books?fields=year,%20rating,year&pageSize=1')
  t.same(res.json().data.books, [{ id: books[0].id, title: books[0].title, authorId: books[0].authorId, year: 1974, rating: 4.5 }])
})

t.test('unknown field names are 400 naming fields, each one reported', async t => {
  const { app } = await fixture(t)
  for (const fields of ['nope', 'title,nope', '', 'author', 'author.name']) {
    const res = await get(app, `/v1/books?fields=${encodeURIComponent(fields)}`)
    t.equal(res.statusCode, 400, fields)
    t.match(res.headers['content-type'], /^application\/problem\+json/)
    t.match(res.json(), { status: 400, invalidParams: [{ name: 'fields', reason: /^unknown field/ }] }, fields)
  }
  const two = await get(app, '/v1/books?fields=a,b')
  t.same(two.json().invalidParams, [{ name: 'fields', reason: "unknown field 'a'" }, { name: 'fields', reason: "unknown field 'b'" }])
  const repeated = await get(app, '/v1/books?fields=title&fields=nope&fields=a,b')
  t.same(repeated.json().invalidParams, [{ name: 'fields', reason: "unknown field 'nope'" }, { name: 'fields', reason: "unknown field 'a'" }, { name: 'fields', reason: "unknown field 'b'" }])
})

t.test('fields repeated reads as fields comma-separated, on LIST and RETRIEVE, and page links keep the form sent', async t => {
  const { app, books } = await fixture(t)
  for (const [repeated, comma] of [['/v1/books?fields=year&fields=rating', '/v1/books?fields=year,rating'], [`/v1/books/${books[0].id}?fields=year&fields=rating`, `/v1/books/${books[0].id}?fields=year,rating`]]) {
    const [one, other] = [await get(app, repeated), await get(app, comma)]
    t.equal(one.statusCode, 200, repeated)
    t.same(one.json().data, other.json().data, repeated)
  }
  const first = await get(app, '/v1/books?fields=year&fields=rating&pageSize=2')
  t.match(hrefOf(first.json(), 'next'), /^\/v1\/books\?fields=year&fields=rating&pageSize=2&token=/)
  const second = await get(app, hrefOf(first.json(), 'next') as string)
  t.equal(second.statusCode, 200)
  for (const book of second.json().data.books) t.same(Object.keys(book).sort(), ['authorId', 'id', 'rating', 'title', 'year'])
})

t.test('fields applies to RETRIEVE too', async t => {
  const { app, authors } = await fixture(t)
  const res = await get(app, `/v1/authors/${authors[1].id}?fields=born`)
  t.equal(res.statusCode, 200)
  t.same(res.json().data, { author: { id: authors[1].id, name: 'Janet Frame', born: '1924-08-28' } })
  const bad = await get(app, `/v1/authors/${authors[1].id}?fields=nope`)
  t.equal(bad.statusCode, 400)
  t.match(bad.json().invalidParams, [{ name: 'fields', reason: "unknown field 'nope'" }])
})

t.test('fields is kept in page links and applies on every page', async t => {
  const { app } = await fixture(t)
  const first = await get(app, '/v1/books?fields=year&pageSize=2')
  const next = hrefOf(first.json(), 'next') as string
  t.match(next, /^\/v1\/books\?fields=year&pageSize=2&token=/)
  const second = await get(app, next)
  for (const book of second.json().data.books) t.same(Object.keys(book).sort(), ['authorId', 'id', 'title', 'year'])
})

t.test('a token is refused with other fields, but not with the same fields in another order', async t => {
  const { app } = await fixture(t)
  const first = await get(app, '/v1/books?fields=year,rating&pageSize=2')
  const next = hrefOf(first.json(), 'next') as string
  const other = await get(app, withParam(next, 'fields', 'year'))
  t.equal(other.statusCode, 400)
  t.match(other.json().invalidParams, [{ name: 'token', reason: 'token was issued for a different query' }])
  const none = await get(app, withParam(next, 'fields', null))
  t.equal(none.statusCode, 400)
  const reordered = await get(app, withParam(next, 'fields', 'rating,year'))
  t.equal(reordered.statusCode, 200, 'the same set of fields')
})

t.test('fields with expand keeps the embedded resource and the key it follows', async t => {
  const { app, authors } = await fixture(t)
  const res = await get(app, '/v1/books?fields=year&expand=author&pageSize=1')
  t.same(res.json().data.books, [{ id: res.json().data.books[0].id, title: 'The Dispossessed', authorId: authors[0].id, year: 1974, author: { ...authors[0] } }])
})
