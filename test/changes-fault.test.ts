// The change feed and webhooks survive an instance's kill -9 (docs/changes.md; issue 28, "fault
// tests"), over one PostgreSQL schema: a receiver subscribed to the authors' changes; CREATEs
// through a first instance; then, with the receiver holding its answers (deliveries in flight) and
// a CREATE in flight, that instance is killed with SIGKILL; a second instance takes the writes, the
// first is restarted, and both take the rest. Afterwards every acknowledged write is in the feed
// exactly once, every delivery is acknowledged (those the killed instance had in flight were sent
// again once their lease ran out) and every change reached the receiver, a change sent twice with
// the same webhook-id both times. CHANGES_FAULT_WRITES sets the number of CREATEs (default 40).
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import type { Test } from 'tap'
import { client } from './helpers/demo-http.js'
import type { Api } from './helpers/demo-http.js'
import { freshSchemaPlace, startDemoProcess } from './helpers/demo-process.js'

// Processes started on a loaded machine, and a delivery lease (the webhook timeout, 10 s, and 5 s) to outlive.
t.setTimeout(600_000)

const writes = Number(process.env.CHANGES_FAULT_WRITES ?? 40)
const env = { RATE_LIMIT_MAX: '1000000', CURSOR_SECRET: 'a-test-secret-of-enough-length' }
const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

interface Delivered { readonly webhookId: string, readonly changeId: string }

/**
 * A receiver that answers 200 after 0..20 ms, keeping each delivery's webhook-id and change id;
 * while `held`, answers wait until `release()`.
 */
async function receiver (t: Test) {
  const delivered: Delivered[] = []
  let held: Array<() => void> | null = null
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      delivered.push({ webhookId: String(request.headers['webhook-id']), changeId: (JSON.parse(Buffer.concat(chunks).toString()) as { id: string }).id })
      const answer = () => setTimeout(() => { response.statusCode = 200; response.end() }, Math.random() * 20)
      if (held === null) answer()
      else held.push(answer)
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise(resolve => { server.closeAllConnections(); server.close(() => resolve(undefined)) }))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    delivered,
    hold: () => { held = [] },
    heldCount: () => held?.length ?? 0,
    release: () => { for (const answer of held ?? []) answer(); held = null }
  }
}

/** Every change of the authors in the feed, read as the admin. */
async function feed (api: Api): Promise<Array<{ id: string, recordId: string, version: number }>> {
  const changes = []
  let path = '/v1/changes?resource=authors&pageSize=100'
  for (;;) {
    const page = await api('admin', 'GET', path)
    if (page.status !== 200) throw new Error(`the feed answered ${page.status} ${page.text}`)
    changes.push(...page.body.data.changes)
    if (page.body.data.changes.length === 0) return changes
    path = page.body.links.find((link: { rel: string }) => link.rel === 'next').href
  }
}

t.test('PostgreSQL, two instances, one killed mid-writes and mid-deliveries, restarted: no change lost, each delivered, repeats with the same webhook-id', { skip: process.env.DATABASE_URL === undefined && 'needs DATABASE_URL' }, async t => {
  const place = await freshSchemaPlace(t, 'changes_fault', env)
  // The first instance alone until it is killed, so that the deliveries in flight then are its own.
  const one = await startDemoProcess(t, place)
  const hook = await receiver(t)
  const first = client(one.url)
  const subscribed = await first('alice', 'POST', '/v1/webhooks', { body: { url: hook.url, resources: ['authors'] } })
  t.equal(subscribed.status, 201, 'subscribed')

  const tag = `Fault ${randomBytes(4).toString('hex')}`
  const acknowledged: string[] = []
  let sent = 0
  /** One CREATE; true when it was acknowledged. */
  const write = async (api: Api) => {
    const made = await api('dev', 'POST', '/v1/authors', { body: { name: `${tag} ${sent++}` } }).catch(() => null)
    if (made?.status === 201) acknowledged.push(made.body.data.author.id)
    return made?.status === 201
  }
  /** `count` CREATEs, four at a time, the i-th to `pick(i)`. */
  const writeSome = async (count: number, pick: (i: number) => Api) => {
    for (let i = 0; i < count; i += 4) await Promise.all(Array.from({ length: Math.min(4, count - i) }, async (_, j) => await write(pick(i + j))))
  }
  await writeSome(writes / 2, () => first)
  // The kill, with deliveries held in flight at the receiver and a write in flight to the instance.
  // CREATEs go on one at a time until the kill ends them; their deliveries are held at the
  // receiver, so some are in flight when the instance dies.
  hook.hold()
  const writing = (async () => { while (await write(first)); })()
  while (hook.heldCount() < 4) await sleep(10)
  const held = hook.heldCount()
  one.child.kill('SIGKILL')
  await one.exited
  await writing
  hook.release()
  const survivor = client((await startDemoProcess(t, place)).url)
  await writeSome(writes / 4, () => survivor)
  const restarted = client((await startDemoProcess(t, place)).url)
  await writeSome(writes / 4, i => i % 2 === 0 ? restarted : survivor)
  // The write in flight when the instance died may or may not have been made: it was not acknowledged.
  t.equal(acknowledged.length, sent - 1, `${acknowledged.length} of ${sent} writes acknowledged, all but the one in flight at the kill`)

  const changes = await feed(survivor)
  const created = changes.map(change => change.recordId)
  t.same(acknowledged.filter(id => created.filter(recordId => recordId === id).length !== 1), [], 'every acknowledged write is in the feed exactly once')
  t.equal(new Set(changes.map(change => change.id)).size, changes.length, 'no change twice in the feed')

  // Delivered, as the deliveries list says: the killed instance's claimed deliveries wait for their lease (15 s) to run out.
  const webhookId = subscribed.body.data.webhook.id as string
  const deliveries = async () => (await survivor('alice', 'GET', `/v1/webhooks/${webhookId}/deliveries?pageSize=100`)).body.data.deliveries as Array<{ changeId: string, status: string }>
  const deadline = Date.now() + 120_000
  while ((await deliveries()).filter(delivery => delivery.status === 'delivered').length < changes.length && Date.now() < deadline) await sleep(250)
  t.same((await deliveries()).filter(delivery => delivery.status !== 'delivered'), [], 'every delivery was acknowledged by the receiver')
  t.same(changes.filter(change => !hook.delivered.some(delivery => delivery.changeId === change.id)).map(change => change.recordId), [], 'every change reached the receiver')
  const idsOf = new Map<string, Set<string>>()
  for (const { changeId, webhookId } of hook.delivered) idsOf.set(changeId, (idsOf.get(changeId) ?? new Set()).add(webhookId))
  t.same([...idsOf].filter(([, ids]) => ids.size !== 1).map(([changeId]) => changeId), [], 'each change kept one webhook-id, however often it was sent')
  t.ok(hook.delivered.length > changes.length, `the deliveries cut short by the kill were sent again: ${hook.delivered.length} deliveries of ${changes.length} changes (${held} held at the kill)`)
})
