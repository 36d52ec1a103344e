// Read replicas (docs/stores.md "Read replicas"; docs/demo-contract.md "Many instances"): with
// DATABASE_URL and DATABASE_READ_URL (.ci/replica.sh), reads go to the replica, a writer reads its
// own writes while other callers still see the replica's state, a replica lagging too far or down
// is skipped without a failed request, and it serves again by itself. Each test has its own schema.
import t from 'tap'
import type { Test } from 'tap'
import { Redis } from 'ioredis'
import { postgresStore } from '../../lib/stores/sql/index.js'
import type { PostgresStoreOptions } from '../../lib/stores/sql/index.js'
import { buildSecureApp, createAs } from '../helpers/secure-app.js'
import { auth } from '../helpers/auth.js'
import { runSchemas } from './run-schemas.js'
import { replicaControl } from '../helpers/replica.js'

const connectionString = process.env.DATABASE_URL
const readConnectionString = process.env.DATABASE_READ_URL
if (connectionString === undefined || readConnectionString === undefined) {
  t.plan(0, `${connectionString === undefined ? 'DATABASE_URL' : 'DATABASE_READ_URL'} is not set: the read replica tests are skipped (.ci/replica.sh makes a replica)`)
} else {
  const { prefix } = runSchemas(t, connectionString)
  let schemas = 0
  /** An app on a store with the replica, its tables made and replayed before the test begins. */
  const replicatedApp = async (t: Test, options: PostgresStoreOptions = {}) => {
    const schema = `${prefix}_${++schemas}`
    const store = await postgresStore({ connectionString, readConnectionString, schema, replicaCheckMillis: 50, ...options })
    t.teardown(() => store.close())
    const app = await buildSecureApp(t, { store })
    t.equal((await app.inject({ url: '/v1/books?expand=author', headers: auth.read })).statusCode, 200, 'tables made')
    const replica = await replicaControl(t, connectionString, readConnectionString)
    await replica.caughtUp()
    return { app, replica, schema }
  }
  const status = async (app: Awaited<ReturnType<typeof replicatedApp>>['app'], url: string, headers: Record<string, string>) =>
    (await app.inject({ url, headers })).statusCode
  const until = async (check: () => Promise<boolean>, millis: number) => {
    for (const end = Date.now() + millis; Date.now() < end;) {
      if (await check()) return true
      await new Promise(resolve => setTimeout(resolve, 25))
    }
    return false
  }

  t.test('the writer reads its write at once; another caller sees it once the replica has replayed it', async t => {
    const { app, replica } = await replicatedApp(t, { maxReplicaLagMillis: 60_000 })
    await replica.lag('2s')
    const started = Date.now()
    const author = await createAs(app, 'authors', { name: 'Ann' })
    // The writer: RETRIEVE, LIST with its count, and expand from books all show it.
    t.equal(await status(app, `/v1/authors/${author.id}`, auth.write), 200)
    const listed = (await app.inject({ url: '/v1/authors?total=true', headers: auth.write })).json()
    t.match(listed, { data: { authors: [{ name: 'Ann' }] }, meta: { total: 1 } })
    // Another caller reads the replica, which has not applied the commit yet.
    t.equal(await status(app, `/v1/authors/${author.id}`, auth.read), 404, 'the reader does not see it yet')
    t.match((await app.inject({ url: '/v1/authors?total=true', headers: auth.read })).json(), { data: { authors: [] }, meta: { total: 0 } })
    t.ok(Date.now() - started < 2000, 'checked within the delay')
    t.ok(await until(async () => await status(app, `/v1/authors/${author.id}`, auth.read) === 200, 10_000), 'then it does')
  })

  t.test('a paging token made on the primary pages on the replica', async t => {
    const { app, replica } = await replicatedApp(t, { maxReplicaLagMillis: 60_000 })
    for (const name of ['Ada', 'Bea', 'Cid']) await createAs(app, 'authors', { name })
    const first = (await app.inject({ url: '/v1/authors?sort=name&pageSize=2', headers: auth.write })).json()
    await replica.caughtUp()
    const next = first.links.find((link: { rel: string }) => link.rel === 'next').href as string
    const second = await app.inject({ url: next, headers: auth.read })
    t.equal(second.statusCode, 200)
    t.same(second.json().data.authors.map((a: { name: string }) => a.name), ['Cid'])
  })

  t.test('a replica lagging beyond maxReplicaLagMillis is skipped: every caller reads the primary', async t => {
    const { app, replica } = await replicatedApp(t, { maxReplicaLagMillis: 300 })
    await replica.lag('3s')
    const author = await createAs(app, 'authors', { name: 'Bo' })
    t.ok(await until(async () => await status(app, `/v1/authors/${author.id}`, auth.read) === 200, 2500), 'the reader sees the write before the replica applies it')
  })

  t.test('writers\' positions kept in Redis hold across instances', { skip: process.env.REDIS_URL === undefined && 'REDIS_URL is not set' }, async t => {
    const redis = new Redis(process.env.REDIS_URL as string)
    t.teardown(() => redis.quit())
    const { app, replica, schema } = await replicatedApp(t, { maxReplicaLagMillis: 60_000, redis })
    const other = await postgresStore({ connectionString, readConnectionString, schema, replicaCheckMillis: 50, redis })
    t.teardown(() => other.close())
    const second = await buildSecureApp(t, { store: other })
    t.equal(await status(second, '/v1/authors', auth.write), 200)
    await replica.lag('2s')
    const author = await createAs(app, 'authors', { name: 'Cy' })
    t.equal(await status(second, `/v1/authors/${author.id}`, auth.write), 200, 'the writer, on the other instance')
    t.equal(await status(second, `/v1/authors/${author.id}`, auth.read), 404, 'another caller, on the other instance')
  })

  t.test('a stopped replica costs no failed request, and serves again once restarted', async t => {
    const application = `apic-replica-${prefix}`
    const { app, replica } = await replicatedApp(t, { poolOptions: { application_name: application } })
    const author = await createAs(app, 'authors', { name: 'Di' })
    await replica.caughtUp()
    t.equal(await status(app, `/v1/authors/${author.id}`, auth.read), 200)
    t.ok(await replica.connections(application) > 0, 'reads ran on the replica')
    await replica.stop()
    const statuses = []
    for (let i = 0; i < 20; i++) statuses.push(await status(app, i % 2 === 0 ? `/v1/authors/${author.id}` : '/v1/authors', auth.read))
    t.same(new Set(statuses), new Set([200]), 'every read answered from the primary')
    await replica.start()
    t.ok(await until(async () => {
      await status(app, '/v1/authors', auth.read)
      return await replica.connections(application).catch(() => 0) > 0
    }, 15_000), 'reads run on the replica again')
  })
}
