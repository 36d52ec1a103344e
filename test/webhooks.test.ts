// Webhooks (docs/changes.md "Webhooks"; the demo contract's "Webhooks"): the demo's plugin options
// with a short retry schedule, a receiver on 127.0.0.1, on each store the demo runs on. What a
// client sees: the subscription resource (its owner's only, the secret once, the allowed hosts),
// the signed POSTs, retries, order per record, dead deliveries and their retry, and a restart.
// Then the plugin alone on a memory store: the owner without `ownerOf`, a subscription ended before
// a delivery's next attempt, a store that fails under the fan-out and the sender, two instances,
// names that resolve where they may not (a resolver of the test's own), the purge of finished
// deliveries (on PGlite too), and the subscription read once by the delivery routes.
import { createHmac } from 'node:crypto'
import { createServer } from 'node:http'
import type { IncomingHttpHeaders } from 'node:http'
import { isIP } from 'node:net'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import t from 'tap'
import type { Test } from 'tap'
import { apiConventions, defineAuth, memoryStore, pgliteStore } from '../lib/index.js'
import type { ChangesOptions, Store, StoredRecord } from '../lib/index.js'
import { webhookModels } from '../lib/changes/webhooks.js'
import { newUuidV7 } from '../lib/registry/uuid.js'
import { kResolveHost } from '../lib/symbols.js'
import { demoPluginOptions } from '../demo/app.js'
import { loadConfig } from '../demo/config.js'
import { createDemoStore } from '../demo/store.js'
import { buildApp } from './helpers/app.js'
import { client, places, placeFor } from './helpers/demo-http.js'
import type { Api, Place } from './helpers/demo-http.js'
import { openPglite } from './stores/pglite-db.js'

/** The schedule between attempts: short, so that eight attempts take a moment. */
const retrySchedule = [10, 10, 10, 10, 10, 10, 10]

/** The demo's plugin alone on `place`, with the short schedule. */
async function start (place: Place): Promise<{ api: Api, close: () => Promise<void> }> {
  const config = loadConfig({ ...place.env, RATE_LIMIT_MAX: '1000000', CURSOR_SECRET: 'a-test-secret-of-enough-length' })
  const app = Fastify({ logger: false })
  const store = await createDemoStore(config, app.log)
  app.addHook('onClose', async () => { await store.close() })
  const options = demoPluginOptions(config, store)
  const changes = options.changes as ChangesOptions
  await app.register(apiConventions, { ...options, changes: { ...changes, webhooks: { ...changes.webhooks, allowedHosts: '127.0.0.1,localhost', retrySchedule } } })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  return { api: client(base), close: async () => { await app.close() } }
}

interface Received { readonly path: string, readonly headers: IncomingHttpHeaders, readonly body: string, readonly status: number }

/**
 * A receiver: each path answers the statuses queued for it, then `fallback` of the path (200 unless
 * set; 0: never answers); a held path answers once released.
 */
async function receiver (t: { teardown (fn: () => unknown): void }) {
  const received: Received[] = []
  const queued = new Map<string, number[]>()
  const fallback = new Map<string, number>()
  const holds = new Map<string, Promise<void>>()
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const path = request.url ?? ''
      const status = queued.get(path)?.shift() ?? fallback.get(path) ?? 200
      received.push({ path, headers: request.headers, body: Buffer.concat(chunks).toString(), status })
      // 0: no answer at all (until the connection closes).
      if (status === 0) return
      const answer = () => {
        response.statusCode = status
        response.end()
      }
      const held = holds.get(path)
      if (held === undefined) answer()
      else held.then(answer, answer)
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise(resolve => { server.closeAllConnections(); server.close(() => resolve(undefined)) }))
  const port = (server.address() as AddressInfo).port
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    at: (path: string) => received.filter(request => request.path === path),
    queue: (path: string, ...statuses: number[]) => queued.set(path, statuses),
    answer: (path: string, status: number) => fallback.set(path, status),
    /** Holds the answers of `path` until the function returned is called. */
    hold: (path: string) => {
      let release = () => {}
      holds.set(path, new Promise<void>(resolve => { release = resolve }))
      return () => {
        holds.delete(path)
        release()
      }
    }
  }
}

/** Waits for `check` to hold (looking every 20 ms, for at most 20 s), and returns its last value. */
async function until<T> (check: () => Promise<T> | T, what: string): Promise<Exclude<T, false | undefined | null>> {
  const deadline = Date.now() + 20_000
  for (;;) {
    const value = await check()
    if (value !== false && value !== undefined && value !== null) return value as Exclude<T, false | undefined | null>
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise(resolve => setTimeout(resolve, 20))
  }
}

const bodyOf = (request: Received) => JSON.parse(request.body)

