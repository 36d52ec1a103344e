// Publishing the changes to NATS JetStream (docs/changes.md "NATS JetStream"; docs/demo-contract.md
// "Changes: the feed, webhooks and brokers", Brokers): every change, in commit order, on
// `<subjectPrefix>.<resource>` with the change id as message id and the admin's view as body; writes
// that do not wait for NATS; what was written while NATS was away published once it is back; a
// restart that publishes nothing twice and misses nothing; several instances that publish each
// change once; the options refused at registration. Runs against the NATS at NATS_URL (test/run.mjs
// sets it when one answers), each test on a stream and subjects of its own, deleted afterwards.
import t from 'tap'
import type { Test } from 'tap'
import { randomBytes } from 'node:crypto'
import net from 'node:net'
import { Writable } from 'node:stream'
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import { connect } from 'nats'
import type { JetStreamManager, NatsConnection } from 'nats'
import apiConventions, { memoryStore } from '../lib/index.js'
import type { NatsChangesOptions, Store } from '../lib/index.js'
import { demoPluginOptions } from '../demo/app.js'
import { loadConfig } from '../demo/config.js'
import { buildApp } from './helpers/app.js'
import { resolveChanges } from '../lib/changes/options.js'

const natsUrl = process.env.NATS_URL
const skip = natsUrl === undefined ? 'NATS_URL is not set (test/run.mjs sets it when NATS answers at 127.0.0.1:4222)' : false
const config = loadConfig({ STORE: 'memory', RATE_LIMIT_MAX: '1000000', CURSOR_SECRET: 'a-test-secret-of-enough-length' })
const tokens: Record<string, string> = { alice: 'alice-token', bob: 'bob-token', admin: 'admin-token' }

interface Change { id: string, position: string, resource: string, recordId: string, operation: string, version: number, at: string, data?: Record<string, any> }
interface Published { subject: string, msgId: string | undefined, position: string | undefined, body: Change }

/** The apps each test made, closed before its stream is deleted. */
const appsOf = new Map<Test, FastifyInstance[]>()

/** A NATS connection for the test's own reads, and a stream name and subjects no one else uses, deleted afterwards. */
async function natsFor (t: Test): Promise<{ connection: NatsConnection, jsm: JetStreamManager, nats: NatsChangesOptions & { stream: string, subjectPrefix: string } }> {
  const connection: NatsConnection = await connect({ servers: natsUrl })
  const jsm = await connection.jetstreamManager()
  const suffix = randomBytes(6).toString('hex')
  const nats = { url: natsUrl as string, stream: `API_CHANGES_TEST_${suffix}`, subjectPrefix: `test_${suffix}.changes` }
  t.teardown(async () => {
    // The test's apps first, or a publisher still running would make the stream again.
    for (const app of appsOf.get(t) ?? []) await app.close()
    await jsm.streams.delete(nats.stream).catch(() => {})
    await connection.drain()
  })
  return { connection, jsm, nats }
}

/** Every message of `stream`, in stream order. */
async function messagesOf (jsm: JetStreamManager, stream: string): Promise<Published[]> {
  const { state } = await jsm.streams.info(stream)
  const messages: Published[] = []
  for (let seq = state.first_seq; state.messages > 0 && seq <= state.last_seq; seq++) {
    const message = await jsm.streams.getMessage(stream, { seq })
    messages.push({ subject: message.subject, msgId: message.header?.get('Nats-Msg-Id'), position: message.header?.get('Api-Change-Position'), body: message.json<Change>() })
  }
  return messages
}

/** Resolves once `stream` holds at least `count` messages (it exists and the publisher has caught up). */
async function untilCount (jsm: JetStreamManager, stream: string, count: number): Promise<void> {
  for (;;) {
    const held = await jsm.streams.info(stream).then(info => info.state.messages, () => 0)
    if (held >= count) return
    await new Promise(resolve => setTimeout(resolve, 50))
  }
}

