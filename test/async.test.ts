// Asynchronous work (docs/demo-contract.md "Asynchronous work: 202 and the status monitor";
// docs/async.md), from outside over HTTP, on the demo on each store: the 202 and its monitor, the
// outcome table (each write and each failure it can meet when it runs answers, on the monitor,
// the problem the synchronous request answers), Idempotency-Key, who sees an operation, and the
// refusals made at once.
import t from 'tap'
import type { Test } from 'tap'
import { placeFor, places, unique } from './helpers/demo-http.js'
import type { Answer, Api, Call } from './helpers/demo-http.js'

const later = { prefer: 'respond-async' }

/** Polls the monitor until the operation finished; its last answer. Bounded by the test's timeout, never timed. */
async function settled (api: Api, caller: string, location: string): Promise<Answer> {
  for (;;) {
    const answer = await api(caller, 'GET', location)
    const status = answer.body?.data?.operation?.status
    if (answer.status !== 200 || status === 'succeeded' || status === 'failed') return answer
    await new Promise(resolve => setTimeout(resolve, 20))
  }
}

/** The request sent twice: without the preference, then with it; the synchronous answer and the monitor's last. */
async function bothWays (api: Api, caller: string, method: string, path: string, call: Call = {}): Promise<{ sync: Answer, accepted: Answer, monitor: Answer }> {
  const sync = await api(caller, method, path, call)
  const accepted = await api(caller, method, path, { ...call, headers: { ...call.headers, ...later } })
  if (accepted.status !== 202) throw new Error(`not accepted: ${accepted.status} ${accepted.text}`)
  return { sync, accepted, monitor: await settled(api, caller, accepted.headers.get('location') as string) }
}

async function newBook (api: Api): Promise<string> {
  const author = await api('admin', 'POST', '/v1/authors', { body: { name: unique('Author') } })
  const book = await api('admin', 'POST', '/v1/books', { body: { title: unique('Book'), authorId: author.body.data.author.id, available: true } })
  if (book.status !== 201) throw new Error(`book not created: ${book.text}`)
  return book.body.data.book.id
}