for (const where of places('webhooks')) {
  t.test(where.name, { skip: where.skip }, async t => {
    const { place } = await placeFor(t, where)
    let app = await start(place)
    t.teardown(async () => await app.close())
    const api: Api = async (...args) => await app.api(...args)
    const hook = await receiver(t)
    const subscribe = async (caller: string, body: Record<string, unknown>) => {
      const res = await api(caller, 'POST', '/v1/webhooks', { body })
      if (res.status !== 201) throw new Error(`${res.status} ${res.text}`)
      return res.body.data.webhook
    }
    const deliveries = async (caller: string, id: string) => (await api(caller, 'GET', `/v1/webhooks/${id}/deliveries?pageSize=100`)).body.data.deliveries
    const newAuthor = async () => (await api('alice', 'POST', '/v1/authors', { body: { name: 'Ann' } })).body.data.author

    t.test('a subscription made in a batch or answered 202 shows its secret in that answer only', async t => {
      const secret = /^whsec_[A-Za-z0-9+/]{43}=$/
      const batched = await api('alice', 'POST', '/v1/batch', { body: { operations: [{ op: 'create', resource: 'webhooks', data: { url: hook.url('/batched') } }] } })
      t.equal(batched.status, 200)
      const [result] = batched.body.data.results
      t.match(result, { status: 201, data: { webhook: { url: hook.url('/batched'), secret } } })
      t.notOk('secret' in (await api('alice', 'GET', `/v1/webhooks/${result.data.webhook.id as string}`)).body.data.webhook)
      const accepted = await api('alice', 'POST', '/v1/webhooks', { body: { url: hook.url('/later') }, headers: { prefer: 'respond-async' } })
      t.equal(accepted.status, 202)
      const outcome = await until(async () => {
        const monitor = await api('alice', 'GET', accepted.headers.get('location') as string)
        return monitor.body.data.operation.status === 'succeeded' && monitor.body.data.operation
      }, 'the CREATE is done')
      const made = await api('alice', 'GET', outcome.result.location)
      t.equal(made.status, 200)
      t.notOk('secret' in made.body.data.webhook)
      t.match(outcome.result, { status: 201, data: { webhook: { id: made.body.data.webhook.id, secret } } }, 'the monitor keeps the CREATE answer, secret included')
    })

    t.test('a delivery carries the change, signed with the secret of the CREATE answer; the secret is never shown again', async t => {
      const created = await api('alice', 'POST', '/v1/webhooks', { body: { url: hook.url('/signed'), resources: ['authors'] } })
      t.equal(created.status, 201)
      const webhook = created.body.data.webhook
      t.match(webhook, { url: hook.url('/signed'), resources: ['authors'], active: true, ownerId: 'alice' })
      t.match(webhook.secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
      t.equal(Buffer.from(webhook.secret.slice(6), 'base64').length, 32)
      t.notOk('principal' in webhook)
      const again = await api('alice', 'GET', `/v1/webhooks/${webhook.id}`)
      t.equal(again.status, 200)
      t.notOk('secret' in again.body.data.webhook, 'not in a RETRIEVE')
      t.notOk((await api('alice', 'GET', '/v1/webhooks')).body.data.webhooks.some((one: Record<string, unknown>) => 'secret' in one), 'not in a LIST')
      const patched = await api('alice', 'PATCH', `/v1/webhooks/${webhook.id}`, { body: { resources: ['authors', 'books'] } })
      t.equal(patched.status, 200)
      t.notOk('secret' in patched.body.data.webhook, 'not in a MODIFY')
      const replaced = await api('alice', 'PUT', `/v1/webhooks/${webhook.id}`, { body: { url: hook.url('/signed'), resources: ['authors'] } })
      t.equal(replaced.status, 200)
      t.notOk('secret' in replaced.body.data.webhook, 'not in a REPLACE')
      t.match(replaced.body.data.webhook, { ownerId: 'alice', active: true })
      const feed = await api('admin', 'GET', '/v1/changes?pageSize=1000&resource=webhooks')
      t.same(feed.body.data.changes, [], 'subscriptions are not in the change feed (nor, so, their secrets)')

      const author = await newAuthor()
      const [request] = await until(() => hook.at('/signed').length > 0 && hook.at('/signed'), 'the receiver has the change')
      const change = bodyOf(request)
      t.match(change, { resource: 'authors', recordId: author.id, operation: 'create', version: 1, data: { author: { id: author.id, name: 'Ann' } } })
      t.equal(request.headers['content-type'], 'application/json')
      t.equal(request.headers['webhook-id'], change.id)
      const timestamp = request.headers['webhook-timestamp'] as string
      t.match(timestamp, /^[0-9]+$/)
      t.ok(Math.abs(Number(timestamp) - Date.now() / 1000) < 600, 'the timestamp is Unix seconds')
      const expected = createHmac('sha256', Buffer.from(webhook.secret.slice('whsec_'.length), 'base64')).update(`${change.id}.${timestamp}.${request.body}`).digest('base64')
      t.equal(request.headers['webhook-signature'], `v1,${expected}`)
      const [delivery] = await until(async () => { const found = await deliveries('alice', webhook.id); return found[0]?.status === 'delivered' && found }, 'the delivery is recorded')
      t.match(delivery, { changeId: change.id, status: 'delivered', attempts: 1, lastStatus: 200, lastError: null, nextAttemptAt: null })
    })

    t.test('a change reaches each matching active subscription, and no other', async t => {
      const books = await subscribe('alice', { url: hook.url('/m-books'), resources: ['books'] })
      const every = await subscribe('alice', { url: hook.url('/m-every') })
      const inactive = await subscribe('alice', { url: hook.url('/m-inactive'), active: false })
      const reviews = await subscribe('alice', { url: hook.url('/m-reviews'), resources: ['reviews'] })
      const author = await newAuthor()
      const book = (await api('alice', 'POST', '/v1/books', { body: { title: 'T', authorId: author.id } })).body.data.book
      await until(() => hook.at('/m-books').length === 1 && hook.at('/m-every').length === 2, 'both matching subscriptions have their changes')
      t.same(hook.at('/m-books').map(request => bodyOf(request).recordId), [book.id])
      // Changes of different records go out side by side, in any order (docs/changes.md "Webhooks": in order per record).
      t.same(hook.at('/m-every').map(request => bodyOf(request).recordId).sort(), [author.id, book.id].sort())
      // The book's change was fanned out to every subscription in one transaction: the others have none.
      t.same(await deliveries('alice', inactive.id), [])
      t.same(await deliveries('alice', reviews.id), [])
      t.same(hook.at('/m-inactive'), [])
      t.same(hook.at('/m-reviews'), [])
      t.equal((await deliveries('alice', books.id)).length, 1)
      t.equal((await deliveries('alice', every.id)).length, 2)
    })

    t.test('a failed attempt is retried until the receiver answers 2xx; the attempts are recorded', async t => {
      hook.queue('/flaky', 500, 503)
      const webhook = await subscribe('alice', { url: hook.url('/flaky'), resources: ['authors'] })
      await newAuthor()
      const [delivery] = await until(async () => { const found = await deliveries('alice', webhook.id); return found[0]?.status === 'delivered' && found }, 'delivered')
      t.match(delivery, { status: 'delivered', attempts: 3, lastStatus: 200, lastError: null })
      t.same(hook.at('/flaky').map(request => request.status), [500, 503, 200])
      t.equal(new Set(hook.at('/flaky').map(request => request.headers['webhook-id'])).size, 1, 'each attempt carries the same webhook-id')
    })

    t.test('the changes of one record are delivered in order, a later one waiting while an earlier one fails', async t => {
      hook.queue('/order', 500, 500, 500)
      const webhook = await subscribe('alice', { url: hook.url('/order'), resources: ['authors'] })
      const author = await newAuthor()
      await api('alice', 'PATCH', `/v1/authors/${author.id}`, { body: { name: 'Ann B' } })
      await api('alice', 'PATCH', `/v1/authors/${author.id}`, { body: { name: 'Ann C' } })
      await until(() => hook.at('/order').filter(request => request.status === 200).length === 3, 'three delivered')
      t.same(hook.at('/order').map(request => `${bodyOf(request).version}:${request.status}`), ['1:500', '1:500', '1:500', '1:200', '2:200', '3:200'])
      t.same((await deliveries('alice', webhook.id)).map((delivery: { attempts: number }) => delivery.attempts), [4, 1, 1])
    })

    t.test('after the eighth failed attempt a delivery is dead; a retry puts it back to pending', async t => {
      hook.answer('/dead', 500)
      const webhook = await subscribe('alice', { url: hook.url('/dead'), resources: ['authors'] })
      await newAuthor()
      const [dead] = await until(async () => { const found = await deliveries('alice', webhook.id); return found[0]?.status === 'dead' && found }, 'dead')
      t.match(dead, { status: 'dead', attempts: 8, lastStatus: 500, lastError: 'answered 500', nextAttemptAt: null })
      t.equal(hook.at('/dead').length, 8)
      t.equal((await api('bob', 'POST', `/v1/webhooks/${webhook.id}/deliveries/${dead.id}/retry`)).status, 404, 'not by another caller')
      t.equal((await api('alice', 'POST', `/v1/webhooks/${webhook.id}/deliveries/nothing/retry`)).status, 404)
      hook.answer('/dead', 204)
      const retried = await api('alice', 'POST', `/v1/webhooks/${webhook.id}/deliveries/${dead.id}/retry`)
      t.equal(retried.status, 202)
      t.match(retried.body.data.delivery, { id: dead.id, status: 'pending' })
      const [delivered] = await until(async () => { const found = await deliveries('alice', webhook.id); return found[0]?.status === 'delivered' && found }, 'delivered after the retry')
      t.match(delivered, { status: 'delivered', lastStatus: 204 })
      const again = await api('alice', 'POST', `/v1/webhooks/${webhook.id}/deliveries/${dead.id}/retry`)
      t.equal(again.status, 409, 'only a dead delivery is retried')
      t.match(again.headers.get('content-type'), /^application\/problem\+json/)
    })

    t.test('a caller sees and changes only its own subscriptions; an admin sees all; a reader none', async t => {
      const webhook = await subscribe('alice', { url: hook.url('/mine') })
      for (const [method, path, body] of [['GET', ''], ['PATCH', '', { active: false }], ['PUT', '', { url: hook.url('/theirs') }], ['DELETE', ''], ['GET', '/deliveries']] as const) {
        const res = await api('bob', method, `/v1/webhooks/${webhook.id}${path}`, { body })
        t.equal(res.status, 404, `${method}${path} by bob`)
        t.match(res.headers.get('content-type'), /^application\/problem\+json/)
      }
      t.notOk((await api('bob', 'GET', '/v1/webhooks')).body.data.webhooks.some((one: { id: string }) => one.id === webhook.id))
      t.equal((await api('admin', 'GET', `/v1/webhooks/${webhook.id}`)).status, 200)
      t.equal((await api('admin', 'GET', `/v1/webhooks/${webhook.id}/deliveries`)).status, 200)
      t.equal((await api('reader', 'GET', '/v1/webhooks')).status, 403)
      t.equal((await api('reader', 'GET', `/v1/webhooks/${webhook.id}/deliveries`)).status, 403, 'refused its deliveries as it is the subscriptions')
      t.equal((await api('reader', 'POST', `/v1/webhooks/${webhook.id}/deliveries/nope/retry`)).status, 403)
      t.equal((await api('alice', 'GET', `/v1/webhooks/${webhook.id}`)).body.data.webhook.active, true, 'bob changed nothing')
      t.equal((await api('alice', 'DELETE', `/v1/webhooks/${webhook.id}`)).status, 204)
    })

    t.test('a URL whose host is not allowed, a private address, or another scheme: 422 naming url', async t => {
      for (const url of ['http://example.com/hook', 'http://10.0.0.1/hook', 'http://192.168.1.1/hook', 'http://169.254.169.254/latest', 'http://[::1]/hook', 'http://127.0.0.2/hook', 'ftp://127.0.0.1/hook', 'http://user:pw@127.0.0.1/hook', 'not a url']) {
        const res = await api('alice', 'POST', '/v1/webhooks', { body: { url } })
        t.equal(res.status, 422, url)
        t.match(res.headers.get('content-type'), /^application\/problem\+json/)
        t.same(res.body.invalidParams?.map((param: { name: string }) => param.name), ['url'], url)
      }
      const webhook = await subscribe('alice', { url: 'https://localhost:8443/hook' })
      const res = await api('alice', 'PATCH', `/v1/webhooks/${webhook.id}`, { body: { url: 'https://example.com/hook' } })
      t.equal(res.status, 422)
      t.same(res.body.invalidParams.map((param: { name: string }) => param.name), ['url'])
      const unknown = await api('alice', 'POST', '/v1/webhooks', { body: { url: hook.url('/x'), resources: ['planets'] } })
      t.equal(unknown.status, 422)
      t.same(unknown.body.invalidParams.map((param: { name: string }) => param.name), ['resources'])
      t.equal((await api('alice', 'POST', '/v1/webhooks', { body: { url: hook.url('/x'), secret: 'mine' } })).status, 400, 'the secret is the server\'s')
      t.equal((await api('alice', 'DELETE', `/v1/webhooks/${webhook.id}`)).status, 204)
    })

    t.test('the deliveries page like a LIST', async t => {
      const webhook = await subscribe('alice', { url: hook.url('/pages'), resources: ['authors'] })
      for (let i = 0; i < 3; i++) await newAuthor()
      await until(() => hook.at('/pages').length === 3, 'three delivered')
      const first = await api('alice', 'GET', `/v1/webhooks/${webhook.id}/deliveries?pageSize=2`)
      t.equal(first.status, 200)
      t.equal(first.body.data.deliveries.length, 2)
      const next = first.body.links.find((link: { rel: string }) => link.rel === 'next').href
      const second = await api('alice', 'GET', next)
      t.equal(second.body.data.deliveries.length, 1)
      t.notOk(second.body.links.some((link: { rel: string }) => link.rel === 'next'))
      const listed: string[] = [...first.body.data.deliveries, ...second.body.data.deliveries].map((delivery: { changeId: string }) => delivery.changeId)
      // Changes of different records go out at once, in any order; the list is in log order (the authors were written one after another: their change ids ascend).
      t.same([...listed].sort(), hook.at('/pages').map(request => bodyOf(request).id as string).sort())
      t.same(listed, [...listed].sort(), 'in log order')
      const refused = await api('alice', 'GET', `/v1/webhooks/${webhook.id}/deliveries?pageSize=0&after=x`)
      t.equal(refused.status, 400, 'a bad query parameter is the API\'s 400, as on every collection')
      t.match(refused.body, { type: '/v1/problems/query-invalid', invalidParams: [{ name: 'pageSize' }, { name: 'after' }] })
    })

    t.test('what was pending when the app stopped is delivered after a restart', { skip: place.keeps ? false : 'the memory store keeps nothing across a restart' }, async t => {
      // The first attempt is under way (no answer yet) as the app stops.
      hook.answer('/restart', 0)
      const webhook = await subscribe('alice', { url: hook.url('/restart'), resources: ['authors'] })
      const author = await newAuthor()
      await until(() => hook.at('/restart').length > 0, 'a first attempt is under way')
      await app.close()
      hook.answer('/restart', 200)
      app = await start(place)
      const delivered = await until(() => hook.at('/restart').find(request => request.status === 200), 'delivered after the restart')
      t.equal(bodyOf(delivered).recordId, author.id)
      const [delivery] = await until(async () => { const found = await deliveries('alice', webhook.id); return found[0]?.status === 'delivered' && found }, 'recorded')
      t.equal(delivery.status, 'delivered')
    })
  })
}

// The plugin itself on a memory store (test/helpers/app.ts), where the demo cannot go: the options'
// defaults, a store that fails, two instances sharing one store, the deliveries as stored.

/** The callers, each a bearer token of the same name, and their principals. */
const principals: Record<string, object> = { ursula: { user: 'ursula' }, sam: { sub: 'sam' }, ida: { id: 'ida' }, nobody: { name: 'nobody' }, blank: { user: '' } }
const tokens = Object.fromEntries(Object.keys(principals).map(name => [name, name]))

interface PluginSettings {
  /** More webhooks options (kResolveHost among them). */
  readonly webhooks?: Record<string | symbol, unknown>
  readonly authorize?: (check: { operation: string, record?: Record<string, unknown> | null }) => boolean
}

/** The plugin with webhooks on `store`, no `ownerOf` nor `seesAll`, the short schedule, and `settings`; what it logs at warn. */
async function pluginApp (t: Test, store: Store, settings: PluginSettings = {}) {
  const logged: Array<Record<string, any>> = []
  const app = await buildApp(t, {
    store,
    auth: defineAuth({ bearer: async token => principals[token] ?? null, authorize: settings.authorize }),
    changes: { webhooks: { allowedHosts: '127.0.0.1', retrySchedule, ...settings.webhooks } as ChangesOptions['webhooks'] },
    server: { logger: { level: 'warn', stream: { write: (line: string) => { logged.push(JSON.parse(line)) } } } }
  })
  const api = client(await app.listen({ port: 0, host: '127.0.0.1' }), tokens)
  const subscribe = async (caller: string, body: Record<string, unknown>) => {
    const res = await api(caller, 'POST', '/v1/webhooks', { body })
    if (res.status !== 201) throw new Error(`${res.status} ${res.text}`)
    return res.body.data.webhook
  }
  const newAuthor = async () => (await api('ursula', 'POST', '/v1/authors', { body: { name: 'Ann' } })).body.data.author
  return { api, logged, subscribe, newAuthor, close: async () => { await app.close() } }
}

const [deliveriesModel, cursorsModel] = webhookModels

t.test('without ownerOf: the owner is the principal\'s user, sub or id; a caller with none cannot subscribe; without seesAll, each sees its own only', async t => {
  const { api, subscribe } = await pluginApp(t, memoryStore())
  const hook = await receiver(t)
  const owned: Record<string, string> = {}
  for (const [caller, owner] of [['ursula', 'ursula'], ['sam', 'sam'], ['ida', 'ida']]) {
    const webhook = await subscribe(caller, { url: hook.url(`/${caller}`) })
    t.equal(webhook.ownerId, owner, caller)
    owned[caller] = webhook.id
  }
  for (const caller of ['nobody', 'blank']) {
    const refused = await api(caller, 'POST', '/v1/webhooks', { body: { url: hook.url('/none') } })
    t.equal(refused.status, 403, `${caller}: no owner`)
    t.match(refused.headers.get('content-type'), /^application\/problem\+json/)
    t.same((await api(caller, 'GET', '/v1/webhooks')).body.data.webhooks, [], `${caller} sees no one's`)
  }
  t.same((await api('ursula', 'GET', '/v1/webhooks')).body.data.webhooks.map((webhook: { id: string }) => webhook.id), [owned.ursula])
  t.equal((await api('sam', 'GET', `/v1/webhooks/${owned.ursula}`)).status, 404)
  t.equal((await api('sam', 'GET', `/v1/webhooks/${owned.ursula}/deliveries`)).status, 404)
  // Without authentication there is no principal, and so no owner.
  const open = await buildApp(t, { changes: { webhooks: { allowedHosts: '127.0.0.1' } } })
  t.equal((await open.inject({ method: 'POST', url: '/v1/webhooks', payload: { url: hook.url('/anonymous') } })).statusCode, 403, 'an anonymous caller: no owner')
  t.same((await open.inject({ url: '/v1/webhooks' })).json().data.webhooks, [])
})

t.test('a subscription made inactive or deleted before a delivery\'s next attempt: the delivery is dead, saying why, and not sent', async t => {
  const store = memoryStore()
  const { api, subscribe, newAuthor } = await pluginApp(t, store)
  const hook = await receiver(t)
  const cases = [
    ['/inactive', (id: string) => api('ursula', 'PATCH', `/v1/webhooks/${id}`, { body: { active: false } }), 200, 'the subscription is inactive'],
    ['/deleted', (id: string) => api('ursula', 'DELETE', `/v1/webhooks/${id}`), 204, 'the subscription was deleted']
  ] as const
  for (const [path, end, status, why] of cases) {
    // The first attempt fails, and is held until the subscription has ended.
    hook.queue(path, 500)
    const release = hook.hold(path)
    const webhook = await subscribe('ursula', { url: hook.url(path), resources: ['authors'] })
    await newAuthor()
    await until(() => hook.at(path).length > 0, 'the first attempt is under way')
    const [delivery] = (await api('ursula', 'GET', `/v1/webhooks/${webhook.id}/deliveries`)).body.data.deliveries
    t.equal((await end(webhook.id)).status, status)
    release()
    const dead = await until(async () => { const found = await store.get(deliveriesModel, delivery.id); return found?.data.status === 'dead' && found.data }, `dead (${path})`)
    // The failed first attempt counts; the end, which sent nothing, does not.
    t.match(dead, { status: 'dead', attempts: 1, lastStatus: null, lastError: why, nextAttemptAt: null }, path)
    t.equal(hook.at(path).length, 1, `${path}: not sent again`)
  }
  // Made active again, the subscription's dead delivery is sent by a retry.
  const [inactive] = (await api('ursula', 'GET', '/v1/webhooks')).body.data.webhooks
  t.equal((await api('ursula', 'PATCH', `/v1/webhooks/${inactive.id}`, { body: { active: true } })).status, 200)
  const [dead] = (await api('ursula', 'GET', `/v1/webhooks/${inactive.id}/deliveries`)).body.data.deliveries
  t.match(dead, { status: 'dead', lastError: 'the subscription is inactive' }, 'as its owner sees it')
  t.equal((await api('ursula', 'POST', `/v1/webhooks/${inactive.id}/deliveries/${dead.id}/retry`)).status, 202)
  await until(() => hook.at('/inactive').some(request => request.status === 200), 'sent after the retry')
})

t.test('a store that fails under the fan-out and the sender: logged at warn and tried again; the changes arrive once it recovers', async t => {
  const inner = memoryStore()
  let failing = false
  const store: Store = { ...inner, list: async (...args) => { if (failing) throw new Error('the store is unavailable'); return await inner.list(...args) } }
  const { logged, subscribe, newAuthor } = await pluginApp(t, store)
  const hook = await receiver(t)
  await subscribe('ursula', { url: hook.url('/outage'), resources: ['authors'] })
  failing = true
  const author = await newAuthor()
  const warned = (message: string) => logged.find(line => line.msg === message)
  const fanOut = await until(() => warned('api-conventions: fanning changes out to webhooks failed; retrying'), 'the fan-out warned')
  const sender = await until(() => warned('api-conventions: reading webhook deliveries failed; retrying'), 'the sender warned')
  for (const line of [fanOut, sender]) t.match(line, { level: 40, err: { message: 'the store is unavailable' } })
  t.same(hook.at('/outage'), [], 'nothing sent during the outage')
  failing = false
  const [request] = await until(() => hook.at('/outage').length > 0 && hook.at('/outage'), 'delivered after the outage')
  t.equal(bodyOf(request).recordId, author.id)
})

t.test('two instances sharing a store: a delivery one has claimed is not sent by the other while its lease runs', async t => {
  const inner = memoryStore()
  let looks = 0
  const store: Store = { ...inner, list: async (model, query) => { if (model === deliveriesModel) looks++; return await inner.list(model, query) } }
  const one = await pluginApp(t, store)
  const two = await pluginApp(t, store)
  const hook = await receiver(t)
  const release = hook.hold('/shared')
  const webhook = await one.subscribe('ursula', { url: hook.url('/shared'), resources: ['authors'] })
  await two.newAuthor()
  await until(() => hook.at('/shared').length > 0, 'an instance is sending it')
  // The sending instance waits for the answer; the other looks at the pending deliveries meanwhile.
  const before = looks
  await until(() => looks > before, 'the other instance looked')
  release()
  const [delivery] = await until(async () => { const found = (await two.api('ursula', 'GET', `/v1/webhooks/${webhook.id}/deliveries`)).body.data.deliveries; return found[0]?.status === 'delivered' && found }, 'delivered')
  t.match(delivery, { status: 'delivered', attempts: 1, lastStatus: 200 })
  t.equal(hook.at('/shared').length, 1, 'sent once')
  t.equal((await one.api('ursula', 'GET', `/v1/webhooks/${webhook.id}/deliveries`)).body.data.deliveries.length, 1, 'fanned out once')
})

t.test('a fan-out whose transaction fails, then finds its cursor moved by another instance, rolls back each time: the change is still delivered once', async t => {
  const inner = memoryStore()
  let failed = false
  let raced = false
  /**
   * A transaction's store in which the fan-out's first delivery fails to be written, and the
   * first time it moves its cursor, another instance has just moved it.
   */
  const racing = (tx: Store): Store => ({
    ...tx,
    create: async (model, fields) => {
      if (model === deliveriesModel && !failed) {
        failed = true
        throw new Error('the store is unavailable')
      }
      return await tx.create(model, fields)
    },
    update: async (model, id, fields, how) => {
      if (model === cursorsModel && !raced) {
        raced = true
        const current = await tx.get(cursorsModel, id) as StoredRecord
        await tx.update(cursorsModel, id, current.data, { ifVersion: current.version })
      }
      return await tx.update(model, id, fields, how)
    }
  })
  const store: Store = { ...inner, transaction: async work => await inner.transaction(async tx => await work(racing(tx))) }
  const { api, logged, subscribe, newAuthor } = await pluginApp(t, store)
  const hook = await receiver(t)
  const webhook = await subscribe('ursula', { url: hook.url('/raced'), resources: ['authors'] })
  await newAuthor()
  await until(() => hook.at('/raced').length > 0, 'the change is delivered')
  t.match(logged.find(line => line.msg === 'api-conventions: fanning changes out to webhooks failed; retrying'), { level: 40, err: { message: 'the store is unavailable' } }, 'the failed fan-out warned')
  t.ok(raced, 'a fan-out met a moved cursor')
  // Time for a second fan-out of the same change, were there one.
  await new Promise(resolve => setTimeout(resolve, 300))
  t.equal(hook.at('/raced').length, 1, 'sent once')
  t.equal((await api('ursula', 'GET', `/v1/webhooks/${webhook.id}/deliveries`)).body.data.deliveries.length, 1, 'one delivery')
})

/** A resolver of the test's own: each name's addresses; a name it does not know is not found. */
function resolver (answers: Record<string, readonly string[] | (() => readonly string[])>) {
  const asked: string[] = []
  const resolve = async (host: string) => {
    asked.push(host)
    const answer = answers[host]
    if (answer === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' })
    return (typeof answer === 'function' ? answer() : answer).map(address => ({ address, family: isIP(address) }))
  }
  return { asked, resolve }
}

t.test('a listed name that resolves to an address neither public nor listed: each attempt is refused, saying why, and nothing is sent', async t => {
  const hook = await receiver(t)
  const { port } = new URL(hook.url('/'))
  const { resolve } = resolver({
    'rebound.test': ['127.0.0.1'],
    'mapped.test': ['::ffff:127.0.0.1'],
    'metadata.test': ['169.254.169.254'],
    // One public address does not make up for a private one: the socket could try either.
    'mixed.test': ['93.184.215.14', '10.1.2.3'],
    'nat64.test': ['64:ff9b::a01:203'],
    'secure.test': ['127.0.0.1']
  })
  const why = (host: string, address: string, kind: string) => `url its host '${host}' resolves to ${address}, a ${kind} address the server does not allow webhooks to`
  const cases = [
    ['rebound.test', why('rebound.test', '127.0.0.1', 'loopback')],
    ['mapped.test', why('mapped.test', '::ffff:127.0.0.1', 'loopback')],
    ['metadata.test', why('metadata.test', '169.254.169.254', 'link-local')],
    ['mixed.test', why('mixed.test', '10.1.2.3', 'private')],
    ['nat64.test', why('nat64.test', '64:ff9b::a01:203', 'private')],
    ['secure.test', why('secure.test', '127.0.0.1', 'loopback')],
    ['nowhere.test', 'ENOTFOUND']
  ]
  // 127.0.0.1, where the receiver listens, is not listed.
  const { api, subscribe, newAuthor } = await pluginApp(t, memoryStore(), { webhooks: { allowedHosts: cases.map(([host]) => host), [kResolveHost]: resolve } })
  const webhooks: Array<{ id: string }> = []
  for (const [host] of cases) webhooks.push(await subscribe('ursula', { url: `${host === 'secure.test' ? 'https' : 'http'}://${host}:${port}/${host}`, resources: ['authors'] }))
  await newAuthor()
  for (const [i, [host, error]] of cases.entries()) {
    const [dead] = await until(async () => { const found = (await api('ursula', 'GET', `/v1/webhooks/${webhooks[i].id}/deliveries`)).body.data.deliveries; return found[0]?.status === 'dead' && found }, `dead (${host})`)
    t.match(dead, { status: 'dead', attempts: 8, lastStatus: null, lastError: error }, host)
    t.same(hook.at(`/${host}`), [], `${host}: nothing sent`)
  }
})

t.test('a listed name resolving to a listed address is delivered there: resolved once for the connection, so a later answer cannot move it', async t => {
  const hook = await receiver(t)
  const { port } = new URL(hook.url('/'))
  // The first answer is the listed address; any later one a private address that is not.
  let answers = 0
  const { asked, resolve } = resolver({ 'pinned.test': () => answers++ === 0 ? ['127.0.0.1'] : ['10.255.255.1'] })
  const { api, subscribe, newAuthor } = await pluginApp(t, memoryStore(), { webhooks: { allowedHosts: 'pinned.test, 127.0.0.1', [kResolveHost]: resolve } })
  const webhook = await subscribe('ursula', { url: `http://pinned.test:${port}/pinned`, resources: ['authors'] })
  await newAuthor()
  const [request] = await until(() => hook.at('/pinned').length > 0 && hook.at('/pinned'), 'delivered')
  t.equal(request.headers.host, `pinned.test:${port}`, 'to the name, at the address checked')
  const [delivery] = await until(async () => { const found = (await api('ursula', 'GET', `/v1/webhooks/${webhook.id}/deliveries`)).body.data.deliveries; return found[0]?.status === 'delivered' && found }, 'recorded')
  t.match(delivery, { attempts: 1, lastStatus: 200 })
  t.same(asked, ['pinned.test'], 'one resolution, the one checked')
})

t.test('localhost, listed, is delivered to its loopback address without that address being listed', async t => {
  const hook = await receiver(t)
  const { port } = new URL(hook.url('/'))
  const { subscribe, newAuthor } = await pluginApp(t, memoryStore(), { webhooks: { allowedHosts: 'localhost' } })
  await subscribe('ursula', { url: `http://localhost:${port}/local`, resources: ['authors'] })
  await newAuthor()
  const [request] = await until(() => hook.at('/local').length > 0 && hook.at('/local'), 'delivered')
  t.equal(request.headers.host, `localhost:${port}`)
})

const stores: Array<[string, (t: Test) => Promise<Store>]> = [
  ['memory', async () => memoryStore()],
  ['PGlite', async t => {
    const db = await openPglite()
    t.teardown(() => db.close())
    return await pgliteStore({ db, schema: 'webhooks_purge' })
  }]
]

for (const [name, makeStore] of stores) {
  t.test(`deliveries finished before the retention are purged as an instance starts, then now and then; pending ones and those finished since stay (${name})`, async t => {
    const store = await makeStore(t)
    const first = await pluginApp(t, store)
    const hook = await receiver(t)
    const webhook = await first.subscribe('ursula', { url: hook.url('/kept'), resources: ['authors'] })
    const day = 86_400_000
    const at = (ms: number) => new Date(Date.now() + ms).toISOString()
    const delivery = (n: number, status: string, finishedAt: string | null) => ({
      id: newUuidV7(), webhookId: webhook.id, changeId: `c${n}`, seq: String(n).padStart(20, '0'), resource: 'authors', recordId: `a${n}`, status, attempts: 1, lastStatus: status === 'delivered' ? 200 : null, lastError: status === 'delivered' ? null : 'answered 500', nextAttemptAt: status === 'pending' ? at(day) : null, leaseUntil: null, finishedAt, body: '{}'
    })
    // Past the retention (7 days): more than a purge's batch, so that it takes two.
    await store.transaction(async tx => {
      for (let n = 0; n < 501; n++) await tx.create(deliveriesModel, delivery(1000 + n, n % 2 === 0 ? 'delivered' : 'dead', at(-8 * day)))
      await tx.create(deliveriesModel, delivery(1, 'delivered', at(-6 * day)))
      await tx.create(deliveriesModel, delivery(2, 'pending', null))
    })
    t.equal((await first.api('ursula', 'GET', `/v1/webhooks/${webhook.id}/deliveries?pageSize=3`)).body.data.deliveries.length, 3, 'the first instance purged as it started, before these were written')
    // A second instance purges as it starts.
    const second = await pluginApp(t, store)
    const kept = await until(async () => { const found = (await second.api('ursula', 'GET', `/v1/webhooks/${webhook.id}/deliveries`)).body.data.deliveries; return found.length === 2 && found }, 'the old ones purged')
    t.match(kept, [{ changeId: 'c1', status: 'delivered' }, { changeId: 'c2', status: 'pending' }])
  })
}

t.test('the delivery routes read the subscription once: the record authorize decides on is the one answered for', async t => {
  const inner = memoryStore()
  let reads = 0
  const store: Store = { ...inner, get: async (view, id, options) => { if (view.name === 'webhooks') reads++; return await inner.get(view, id, options) } }
  const { api, subscribe } = await pluginApp(t, store, { authorize: ({ operation, record }) => !(operation === 'modify' && record?.url === 'http://127.0.0.1:9/frozen') })
  const open = await subscribe('ursula', { url: 'http://127.0.0.1:9/open' })
  const frozen = await subscribe('ursula', { url: 'http://127.0.0.1:9/frozen' })
  reads = 0
  t.equal((await api('ursula', 'GET', `/v1/webhooks/${open.id}/deliveries`)).status, 200)
  t.equal(reads, 1, 'one read for the check and the list')
  t.equal((await api('ursula', 'POST', `/v1/webhooks/${frozen.id}/deliveries/nothing/retry`)).status, 403, 'authorize saw the record')
  t.equal((await api('ursula', 'POST', `/v1/webhooks/${open.id}/deliveries/nothing/retry`)).status, 404)
  t.equal(reads, 3, 'one read each')
})

t.test('the fan-out: changes without subscriptions, changes no subscription wants, a backlog longer than a batch, changes purged before it read them', async t => {
  const store = memoryStore()
  const hook = await receiver(t)
  const { subscribe, newAuthor } = await pluginApp(t, store)
  const log = store as Required<Pick<Store, 'readChanges'>>
  const headNow = async () => (await log.readChanges({ after: null, limit: 0, resources: null })).head
  const cursorAt = async (head: string) => await until(async () => (await store.get(cursorsModel, 'fanout'))?.data.position === head, `the cursor is at ${head}`)
  await newAuthor()
  await cursorAt(await headNow())
  await subscribe('ursula', { url: hook.url('/books'), resources: ['books'] })
  await newAuthor()
  await cursorAt(await headNow())
  t.same(hook.at('/books'), [], 'an author\'s change is no one\'s here: the cursor moved past it')

  await subscribe('ursula', { url: hook.url('/authors'), resources: ['authors'] })
  // Appended without a commit to wake the fan-out: its look at the head (every poll) finds them, 150 in two batches.
  const change = (i: number) => ({ id: `backlog-${i}`, resource: 'authors', recordId: `a${i}`, operation: 'create' as const, version: 1, at: new Date(), data: { id: `a${i}`, name: 'Backlog' }, previous: null })
  await store.appendChanges?.(Array.from({ length: 150 }, (_, i) => change(i)))
  await until(() => hook.at('/authors').length >= 150, 'the backlog is delivered')
  t.same(hook.at('/authors').map(request => bodyOf(request).recordId), Array.from({ length: 150 }, (_, i) => `a${i}`), 'in log order')

  // Appended, then purged before the fan-out read it: only the head's look finds the gap.
  await store.appendChanges?.([change(150)])
  await store.purgeChanges?.(new Date(Date.now() + 1000))
  await cursorAt(await headNow())
  const author = await newAuthor()
  await until(() => hook.at('/authors').length > 150, 'the next change is delivered')
  t.match(bodyOf(hook.at('/authors')[150]), { recordId: author.id, operation: 'create' })
  t.equal(hook.at('/authors').length, 151, 'the purged one was not')
})

t.test('a receiver that does not answer within timeout: the attempt fails, saying so', async t => {
  const hook = await receiver(t)
  hook.answer('/silent', 0)
  const { api, subscribe, newAuthor } = await pluginApp(t, memoryStore(), { webhooks: { timeout: 50 } })
  const webhook = await subscribe('ursula', { url: hook.url('/silent'), resources: ['authors'] })
  await newAuthor()
  const [dead] = await until(async () => { const found = (await api('ursula', 'GET', `/v1/webhooks/${webhook.id}/deliveries`)).body.data.deliveries; return found[0]?.status === 'dead' && found }, 'dead')
  t.match(dead, { attempts: 8, lastStatus: null, lastError: 'no answer within 50 ms' })
})

t.test('a host no longer listed when a delivery is made: refused, saying so, and not sent', async t => {
  const store = memoryStore()
  const hook = await receiver(t)
  const { port } = new URL(hook.url('/'))
  const before = await pluginApp(t, store, { webhooks: { allowedHosts: 'localhost' } })
  const webhook = await before.subscribe('ursula', { url: `http://localhost:${port}/unlisted`, resources: ['authors'] })
  await before.close()
  const after = await pluginApp(t, store)
  await after.newAuthor()
  const [dead] = await until(async () => { const found = (await after.api('ursula', 'GET', `/v1/webhooks/${webhook.id}/deliveries`)).body.data.deliveries; return found[0]?.status === 'dead' && found }, 'dead')
  t.match(dead, { attempts: 8, lastError: 'url its host \'localhost\' is not one the server allows webhooks to' })
  t.same(hook.at('/unlisted'), [])
})
