// The change feed as a plugin option (docs/changes.md): retention and the 410 past it, its boot
// errors, the event stream's heartbeat and end, and the store calls that fail under it. The demo's
// feed over HTTP on every store is test/demo-changes.test.ts; commit order under concurrency,
// test/changes-commit-order.test.ts.
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { defineResource, memoryStore, pgliteStore } from '../lib/index.js'
import type { Store } from '../lib/index.js'
import { buildApp, create, json, testClock } from './helpers/app.js'
import { demoResources } from '../demo/schemas/index.js'
import { eventReader } from './helpers/events.js'
import { resolveChanges } from '../lib/changes/options.js'
import { openPglite } from './stores/pglite-db.js'
import { AUTHORS, BOOKS, suiteModels } from './stores/conformance.js'

const feed = (app: Awaited<ReturnType<typeof buildApp>>, query = '', headers: Record<string, string> = {}) =>
  app.inject({ url: `/v1/changes${query}`, headers })

t.test('without the option there is no feed', async t => {
  const app = await buildApp(t)
  t.equal((await feed(app)).statusCode, 404)
})

t.test('a position older than the retention answers 410 changes-expired, its links the head', async t => {
  // The memory store's records are made at the test clock's time, long before now: past 7 days.
  const app = await buildApp(t, { changes: true })
  const first = await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: { name: 'Old' } })
  t.equal(first.statusCode, 201)
  // Its commit purged what is past retention (at most once a minute): itself.
  const read = await feed(app)
  t.same(read.json().data.changes, [])
  const head = new URL(read.json().links[1].href, 'http://x').searchParams.get('after') as string
  t.match(head, /^\d+$/, 'next names the head even when every change is gone')
  const expired = await feed(app, '?after=0')
  t.equal(expired.statusCode, 410)
  t.match(expired.headers['content-type'], /^application\/problem\+json/)
  t.match(expired.json(), { type: '/v1/problems/changes-expired', status: 410, links: [{ rel: 'head', href: `/v1/changes?after=${head}` }] })
  const stream = await feed(app, '?after=0', { accept: 'text/event-stream' })
  t.equal(stream.statusCode, 410, 'an event stream is refused before it starts')
  t.equal((await feed(app, `?after=${head}`)).statusCode, 200, 'the last change purged is still a place to resume from')
  const page = await app.inject({ url: '/v1/problems/changes-expired' })
  t.equal(page.statusCode, 200, 'the problem type has its page')
})

t.test('a change of a resource the API no longer serves is no one\'s to see', async t => {
  const store = memoryStore()
  await store.appendChanges?.([{ id: 'c1', resource: 'ghosts', recordId: 'g1', operation: 'create', version: 1, at: new Date(), data: { id: 'g1' }, previous: null }])
  const app = await buildApp(t, { store, changes: true })
  const read = await feed(app)
  t.same(read.json().data.changes, [])
  t.match(read.json().links[1].href, /after=1$/, 'the reader moves past it')
})

t.test('the event stream: a comment line when silent, ended when the server closes', async t => {
  const app = await buildApp(t, { changes: { heartbeat: 20, pollInterval: 10 } })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  const res = await fetch(`${base}/v1/changes`, { headers: { accept: 'text/event-stream' } })
  const events = eventReader(res.body as ReadableStream<Uint8Array>)
  t.same(await events.next(), { comment: 'keep-alive' })
  await app.close()
  for (let event = await events.next(); event !== null; event = await events.next()) t.same(event, { comment: 'keep-alive' })
  t.pass('the stream ended')
})

t.test('a wait that sees nothing answers the empty page at its end', async t => {
  const app = await buildApp(t, { changes: { pollInterval: 10 } })
  const res = await feed(app, '?wait=1')
  t.equal(res.statusCode, 200)
  t.same(res.json().data.changes, [])
  t.same(res.json().links, [{ rel: 'self', href: '/v1/changes' }, { rel: 'next', href: '/v1/changes?after=0' }], 'next: the head, where to resume')
})

/** A memory store whose change log fails after `good` reads. */
function failingStore (good: number): Store {
  const store = memoryStore()
  let reads = 0
  return Object.assign(Object.create(null), store, {
    readChanges: async (query: Parameters<NonNullable<Store['readChanges']>>[0]) => {
      if (++reads > good) throw new Error('the log is gone')
      return await (store.readChanges as NonNullable<Store['readChanges']>)(query)
    }
  }) as Store
}