for (const where of places('async')) {
  t.test(`asynchronous writes on ${where.name}`, { skip: where.skip }, async t => {
    const { start } = await placeFor(t, where)
    const { api } = await start()

    t.test('a CREATE answered 202, then its monitor holds what the synchronous request answers', async (t: Test) => {
      const accepted = await api('alice', 'POST', '/v1/authors', { body: { name: 'Later Author' }, headers: later })
      t.equal(accepted.status, 202)
      const location = accepted.headers.get('location') as string
      t.match(location, /^\/v1\/operations\/[0-9a-f-]{36}$/)
      t.equal(accepted.headers.get('preference-applied'), 'respond-async')
      t.equal(accepted.headers.get('retry-after'), '1')
      const operation = accepted.body.data.operation
      t.same(Object.keys(operation).sort(), ['createdAt', 'id', 'method', 'path', 'status'])
      t.match(operation, { id: location.split('/').at(-1), status: 'pending', method: 'POST', path: '/v1/authors' })
      t.ok(Number.isFinite(Date.parse(operation.createdAt)), 'createdAt is a date')

      const done = await settled(api, 'alice', location)
      t.equal(done.status, 200)
      t.equal(done.headers.get('retry-after'), null, 'no Retry-After once finished')
      const { result, ...rest } = done.body.data.operation
      t.match(rest, { id: operation.id, status: 'succeeded', method: 'POST', path: '/v1/authors', createdAt: operation.createdAt })
      t.equal(result.status, 201)
      t.match(result.location, /^\/v1\/authors\/.+/)
      const read = await api('alice', 'GET', result.location)
      t.equal(read.status, 200, 'the record exists')
      t.equal(result.etag, read.headers.get('etag'), 'the ETag of the record as written')
      t.same(result.data, read.body.data, 'data: the record as the synchronous answer holds it')
      t.same(Object.keys(result).sort(), ['data', 'etag', 'location', 'status'])
    })

    t.test('REPLACE, MODIFY and DELETE: the result is the synchronous answer', async (t: Test) => {
      const created = await api('alice', 'POST', '/v1/authors', { body: { name: 'Changing' } })
      const path = created.headers.get('location') as string
      const modified = await bothWays(api, 'alice', 'PATCH', path, { body: { name: 'Changed' } })
      t.equal(modified.monitor.body.data.operation.status, 'succeeded')
      const result = modified.monitor.body.data.operation.result
      t.equal(result.status, 200)
      const read = await api('alice', 'GET', path)
      t.same(result.data, read.body.data, 'the record as written')
      t.equal(result.etag, read.headers.get('etag'))
      t.same(Object.keys(result).sort(), ['data', 'etag', 'status'])

      const replaced = await api('alice', 'PUT', path, { body: { name: 'Replaced' }, headers: { ...later, prefer: 'respond-async, return=minimal' } })
      t.equal(replaced.status, 202)
      const minimal = await settled(api, 'alice', replaced.headers.get('location') as string)
      t.match(minimal.body.data.operation.result, { status: 204 }, 'Prefer return=minimal is kept with the request')
      t.same(Object.keys(minimal.body.data.operation.result).sort(), ['etag', 'status'])
      t.equal((await api('alice', 'GET', path)).body.data.author.name, 'Replaced')

      const deleted = await api('alice', 'DELETE', path, { headers: later })
      const gone = await settled(api, 'alice', deleted.headers.get('location') as string)
      t.same(gone.body.data.operation.result, { status: 204 })
      t.equal((await api('alice', 'GET', path)).status, 404, 'deleted')
    })

    t.test('the outcome table: each failure met when run is the synchronous problem', async (t: Test) => {
      const book = await newBook(api)
      const review = await api('alice', 'POST', '/v1/reviews', { body: { bookId: book, rating: 4 } })
      t.equal(review.status, 201)
      const path = review.headers.get('location') as string
      const missing = '/v1/reviews/no-such-review'
      const cases: Array<[string, string, string, Call, number]> = [
        ['alice', 'PUT', missing, { body: { bookId: book, rating: 2 } }, 404],
        ['alice', 'PATCH', missing, { body: { rating: 2 } }, 404],
        ['alice', 'DELETE', missing, {}, 404],
        ['alice', 'POST', '/v1/reviews', { body: { bookId: book, rating: 5 } }, 409],
        ['alice', 'PUT', path, { body: { bookId: book, rating: 2 }, headers: { 'if-match': '"999"' } }, 412],
        ['alice', 'PATCH', path, { body: { rating: 1 }, headers: { 'if-match': '"999"' } }, 412],
        ['alice', 'DELETE', path, { headers: { 'if-match': '"999"' } }, 412],
        ['bob', 'POST', '/v1/reviews', { body: { bookId: 'no-such-book', rating: 1 } }, 422],
        ['alice', 'PUT', path, { body: { bookId: 'no-such-book', rating: 1 } }, 422],
        ['alice', 'PATCH', path, { body: { bookId: 'no-such-book' } }, 422],
        ['bob', 'PUT', path, { body: { bookId: book, rating: 1 } }, 403],
        ['bob', 'PATCH', path, { body: { rating: 1 } }, 403],
        ['bob', 'DELETE', path, {}, 403]
      ]
      for (const [caller, method, target, call, status] of cases) {
        const { sync, monitor } = await bothWays(api, caller, method, target, call)
        const label = `${caller} ${method} ${target} ${JSON.stringify(call)}`
        t.equal(sync.status, status, `${label}: ${status} synchronously`)
        t.equal(monitor.body.data.operation.status, 'failed', `${label}: failed`)
        t.same(monitor.body.data.operation.error, sync.body, `${label}: the same problem`)
        t.notOk('result' in monitor.body.data.operation)
      }
      const after = await api('alice', 'GET', path)
      t.equal(after.headers.get('etag'), review.headers.get('etag'), 'nothing was written')
    })

    t.test('a request that cannot be accepted is refused at once, as synchronously', async (t: Test) => {
      const refusals: Array<[string, string, string, Call, number]> = [
        ['alice', 'POST', '/v1/authors', { body: { name: 5 } }, 400],
        ['alice', 'PATCH', '/v1/authors/x', { body: { name: 'x' }, headers: { 'if-match': 'no quotes' } }, 400],
        ['reader', 'POST', '/v1/authors', { body: { name: 'x' } }, 403],
        ['alice', 'POST', '/v1/authors', { body: 'name=x', headers: { 'content-type': 'text/plain' } }, 415]
      ]
      for (const [caller, method, path, call, status] of refusals) {
        const sync = await api(caller, method, path, call)
        const refused = await api(caller, method, path, { ...call, headers: { ...call.headers, ...later } })
        t.equal(refused.status, status, `${caller} ${method} ${path}: ${status}`)
        t.same(refused.body, sync.body, 'the synchronous problem')
      }
    })

    t.test('an operation is its caller\'s: another gets 404, an admin sees it', async (t: Test) => {
      const accepted = await api('alice', 'POST', '/v1/authors', { body: { name: 'Mine' }, headers: later })
      const location = accepted.headers.get('location') as string
      const other = await api('bob', 'GET', location)
      t.equal(other.status, 404)
      t.match(other.headers.get('content-type'), /^application\/problem\+json/)
      t.equal((await api('admin', 'GET', location)).status, 200)
      t.equal((await api('alice', 'GET', '/v1/operations/no-such-operation')).status, 404)
      await settled(api, 'alice', location)
    })

    t.test('Idempotency-Key with respond-async: a repeat answers the same 202 and operation', async (t: Test) => {
      const key = unique('key').replace(' ', '-')
      const once = unique('Once')
      const first = await api('alice', 'POST', '/v1/authors', { body: { name: once }, key, headers: later })
      const again = await api('alice', 'POST', '/v1/authors', { body: { name: once }, key, headers: later })
      t.equal(first.status, 202)
      t.equal(again.status, 202)
      t.equal(again.headers.get('location'), first.headers.get('location'))
      t.equal(again.headers.get('retry-after'), '1')
      t.equal(again.headers.get('idempotent-replayed'), 'true')
      t.same(again.body, first.body)
      const done = await settled(api, 'alice', first.headers.get('location') as string)
      t.equal(done.body.data.operation.status, 'succeeded')
      const named = await api('alice', 'GET', `/v1/authors?filter=${encodeURIComponent(`name eq '${once}'`)}`)
      t.equal(named.body.data.authors.length, 1, 'one record')
    })

    t.test('a batch answered 202: its monitor holds the batch\'s answer, all or nothing', async (t: Test) => {
      const name = unique('Batch Author')
      const operations = [
        { op: 'create', resource: 'authors', lid: 'a', data: { name } },
        { op: 'create', resource: 'books', data: { title: unique('Batch Book'), authorId: { lid: 'a' } } }
      ]
      const { sync, accepted, monitor } = await bothWays(api, 'alice', 'POST', '/v1/batch', { body: { operations } })
      t.equal(sync.status, 200)
      t.match(accepted.body.data.operation, { status: 'pending', method: 'POST', path: '/v1/batch' })
      const { result } = monitor.body.data.operation
      t.equal(monitor.body.data.operation.status, 'succeeded')
      t.equal(result.status, 200)
      t.same(result.data.results.map((entry: { status: number }) => entry.status), [201, 201])
      t.match(result.data.results[1].data.book, { authorId: result.data.results[0].data.author.id }, 'the local id stood for the author it made')
      t.equal((await api('alice', 'GET', `/v1/authors?filter=${encodeURIComponent(`name eq '${name}'`)}`)).body.data.authors.length, 2, 'both batches wrote')

      // Failing when it runs: the batch's problem, naming the operation; nothing of it written.
      const failing = [
        { op: 'create', resource: 'authors', data: { name: unique('Never') } },
        { op: 'delete', resource: 'authors', id: 'no-such-author' }
      ]
      const failed = await bothWays(api, 'alice', 'POST', '/v1/batch', { body: { operations: failing } })
      t.equal(failed.sync.status, 404)
      t.equal(failed.monitor.body.data.operation.status, 'failed')
      t.same(failed.monitor.body.data.operation.error, failed.sync.body, 'the problem the synchronous batch answers')
      t.equal((await api('alice', 'GET', `/v1/authors?filter=${encodeURIComponent(`name eq '${failing[0].data?.name as string}'`)}`)).body.data.authors.length, 0, 'nothing written')

      // Refused at once: a malformed batch (400) and a caller who may not write (403), nothing kept.
      const malformed = await api('alice', 'POST', '/v1/batch', { body: { operations: [{ op: 'create', resource: 'books', data: { title: 'x', authorId: { lid: 'nowhere' } } }] }, headers: later })
      t.equal(malformed.status, 400)
      t.match(malformed.body, { operation: 0, invalidParams: [{ name: 'operations/0/authorId' }] })
      const reader = await api('reader', 'POST', '/v1/batch', { body: { operations }, headers: later })
      t.equal(reader.status, 403)
    })

    t.test('without the preference a write answers as before', async (t: Test) => {
      const created = await api('alice', 'POST', '/v1/authors', { body: { name: 'Now' }, headers: { prefer: 'return=minimal' } })
      t.equal(created.status, 201)
      t.equal(created.headers.get('preference-applied'), 'return=minimal')
    })
  })
}
