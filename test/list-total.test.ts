// `total` on LIST (spec "Paging" → "Total", "Limits"): off by default and then not
// asked of the store; `total=true` counts every match across pages, in meta and optionally at the root.
import t from 'tap'
import { buildApp } from './helpers/app.js'
import { get, hrefOf, seedMany, spyStore, walk } from './helpers/list-app.js'

const filter = encodeURIComponent('available eq true')

t.test('total is off by default, and the store is not asked to count', async t => {
  const store = spyStore()
  const app = await buildApp(t, { store })
  await seedMany(app, 12)
  store.lists.length = 0
  const pages = await walk(app, '/v1/books?pageSize=5', 'next')
  t.equal(pages.length, 3)
  for (const page of pages) {
    t.notOk('total' in page.meta)
    t.notOk('total' in page)
  }
  t.equal(store.lists.length, 3, 'one store call per page')
  t.ok(store.lists.every(query => !query.total), 'no count requested')
  const explicit = await get(app, '/v1/books?total=false')
  t.notOk('total' in explicit.json().meta)
  t.notOk(store.lists[store.lists.length - 1].total)
})

t.test('total=true counts every match across pages, in meta', async t => {
  const store = spyStore()
  const app = await buildApp(t, { store })
  await seedMany(app, 12) // index % 3 !== 0 is available: 8 of 12
  const res = await get(app, `/v1/books?filter=${filter}&pageSize=3&total=true`)
  t.equal(res.statusCode, 200)
  t.same(res.json().meta, { pageSize: 3, total: 8 })
  t.notOk('total' in res.json(), 'not at the root unless configured')
  t.ok(store.lists[store.lists.length - 1].total, 'the store is asked to count')
  // The next page keeps total=true and still counts the whole result.
  const next = hrefOf(res.json(), 'next') as string
  t.match(next, /total=true/)
  t.same((await get(app, next)).json().meta, { pageSize: 3, total: 8 })
})

t.test('total counts the matches of simple filters and nested scopes too', async t => {
  const app = await buildApp(t)
  const { author } = await seedMany(app, 12)
  t.equal((await get(app, '/v1/books?available=false&total=true')).json().meta.total, 4)
  t.equal((await get(app, `/v1/authors/${author.id}/books?year=null&total=true`)).json().meta.total, 2)
  t.equal((await get(app, '/v1/books?title=none&total=true')).json().meta.total, 0)
})

t.test('pageSize=0 with total=true returns only the count', async t => {
  const app = await buildApp(t)
  await seedMany(app, 7)
  const res = await get(app, '/v1/books?pageSize=0&total=true')
  t.same(res.json().data, { books: [], pageSize: 0 })
  t.same(res.json().meta, { pageSize: 0, total: 7 })
})

t.test('total works with offset paging and gives last', async t => {
  const app = await buildApp(t)
  await seedMany(app, 12)
  const res = await get(app, '/v1/books?offset=5&pageSize=5&total=true')
  t.same(res.json().meta, { pageSize: 5, offset: 5, pageOffset: 2, total: 12 })
  t.equal(hrefOf(res.json(), 'last'), '/v1/books?total=true&pageSize=5&offset=10')
})

t.test('on the last page the count is known without asking the store for it', async t => {
  const store = spyStore()
  const app = await buildApp(t, { store })
  await seedMany(app, 12)
  const res = await get(app, '/v1/books?offset=10&pageSize=5')
  t.notOk(store.lists[store.lists.length - 1].total)
  t.notOk('total' in res.json().meta, 'not returned unasked')
  t.equal(hrefOf(res.json(), 'last'), '/v1/books?pageSize=5&offset=10', 'but last is linked')
})

t.test('totalAtRoot also puts total at the root of the response', async t => {
  const app = await buildApp(t, { totalAtRoot: true })
  await seedMany(app, 4)
  const res = await get(app, '/v1/books?total=true&pageSize=1')
  t.equal(res.json().total, 4)
  t.equal(res.json().meta.total, 4)
  const without = await get(app, '/v1/books?pageSize=1')
  t.notOk('total' in without.json())
})

t.test('a total that is not true or false is 400 naming total', async t => {
  const app = await buildApp(t)
  for (const value of ['yes', '1', 'TRUE', '']) {
    const res = await get(app, `/v1/books?total=${value}`)
    t.equal(res.statusCode, 400, value)
    t.match(res.headers['content-type'], /^application\/problem\+json/)
    t.match(res.json(), { status: 400, invalidParams: [{ name: 'total', reason: "must be 'true', 'false' or 'estimated'" }] })
  }
  const twice = await get(app, '/v1/books?total=true&total=true')
  t.match(twice.json().invalidParams, [{ name: 'total', reason: 'must be given at most once' }])
})