t.test('a stream whose store fails ends; a waiter whose look at the head fails waits on', async t => {
  const app = await buildApp(t, { store: failingStore(1), changes: { heartbeat: 20, pollInterval: 5 } })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  const res = await fetch(`${base}/v1/changes`, { headers: { accept: 'text/event-stream' } })
  const events = eventReader(res.body as ReadableStream<Uint8Array>)
  while (await events.next() !== null);
  t.equal(await events.next(), null, 'the stream ended when its store failed')
  const waited = await app.inject({ url: '/v1/changes?wait=1' })
  t.equal(waited.statusCode, 500, 'a page whose store fails is a 500, as any store failure')
})

t.test('streams waiting at the head share one read of the log per commit, and each gets the change', async t => {
  const inner = memoryStore()
  let reads = 0
  const store: Store = {
    ...inner,
    readChanges: async query => {
      if (query.limit > 0) reads++
      return await (inner.readChanges as NonNullable<Store['readChanges']>)(query)
    }
  }
  const app = await buildApp(t, { store, changes: { heartbeat: 60000, pollInterval: 60000 } })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  const opened = Date.now()
  const streams = await Promise.all(Array.from({ length: 12 }, async () => {
    const res = await fetch(`${base}/v1/changes`, { headers: { accept: 'text/event-stream' } })
    t.equal(res.status, 200)
    return eventReader(res.body as ReadableStream<Uint8Array>)
  }))
  t.ok(Date.now() - opened < 10000, 'the headers came at once, though nothing was sent yet (the heartbeat is a minute away)')
  // Each stream has read the (empty) backlog and waits at the head.
  await new Promise(resolve => setTimeout(resolve, 50))
  reads = 0
  const made = await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: { name: 'Shared' } })
  t.equal(made.statusCode, 201)
  for (const events of streams) {
    const event = await events.next()
    t.equal(event?.event, 'change')
    t.equal(JSON.parse(event?.data ?? '{}').recordId, made.json().data.author.id)
  }
  t.equal(reads, 1, 'one read for the twelve streams')
  await app.close()
})

t.test('a purge of the expired changes that fails is logged at warn; the write and the read are answered', async t => {
  const logged: string[] = []
  const inner = memoryStore()
  const store: Store = { ...inner, purgeChanges: async () => { throw new Error('the log is locked') } }
  const app = await buildApp(t, { store, changes: true, server: { logger: { level: 'warn', stream: { write: (line: string) => { logged.push(line) } } } } })
  const made = await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: { name: 'Kept' } })
  t.equal(made.statusCode, 201)
  const read = await feed(app)
  t.equal(read.statusCode, 200)
  t.same(read.json().data.changes.map((change: { recordId: string }) => change.recordId), [made.json().data.author.id], 'nothing was purged')
  await new Promise(resolve => setImmediate(resolve))
  const warned = logged.map(line => JSON.parse(line)).filter(line => line.msg === 'api-conventions: purging expired changes failed')
  t.equal(warned.length, 1, 'once: a purge is tried at most once a minute')
  t.match(warned[0], { level: 40, err: { message: 'the log is locked' } })
})

t.test('a row rule that reaches through a relation finds no related values in a change', async t => {
  // Books are seen when available, or when their author is from NZ: the feed judges a change on the book alone.
  const rule = "available eq true or author/country eq 'NZ'"
  const app = await buildApp(t, { changes: true, resources: store => demoResources(store).map(resource => resource.name === 'books' ? { ...resource, rules: { read: rule } } : resource) })
  const author = await create(app, 'authors', { name: 'Janet Frame', country: 'NZ' })
  const hidden = await create(app, 'books', { title: 'Owls Do Cry', authorId: author.id, available: false })
  const shown = await create(app, 'books', { title: 'Faces in the Water', authorId: author.id, available: true })
  const listed = (await app.inject({ url: '/v1/books' })).json().data.books.map((book: { id: string }) => book.id)
  t.same(listed.sort(), [hidden.id, shown.id].sort(), 'a LIST follows the relation: both books')
  const changes = (await feed(app, '?resource=books')).json().data.changes
  t.same(changes.map((change: { recordId: string }) => change.recordId), [shown.id], 'the feed: only the book its own fields show')
})

