// Asynchronous work survives the instance that took it (docs/demo-contract.md "Asynchronous work":
// "never lost and never applied twice, across kill -9 of the instance running it and restarts").
// Demo processes of their own: N CREATEs answered 202, `kill -9` of an instance right after the
// last 202, a restart; then every operation succeeded and each record exists exactly once.
// On PGlite, one instance on its data directory (PGlite is one process's); on PostgreSQL, two
// instances sharing the database, the writes spread over both, one of them killed. N is
// ASYNC_FAULT_CREATES (default 20; `ASYNC_FAULT_CREATES=200` is the long variant).
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { client } from './helpers/demo-http.js'
import type { Answer, Api } from './helpers/demo-http.js'
import { freshSchemaPlace, startDemoProcess } from './helpers/demo-process.js'
import type { DemoProcess } from './helpers/demo-process.js'

// Demo processes started and restarted on a loaded machine, and a lease to outlive: beyond the usual file timeout.
t.setTimeout(900_000)

const creates = Number(process.env.ASYNC_FAULT_CREATES ?? 20)
const env = { RATE_LIMIT_MAX: '1000000', CURSOR_SECRET: 'a-test-secret-of-enough-length' }

async function settled (api: Api, location: string): Promise<Answer> {
  for (;;) {
    const answer = await api('alice', 'GET', location)
    const status = answer.body?.data?.operation?.status
    if (answer.status !== 200 || status === 'succeeded' || status === 'failed') return answer
    await new Promise(resolve => setTimeout(resolve, 50))
  }
}

async function kill (demo: DemoProcess): Promise<void> {
  demo.child.kill('SIGKILL')
  await demo.exited
}

/**
 * Sends the CREATEs (the i-th to `apis[i % apis.length]`), kills `victim` right after the last
 * 202, restarts it with `restart`, then checks the outcome on `survivor`.
 */
async function faultRun (t: Test, apis: Api[], victim: DemoProcess, restart: () => Promise<Api>, survivorOf: (restarted: Api) => Api) {
  const tag = `Fault ${randomBytes(4).toString('hex')}`
  // Sent a few at a time, so that the workers are busy while 202s are still answered.
  const locations: string[] = []
  for (let i = 0; i < creates; i += 5) {
    const batch = await Promise.all(Array.from({ length: Math.min(5, creates - i) }, async (_, j) => {
      const answer = await apis[(i + j) % apis.length]('alice', 'POST', '/v1/authors', { body: { name: `${tag} ${i + j}` }, headers: { prefer: 'respond-async' } })
      if (answer.status !== 202) throw new Error(`not accepted: ${answer.status} ${answer.text}`)
      return answer.headers.get('location') as string
    }))
    locations.push(...batch)
  }
  await kill(victim)
  const api = survivorOf(await restart())

  const results = []
  for (const location of locations) results.push(await settled(api, location))
  t.same(results.map(answer => answer.body.data.operation.status), locations.map(() => 'succeeded'), `all ${creates} succeeded`)
  const made = results.map(answer => answer.body.data.operation.result.location as string)
  t.equal(new Set(made).size, creates, 'each its own record')

  const names: string[] = []
  let next: string | undefined = `/v1/authors?filter=${encodeURIComponent(`startswith(name, '${tag}')`)}&pageSize=100`
  while (next !== undefined) {
    const page: Answer = await api('alice', 'GET', next)
    names.push(...page.body.data.authors.map((author: { name: string }) => author.name))
    next = page.body.links.find((link: { rel: string }) => link.rel === 'next')?.href
  }
  t.same(names.sort(), Array.from({ length: creates }, (_, i) => `${tag} ${i}`).sort(), 'each record exists exactly once')
  for (const location of made.slice(0, 5)) t.equal((await api('alice', 'GET', location)).status, 200, `${location} is there`)
}

t.test('PGlite: kill -9 right after the last 202, restart: every write done once', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'async-fault-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const place = { ...env, STORE: 'pglite', DATA_DIR: join(dir, 'data') }
  const first = await startDemoProcess(t, place)
  await faultRun(t, [client(first.url)], first, async () => client((await startDemoProcess(t, place)).url), restarted => restarted)
})

t.test('PostgreSQL, two instances: one killed right after the last 202, restarted: every write done once', { skip: process.env.DATABASE_URL === undefined && 'needs DATABASE_URL' }, async t => {
  const place = await freshSchemaPlace(t, 'async_fault', env)
  // Started one after the other: the first creates the tables.
  const one = await startDemoProcess(t, place)
  const two = await startDemoProcess(t, place)
  const survivor = client(two.url)
  await faultRun(t, [client(one.url), survivor], one, async () => client((await startDemoProcess(t, place)).url), () => survivor)
})
