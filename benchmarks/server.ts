// The plugin side of the benchmark: the demo service's configuration of the
// plugin over a store seeded with benchmarks/seed.ts. PORT from the environment (0 = any free
// port), STORE memory (default) or postgres; prints `listening <url>` once ready, which run.ts
// waits for, or `unavailable <why>`.
import { randomBytes } from 'node:crypto'
import { pathToFileURL } from 'node:url'
import pg from 'pg'
import type { FastifyInstance } from 'fastify'
import { memoryStore, postgresStore } from '../lib/index.js'
import type { ApiConventionsOptions, Store } from '../lib/index.js'
import { loadConfig } from '../demo/config.js'
import type { DemoConfig } from '../demo/config.js'
import { buildDemoAppOver } from '../demo/app.js'
import { demoResources } from '../demo/schemas/index.js'
import { CURSOR_SECRET, SEED_TIME, fillStore, generate } from './seed.js'
import { benchPostgresStore, databaseUrl, traceStatements } from './postgres.js'

/** The demo's settings, with a rate limit no benchmark reaches and a fixed paging-token key. */
export function benchConfig (env: Record<string, string | undefined>): DemoConfig {
  // The store is chosen by STORE below, not by the demo's settings; no Redis, NATS or replica
  // whatever the shell exports (the store is made here, without them).
  return loadConfig({ RATE_LIMIT_MAX: '100000000', CURSOR_SECRET, ...env, STORE: 'memory', DATABASE_URL: undefined, DATABASE_READ_URL: undefined, REDIS_URL: undefined, NATS_URL: undefined, PORT: env.PORT ?? '0' })
}

/** The memory store with the seed loaded, every record stamped SEED_TIME. */
export async function seededMemoryStore (authorCount?: number, bookCount?: number): Promise<Store> {
  let clock = SEED_TIME
  const store = memoryStore({ now: () => clock })
  await fillStore(store, generate(authorCount, bookCount))
  // Records created during the run get a later time, like in the demo.
  clock = new Date(SEED_TIME.getTime() + 1000)
  return store
}

/**
 * What the hand-written baseline does not do, left out of the plugin side compared with it: the
 * change feed (a second statement in every write), 202 work and MCP. The demo side has them.
 */
const beyondTheBaseline: Partial<ApiConventionsOptions> = { changes: undefined, async: undefined, mcp: undefined }

/**
 * The plugin side of the baseline comparison: the demo's plugin, routes and server options over a
 * store we seeded (demo/app.ts buildDemoAppOver) but for `beyondTheBaseline`, without Redis and
 * without a logger (the baseline logs nothing either). `overrides` turn conventions off for ablation.ts.
 */
export async function buildPluginApp (config: DemoConfig, store: Store, overrides: Partial<ApiConventionsOptions> = {}): Promise<FastifyInstance> {
  return await buildDemoAppOver(config, store, { logger: false }, { ...beyondTheBaseline, ...overrides })
}

/**
 * The side compared with the peers (BENCH_DEMO=1): the demo as `npm start` serves it, its log at
 * warn on stdout, over the same seeded store.
 */
async function buildDemoSide (config: DemoConfig, store: Store): Promise<FastifyInstance> {
  return await buildDemoAppOver(config, store, { logger: { level: 'warn', stream: process.stdout } })
}

/** What a benchmark on a schema of its own works with: the plugin app over the store, and a pool to seed with. */
export interface FreshSchema { readonly schema: string, readonly admin: pg.Pool, readonly app: FastifyInstance }

/**
 * Runs `work` on a PostgreSQL schema made for it (`api_conventions_<kind>_<random>`): the plugin's
 * app over the store (registering prepares the tables, which `work` seeds through `admin`). Then
 * the app closes the store, and only that schema is dropped. `name` names the script when
 * DATABASE_URL is missing.
 */
export async function withFreshSchema<T> (name: string, kind: string, work: (fresh: FreshSchema) => Promise<T>): Promise<T> {
  const connectionString = databaseUrl()
  if (connectionString === undefined) throw new Error(`${name} needs DATABASE_URL`)
  const schema = `api_conventions_${kind}_${randomBytes(4).toString('hex')}`
  const admin = new pg.Pool({ connectionString })
  const store = await postgresStore({ connectionString, schema })
  let app: FastifyInstance | undefined
  try {
    app = await buildPluginApp(benchConfig({}), store)
    return await work({ schema, admin, app })
  } finally {
    // Without an app, the store is closed here.
    await (app === undefined ? store.close() : app.close())
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await admin.end()
  }
}

/**
 * Conventions (or the application rules) turned off one at a time, for ablation.ts; server.ts
 * applies one named by BENCH_ABLATE.
 */
export const ablations: Readonly<Record<string, (store: Store) => Partial<ApiConventionsOptions>>> = {
  // No row or field rules, server values or hooks: what the rules machinery costs requests that
  // no rule concerns. Its CREATE answers without the books' reviewCount and averageRating.
  'no rules': store => ({ resources: demoResources(store).map(({ rules: _rules, serverValues: _values, hooks: _hooks, ...definition }) => definition) }),
  // What the Idempotency-Key wrapper costs requests that send no key.
  'no idempotency': () => ({ idempotency: false }),
  'no rate limit': () => ({ rateLimit: false }),
  'no auth': () => ({ auth: undefined }),
  'no auth, cors, rate limit': () => ({ auth: undefined, cors: undefined, rateLimit: false }),
  // What the request span costs while no OpenTelemetry SDK is registered (@opentelemetry/api installed, as here).
  'no tracing': () => ({ tracing: false })
}

async function main () {
  const kind = process.env.STORE ?? 'memory'
  if (kind !== 'memory' && kind !== 'postgres') throw new Error(`STORE must be memory or postgres, received ${kind}`)
  if (kind === 'postgres' && databaseUrl() === undefined) {
    process.stdout.write('unavailable DATABASE_URL is not set\n')
    return
  }
  const config = benchConfig(process.env)
  // PostgreSQL: run.ts seeded the schema once (seedPostgres); every server reads it, and reports
  // its statements so run.ts can check the baseline runs the same ones.
  const pool = kind === 'postgres' ? traceStatements(new pg.Pool({ connectionString: databaseUrl() })) : undefined
  const store = pool === undefined ? await seededMemoryStore() : await benchPostgresStore(pool)
  const ablated = process.env.BENCH_ABLATE
  if (ablated !== undefined && !(ablated in ablations)) throw new Error(`BENCH_ABLATE must be one of ${Object.keys(ablations).join(', ')}`)
  const app = process.env.BENCH_DEMO === '1'
    ? await buildDemoSide(config, store)
    : await buildPluginApp(config, store, ablated === undefined ? {} : ablations[ablated](store))
  const url = await app.listen({ port: config.port, host: '127.0.0.1' })
  process.stdout.write(`listening ${url}\n`)
  process.on('SIGTERM', () => { app.close().then(async () => { await pool?.end() }).then(() => process.exit(0), () => process.exit(1)) })
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main()
