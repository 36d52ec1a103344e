// Request ids (spec "Request headers": X-Request-Id; "Response headers": Request-Id): echoed when
// safe, generated when absent, replaced (never reflected) when unsafe, and the same id in Fastify's
// logs when the host passes genReqId.
import { Writable } from 'node:stream'
import t from 'tap'
import { genReqId, memoryStore } from '../lib/index.js'
import type { Store } from '../lib/index.js'
import { buildApp } from './helpers/app.js'
import { buildSecureApp } from './helpers/secure-app.js'

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

t.test('a safe X-Request-Id is echoed as Request-Id, on successes and errors alike', async t => {
  const app = await buildSecureApp(t)
  for (const id of ['abc-123', 'trace:01HX.7_z', 'a'.repeat(128)]) {
    for (const url of ['/v1/books', '/v1/nothing']) {
      const res = await app.inject({ url, headers: { 'x-request-id': id } })
      t.equal(res.statusCode, 401)
      t.equal(res.headers['request-id'], id, `${url} ${id.slice(0, 10)}`)
    }
  }
})

t.test('without X-Request-Id a fresh id is generated per request', async t => {
  const app = await buildApp(t)
  const first = (await app.inject({ url: '/v1/books' })).headers['request-id'] as string
  const second = (await app.inject({ url: '/v1/books/missing' })).headers['request-id'] as string
  t.match(first, uuid)
  t.match(second, uuid)
  t.not(first, second)
})

t.test('too long or unsafe ids are replaced, never reflected', async t => {
  const app = await buildApp(t)
  for (const id of ['a'.repeat(129), 'has space', '<script>alert(1)</script>', 'naïve', 'a,b', '"quoted"', 'semi;colon', '']) {
    const res = await app.inject({ url: '/v1/books', headers: { 'x-request-id': id } })
    t.match(res.headers['request-id'], uuid, JSON.stringify(id.slice(0, 20)))
    t.notMatch(res.body, /script/)
  }
  const twice = await app.inject({ url: '/v1/books', headers: { 'x-request-id': ['one', 'two'] } })
  t.match(twice.headers['request-id'], uuid, 'a repeated header is not one id')
})

function capture () {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write (chunk, _encoding, callback) {
      lines.push(JSON.parse(String(chunk)))
      callback()
    }
  })
  return { lines, stream }
}

t.test('with genReqId, the logs carry the same id as Request-Id', async t => {
  const { lines, stream } = capture()
  const app = await buildApp(t, { server: { genReqId, logger: { stream, level: 'info' } } })
  const given = await app.inject({ url: '/v1/books', headers: { 'x-request-id': 'client-id-42' } })
  t.equal(given.headers['request-id'], 'client-id-42')
  const generated = await app.inject({ url: '/v1/books' })
  const unsafe = await app.inject({ url: '/v1/books', headers: { 'x-request-id': 'x'.repeat(200) } })
  const loggedIds = lines.filter(line => line.msg === 'request completed').map(line => line.reqId)
  t.same(loggedIds, ['client-id-42', generated.headers['request-id'], unsafe.headers['request-id']])
  t.match(generated.headers['request-id'], uuid)
  t.match(unsafe.headers['request-id'], uuid)
})

t.test('with genReqId, every log line of a request carries its Request-Id, the plugin\'s own included', async t => {
  const { lines, stream } = capture()
  const store = memoryStore()
  const failing: Store = { ...store, list: async () => { throw new Error('the disk is on fire') } }
  const app = await buildApp(t, { store: failing, server: { genReqId, logger: { stream, level: 'info' } } })
  const before = lines.length
  const res = await app.inject({ url: '/v1/books', headers: { 'x-request-id': 'trace-500' } })
  t.equal(res.statusCode, 500)
  const logged = lines.slice(before)
  t.same(logged.map(line => line.msg), ['incoming request', 'request failed', 'request completed'])
  t.same(logged.map(line => line.reqId), ['trace-500', 'trace-500', 'trace-500'])
})