/** Resolves once `lines` hold a line saying `msg`. */
async function untilLogged (lines: ReadonlyArray<{ msg: string }>, msg: string): Promise<void> {
  while (!lines.some(line => line.msg === msg)) await new Promise(resolve => setTimeout(resolve, 20))
}

/** The demo's API over `store`, its changes published with `nats`; log lines collected in `lines`. */
async function demoApi (t: Test, store: Store, nats: NatsChangesOptions | undefined, lines: Array<{ level: number, msg: string }> = [], retention = '7 days') {
  const stream = new Writable({ write (chunk: Buffer, _encoding, done) { lines.push(JSON.parse(chunk.toString())); done() } })
  const app = Fastify({ logger: { level: 'info', stream } })
  t.teardown(() => app.close())
  appsOf.set(t, [...appsOf.get(t) ?? [], app])
  const options = demoPluginOptions(config, store)
  await app.register(apiConventions, { ...options, changes: { retention, pollInterval: 50, ...nats === undefined ? {} : { nats } } })
  await app.ready()
  const call = async (caller: string, method: 'POST' | 'PATCH' | 'GET', url: string, payload?: object) => {
    const res = await app.inject({ method, url, payload, headers: { authorization: `Bearer ${tokens[caller]}`, ...method === 'PATCH' ? { 'content-type': 'application/merge-patch+json' } : {} } })
    if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`)
    return res.json()
  }
  return { app, call }
}

type Call = Awaited<ReturnType<typeof demoApi>>['call']

/** Every change `caller` sees in the feed, from the start. */
async function feedOf (call: Call, caller = 'admin'): Promise<Change[]> {
  return (await call(caller, 'GET', '/v1/changes?pageSize=1000')).data.changes
}

/** A few writes of every kind: an author, a book, a private review with a moderator's note (which recounts the book), a modify. */
async function writeSome (call: Call, name: string) {
  const author = (await call('alice', 'POST', '/v1/authors', { name })).data.author
  const book = (await call('alice', 'POST', '/v1/books', { title: `${name}'s book`, authorId: author.id })).data.book
  await call('admin', 'POST', '/v1/reviews', { bookId: book.id, rating: 5, private: true, moderatorNote: 'checked' })
  await call('alice', 'PATCH', `/v1/authors/${author.id}`, { country: 'NZ' })
}

/** A port on 127.0.0.1 where nothing listens. */
async function closedPort (): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1')
  await new Promise(resolve => server.once('listening', resolve))
  const { port } = server.address() as net.AddressInfo
  await new Promise(resolve => server.close(resolve))
  return port
}

/** A TCP relay on `port` to the real NATS, that can be cut (every connection ends) and opened again. */
function relayTo (target: URL, port: number) {
  const sockets = new Set<net.Socket>()
  let server: net.Server | null = null
  return {
    async open () {
      server = net.createServer(client => {
        const upstream = net.connect(Number(target.port || 4222), target.hostname)
        for (const socket of [client, upstream]) {
          sockets.add(socket)
          socket.on('error', () => {})
          socket.on('close', () => { sockets.delete(socket); client.destroy(); upstream.destroy() })
        }
        client.pipe(upstream).pipe(client)
      })
      server.listen(port, '127.0.0.1')
      await new Promise(resolve => server?.once('listening', resolve))
    },
    async cut () {
      const closing = new Promise(resolve => server?.close(resolve))
      for (const socket of sockets) socket.destroy()
      await closing
      server = null
    }
  }
}

const natsServer = new URL(natsUrl?.includes('://') === true ? natsUrl : `nats://${natsUrl ?? '127.0.0.1:4222'}`)

