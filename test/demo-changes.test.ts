// The change feed of the demo (docs/demo-contract.md "Changes: the feed, webhooks and brokers"),
// from outside over HTTP, on each store the demo runs on: the change record of every write path
// (single, batch, derived values), nothing of a write that fails, paging and its links, final pages
// cacheable, every bad input's problem, waiting at the head, Server-Sent Events, and the reviews'
// rules applied at read (alice, bob, admin).
import t from 'tap'
import { places, placeFor } from './helpers/demo-http.js'
import type { Api } from './helpers/demo-http.js'
import { eventReader } from './helpers/events.js'
import type { ServerEvent } from './helpers/events.js'

interface Change { id: string, position: string, resource: string, recordId: string, operation: string, version: number, at: string, data?: Record<string, any> }

/** Every change the caller sees from `after` to the head, page by page. */
async function readAll (api: Api, caller: string, after?: string, query = ''): Promise<Change[]> {
  const changes: Change[] = []
  let path = `/v1/changes?pageSize=3${query}${after === undefined ? '' : `&after=${after}`}`
  for (;;) {
    const res = await api(caller, 'GET', path)
    if (res.status !== 200) throw new Error(`${res.status} ${res.text}`)
    changes.push(...res.body.data.changes)
    const next = res.body.links.find((link: { rel: string }) => link.rel === 'next').href
    if (res.body.data.changes.length === 0 || next === path) return changes
    path = next
  }
}

const summary = (changes: readonly Change[]) => changes.map(change => `${change.operation} ${change.resource} v${change.version}`)

async function head (api: Api): Promise<string> {
  const res = await api('admin', 'GET', '/v1/changes?pageSize=1000')
  return new URL(res.body.links.find((link: { rel: string }) => link.rel === 'next').href, 'http://x').searchParams.get('after') ?? '0'
}