t.test('boot errors name the option', async t => {
  const app = buildApp(t, { changes: { retention: 'soon' } })
  await t.rejects(app, { code: 'API_ERR_OPTIONS_INVALID', message: /changes\.retention/ })
  t.throws(() => resolveChanges({ retension: 1 }), { message: /retension/ })
  t.throws(() => resolveChanges('yes'), { message: /changes must be a boolean or an object/ })
  t.same(resolveChanges(true), { retention: 7 * 86400000, pollInterval: 500, heartbeat: 15000, nats: null, webhooks: null, onChange: null })
  t.throws(() => resolveChanges({ webhooks: {} }), { message: /changes.webhooks.allowedHosts must be host names/ })
  t.throws(() => resolveChanges({ webhooks: 'localhost' }), { message: /changes.webhooks must be an object \{ allowedHosts/ })
  t.throws(() => resolveChanges({ webhooks: null }), { message: /changes.webhooks must be an object/ })
  t.throws(() => resolveChanges({ webhooks: { allowedHosts: [], ownerOf: 'user' } }), { message: /changes.webhooks.ownerOf must be a function of the principal/ })
  t.throws(() => resolveChanges({ webhooks: { allowedHosts: [], seesAll: true } }), { message: /changes.webhooks.seesAll must be a function of the principal/ })
  t.throws(() => resolveChanges({ webhooks: { allowedHosts: [], retrySchedule: [-1] } }), { message: /changes.webhooks.retrySchedule/ })
  t.throws(() => resolveChanges({ webhooks: { allowedHosts: [], timeout: 0 } }), { message: /changes.webhooks.timeout/ })
  t.throws(() => resolveChanges({ webhooks: { allowedHosts: [], hosts: [] } }), { message: /hosts/ })
  t.same([...(resolveChanges({ webhooks: { allowedHosts: 'Hooks.Example.com, [::1]' } })?.webhooks?.allowedHosts ?? [])], ['hooks.example.com', '::1'])
  const logless = { ...memoryStore(), appendChanges: undefined }
  await t.rejects(buildApp(t, { store: logless as Store, changes: true }), { message: /a store with a change log/ })
  const Thing = Type.Object({ id: Type.Readonly(Type.String()), name: Type.String() }, { additionalProperties: false })
  await t.rejects(buildApp(t, {
    changes: true,
    resources: store => [
      defineResource({ name: 'things', singular: 'thing', schema: Thing, store }),
      defineResource({ name: 'others', singular: 'other', schema: Thing, store: memoryStore() })
    ]
  }), { message: /every resource kept in one store/ })
})

t.test('writes that change nothing record nothing; a delete records the next version', async t => {
  // Records made now: within the retention, so the commit's purge keeps them.
  const clock = testClock(new Date())
  const store = memoryStore({ now: clock.now })
  const app = await buildApp(t, { store, clock, changes: true })
  const made = (await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: { name: 'A' } })).json().data.author
  const stale = await app.inject({ method: 'PATCH', url: `/v1/authors/${made.id}`, headers: { 'content-type': 'application/merge-patch+json', 'if-match': '"7"' }, payload: { name: 'B' } })
  t.equal(stale.statusCode, 412)
  t.equal((await app.inject({ method: 'DELETE', url: '/v1/authors/nope' })).statusCode, 404)
  t.equal((await app.inject({ method: 'DELETE', url: `/v1/authors/${made.id}`, headers: { 'if-match': '"7"' } })).statusCode, 412)
  t.equal((await app.inject({ method: 'DELETE', url: `/v1/authors/${made.id}` })).statusCode, 204)
  const read = await store.readChanges?.({ after: null, limit: 10, resources: null })
  t.same(read?.changes.map(change => `${change.operation} v${change.version}`), ['create v1', 'delete v2'])
})