t.test('every change arrives in commit order on <subjectPrefix>.<resource>, its id the message id, the admin\'s view the body', { skip }, async t => {
  const { jsm, nats } = await natsFor(t)
  const store = memoryStore()
  t.teardown(() => store.close())
  const { call } = await demoApi(t, store, nats)
  await writeSome(call, 'Ann')
  const feed = await feedOf(call)
  t.same(feed.map(change => `${change.operation} ${change.resource}`), ['create authors', 'create books', 'create reviews', 'modify books', 'modify authors'])
  await untilCount(jsm, nats.stream, feed.length)
  const messages = await messagesOf(jsm, nats.stream)
  t.same(messages.map(message => message.subject), feed.map(change => `${nats.subjectPrefix}.${change.resource}`), 'in commit order, one subject per resource')
  t.same(messages.map(message => message.msgId), feed.map(change => change.id), 'the message id is the change id')
  t.same(messages.map(message => message.position), feed.map(change => change.position), 'each carries its position')
  t.same(messages.map(message => message.body), feed, 'the body is the change as admin reads it')
  t.match(messages[2].body, { data: { review: { private: true, moderatorNote: 'checked' } } }, 'a private review and its admin-only field are published')
  t.same(await feedOf(call, 'bob'), feed.filter(change => change.resource !== 'reviews'), 'which bob does not see in the feed')
  t.same((await jsm.streams.info(nats.stream)).config.subjects, [`${nats.subjectPrefix}.>`], 'the stream was created, with the prefix\'s subjects')
})

t.test('writes succeed while NATS is unreachable; what they changed is published, once each, when it answers again', { skip }, async t => {
  const { jsm, nats } = await natsFor(t)
  const port = await closedPort()
  const relay = relayTo(natsServer, port)
  t.teardown(() => relay.cut())
  const store = memoryStore()
  t.teardown(() => store.close())
  const lines: Array<{ level: number, msg: string }> = []
  const { call } = await demoApi(t, store, { ...nats, url: `nats://127.0.0.1:${port}` }, lines)
  // Nothing listens yet: every write answers as usual.
  await writeSome(call, 'Ann')
  t.equal((await feedOf(call)).length, 5)
  await relay.open()
  await untilCount(jsm, nats.stream, 5)
  // NATS goes away while the publisher is connected and waiting; the next writes still answer.
  await relay.cut()
  await writeSome(call, 'Bo')
  await relay.open()
  const feed = await feedOf(call)
  t.equal(feed.length, 10)
  await untilCount(jsm, nats.stream, feed.length)
  const messages = await messagesOf(jsm, nats.stream)
  t.same(messages.map(message => message.body), feed, 'every change, once, in commit order')
  const said = lines.filter(line => line.msg.includes('NATS')).map(line => [line.level, line.msg])
  t.match(said, [[40, 'api-conventions: publishing changes to NATS failed; retrying']], 'a failure is logged as a warning')
  t.ok(said.some(([level, msg]) => level === 30 && msg === 'api-conventions: publishing changes to NATS again'), 'and the recovery')
})

t.test('a publisher that restarts resumes after the stream\'s last change: nothing twice, nothing missed', { skip }, async t => {
  const { connection, jsm, nats } = await natsFor(t)
  const store = memoryStore()
  t.teardown(() => store.close())
  const first = await demoApi(t, store, nats)
  await writeSome(first.call, 'Ann')
  await untilCount(jsm, nats.stream, 5)
  await first.app.close()
  // Writes while no instance publishes: more than the publisher reads at once.
  const without = await demoApi(t, store, undefined)
  await writeSome(without.call, 'Bo')
  await without.call('alice', 'POST', '/v1/batch', { operations: Array.from({ length: 100 }, (_, i) => ({ op: 'create', resource: 'authors', data: { name: `A${i}` } })) })
  await without.app.close()
  // A plain subscriber sees every publish, also those JetStream would drop as repeats.
  const subscription = connection.subscribe(`${nats.subjectPrefix}.>`)
  await connection.flush()
  const second = await demoApi(t, store, nats)
  await writeSome(second.call, 'Cy')
  const feed = await feedOf(second.call)
  t.equal(feed.length, 115)
  const sent: string[] = []
  for await (const message of subscription) {
    sent.push(message.headers?.get('Nats-Msg-Id') as string)
    if (sent.at(-1) === feed.at(-1)?.id) break
  }
  t.same(sent, feed.slice(5).map(change => change.id), 'the restarted publisher sent what the first had not, once each, in order')
  t.same((await messagesOf(jsm, nats.stream)).map(message => message.msgId), feed.map(change => change.id), 'the stream holds every change once')
})

