// Unit tests for the links of an offset page past the end (lib/paging/index.ts countPastEnd, lib/envelope/index.ts listBody; spec
// "Page links", "Client-driven paging" 3): one count names the last page with
// items, with the query the store ran (a nested collection's includes its parent scope).
import t from 'tap'
import { buildRegistry } from '../../lib/registry/index.js'
import { createCursorCodec } from '../../lib/paging/cursor.js'
import { parseListQuery } from '../../lib/query/list-query.js'
import type { RawQuery } from '../../lib/query/list-query.js'
import { listBody } from '../../lib/envelope/index.js'
import { countPastEnd } from '../../lib/paging/index.js'
import type { EnvelopeContext } from '../../lib/envelope/index.js'
import type { FilterNode } from '../../lib/query/filter/ast.js'
import type { ListQuery } from '../../lib/stores/store.js'
import { demoResources } from '../../demo/schemas/index.js'
import { spyStore } from '../helpers/list-app.js'

const cursor = createCursorCodec({ secrets: ['a-unit-test-secret-0123'] })
const context: EnvelopeContext = { prefix: '/v1', totalAtRoot: false, lastLink: true, cursor, singleResource: 'flat', links: 'array' }

async function fixture () {
  const store = spyStore()
  const [authors, books] = buildRegistry(demoResources(store))
  const author = await store.create(authors, { id: 'a1', name: 'One' })
  await store.create(authors, { id: 'a2', name: 'Two' })
  for (let i = 0; i < 23; i++) await store.create(books, { id: `b${String(i).padStart(2, '0')}`, title: `T${i}`, authorId: 'a1' })
  for (let i = 0; i < 40; i++) await store.create(books, { id: `c${String(i).padStart(2, '0')}`, title: `U${i}`, authorId: 'a2' })
  return { store, books, author }
}

/** A LIST the way the routes run it: parse, scope, ask the store, build the body. */
async function list (data: Awaited<ReturnType<typeof fixture>>, base: string, raw: RawQuery, scope: FilterNode | null) {
  const { store, books } = data
  const request = parseListQuery(books, raw, { cursor, defaultPaging: 'token' }, base)
  const ran: ListQuery = scope === null ? request.query : { ...request.query, filter: scope }
  const page = await store.list(books, ran)
  store.lists.length = 0
  const body = listBody(context, books, base, request, page, [], [], page.total ?? await countPastEnd(store, books, request, page, ran))
  return { body, lists: [...store.lists] }
}

const prevOf = (body: { links?: unknown }) => (body.links as Array<{ rel: string, href: string }>).find(link => link.rel === 'prev')?.href

t.test('a top-level page past the end counts its own query once, without total in meta', async t => {
  const data = await fixture()
  const { body, lists } = await list(data, '/v1/books', { offset: '100', pageSize: '10' }, null)
  t.equal(prevOf(body), '/v1/books?pageSize=10&offset=60')
  t.same(lists, [{ filter: null, sort: [{ field: 'id', direction: 'asc' }], window: { kind: 'offset', offset: 0 }, limit: 0, total: true, search: null, reads: null }])
  t.notOk('total' in (body.meta as object))
})

t.test('a nested page past the end counts the scoped query its route passes', async t => {
  const data = await fixture()
  const scope: FilterNode = { kind: 'compare', op: 'eq', left: { kind: 'field', path: ['authorId'] }, right: { kind: 'literal', type: 'string', value: 'a1' } }
  const { body, lists } = await list(data, '/v1/authors/a1/books', { offset: '100', pageSize: '10' }, scope)
  t.equal(prevOf(body), '/v1/authors/a1/books?pageSize=10&offset=20')
  t.equal(lists.length, 1)
  t.same(lists[0].filter, scope)
})

t.test('pages with items, empty first pages, pageSize=0 and token pages are never counted', async t => {
  const data = await fixture()
  for (const raw of [{ offset: '60', pageSize: '10' }, { offset: '0', pageSize: '10' }, { offset: '0', title: 'none' }, { offset: '100', pageSize: '0' }, { pageOffset: '1' }, {}]) {
    const { lists } = await list(data, '/v1/books', { ...raw, sort: '-title' }, null)
    t.same(lists, [], JSON.stringify(raw))
  }
})
