// Durability of the SQL store: the demo is killed with SIGKILL in the middle of a stream of
// creates; reopening its data finds every create that had been answered 201. On PGlite (the
// default STORE, files in DATA_DIR) and, when DATABASE_URL is set, on PostgreSQL.
import t from 'tap'
import type { Test as Tap } from 'tap'
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { buildRegistry } from '../../lib/registry/index.js'
import type { ResourceModel } from '../../lib/registry/model.js'
import { postgresStore } from '../../lib/stores/sql/index.js'
import { createDemoStore } from '../../demo/store.js'
import { loadConfig } from '../../demo/config.js'
import type { Store } from '../../lib/stores/store.js'
import { demoResources } from '../../demo/schemas/index.js'

const silent = { info () {} } as never
const auth = { authorization: 'Bearer dev-token', 'content-type': 'application/json' }

/** Starts `npm start`'s server on a free port and resolves with its URL once it listens. */
async function startDemo (t: Tap, env: Record<string, string | undefined>): Promise<{ url: string, child: ChildProcess }> {
  const child = spawn(process.execPath, [...process.execArgv, 'demo/server.ts'], {
    // SEED=false: the store starts as the test left it, without the sample catalogue.
    env: { ...process.env, STORE: undefined, DATABASE_URL: undefined, DATABASE_READ_URL: undefined, REDIS_URL: '', SEED: 'false', PORT: '0', HOST: '127.0.0.1', RATE_LIMIT_MAX: '1000000', CURSOR_SECRET: 'crash-test-secret-0123456789', ...env },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  t.teardown(() => { child.kill('SIGKILL') })
  // Keep reading stdout after the line we wait for, or the server would block on a full pipe.
  const url = await new Promise<string>((resolve, reject) => {
    let seen: string | null = ''
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      if (seen === null) return
      const match = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(seen += chunk)
      if (match !== null) {
        seen = null
        resolve(match[1])
      }
    })
    child.once('exit', () => reject(new Error('the demo exited before listening')))
  })
  return { url, child }
}

/** Creates authors from four concurrent clients until killed; returns the ids answered 201. */
async function createUntilKilled (t: Tap, url: string, child: ChildProcess): Promise<Map<string, string>> {
  const answered = new Map<string, string>()
  const run = { stopped: false, sent: 0 }
  const client = async () => {
    while (!run.stopped) {
      const name = `author ${run.sent++}`
      const res = await fetch(`${url}/v1/authors`, { method: 'POST', headers: auth, body: JSON.stringify({ name }) }).catch(() => undefined)
      if (res?.status === 201) answered.set(((await res.json()) as { data: { author: { id: string } } }).data.author.id, name)
    }
  }
  const clients = [client(), client(), client(), client()]
  // Kill while requests are in flight, once enough have been answered to make the check meaningful.
  while (answered.size < 40 && run.sent < 5000) await new Promise(resolve => setTimeout(resolve, 5))
  t.ok(answered.size >= 40, 'the demo answers creates with 201')
  child.kill('SIGKILL')
  await once(child, 'exit')
  run.stopped = true
  await Promise.all(clients)
  return answered
}

/** Reopens the data the way a restarted server would and looks for every answered id. */
async function checkAllThere (t: Tap, store: Store, answered: Map<string, string>) {
  const { authors } = buildRegistry(demoResources(store)).reduce<Record<string, ResourceModel>>((all, model) => ({ ...all, [model.name]: model }), {})
  const found = await store.getMany(authors, 'id', [...answered.keys()])
  t.same(new Map(found.map(record => [record.data.id, record.data.name])), answered, `all ${answered.size} answered creates survive the crash`)
  await store.close()
}

t.test('PGlite: every create answered 201 before kill -9 is there when the files are opened again', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'apic-crash-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  // The default STORE: the demo creates the missing DATA_DIR and its database files itself.
  const env = { DATA_DIR: join(dir, 'nested', 'data') }
  const { url, child } = await startDemo(t, env)
  const answered = await createUntilKilled(t, url, child)
  await checkAllThere(t, await createDemoStore(loadConfig(env), silent), answered)
})

t.test('PostgreSQL: every create answered 201 before kill -9 is there afterwards', { skip: process.env.DATABASE_URL === undefined ? 'needs DATABASE_URL' : false }, async t => {
  const url = new URL(process.env.DATABASE_URL as string)
  const schema = `apic_test_crash_${process.pid}_${Date.now()}`
  const admin = new pg.Pool({ connectionString: url.href })
  await admin.query(`CREATE SCHEMA "${schema}"`)
  t.teardown(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await admin.end()
  })
  // The demo has no schema setting: the connection's search_path puts its tables in the test schema.
  url.searchParams.set('options', `-c search_path=${schema}`)
  const env = { DATABASE_URL: url.href }
  const { url: demo, child } = await startDemo(t, env)
  const answered = await createUntilKilled(t, demo, child)
  await checkAllThere(t, await postgresStore({ connectionString: process.env.DATABASE_URL, schema }), answered)
  t.same((await admin.query(`SELECT tablename FROM pg_tables WHERE schemaname = '${schema}' ORDER BY 1`)).rows.map(r => r.tablename), ['apiWebhookCursors', 'apiWebhookDeliveries', 'api_change_log', 'api_changes_purged', 'api_idempotency_keys', 'api_jobs', 'authors', 'books', 'reviews', 'webhooks'], 'the tables of the demo\'s resources, its kept responses, jobs, change log and webhook deliveries, in the test schema')
})