t.test('several instances publishing one change log: each publishes every change, the stream keeps each once', { skip }, async t => {
  const { connection, jsm, nats } = await natsFor(t)
  const store = memoryStore()
  t.teardown(() => store.close())
  const oneSaid: Array<{ level: number, msg: string }> = []
  const otherSaid: Array<{ level: number, msg: string }> = []
  const one = await demoApi(t, store, nats, oneSaid)
  const other = await demoApi(t, store, nats, otherSaid)
  // Once both have found where to publish from, both publish every change written from then on.
  await untilLogged(oneSaid, 'api-conventions: publishing changes to NATS')
  await untilLogged(otherSaid, 'api-conventions: publishing changes to NATS')
  // A plain subscriber sees every publish to the subjects, the repeats JetStream drops too.
  const seen = new Map<string, number>()
  const subscription = connection.subscribe(`${nats.subjectPrefix}.>`)
  await connection.flush()
  await writeSome(one.call, 'Ann')
  await writeSome(other.call, 'Bo')
  const feed = await feedOf(one.call)
  for await (const message of subscription) {
    const id = message.headers?.get('Nats-Msg-Id') as string
    seen.set(id, (seen.get(id) ?? 0) + 1)
    if (feed.every(change => seen.get(change.id) === 2)) break
  }
  t.same([...seen.keys()].sort(), feed.map(change => change.id).sort(), 'both instances published every change')
  t.same((await messagesOf(jsm, nats.stream)).map(message => message.msgId), feed.map(change => change.id), 'the stream kept each once, in commit order')
})

t.test('a stream ahead of the change log (a log emptied since) is published into from the log\'s oldest change', { skip }, async t => {
  const { jsm, nats } = await natsFor(t)
  const before = memoryStore()
  t.teardown(() => before.close())
  const old = await demoApi(t, before, nats)
  await writeSome(old.call, 'Ann')
  await writeSome(old.call, 'Bo')
  await untilCount(jsm, nats.stream, 10)
  await old.app.close()
  const lines: Array<{ level: number, msg: string }> = []
  const fresh = memoryStore()
  t.teardown(() => fresh.close())
  const { call } = await demoApi(t, fresh, nats, lines)
  await writeSome(call, 'Cy')
  const feed = await feedOf(call)
  await untilCount(jsm, nats.stream, 10 + feed.length)
  t.same((await messagesOf(jsm, nats.stream)).slice(10).map(message => message.body), feed)
  t.match(lines.filter(line => line.msg.includes('ahead')), [{ level: 40, msg: 'api-conventions: the NATS stream is ahead of this change log; publishing from the oldest change kept' }])
})

t.test('a stream whose last message is not a change of ours is published into from the log\'s oldest change', { skip }, async t => {
  const { connection, jsm, nats } = await natsFor(t)
  await jsm.streams.add({ name: nats.stream, subjects: [`${nats.subjectPrefix}.>`] })
  await connection.jetstream().publish(`${nats.subjectPrefix}.notes`, JSON.stringify({ note: 'not a change' }))
  const store = memoryStore()
  t.teardown(() => store.close())
  const lines: Array<{ level: number, msg: string }> = []
  const { call } = await demoApi(t, store, nats, lines)
  await writeSome(call, 'Ann')
  await untilCount(jsm, nats.stream, 6)
  t.same((await messagesOf(jsm, nats.stream)).slice(1).map(message => message.body), await feedOf(call))
  t.match(lines.filter(line => line.level === 40), [{ msg: 'api-conventions: the stream\'s last message has no Api-Change-Position header; publishing from the oldest change kept' }])
})