for (const where of places('changes')) {
  t.test(where.name, { skip: where.skip }, async t => {
    const { start } = await placeFor(t, where)
    const instance = await start()
    const { api } = instance

    t.test('every write records its changes in commit order: single writes, the derived values, a batch', async t => {
      const from = await head(api)
      const author = (await api('alice', 'POST', '/v1/authors', { body: { name: 'Ann' } })).body.data.author
      const book = (await api('alice', 'POST', '/v1/books', { body: { title: 'T', authorId: author.id } })).body.data.book
      const review = await api('alice', 'POST', '/v1/reviews', { body: { bookId: book.id, rating: 4 } })
      t.equal(review.status, 201)
      await api('alice', 'PUT', `/v1/authors/${author.id}`, { body: { name: 'Ann B' } })
      const batch = await api('alice', 'POST', '/v1/batch', {
        body: {
          operations: [
            { op: 'create', resource: 'authors', lid: 'a', data: { name: 'Bo' } },
            { op: 'modify', resource: 'books', id: book.id, data: { year: 2001 } },
            { op: 'delete', resource: 'authors', id: { lid: 'a' } }
          ]
        }
      })
      t.equal(batch.status, 200)
      const changes = await readAll(api, 'admin', from)
      t.same(summary(changes), [
        'create authors v1', 'create books v1', 'create reviews v1', 'modify books v2', 'replace authors v2',
        'create authors v1', 'modify books v3', 'delete authors v2'
      ])
      t.match(changes[3], { recordId: book.id, data: { book: { id: book.id, reviewCount: 1, averageRating: 4 } } })
      t.notOk('data' in changes[7], 'a delete carries no data')
      t.equal(new Set(changes.map(change => change.id)).size, changes.length, 'each change has its own id')
      t.ok(changes.every((change, i) => i === 0 || BigInt(change.position) > BigInt(changes[i - 1].position)), 'positions ascend')
    })

    t.test('a write that fails records nothing', async t => {
      const from = await head(api)
      const author = (await api('alice', 'POST', '/v1/authors', { body: { name: 'Cy' } })).body.data.author
      const book = (await api('alice', 'POST', '/v1/books', { body: { title: 'U', authorId: author.id, available: false } })).body.data.book
      t.equal((await api('alice', 'POST', '/v1/reviews', { body: { bookId: book.id, rating: 4 } })).status, 422)
      const batch = await api('alice', 'POST', '/v1/batch', {
        body: {
          operations: [
            { op: 'create', resource: 'authors', data: { name: 'Dee' } },
            { op: 'delete', resource: 'authors', id: author.id }
          ]
        }
      })
      t.equal(batch.status, 409)
      t.same(summary(await readAll(api, 'admin', from)), ['create authors v1', 'create books v1'])
    })

    t.test('pages: links, the final page cacheable, the page at the head not', async t => {
      const from = await head(api)
      for (const name of ['P1', 'P2', 'P3']) await api('dev', 'POST', '/v1/authors', { body: { name } })
      const first = await api('dev', 'GET', `/v1/changes?after=${from}&pageSize=2&resource=authors`)
      t.equal(first.status, 200)
      t.equal(first.body.meta.pageSize, 2)
      t.equal(first.body.data.changes.length, 2)
      t.match(first.headers.get('cache-control'), /^private, max-age=\d+$/)
      t.match(first.headers.get('etag'), /^".+"$/)
      t.same(first.body.links, [
        { rel: 'self', href: `/v1/changes?after=${from}&pageSize=2&resource=authors` },
        { rel: 'next', href: `/v1/changes?after=${first.body.data.changes[1].position}&pageSize=2&resource=authors` }
      ])
      const again = await api('dev', 'GET', `/v1/changes?after=${from}&pageSize=2&resource=authors`)
      t.same(again.body, first.body, 'the same after reads the same changes')
      t.equal(again.headers.get('etag'), first.headers.get('etag'))
      const last = await api('dev', 'GET', first.body.links[1].href)
      t.equal(last.body.data.changes.length, 1)
      t.equal(last.headers.get('cache-control'), 'no-store', 'the page at the head may grow')
      const atHead = await api('dev', 'GET', last.body.links[1].href)
      t.same(atHead.body.data.changes, [])
      t.equal(atHead.body.links[1].href, last.body.links[1].href, 'next at the head is where to resume')
    })

    t.test('every bad input is a 400 problem naming it', async t => {
      const cases: Array<[string, string, Record<string, string>?]> = [
        ['after=abc', 'after'], ['after=-1', 'after'], ['after=99999999999999999999', 'after'], ['after=1&after=2', 'after'],
        ['pageSize=0', 'pageSize'], ['pageSize=1001', 'pageSize'], ['pageSize=x', 'pageSize'],
        ['wait=0', 'wait'], ['wait=31', 'wait'], ['wait=1.5', 'wait'],
        ['resource=books,nope', 'resource'],
        ['', 'Last-Event-ID', { accept: 'text/event-stream', 'last-event-id': 'x' }]
      ]
      for (const [query, name, headers] of cases) {
        const res = await api('reader', 'GET', `/v1/changes?${query}`, { headers })
        t.equal(res.status, 400, query)
        t.match(res.headers.get('content-type'), /^application\/problem\+json/)
        t.match(res.body, { status: 400, type: '/v1/problems/query-invalid', invalidParams: [{ name }] }, query)
      }
      t.equal((await api('reader', 'GET', '/v1/changes?after=1&pageSize=0&wait=99')).body.invalidParams.length, 2, 'each bad one named')
      const anonymous = await fetch(new URL('/v1/changes', instance.base))
      t.equal(anonymous.status, 401)
    })

    t.test('wait: an answer as soon as a change commits', async t => {
      const from = await head(api)
      const waiting = api('reader', 'GET', `/v1/changes?after=${from}&wait=30`)
      await api('dev', 'POST', '/v1/authors', { body: { name: 'Waited for' } })
      const res = await waiting
      t.equal(res.status, 200)
      t.same(summary(res.body.data.changes), ['create authors v1'])
    })

    t.test('Server-Sent Events: the backlog, then each change; Last-Event-ID resumes after it', async t => {
      const from = await head(api)
      await api('dev', 'POST', '/v1/authors', { body: { name: 'Backlog' } })
      const open = async (headers: Record<string, string> = {}) => {
        const res = await fetch(`${instance.base}/v1/changes?after=${from}`, { headers: { authorization: 'Bearer read-token', accept: 'text/event-stream', ...headers } })
        return { res, events: eventReader(res.body as ReadableStream<Uint8Array>) }
      }
      const { res, events } = await open()
      t.equal(res.status, 200)
      t.match(res.headers.get('content-type'), /^text\/event-stream/)
      const first = await events.next() as ServerEvent
      await api('dev', 'POST', '/v1/authors', { body: { name: 'Live' } })
      const second = await events.next() as ServerEvent
      await events.cancel()
      t.match(first, { id: /^\d+$/, event: 'change' })
      t.match(JSON.parse(first.data as string), { operation: 'create', resource: 'authors', position: first.id, data: { author: { name: 'Backlog' } } })
      t.match(JSON.parse(second.data as string), { operation: 'create', position: second.id, data: { author: { name: 'Live' } } })
      const resumed = await open({ 'last-event-id': first.id as string })
      const next = await resumed.events.next() as ServerEvent
      await resumed.events.cancel()
      t.equal(next.id, second.id, 'resumes exactly after the last event')
    })

    t.test('the reviews\' rules at read: alice, bob, admin', async t => {
      const author = (await api('admin', 'POST', '/v1/authors', { body: { name: 'R' } })).body.data.author
      const book = (await api('admin', 'POST', '/v1/books', { body: { title: 'R', authorId: author.id } })).body.data.book
      const from = await head(api)
      const id = (await api('alice', 'POST', '/v1/reviews', { body: { bookId: book.id, rating: 5, private: true } })).body.data.review.id
      await api('admin', 'PATCH', `/v1/reviews/${id}`, { body: { moderatorNote: 'fine' } })
      await api('alice', 'PATCH', `/v1/reviews/${id}`, { body: { private: false } })
      await api('alice', 'PATCH', `/v1/reviews/${id}`, { body: { private: true } })
      await api('alice', 'DELETE', `/v1/reviews/${id}`)
      const seen = async (caller: string) => (await readAll(api, caller, from, '&resource=reviews')).map(change => [change.operation, change.version, change.data?.review === undefined ? null : Object.keys(change.data.review).includes('moderatorNote')])
      t.same(await seen('alice'), [['create', 1, false], ['modify', 2, false], ['modify', 3, false], ['modify', 4, false], ['delete', 5, null]], 'alice sees her own review, without the note')
      t.same(await seen('bob'), [['create', 3, false], ['delete', 4, null]], 'bob sees it while it is public: made visible is a create, made private a delete')
      t.same(await seen('admin'), [['create', 1, true], ['modify', 2, true], ['modify', 3, true], ['modify', 4, true], ['delete', 5, null]], 'admin sees everything')
      t.same(await seen('reader'), await seen('bob'), 'a reader without a user sees what bob sees')
    })
  })
}
