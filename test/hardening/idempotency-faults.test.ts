// Idempotency-Key proved by faults (docs/demo-contract.md "Safe retries and atomic writes": the replay
// "holds across restarts (PGlite, PostgreSQL) and across instances sharing a database"), with the
// demo started as `npm start` starts it, as child processes:
// - kill -9 in the middle of 40 keyed creates (or 40 keyed batches, each an author and two books
//   of hers), a restart on the same data, and every request retried with its key until it gets a
//   2xx: each record exists exactly once, no batch is half applied, and each answer a client had
//   before the kill comes back the same, replayed. On PGlite (a DATA_DIR of its own) and on
//   PostgreSQL when DATABASE_URL is set (a schema of its own, dropped afterwards), where the
//   retries go to the restarted instance and to another one that ran all along.
// - PostgreSQL: two instances on one database, 200 concurrent requests with one key split across
//   them, each retried on 409 until it gets a 2xx: one record, one answer that ran, and every
//   final answer the same.
// Most of the time is starting demos (node and the TypeScript loader, PGlite): seven in all, the
// two PostgreSQL instances at once. About a minute on two busy cores; the time-outs leave room.
// `npm test` runs each kind of write once on the SQL store: keyed batches killed on PGlite, keyed
// creates killed on PostgreSQL (the two drivers, the same store code; without PostgreSQL, both
// kinds on PGlite), and the race. TEST_LONG=1
// (`npm run test:long`) runs both kinds on both (two demo starts more).
import t from 'tap'
import type { Test as Tap } from 'tap'
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
import { PGlite } from '@electric-sql/pglite'
import pg from 'pg'
import { openPglite, template } from '../stores/pglite-db.js'

t.setTimeout(300_000)

const needsPostgres = process.env.DATABASE_URL === undefined ? 'needs DATABASE_URL' : false
const long = process.env.TEST_LONG === '1'
const onlyLong = long ? false : 'run by TEST_LONG=1 (npm run test:long)'
const write = { authorization: 'Bearer alice-token', 'content-type': 'application/json' }
const read = { authorization: 'Bearer admin-token' }

interface Demo { readonly url: string, readonly child: ChildProcess, readonly exited: Promise<unknown> }

// Demos still running when this process ends (a test timed out, say) end with it.
const running = new Set<ChildProcess>()
process.once('exit', () => { for (const child of running) child.kill('SIGKILL') })

/** `npm start`'s server (demo/server.ts) on a free port with `env`, added to `started` at once; resolves once it listens. */
async function startDemo (env: Record<string, string>, started: Demo[]): Promise<Demo> {
  const child = spawn(process.execPath, [...process.execArgv, 'demo/server.ts'], {
    // SEED=false: the store starts as the test left it, without the sample catalogue.
    env: { ...process.env, DATABASE_URL: '', DATABASE_READ_URL: '', REDIS_URL: '', SEED: 'false', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', RATE_LIMIT_MAX: '1000000000', CURSOR_SECRET: 'idempotency-faults-0123456789', ...env },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  running.add(child)
  const exited = new Promise(resolve => child.once('exit', resolve)).finally(() => running.delete(child))
  const demo = { url: '', child, exited }
  started.push(demo)
  // The welcome printed once it listens names the API; stdout is read to the end, so the server never blocks on it.
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', line => {
      const api = /^\s+API:\s+(http:\/\/\S+)\/v1$/.exec(line)
      if (api !== null) resolve(api[1])
    })
    exited.then(() => reject(new Error('the demo exited before listening')), () => {})
  })
  return { ...demo, url }
}

/**
 * Fresh data for the demo on a store: `start` runs a demo on it. At teardown every demo started is
 * killed and waited for, then the data is removed (a DATA_DIR, or a PostgreSQL schema).
 */
async function freshData (t: Tap, store: 'pglite' | 'postgres'): Promise<() => Promise<Demo>> {
  const demos: Demo[] = []
  let env: Record<string, string>
  let drop: () => Promise<unknown>
  if (store === 'pglite') {
    const dir = await mkdtemp(join(tmpdir(), 'apic-idem-faults-'))
    env = { STORE: 'pglite', DATA_DIR: dir }
    drop = () => rm(dir, { recursive: true, force: true })
    // From the initialised database test/stores/pglite-db.ts keeps, rather than an initdb in the demo (seconds).
    const saved = await readFile(template).catch(async () => { await (await openPglite()).close(); return await readFile(template) })
    await (await PGlite.create({ dataDir: dir, loadDataDir: new Blob([saved]) })).close()
  } else {
    const url = new URL(process.env.DATABASE_URL as string)
    const schema = `apic_test_idem_faults_${randomBytes(4).toString('hex')}`
    const admin = new pg.Pool({ connectionString: url.href, max: 1 })
    await admin.query(`CREATE SCHEMA "${schema}"`)
    // The demo has no schema setting: the connection's search_path puts its tables in the test schema.
    url.searchParams.set('options', `-c search_path=${schema}`)
    env = { STORE: 'postgres', DATABASE_URL: url.href }
    drop = async () => { await admin.query(`DROP SCHEMA "${schema}" CASCADE`); await admin.end() }
  }
  t.teardown(async () => {
    for (const demo of demos) {
      if (demo.child.exitCode === null && demo.child.signalCode === null) demo.child.kill('SIGKILL')
      await demo.exited
    }
    await drop()
  })
  return async () => await startDemo(env, demos)
}

