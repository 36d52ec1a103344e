// Server-Timing (the serverTiming option, README "Metrics and timing"): `store;dur=…`, the
// milliseconds an answer waited on its store, on every answer when on, and no such field when off.
import { request as httpRequest } from 'node:http'
import type { IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { memoryStore } from '../lib/index.js'
import type { ResourceModel, Store } from '../lib/index.js'
import { createStoreTiming } from '../lib/store-timing.js'
import { buildApp, json } from './helpers/app.js'

const field = /^store;dur=(\d+\.\d)$/
const storeMillis = (header: unknown) => Number(field.exec(String(header))?.[1] ?? NaN)

/** A memory store whose reads of books and creations take at least `millis`. */
function slowStore (millis: number): Store {
  const store = memoryStore()
  return {
    ...store,
    list: async (model, query) => {
      if (model.name === 'books') await sleep(millis)
      return await store.list(model, query)
    },
    create: async (model, fields) => {
      await sleep(millis)
      return await store.create(model, fields)
    }
  }
}

t.test('without the option, answers carry no Server-Timing', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ url: '/v1/books' })
  t.equal(res.statusCode, 200)
  t.notOk('server-timing' in res.headers)
})

t.test('each answer tells its own request\'s time on the store, concurrent requests apart', async t => {
  const app = await buildApp(t, { serverTiming: true, store: slowStore(100) })
  const [books, authors] = await Promise.all([app.inject({ url: '/v1/books' }), app.inject({ url: '/v1/authors' })])
  t.same([books.statusCode, authors.statusCode], [200, 200])
  t.match(books.headers['server-timing'], field)
  t.match(authors.headers['server-timing'], field)
  t.ok(storeMillis(books.headers['server-timing']) >= 95, `books waited ${String(books.headers['server-timing'])}`)
  t.ok(storeMillis(authors.headers['server-timing']) < 95, `authors waited ${String(authors.headers['server-timing'])}`)
})

// Over a socket, the body sent after the headers: it then arrives in events of the connection,
// which inject does not reproduce.
t.test('a request whose body comes later counts the store calls made after it is read', async t => {
  const app = await buildApp(t, { serverTiming: true, store: slowStore(100) })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  const body = JSON.stringify({ name: 'Octavia E. Butler' })
  const answer = new Promise<IncomingMessage>((resolve, reject) => {
    const request = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/v1/authors', headers: { ...json, 'content-length': body.length } }, resolve).on('error', reject)
    request.flushHeaders()
    setTimeout(() => request.end(body), 50)
  })
  const res = await answer
  res.resume()
  t.equal(res.statusCode, 201)
  t.ok(storeMillis(res.headers['server-timing']) >= 95, String(res.headers['server-timing']))
})

t.test('answers that never reached the store say 0, refusals and unknown paths included', async t => {
  const app = await buildApp(t, { serverTiming: true, rateLimit: { max: 1, timeWindow: 60000 } })
  const first = await app.inject({ url: '/v1/nothing' })
  const refused = await app.inject({ url: '/v1/books' })
  t.same([first.statusCode, refused.statusCode], [404, 429])
  t.equal(first.headers['server-timing'], 'store;dur=0.0')
  t.equal(refused.headers['server-timing'], 'store;dur=0.0')
})

t.test('a store call outside any request is not timed, and answers as the store does', async t => {
  const store = memoryStore()
  const timing = createStoreTiming()
  const model = { name: 'loose', idField: 'id' } as ResourceModel
  Object.assign(model, { model })
  const timed = timing.timedStores(() => store)(model)
  t.equal(timed, timing.timedStores(() => store)(model), 'one wrapper per store')
  t.same(await timed.getMany(model, 'id', []), [])
})

t.test('a store without an optional call (aggregate) stays without it: apply= is the 400 of such a store, timed', async t => {
  const { aggregate, ...withoutAggregate } = memoryStore()
  t.type(aggregate, 'function', 'the memory store has one to leave out')
  const app = await buildApp(t, { serverTiming: true, store: withoutAggregate })
  const res = await app.inject({ url: '/v1/books?apply=groupby((year))' })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { invalidParams: [{ name: 'apply', reason: 'the store of books cannot aggregate' }] })
  t.match(res.headers['server-timing'], field)
})
