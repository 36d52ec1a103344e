// Paging of LIST (spec "Paging": token-based, client-driven, page size, page links, paging
// stability; "Errors" 10–11): keyset tokens by default, offset and pageOffset
// on request, every invalid value a 400 naming its parameter.
import t, { type Test } from 'tap'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { defineResource, memoryStore } from '../lib/index.js'
import { buildApp, create } from './helpers/app.js'
import { get, hrefOf, idsOf, paramOf, relsOf, seedMany, walk, withParam } from './helpers/list-app.js'
import type { Item } from './helpers/list-app.js'

async function fixture (t: Parameters<typeof buildApp>[0], count = 25, options: Parameters<typeof buildApp>[1] = {}) {
  const app = await buildApp(t, options)
  const { author, books } = await seedMany(app, count)
  return { app, author, ids: books.map(book => book.id) }
}

async function page (app: FastifyInstance, url: string) {
  const res = await get(app, url)
  if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`)
  return res.json()
}

async function remove (app: FastifyInstance, id: string) {
  const res = await app.inject({ method: 'DELETE', url: `/v1/books/${id}` })
  if (res.statusCode !== 204) throw new Error(`delete ${id}: ${res.statusCode}`)
}

async function rejects (t: Test, app: FastifyInstance, url: string, name: string, reason: string | RegExp) {
  const res = await get(app, url)
  t.equal(res.statusCode, 400, url)
  t.match(res.headers['content-type'], /^application\/problem\+json/)
  t.match(res.json(), { status: 400, invalidParams: [{ name, reason }] }, url)
}

t.test('token paging', async t => {
  t.test('is the default: the first page has self, first and a next link carrying a token and the page size', async t => {
    const { app, ids } = await fixture(t)
    const body = await page(app, '/v1/books?pageSize=10')
    t.same(idsOf(body), ids.slice(0, 10))
    t.same(body.meta, { pageSize: 10 })
    t.same(relsOf(body), ['self', 'first', 'next', 'last'])
    t.equal(hrefOf(body, 'self'), '/v1/books?pageSize=10')
    t.equal(hrefOf(body, 'first'), '/v1/books?pageSize=10')
    const next = hrefOf(body, 'next') as string
    t.match(next, /^\/v1\/books\?pageSize=10&token=[A-Za-z0-9_-]+$/)
  })

  t.test('following next visits every item once; the last page has no next and is its own last', async t => {
    const { app, ids } = await fixture(t)
    const pages = await walk(app, '/v1/books?pageSize=10', 'next')
    t.equal(pages.length, 3)
    t.same(pages.flatMap(p => idsOf(p)), ids)
    const last = pages[2]
    t.same(relsOf(last), ['self', 'first', 'prev', 'last'])
    t.equal(hrefOf(last, 'last'), hrefOf(last, 'self'))
    t.equal(hrefOf(pages[1], 'self'), hrefOf(pages[0], 'next'), 'self carries the token the page was read with')
  })

  t.test('an exact multiple ends with a full page followed by no next', async t => {
    const { app, ids } = await fixture(t, 20)
    const pages = await walk(app, '/v1/books?pageSize=10', 'next')
    t.same(pages.map(p => idsOf(p).length), [10, 10])
    t.same(pages.flatMap(p => idsOf(p)), ids)
  })

  t.test('last reads backwards from the end: the last page, its own last, and prev from it walks back to the start', async t => {
    const { app, ids } = await fixture(t, 25)
    const first = await page(app, '/v1/books?pageSize=10')
    const last = await page(app, hrefOf(first, 'last') as string)
    t.same(idsOf(last), ids.slice(15, 25), 'the last ten, in order')
    t.same(relsOf(last), ['self', 'first', 'prev', 'last'])
    t.equal(hrefOf(last, 'last'), hrefOf(last, 'self'))
    t.match(hrefOf(last, 'self'), /^\/v1\/books\?pageSize=10&token=/)
    const pages = await walk(app, hrefOf(first, 'last') as string, 'prev')
    t.same(pages.map(p => idsOf(p)).reverse().flat(), ids, 'every item once, back to the start')
    // The token is bound to its query, as every token is; the page size may change.
    t.equal((await app.inject({ url: (hrefOf(first, 'last') as string).replace('/v1/books?', '/v1/books?sort=-year&') })).statusCode, 400)
    t.same(idsOf(await page(app, (hrefOf(first, 'last') as string).replace('pageSize=10', 'pageSize=4'))), ids.slice(21, 25))
    const sorted = await page(app, '/v1/books?pageSize=5&sort=-title&filter=year ge 0')
    const sortedLast = await page(app, hrefOf(sorted, 'last') as string)
    const all = await page(app, '/v1/books?pageSize=100&sort=-title&filter=year ge 0')
    t.same(idsOf(sortedLast), idsOf(all).slice(-5), 'filtered and sorted: the end of that order')
  })

  t.test('prev returns the previous page, and the first page reached backwards has no prev', async t => {
    const { app, ids } = await fixture(t)
    const first = await page(app, '/v1/books?pageSize=10')
    const second = await page(app, hrefOf(first, 'next') as string)
    t.same(relsOf(second), ['self', 'first', 'prev', 'next', 'last'])
    const back = await page(app, hrefOf(second, 'prev') as string)
    t.same(idsOf(back), ids.slice(0, 10))
    t.same(relsOf(back), ['self', 'first', 'next', 'last'])
    t.same(idsOf(await page(app, hrefOf(back, 'next') as string)), ids.slice(10, 20), 'and next from it goes forward again')
    t.same(idsOf(await page(app, hrefOf(second, 'first') as string)), ids.slice(0, 10))
  })

  t.test('following prev from the last page visits every item once, back to the start', async t => {
    const { app, ids } = await fixture(t)
    const forward = await walk(app, '/v1/books?pageSize=7&sort=-year,rating', 'next')
    const backward = await walk(app, hrefOf(forward[forward.length - 1], 'self') as string, 'prev')
    t.same([...backward].reverse().flatMap(p => idsOf(p)), forward.flatMap(p => idsOf(p)))
    t.equal(new Set(forward.flatMap(p => idsOf(p))).size, ids.length)
    t.same(backward.map(p => idsOf(p).length), [4, 7, 7, 7], 'backwards, the short page is at the start')
  })

  t.test('the page size may change between pages', async t => {
    const { app, ids } = await fixture(t)
    const first = await page(app, '/v1/books?pageSize=3')
    const next = withParam(hrefOf(first, 'next') as string, 'pageSize', '8')
    const second = await page(app, next)
    t.same(idsOf(second), ids.slice(3, 11))
    t.equal(paramOf(hrefOf(second, 'next') as string, 'pageSize'), '8')
  })

  t.test('a page whose anchor item was deleted still continues in both directions', async t => {
    const { app, ids } = await fixture(t)
    const first = await page(app, '/v1/books?pageSize=5')
    const second = await page(app, hrefOf(first, 'next') as string)
    await remove(app, ids[4]) // the anchor of `next`
    await remove(app, ids[5]) // the anchor of second's `prev`
    t.same(idsOf(await page(app, hrefOf(first, 'next') as string)), ids.slice(6, 11))
    t.same(idsOf(await page(app, hrefOf(second, 'prev') as string)), ids.slice(0, 4))
    t.same(idsOf(await page(app, hrefOf(second, 'next') as string)), ids.slice(10, 15))
  })

  t.test('items created behind the position are not seen, items created ahead are', async t => {
    const { app, author, ids } = await fixture(t, 6)
    const first = await page(app, '/v1/books?pageSize=3&sort=title')
    await create(app, 'books', { title: 'A first', authorId: author.id })
    const late = await create(app, 'books', { title: 'Z last', authorId: author.id })
    const rest = await walk(app, hrefOf(first, 'next') as string, 'next')
    t.same(rest.flatMap(p => idsOf(p)), [...ids.slice(3), late.id])
  })

  t.test('an empty collection has self, first and last, and no next or prev', async t => {
    const app = await buildApp(t)
    const body = await page(app, '/v1/books')
    t.same(body.data, { books: [], pageSize: 20 })
    t.same(relsOf(body), ['self', 'first', 'last'])
  })

  t.test('a next page emptied meanwhile is 200 with the way back through first', async t => {
    const { app, ids } = await fixture(t, 6)
    const first = await page(app, '/v1/books?pageSize=3')
    const second = await page(app, hrefOf(first, 'next') as string)
    for (const id of ids.slice(3)) await remove(app, id)
    const empty = await page(app, hrefOf(first, 'next') as string)
    t.same(empty.data.books, [])
    // No prev: the page before it is the last page, which a keyset cannot name; its anchor must not be skipped.
    t.same(relsOf(empty), ['self', 'first'])
    t.same(idsOf(await page(app, hrefOf(empty, 'first') as string)), ids.slice(0, 3))
    const beyond = await page(app, hrefOf(second, 'self') as string)
    t.same(relsOf(beyond), ['self', 'first'])
  })

  t.test('a prev page emptied meanwhile is 200 with next leading to the first page', async t => {
    const { app, ids } = await fixture(t, 9)
    const first = await page(app, '/v1/books?pageSize=3')
    const second = await page(app, hrefOf(first, 'next') as string)
    const third = await page(app, hrefOf(second, 'next') as string)
    for (const id of ids.slice(0, 6)) await remove(app, id)
    const empty = await page(app, hrefOf(third, 'prev') as string)
    t.same(empty.data.books, [])
    t.same(relsOf(empty), ['self', 'first', 'next'])
    t.equal(hrefOf(empty, 'next'), hrefOf(empty, 'first'))
    t.same(idsOf(await page(app, hrefOf(empty, 'next') as string)), ids.slice(6, 9), 'nothing between is skipped')
  })

  t.test('pageSize=0 with a token returns no items, with self and first only', async t => {
    const { app } = await fixture(t, 6)
    const first = await page(app, '/v1/books?pageSize=3')
    const zero = await page(app, withParam(hrefOf(first, 'next') as string, 'pageSize', '0'))
    t.same(zero.data, { books: [], pageSize: 0 })
    t.same(relsOf(zero), ['self', 'first'])
  })

  t.test('tokens from rotated-out keys are refused, rotated-in ones accepted', async t => {
    const old = 'the-old-secret-0123456789'
    const a = await buildApp(t, { cursorSecret: old })
    await seedMany(a, 4)
    const next = hrefOf(await page(a, '/v1/books?pageSize=2'), 'next') as string
    const rotated = await buildApp(t, { cursorSecret: ['the-new-secret-0123456789', old] })
    await seedMany(rotated, 4)
    t.equal((await get(rotated, next)).statusCode, 200, 'an older key still opens')
    const forgotten = await buildApp(t, { cursorSecret: 'the-new-secret-0123456789' })
    await rejects(t, forgotten, next, 'token', 'token is not authentic')
  })

  t.test('tampered, truncated, garbled or foreign tokens are 400 naming token', async t => {
    const { app } = await fixture(t, 6)
    const next = hrefOf(await page(app, '/v1/books?pageSize=2'), 'next') as string
    const token = paramOf(next, 'token') as string
    const middle = Math.floor(token.length / 2)
    const flipped = token.slice(0, middle) + (token[middle] === 'A' ? 'B' : 'A') + token.slice(middle + 1)
    await rejects(t, app, withParam(next, 'token', flipped), 'token', /token is (not authentic|malformed|issued for a different query)/)
    await rejects(t, app, withParam(next, 'token', token.slice(0, -4)), 'token', /not authentic|malformed/)
    await rejects(t, app, withParam(next, 'token', token.slice(0, 20)), 'token', 'token is malformed')
    await rejects(t, app, withParam(next, 'token', 'not a token!'), 'token', 'token is malformed')
    await rejects(t, app, withParam(next, 'token', ''), 'token', 'token is malformed')
    // A genuine token, for another collection.
    await rejects(t, app, next.replace('/v1/books', '/v1/authors'), 'token', 'token was issued for a different query')
    // And from another deployment.
    const other = await buildApp(t, { cursorSecret: 'another-secret-entirely-42' })
    await rejects(t, other, next, 'token', 'token is not authentic')
  })

  t.test('a token sent with another filter, sort or simple filter is 400 naming token', async t => {
    const { app, author } = await fixture(t, 6)
    const next = hrefOf(await page(app, `/v1/books?pageSize=2&sort=title&filter=${encodeURIComponent('year ne null')}&authorId=${author.id}`), 'next') as string
    t.equal((await get(app, next)).statusCode, 200)
    const foreign = 'token was issued for a different query'
    await rejects(t, app, withParam(next, 'filter', 'year ne 1'), 'token', foreign)
    await rejects(t, app, withParam(next, 'filter', null), 'token', foreign)
    await rejects(t, app, withParam(next, 'sort', '-title'), 'token', foreign)
    await rejects(t, app, withParam(next, 'sort', 'title,year'), 'token', foreign)
    await rejects(t, app, withParam(next, 'authorId', 'x'), 'token', foreign)
    await rejects(t, app, `${next}&title=x`, 'token', foreign)
    t.equal((await get(app, withParam(next, 'total', 'true'))).statusCode, 200, 'total does not change the sequence')
  })

  t.test('an expired token is 400 naming token', async t => {
    // The codec reads Date.now through the function it captured at registration: wrap it first.
    const realNow = Date.now
    let skew = 0
    Date.now = () => realNow() + skew
    t.teardown(() => { Date.now = realNow })
    const { app } = await fixture(t, 4, { cursorTtlSeconds: 60 })
    const next = hrefOf(await page(app, '/v1/books?pageSize=2'), 'next') as string
    skew = 59_000
    t.equal((await get(app, next)).statusCode, 200, 'still valid within its lifetime')
    // Shared by the pages of its second, a link's token lives up to a second longer than the ttl.
    skew = 62_000
    await rejects(t, app, next, 'token', 'token has expired')
  })

  t.test('a token with offset, pageOffset or page, or given twice, is 400', async t => {
    const { app } = await fixture(t, 4)
    const next = hrefOf(await page(app, '/v1/books?pageSize=2'), 'next') as string
    for (const extra of ['offset=2', 'pageOffset=2', 'page=2']) {
      await rejects(t, app, `${next}&${extra}`, 'token', 'a token cannot be combined with offset or pageOffset')
    }
    await rejects(t, app, `${next}&token=${paramOf(next, 'token')}`, 'token', 'must be given at most once')
  })
})

t.test('offset paging', async t => {
  t.test('offset selects the 0-based start and is echoed with the page number in meta and data', async t => {
    const { app, ids } = await fixture(t)
    const body = await page(app, '/v1/books?offset=5&pageSize=5')
    t.same(idsOf(body), ids.slice(5, 10))
    t.same(body.meta, { pageSize: 5, offset: 5, pageOffset: 2 })
    t.equal(body.data.pageOffset, 2)
    t.equal(body.data.pageSize, 5)
    t.same(body.links, [
      { rel: 'self', href: '/v1/books?pageSize=5&offset=5' },
      { rel: 'first', href: '/v1/books?pageSize=5&offset=0' },
      { rel: 'prev', href: '/v1/books?pageSize=5&offset=0' },
      { rel: 'next', href: '/v1/books?pageSize=5&offset=10' }
    ], 'no last: the count is not known')
  })

  t.test('an offset need not be a multiple of the page size', async t => {
    const { app, ids } = await fixture(t)
    const body = await page(app, '/v1/books?offset=3&pageSize=5')
    t.same(idsOf(body), ids.slice(3, 8))
    t.same(body.meta, { pageSize: 5, offset: 3, pageOffset: 1 })
    t.equal(hrefOf(body, 'prev'), '/v1/books?pageSize=5&offset=0')
    t.equal(hrefOf(body, 'next'), '/v1/books?pageSize=5&offset=8')
  })

  t.test('pageOffset selects the 1-based page, and links keep that form', async t => {
    const { app, ids } = await fixture(t)
    const body = await page(app, '/v1/books?pageOffset=2&pageSize=5')
    t.same(idsOf(body), ids.slice(5, 10))
    t.same(body.meta, { pageSize: 5, offset: 5, pageOffset: 2 })
    t.same(body.links, [
      { rel: 'self', href: '/v1/books?pageSize=5&pageOffset=2' },
      { rel: 'first', href: '/v1/books?pageSize=5&pageOffset=1' },
      { rel: 'prev', href: '/v1/books?pageSize=5&pageOffset=1' },
      { rel: 'next', href: '/v1/books?pageSize=5&pageOffset=3' }
    ])
  })

  t.test('page is accepted as an alias of pageOffset', async t => {
    const { app, ids } = await fixture(t)
    const body = await page(app, '/v1/books?page=3&pageSize=5')
    t.same(idsOf(body), ids.slice(10, 15))
    t.same(body.meta, { pageSize: 5, offset: 10, pageOffset: 3 })
    t.equal(hrefOf(body, 'self'), '/v1/books?pageSize=5&pageOffset=3')
  })

  t.test('with offset as the configured default, the defaults offset=0 and pageOffset=1 are echoed', async t => {
    const { app, ids } = await fixture(t, 25, { paging: 'offset' })
    const body = await page(app, '/v1/books?pageSize=10')
    t.same(idsOf(body), ids.slice(0, 10))
    t.same(body.meta, { pageSize: 10, offset: 0, pageOffset: 1 })
    t.equal(body.data.pageOffset, 1)
    t.same(relsOf(body), ['self', 'first', 'next'])
    t.equal(hrefOf(body, 'next'), '/v1/books?pageSize=10&offset=10')
    // A token is still honoured when the client sends one.
    const app2 = await buildApp(t, { paging: 'offset' })
    t.equal((await get(app2, '/v1/books?token=x')).statusCode, 400)
  })

  t.test('following next visits every item once; the last page knows last without counting', async t => {
    const { app, ids } = await fixture(t)
    const pages = await walk(app, '/v1/books?offset=0&pageSize=10', 'next')
    t.same(pages.flatMap(p => idsOf(p)), ids)
    const last = pages[2]
    t.same(relsOf(last), ['self', 'first', 'prev', 'last'])
    t.equal(hrefOf(last, 'last'), '/v1/books?pageSize=10&offset=20')
    t.notOk('total' in last.meta, 'total is still only given when asked for')
    const single = await page(app, '/v1/books?offset=0&pageSize=100')
    t.equal(hrefOf(single, 'last'), '/v1/books?pageSize=100&offset=0')
  })

  t.test('an offset at or past the end returns an empty 200 whose prev and last are the last page with items', async t => {
    const { app, ids } = await fixture(t)
    const cases: Array<[string, string, string[]]> = [
      ['/v1/books?offset=25&pageSize=5', '/v1/books?pageSize=5&offset=20', ids.slice(20)],
      ['/v1/books?offset=1000', '/v1/books?pageSize=20&offset=20', ids.slice(20)],
      ['/v1/books?offset=100&pageSize=10', '/v1/books?pageSize=10&offset=20', ids.slice(20)],
      ['/v1/books?pageOffset=6&pageSize=5', '/v1/books?pageSize=5&pageOffset=5', ids.slice(20)],
      ['/v1/books?pageOffset=10&pageSize=10', '/v1/books?pageSize=10&pageOffset=3', ids.slice(20)],
      ['/v1/books?page=999999', '/v1/books?pageSize=20&pageOffset=2', ids.slice(20)]
    ]
    for (const [url, last, lastIds] of cases) {
      const body = await page(app, url)
      t.same(body.data.books, [], url)
      t.same(relsOf(body), ['self', 'first', 'prev', 'last'], url)
      t.equal(hrefOf(body, 'prev'), last, `${url}: prev is the last page with items`)
      t.equal(hrefOf(body, 'last'), last, url)
      t.notOk('total' in body.meta, `${url}: counted for the links only`)
      t.same(idsOf(await page(app, last)), lastIds, url)
    }
    const atEnd = await page(app, '/v1/books?offset=25&pageSize=5')
    t.same(atEnd.meta, { pageSize: 5, offset: 25, pageOffset: 6 })
  })

  t.test('past the end of a filtered or empty result, prev and last count only the matches', async t => {
    const { app, ids } = await fixture(t)
    // seedMany: index % 3 !== 0 is available, 16 of 25.
    const available = ids.filter((_, index) => index % 3 !== 0)
    const body = await page(app, '/v1/books?available=true&offset=40&pageSize=5')
    t.equal(hrefOf(body, 'prev'), '/v1/books?available=true&pageSize=5&offset=15')
    t.same(idsOf(await page(app, hrefOf(body, 'prev') as string)), available.slice(15))
    const none = await page(app, '/v1/books?year=1&pageOffset=3&pageSize=5')
    t.same(relsOf(none), ['self', 'first', 'prev', 'last'])
    t.equal(hrefOf(none, 'prev'), '/v1/books?year=1&pageSize=5&pageOffset=1', 'nothing matches: back to the first page')
    t.equal(hrefOf(none, 'last'), '/v1/books?year=1&pageSize=5&pageOffset=1')
  })

  t.test('a nested collection past the end links prev and last to its own last page', async t => {
    const app = await buildApp(t)
    await seedMany(app, 7) // another author's books, so counting them all would be wrong
    const { author, books } = await seedMany(app, 23)
    const ids = books.map(book => book.id)
    const base = `/v1/authors/${author.id}/books`
    const byOffset = await page(app, `${base}?offset=100&pageSize=10`)
    t.same(byOffset.data.books, [])
    t.equal(hrefOf(byOffset, 'prev'), `${base}?pageSize=10&offset=20`)
    t.equal(hrefOf(byOffset, 'last'), `${base}?pageSize=10&offset=20`)
    t.same(idsOf(await page(app, hrefOf(byOffset, 'prev') as string)), ids.slice(20))
    const byPage = await page(app, `${base}?pageOffset=10&pageSize=10`)
    t.equal(hrefOf(byPage, 'prev'), `${base}?pageSize=10&pageOffset=3`)
  })

  t.test('an offset or pageOffset up to 2^53 - 1 is valid: past the end, an empty 200', async t => {
    const { app, ids } = await fixture(t)
    const cases: Array<[string, Record<string, number>, string]> = [
      ['/v1/books?offset=99999999999&pageSize=10', { pageSize: 10, offset: 99999999999, pageOffset: 10000000000 }, '/v1/books?pageSize=10&offset=20'],
      ['/v1/books?offset=9007199254740991&pageSize=10', { pageSize: 10, offset: 9007199254740991, pageOffset: 900719925474100 }, '/v1/books?pageSize=10&offset=20'],
      ['/v1/books?pageOffset=10000000000&pageSize=10', { pageSize: 10, offset: 99999999990, pageOffset: 10000000000 }, '/v1/books?pageSize=10&pageOffset=3'],
      // The page would start past 2^53 - 1, as far past the end as that position.
      ['/v1/books?pageOffset=9007199254740991&pageSize=100', { pageSize: 100, offset: 9007199254740991, pageOffset: 9007199254740991 }, '/v1/books?pageSize=100&pageOffset=1']
    ]
    for (const [url, meta, prev] of cases) {
      const body = await page(app, url)
      t.same(body.data.books, [], url)
      t.same(body.meta, meta, url)
      t.equal(hrefOf(body, 'prev'), prev, url)
      t.notOk(relsOf(body).includes('next'), url)
    }
    t.same(idsOf(await page(app, '/v1/books?pageOffset=9007199254740991&pageSize=100')), [])
    t.same(idsOf(await page(app, '/v1/books?pageSize=10&pageOffset=3')), ids.slice(20))
  })

  t.test('leading zeros are read as decimal: 007 is 7', async t => {
    const { app, ids } = await fixture(t)
    const body = await page(app, '/v1/books?offset=007&pageSize=005')
    t.same(idsOf(body), ids.slice(7, 12))
    t.same(body.meta, { pageSize: 5, offset: 7, pageOffset: 2 })
    t.equal(hrefOf(body, 'self'), '/v1/books?pageSize=5&offset=7', 'links carry the canonical form')
    const byPage = await page(app, '/v1/books?pageOffset=02&pageSize=10')
    t.same(idsOf(byPage), ids.slice(10, 20))
    t.equal(hrefOf(byPage, 'self'), '/v1/books?pageSize=10&pageOffset=2')
  })

  t.test('with total, a page past the end links prev and last to the real last page', async t => {
    const { app } = await fixture(t)
    const body = await page(app, '/v1/books?offset=40&pageSize=5&total=true')
    t.equal(body.meta.total, 25)
    t.equal(hrefOf(body, 'prev'), '/v1/books?total=true&pageSize=5&offset=20')
    t.equal(hrefOf(body, 'last'), '/v1/books?total=true&pageSize=5&offset=20')
    const middle = await page(app, '/v1/books?pageOffset=2&pageSize=10&total=true')
    t.equal(hrefOf(middle, 'last'), '/v1/books?total=true&pageSize=10&pageOffset=3')
  })

  t.test('pageSize=0 returns no items and echoes the page asked for', async t => {
    const { app } = await fixture(t, 3)
    const body = await page(app, '/v1/books?pageOffset=3&pageSize=0')
    t.same(body.meta, { pageSize: 0, offset: 0, pageOffset: 3 })
    t.same(body.links, [
      { rel: 'self', href: '/v1/books?pageSize=0&pageOffset=3' },
      { rel: 'first', href: '/v1/books?pageSize=0&pageOffset=1' }
    ])
    const byOffset = await page(app, '/v1/books?offset=2&pageSize=0')
    t.same(relsOf(byOffset), ['self', 'first'])
  })

  t.test('invalid offsets are 400 naming the parameter', async t => {
    const { app } = await fixture(t, 2)
    const integer = 'must be a non-negative integer'
    await rejects(t, app, '/v1/books?offset=-1', 'offset', integer)
    await rejects(t, app, '/v1/books?offset=1.5', 'offset', integer)
    await rejects(t, app, '/v1/books?offset=abc', 'offset', integer)
    await rejects(t, app, '/v1/books?offset=', 'offset', integer)
    await rejects(t, app, '/v1/books?offset=1e3', 'offset', integer)
    await rejects(t, app, '/v1/books?offset=%2B1', 'offset', integer)
    await rejects(t, app, '/v1/books?offset=%201', 'offset', integer)
    const tooLarge = 'must not exceed 9007199254740991 (2^53 - 1)'
    await rejects(t, app, '/v1/books?offset=9007199254740992', 'offset', tooLarge)
    await rejects(t, app, '/v1/books?offset=99999999999999999999999', 'offset', tooLarge)
    await rejects(t, app, '/v1/books?pageOffset=9007199254740992', 'pageOffset', tooLarge)
    await rejects(t, app, `/v1/books?page=${'9'.repeat(400)}`, 'page', tooLarge)
    await rejects(t, app, '/v1/books?offset=1&offset=2', 'offset', 'must be given at most once')
    await rejects(t, app, '/v1/books?pageOffset=0', 'pageOffset', 'must be at least 1')
    await rejects(t, app, '/v1/books?pageOffset=-1', 'pageOffset', 'must be an integer of at least 1')
    await rejects(t, app, '/v1/books?page=first', 'page', 'must be an integer of at least 1')
    await rejects(t, app, '/v1/books?page=0', 'page', 'must be at least 1')
    await rejects(t, app, '/v1/books?offset=1&pageOffset=1', 'pageOffset', 'offset and pageOffset cannot be combined')
    await rejects(t, app, '/v1/books?offset=1&page=1', 'page', 'offset and page cannot be combined')
    await rejects(t, app, '/v1/books?pageOffset=1&page=1', 'page', 'page is an alias of pageOffset; send one of them')
  })
})

t.test('pageSize', async t => {
  t.test('defaults to the collection default, echoed in meta and data', async t => {
    const { app, ids } = await fixture(t)
    const body = await page(app, '/v1/books')
    t.same(idsOf(body), ids.slice(0, 20))
    t.equal(body.meta.pageSize, 20)
    t.equal(body.data.pageSize, 20)
    t.equal(paramOf(hrefOf(body, 'next') as string, 'pageSize'), '20')
  })

  t.test('the maximum may be requested; above it is 400', async t => {
    const { app, ids } = await fixture(t)
    t.same(idsOf(await page(app, '/v1/books?pageSize=100')), ids)
    await rejects(t, app, '/v1/books?pageSize=101', 'pageSize', 'must not exceed 100 (maxPageSize)')
    await rejects(t, app, '/v1/books?pageSize=99999999999', 'pageSize', 'must not exceed 100 (maxPageSize)')
    await rejects(t, app, '/v1/books?pageSize=9007199254740993', 'pageSize', 'must not exceed 100 (maxPageSize)')
    t.same(idsOf(await page(app, '/v1/books?pageSize=0100')), ids, 'leading zeros are read as decimal')
  })

  t.test('a value that is not a non-negative integer is 400', async t => {
    const app = await buildApp(t)
    for (const value of ['-1', '1.5', 'ten', '', '1e2', '+5', '0x10']) {
      await rejects(t, app, `/v1/books?pageSize=${encodeURIComponent(value)}`, 'pageSize', 'must be a non-negative integer')
    }
    await rejects(t, app, '/v1/books?pageSize=1&pageSize=2', 'pageSize', 'must be given at most once')
  })

  t.test('pageSize=0 returns no items', async t => {
    const { app } = await fixture(t, 3)
    const body = await page(app, '/v1/books?pageSize=0')
    t.same(body.data, { books: [], pageSize: 0 })
    t.same(body.meta, { pageSize: 0 })
    t.same(relsOf(body), ['self', 'first'], 'no next: a page of nothing cannot advance')
  })

  t.test('default and maximum are per collection', async t => {
    const store = memoryStore()
    const tiny = defineResource({
      name: 'tiny',
      singular: 'tiny1',
      store,
      defaultPageSize: 2,
      maxPageSize: 3,
      schema: Type.Object({ id: Type.Readonly(Type.String()), n: Type.Integer() }, { additionalProperties: false })
    })
    const app = await buildApp(t, { store, resources: () => [tiny] })
    for (let n = 0; n < 4; n++) await create(app, 'tiny', { n })
    const body = await page(app, '/v1/tiny')
    t.equal((body.data.tiny as Item[]).length, 2)
    t.equal(body.meta.pageSize, 2)
    t.equal((await page(app, '/v1/tiny?pageSize=3')).data.tiny.length, 3)
    await rejects(t, app, '/v1/tiny?pageSize=4', 'pageSize', 'must not exceed 3 (maxPageSize)')
  })
})