interface Answer { readonly status: number, readonly body: string, readonly location: string | null, readonly etag: string | null, readonly replayed: boolean }

/** What each of the 40 requests is: a keyed write named `name`, answered `status` when it succeeds. */
interface Kind {
  readonly what: string
  readonly path: string
  readonly status: number
  body (name: string): unknown
}

const authorCreate: Kind = { what: 'keyed creates', path: '/v1/authors', status: 201, body: name => ({ name }) }
const authorBatch: Kind = {
  what: 'keyed batches',
  path: '/v1/batch',
  status: 200,
  body: name => ({
    operations: [
      { op: 'create', resource: 'authors', lid: 'author', data: { name } },
      ...[1, 2].map(n => ({ op: 'create', resource: 'books', data: { title: `${name} book ${n}`, authorId: { lid: 'author' } } }))
    ]
  })
}

/** A keyed write; undefined when the connection failed (the server was killed). */
async function send (kind: Kind, url: string, key: string, name: string): Promise<Answer | undefined> {
  try {
    const res = await fetch(`${url}${kind.path}`, { method: 'POST', headers: { ...write, 'idempotency-key': key }, body: JSON.stringify(kind.body(name)) })
    return { status: res.status, body: await res.text(), location: res.headers.get('location'), etag: res.headers.get('etag'), replayed: res.headers.get('idempotent-replayed') === 'true' }
  } catch {
    return undefined
  }
}

/** Sends the write, waiting a little after each 409, until it is answered 2xx; any other answer fails the test. */
async function untilDone (t: Tap, kind: Kind, url: string, key: string, name: string): Promise<Answer> {
  for (;;) {
    const res = await send(kind, url, key, name)
    if (res !== undefined && res.status < 300) return res
    if (res?.status !== 409) {
      t.fail(`${key}: answered ${res === undefined ? 'no connection' : `${res.status} ${res.body}`}`)
      throw new Error('a retry that is not answered 2xx or 409')
    }
    await backOff()
  }
}

/** A short random wait before a retry, so clients that met a 409 together do not all come back together. */
const backOff = () => sleep(10 + Math.random() * 40)

/** A field of every record of `resource`, read through the demo page by page. */
async function values (url: string, resource: 'authors' | 'books', field: 'name' | 'title'): Promise<string[]> {
  const all: string[] = []
  let next: string | undefined = `/v1/${resource}?pageSize=100`
  while (next !== undefined) {
    const res = await fetch(`${url}${next}`, { headers: read })
    const page = await res.json() as { data: Record<string, Array<Record<string, string>>>, links: Array<{ rel: string, href: string }> }
    all.push(...page.data[resource].map(record => record[field]))
    next = page.links.find(link => link.rel === 'next')?.href
  }
  return all
}
const names = async (url: string) => await values(url, 'authors', 'name')

/** Runs `work` over the items, `width` at a time, in order of the items. */
async function pooled<T> (items: readonly T[], width: number, work: (item: T) => Promise<void>) {
  let next = 0
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await work(items[next++])
  }))
}

/**
 * Sends 40 keyed writes of `kind` to `demo`, four at a time, and kills it with SIGKILL soon after
 * 14 are answered (a few more in flight); then `restart`s it on the same data and sends every
 * request again with its key, spread over the restarted demo and `others`, until each is answered 2xx.
 */