t.test('changes purged from the log before they were published are missing from the stream, and the log says so', { skip }, async t => {
  const { jsm, nats } = await natsFor(t)
  const store = memoryStore()
  t.teardown(() => store.close())
  const first = await demoApi(t, store, nats)
  await writeSome(first.call, 'Ann')
  await untilCount(jsm, nats.stream, 5)
  await first.app.close()
  // Written while no instance publishes, then purged by an instance that keeps changes 1 ms, at its first commit.
  const without = await demoApi(t, store, undefined)
  await writeSome(without.call, 'Bo')
  await without.app.close()
  const purging = await demoApi(t, store, undefined, [], '1')
  await purging.call('alice', 'POST', '/v1/authors', { name: 'Dee' })
  await purging.app.close()
  const lines: Array<{ level: number, msg: string }> = []
  const second = await demoApi(t, store, nats, lines)
  await writeSome(second.call, 'Cy')
  const kept = await feedOf(second.call)
  await untilCount(jsm, nats.stream, 5 + kept.length)
  t.same((await messagesOf(jsm, nats.stream)).slice(5).map(message => message.body), kept, 'what the log still kept')
  t.match(lines.filter(line => line.level === 40), [{ msg: 'api-conventions: changes were purged from the log before they were published to NATS; they are missing from the stream' }])
})

t.test('a change of a resource the API no longer serves is not published', { skip }, async t => {
  const { jsm, nats } = await natsFor(t)
  const store = memoryStore()
  t.teardown(() => store.close())
  await store.appendChanges?.([{ id: 'c1', resource: 'ghosts', recordId: 'g1', operation: 'create', version: 1, at: new Date(), data: { id: 'g1' }, previous: null }])
  const { call } = await demoApi(t, store, nats)
  await call('alice', 'POST', '/v1/authors', { name: 'Ann' })
  const feed = await feedOf(call)
  await untilCount(jsm, nats.stream, 1)
  t.same((await messagesOf(jsm, nats.stream)).map(message => message.body), feed)
})

t.test('bad NATS options stop registration, naming the option', async t => {
  const cases: ReadonlyArray<readonly [unknown, RegExp]> = [
    ['nats://127.0.0.1:4222', /changes\.nats must be an object \{ url, stream\?, subjectPrefix\?, connection\? \}, received "nats:/],
    [{}, /changes\.nats\.url must name a NATS server, such as 'nats:\/\/127\.0\.0\.1:4222', received undefined/],
    [{ url: ' , ' }, /changes\.nats\.url must name a NATS server/],
    [{ url: 'nats://h', stream: 'API.CHANGES' }, /changes\.nats\.stream must be a stream name \(letters, digits, _ and -\), received "API\.CHANGES"/],
    [{ url: 'nats://h', subjectPrefix: 'api.changes.>' }, /changes\.nats\.subjectPrefix must be subject tokens joined by dots, without wildcards, received "api\.changes\.>"/],
    [{ url: 'nats://h', subjectPrefix: 'api..changes' }, /changes\.nats\.subjectPrefix must be/],
    [{ url: 'nats://h', connection: 'user:pw' }, /changes\.nats\.connection must be an object of connect\(\) options, received "user:pw"/],
    [{ url: 'nats://h', subject: 'api' }, /changes\.nats\.subject is not a known key; did you mean "subjectPrefix"\?|changes\.nats\.subject is not a known key/]
  ]
  for (const [nats, message] of cases) {
    await t.rejects(buildApp(t, { changes: { nats } as never }), { code: 'API_ERR_OPTIONS_INVALID', message }, JSON.stringify(nats))
  }
})

t.test('the defaults: stream API_CHANGES, subjects api.changes.<resource>; several servers comma-separated', async t => {
  t.same(resolveChanges({ nats: { url: 'nats://a:4222, b:4222' } })?.nats, { servers: ['nats://a:4222', 'b:4222'], stream: 'API_CHANGES', subjectPrefix: 'api.changes', connection: {} })
})

t.test('without NATS, nothing is published and nothing connects', async t => {
  const app: FastifyInstance = await buildApp(t, { changes: true })
  const res = await app.inject({ method: 'POST', url: '/v1/authors', payload: { name: 'Ann' } })
  t.equal(res.statusCode, 201)
})