t.test('the SQL change log: kept by the write that makes the change, read by resource and in pages, purged; checked when it may not be created', async t => {
  const db = await openPglite()
  t.teardown(() => db.close())
  const store = await pgliteStore({ db, schema: 'changes_log' })
  const { authors, books } = suiteModels(store)
  const change = (id: string) => ({ change: { id, previous: null } })
  // The log is not prepared yet: the first write, in a transaction, is undone, the log made, and the write run again.
  await store.transaction(async tx => await tx.create(authors, AUTHORS[0], change('c')))
  await store.create(authors, AUTHORS[1], change('d'))
  await store.create(books, BOOKS[0], change('e'))
  const read = await store.readChanges?.({ after: null, limit: 1, resources: ['authors'] })
  t.match(read, { changes: [{ id: 'c', resource: 'authors', recordId: 'a1', data: AUTHORS[0], previous: null }], hasMore: true, purgedThrough: '0' })
  t.match(await store.readChanges?.({ after: BigInt(read?.changes[0].position as string), limit: 5, resources: ['books'] }), { changes: [{ id: 'e', recordId: 'b01' }], hasMore: false })
  t.equal(await store.purgeChanges?.(new Date(Date.now() + 1000)), 3)
  t.match(await store.readChanges?.({ after: null, limit: 1, resources: null }), { changes: [], hasMore: false })
  // A schema whose name holds the numbering block's dollar-quote tag: the block takes another tag.
  const odd = await pgliteStore({ db, schema: 'odd$numbering$schema' })
  const oddModels = suiteModels(odd)
  await odd.create(oddModels.authors, AUTHORS[0], change('f'))
  t.match(await odd.readChanges?.({ after: null, limit: 5, resources: null }), { changes: [{ id: 'f', position: '1' }] })
  const unmigrated = await pgliteStore({ db, schema: 'changes_unmigrated', migrate: false })
  await t.rejects(unmigrated.prepare?.([], { idempotencyKeys: false, changes: true }) as Promise<void>, { message: /api_change_log.*migrate is false; create it: CREATE TABLE/ })
})

t.test('changes.onChange: every change committed after ready, on any instance, in order, as the admin sees it; a throw calls again', async t => {
  const store = memoryStore()
  // Before either app is ready: not theirs to hear.
  await store.appendChanges?.([{ id: 'old', resource: 'authors', recordId: 'a0', operation: 'create', version: 1, at: new Date(), data: { id: 'a0', name: 'Old' }, previous: null }])
  const heard: Record<'a' | 'b', string[]> = { a: [], b: [] }
  let failures = 1
  const lines: Array<{ level: number, msg: string }> = []
  const a = await buildApp(t, { store, changes: { pollInterval: 20, onChange: change => { heard.a.push(`${change.operation} ${change.resource} v${change.version}`) } } })
  const b = await buildApp(t, {
    store,
    server: { logger: { level: 'warn', stream: { write: (line: string) => lines.push(JSON.parse(line)) } } },
    changes: {
      pollInterval: 20,
      async onChange (change) {
        if (change.operation === 'modify' && failures-- > 0) throw new Error('the cache is down')
        heard.b.push(`${change.operation} ${change.resource} v${change.version}`)
      }
    }
  })
  const made = (await a.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: { name: 'Ann' } })).json().data.author
  t.equal((await b.inject({ method: 'PATCH', url: `/v1/authors/${made.id}`, headers: { 'content-type': 'application/merge-patch+json' }, payload: { country: 'NZ' } })).statusCode, 200)
  // A change of a resource no longer served is no one's to hear.
  await store.appendChanges?.([{ id: 'ghost', resource: 'ghosts', recordId: 'g1', operation: 'create', version: 1, at: new Date(), data: { id: 'g1' }, previous: null }])
  t.equal((await a.inject({ method: 'DELETE', url: `/v1/authors/${made.id}` })).statusCode, 204)
  const all = ['create authors v1', 'modify authors v2', 'delete authors v3']
  while (heard.a.length < 3 || heard.b.length < 3) await new Promise(resolve => setTimeout(resolve, 20))
  t.same(heard, { a: all, b: all }, 'each instance heard every change, its own and the other\'s, once, in order; the failed call was made again')
  t.match(lines, [{ level: 40, msg: /changes\.onChange hook .* failed; trying again/ }])
  await a.close()
  await b.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: { name: 'Bo' } })
  while (heard.b.length < 4) await new Promise(resolve => setTimeout(resolve, 20))
  t.same(heard.a, all, 'a closed app hears nothing more')
})

t.test('changes.onChange: a store unreachable at start is read again', async t => {
  const store = memoryStore()
  const reads = store.readChanges?.bind(store) as NonNullable<Store['readChanges']>
  let calls = 0
  const flaky: Store = {
    ...store,
    readChanges: async query => {
      if (++calls === 1) throw new Error('unreachable')
      return await reads(query)
    }
  }
  const heard: string[] = []
  const app = await buildApp(t, { store: flaky, changes: { onChange: change => { heard.push(change.operation) } } })
  // The head is read after the pause (1 s), then the log from it: the changes from then on are heard.
  const called = () => calls
  while (called() < 3) await new Promise(resolve => setTimeout(resolve, 20))
  await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: { name: 'Ann' } })
  while (heard.length < 1) await new Promise(resolve => setTimeout(resolve, 20))
  t.same(heard, ['create'])
  t.throws(() => resolveChanges({ onChange: 'log' }), { message: /changes.onChange must be a function of the change/ })
})