async function crashAndRetry (t: Tap, kind: Kind, demo: Demo, restart: () => Promise<Demo>, others: readonly Demo[] = []): Promise<Demo> {
  const run = randomBytes(4).toString('hex')
  const requests = Array.from({ length: 40 }, (_, i) => ({ key: `"faults-${run}-${i}"`, name: `Faults ${run} ${i}` }))
  const before = new Map<string, Answer>()
  const killed = { yes: false }
  let sent = 0
  await Promise.all([
    pooled(requests, 4, async ({ key, name }) => {
      if (killed.yes) return
      sent++
      const res = await send(kind, demo.url, key, name)
      if (res !== undefined) before.set(key, res)
    }),
    (async () => {
      while (before.size < 14 && sent < requests.length) await sleep(2)
      // At a moment unrelated to the answers, so that some runs kill between a commit and its answer.
      await sleep(Math.random() * 40)
      demo.child.kill('SIGKILL')
      killed.yes = true
      await demo.exited
    })()
  ])
  t.same([...before.values()].filter(res => res.status !== kind.status), [], `the ${before.size} answers before the kill are ${kind.status}`)
  // Where the kill falls depends on the machine's speed (on a fast one every request may be sent, or
  // answered, before it): told, not asserted; what a retry finds afterwards is asserted below.
  t.comment(`${sent - before.size} requests sent were not answered, ${requests.length - sent} were not sent before the kill`)

  const restarted = await restart()
  const urls = [restarted.url, ...others.map(other => other.url)]
  const after = new Map<string, Answer>()
  await pooled(requests.map((request, i) => ({ ...request, url: urls[i % urls.length] })), 4, async ({ key, name, url }) => {
    after.set(key, await untilDone(t, kind, url, key, name))
  })
  for (const [key, first] of before) {
    t.same(after.get(key), { ...first, replayed: true }, `${key}: the answer given before the kill, replayed`)
  }
  const unanswered = requests.filter(({ key }) => !before.has(key))
  const written = unanswered.filter(({ key }) => after.get(key)?.replayed === true).length
  t.comment(`of the ${unanswered.length} requests without an answer before the kill, ${written} had been written (replayed), ${unanswered.length - written} ran after the restart`)
  t.same(requests.map(({ key }) => after.get(key)?.status), requests.map(() => kind.status), `every request ends in a ${kind.status}`)
  for (const url of urls) {
    const stored = (await names(url)).filter(name => name.startsWith(`Faults ${run} `)).sort()
    t.same(stored, requests.map(r => r.name).sort(), `each of the 40 authors exists exactly once, seen through ${url}`)
    if (kind !== authorBatch) continue
    const titles = (await values(url, 'books', 'title')).filter(title => title.startsWith(`Faults ${run} `)).sort()
    t.same(titles, requests.flatMap(r => [`${r.name} book 1`, `${r.name} book 2`]).sort(), `each batch's two books exist exactly once: no batch is half applied, seen through ${url}`)
  }
  t.equal(new Set([...after.values()].map(res => res.body)).size, 40, 'each request has records of its own')
  return restarted
}

for (const kind of [authorCreate, authorBatch]) {
  t.test(`PGlite: kill -9 in the middle of 40 ${kind.what}; after a restart every retry with its key ends in one write`, { timeout: 90_000, skip: kind === authorCreate && needsPostgres === false && onlyLong }, async t => {
    const start = await freshData(t, 'pglite')
    await crashAndRetry(t, kind, await start(), start)
  })
}

t.test('PostgreSQL: two instances on one database', { skip: needsPostgres, timeout: 160_000 }, async t => {
  const start = await freshData(t, 'postgres')
  const [one, two] = await Promise.all([start(), start()])

  t.test('200 concurrent requests with one key across both, retried on 409: one record, one answer', async t => {
    const key = `"race-${randomBytes(8).toString('hex')}"`
    const name = `Race ${key}`
    let conflicts = 0
    const finals = await Promise.all(Array.from({ length: 200 }, async (_, i) => {
      const url = (i % 2 === 0 ? one : two).url
      for (;;) {
        const res = await send(authorCreate, url, key, name)
        if (res?.status !== 409) return res
        conflicts++
        await backOff()
      }
    }))
    t.comment(`${conflicts} answers were 409 before a retry`)
    t.same(finals.filter(res => res === undefined || res.status >= 300), [], 'every request ends in a 2xx')
    const ran = finals.filter(res => res?.replayed === false)
    t.equal(ran.length, 1, 'one request ran; every other answer is a replay')
    const [first] = ran as Answer[]
    t.equal(first.status, 201, 'the one that ran created the record')
    const differing = finals.filter(res => res?.status !== first.status || res.body !== first.body || res.location !== first.location || res.etag !== first.etag)
    t.same(differing, [], 'every final answer has the same status, body, Location and ETag')
    for (const { url } of [one, two]) {
      t.same((await names(url)).filter(stored => stored === name), [name], `one record, seen through ${url}`)
    }
  })

  let killable = one
  t.test('kill -9 of one in the middle of 40 keyed creates; retried on it restarted and on the other, each ends in one record', async t => {
    killable = await crashAndRetry(t, authorCreate, killable, start, [two])
  })

  t.test('kill -9 of one in the middle of 40 keyed batches; retried on it restarted and on the other, no batch is half applied', { skip: onlyLong }, async t => {
    killable = await crashAndRetry(t, authorBatch, killable, start, [two])
  })
})
