// Prometheus metrics (createMetrics and the metrics option, README "Metrics and timing"): what a
// scrape of the host's metrics route shows after requests to the API. Needs prom-client, an
// optional peer dependency; optional-packages.test.ts covers the API without it.
import { createRequire } from 'node:module'
import t from 'tap'
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import { createMetrics, memoryStore, pgliteStore, postgresStore } from '../lib/index.js'
import type { Metrics, Store } from '../lib/index.js'
import { findOptional } from '../lib/optional.js'
import { buildApp, json } from './helpers/app.js'
import { openPglite } from './stores/pglite-db.js'

/** Whether prom-client is installed (asked of Node's resolver: tap's TypeScript loader throws, uncoded, for a missing package). */
function installed (name: string) {
  try {
    createRequire(import.meta.url).resolve(name)
    return true
  } catch {
    return false
  }
}

if (!installed('prom-client')) {
  t.plan(0, 'prom-client is not installed: the metrics are not tested')
} else {
  /** The host's own route serving the metrics, beside the API (here on the same server, outside its prefix). */
  async function scrape (app: FastifyInstance) {
    const res = await app.inject({ url: '/metrics' })
    return { status: res.statusCode, type: res.headers['content-type'], text: res.body }
  }

  async function apiWithMetrics (t: Parameters<typeof buildApp>[0], overrides: Parameters<typeof buildApp>[1] = {}, metrics?: Metrics) {
    const used = metrics ?? await createMetrics()
    const app = await buildApp(t, { ...overrides, metrics: used })
    return { app, metrics: used }
  }

  /** The value of the sample `name{labels}` in a scrape, or undefined when absent. */
  const sample = (text: string, series: string) => {
    const line = text.split('\n').find(line => line.startsWith(`${series} `))
    return line === undefined ? undefined : Number(line.slice(series.length + 1))
  }

  t.test('requests are counted and timed by route template, method and status, never by URL', async t => {
    const metrics = await createMetrics()
    const app = Fastify()
    t.teardown(() => app.close())
    app.get('/metrics', metrics.handler)
    const { app: api } = await apiWithMetrics(t, {}, metrics)
    for (const url of ['/v1/books', '/v1/books', '/v1/books/no-such-id']) await api.inject({ url })
    const { status, type, text } = await scrape(app)
    t.equal(status, 200)
    t.match(type, /^text\/plain; version=0\.0\.4/)
    t.match(text, '# TYPE api_request_duration_seconds histogram')
    t.equal(sample(text, 'api_request_duration_seconds_count{route="/v1/books",method="GET",status="200"}'), 2)
    t.equal(sample(text, 'api_request_duration_seconds_count{route="/v1/books/:id",method="GET",status="404"}'), 1)
    t.notMatch(text, 'no-such-id')
    t.match(text, /api_request_duration_seconds_bucket\{le="0\.005",route="\/v1\/books",method="GET",status="200"\} \d/)
  })

  t.test('rate-limit refusals are counted by route', async t => {
    const { app, metrics } = await apiWithMetrics(t, { rateLimit: { max: 1, timeWindow: 60000 } })
    const statuses = []
    for (let i = 0; i < 3; i++) statuses.push((await app.inject({ url: '/v1/authors' })).statusCode)
    t.same(statuses, [200, 429, 429])
    const text = await metrics.registry.metrics()
    t.equal(sample(text, 'api_rate_limit_refusals_total{route="/v1/authors",method="GET"}'), 2)
    t.equal(sample(text, 'api_request_duration_seconds_count{route="/v1/authors",method="GET",status="429"}'), 2)
  })

  t.test('Idempotency-Key replays are counted by route, first answers are not', async t => {
    const { app, metrics } = await apiWithMetrics(t)
    const send = async () => await app.inject({ method: 'POST', url: '/v1/authors', headers: { ...json, 'idempotency-key': '"once"' }, payload: { name: 'Tove Jansson' } })
    const [first, retry] = [await send(), await send()]
    t.same([first.statusCode, retry.statusCode, retry.headers['idempotent-replayed']], [201, 201, 'true'])
    const text = await metrics.registry.metrics()
    t.equal(sample(text, 'api_idempotency_replays_total{route="/v1/authors",method="POST"}'), 1)
    t.equal(sample(text, 'api_request_duration_seconds_count{route="/v1/authors",method="POST",status="201"}'), 2)
  })

  t.test('store pools are reported per pool while the API runs, and no longer after it closes', async t => {
    const withPools: Store = { ...memoryStore(), poolStats: () => ({ primary: { total: 5, idle: 2, waiting: 0 }, replica: { total: 3, idle: 0, waiting: 4 } }) }
    const metrics = await createMetrics()
    const first = await buildApp(t, { store: withPools, metrics })
    // A second instance on the same store (say /v2) reports its pools once.
    await buildApp(t, { store: withPools, metrics })
    const running = await metrics.registry.metrics()
    t.equal(sample(running, 'api_store_pool_connections{pool="primary",state="busy"}'), 3)
    t.equal(sample(running, 'api_store_pool_connections{pool="primary",state="idle"}'), 2)
    t.equal(sample(running, 'api_store_pool_connections{pool="replica",state="busy"}'), 3)
    t.equal(sample(running, 'api_store_pool_waiting{pool="replica"}'), 4)
    await first.close()
    const closed = await metrics.registry.metrics()
    t.equal(sample(closed, 'api_store_pool_waiting{pool="replica"}'), undefined)
  })

  t.test('replicas: their lag at the last check and whether reads go to them, the largest lag over stores', async t => {
    const metrics = await createMetrics()
    const replica = (lagMillis: number | undefined, usable: boolean) => ({ total: 1, idle: 1, waiting: 0, lagMillis, usable })
    await buildApp(t, { store: { ...memoryStore(), poolStats: () => ({ primary: { total: 1, idle: 1, waiting: 0 }, replica: replica(250, true) }) }, metrics })
    await buildApp(t, { store: { ...memoryStore(), poolStats: () => ({ replica: replica(12_000, false) }) }, metrics })
    let text = await metrics.registry.metrics()
    t.equal(sample(text, 'api_store_replica_lag_seconds{pool="replica"}'), 12)
    t.equal(sample(text, 'api_store_replica_usable{pool="replica"}'), 1, 'reads go to one of them')
    t.equal(sample(text, 'api_store_replica_usable{pool="primary"}'), undefined, 'a primary has no such gauge')
    const down = await createMetrics()
    await buildApp(t, { store: { ...memoryStore(), poolStats: () => ({ replica: replica(undefined, false) }) }, metrics: down })
    text = await down.registry.metrics()
    t.equal(sample(text, 'api_store_replica_lag_seconds{pool="replica"}'), undefined, 'no lag for a replica that cannot be reached')
    t.equal(sample(text, 'api_store_replica_usable{pool="replica"}'), 0)
  })

  t.test('two stores\' pools of one name are summed', async t => {
    const pool = { total: 2, idle: 1, waiting: 1 }
    const metrics = await createMetrics()
    await buildApp(t, { store: { ...memoryStore(), poolStats: () => ({ primary: pool }) }, metrics })
    await buildApp(t, { store: { ...memoryStore(), poolStats: () => ({ primary: pool }) }, metrics })
    t.equal(sample(await metrics.registry.metrics(), 'api_store_pool_waiting{pool="primary"}'), 2)
  })

  t.test('a PGlite store has no pool to report', async t => {
    const db = await openPglite()
    t.teardown(() => db.close())
    const store = await pgliteStore({ db })
    t.same(store.poolStats?.(), {})
    const metrics = await createMetrics()
    await buildApp(t, { store, metrics })
    t.notMatch(await metrics.registry.metrics(), /api_store_pool_connections\{/)
  })

  t.test('a PostgreSQL store reports its pool as primary', { skip: process.env.DATABASE_URL === undefined && 'DATABASE_URL is not set' }, async t => {
    const store = await postgresStore({ connectionString: process.env.DATABASE_URL })
    t.teardown(() => store.close())
    // The store's first query (its schema and collation) left one connection idle.
    t.same(store.poolStats?.(), { primary: { total: 1, idle: 1, waiting: 0 } })
  })

  t.test('createMetrics takes a registry of one\'s own and the duration buckets', async t => {
    const prom = await findOptional<{ Registry: new () => Metrics['registry'] }>('prom-client') as { Registry: new () => Metrics['registry'] }
    const registry = new prom.Registry()
    const metrics = await createMetrics({ registry, buckets: [0.1, 1] })
    t.equal(metrics.registry, registry)
    const app = await buildApp(t, { metrics })
    await app.inject({ url: '/v1/books' })
    const text = await registry.metrics()
    t.match(text, 'api_request_duration_seconds_bucket{le="0.1",route="/v1/books",method="GET",status="200"}')
    t.notMatch(text, 'le="0.005"')
  })

  t.test('createMetrics refuses unknown keys and bad buckets, naming them', async t => {
    await t.rejects(createMetrics({ bucket: [1] } as never), { code: 'API_ERR_OPTIONS_INVALID', message: /createMetrics\.bucket is not a known key; did you mean "buckets"\?/ })
    for (const buckets of [[], [0], ['1'], 'fast']) {
      await t.rejects(createMetrics({ buckets } as never), { code: 'API_ERR_OPTIONS_INVALID', message: /createMetrics\.buckets must be a non-empty array of positive numbers/ }, JSON.stringify(buckets))
    }
  })

  t.test('the metrics option takes only what createMetrics returns, or false', async t => {
    for (const metrics of [true, {}, null]) {
      await t.rejects(buildApp(t, { metrics: metrics as never }), { code: 'API_ERR_OPTIONS_INVALID', message: /metrics must be what createMetrics\(\) returns, or false, received (boolean|object|null)/ })
    }
    const app = await buildApp(t, { metrics: false })
    t.equal((await app.inject({ url: '/v1/books' })).statusCode, 200)
  })
}
