// The demo service (docs/demo-contract.md): authors, books and reviews under /v1, /health, on the configured
// store, with its bearer tokens, legacy API keys, allowed origins and rate limit (shared through Redis).
import { createHash } from 'node:crypto'
import Fastify from 'fastify'
import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import { Redis } from 'ioredis'
import apiConventions, { createClientErrorHandler, createFrameworkErrorHandler, defineAuth, genReqId, guardHostRoutes, secretTable } from '../lib/index.js'
import type { ApiConventionsOptions, Store } from '../lib/index.js'
import { demoResources } from './schemas/index.js'
import { ConfigError } from './config.js'
import type { Credential, DemoConfig, Right } from './config.js'
import { createDemoStore } from './store.js'
import { sampleCounts, seedWhenEmpty } from './seed.js'
import type { SeedOutcome } from './seed.js'

/**
 * Who called: a non-secret id (a digest of the credential, the rate-limit key), the right, and the
 * user id the reviews' row rules compare with (`@principal.user`).
 */
export interface DemoPrincipal { readonly id: string, readonly right: Right, readonly user: string }

const readMethods = new Set(['GET', 'HEAD', 'OPTIONS'])

function principals (kind: string, credentials: ReadonlyMap<string, Credential>): Array<[string, DemoPrincipal]> {
  return [...credentials].map(([secret, { right, user }]) => [secret, { id: `${kind}:${createHash('sha256').update(secret).digest('base64url').slice(0, 16)}`, right, user }])
}

/**
 * The demo's security options (API_TOKENS, API_KEYS, ALLOWED_ORIGINS, RATE_LIMIT_*): `read`
 * allows GET/HEAD/OPTIONS only, `write` and `admin` everything; anything else is 403. What an
 * admin sees beyond others is the reviews' rules (schemas/reviews.ts).
 */
export function demoSecurityOptions (config: DemoConfig, redis?: Redis): Pick<ApiConventionsOptions, 'auth' | 'cors' | 'rateLimit'> {
  const token = secretTable(principals('token', config.apiTokens))
  return {
    auth: defineAuth<DemoPrincipal>({
      realm: 'demo',
      bearer: presented => token(presented),
      // An empty API_KEYS turns the legacy method off.
      apiKeys: config.apiKeys.size > 0 ? principals('key', config.apiKeys) : undefined,
      // Webhook subscriptions are for callers who may write, even to read them.
      authorize: ({ principal, method, resource }) => principal.right !== 'read' || (readMethods.has(method) && resource !== 'webhooks')
    }),
    // The docs page's console sends its requests from the demo's own origin (a browser sends Origin
    // on a same-origin POST): accepted besides ALLOWED_ORIGINS, so "Test Request" works wherever
    // the demo is reached. Harmless without a token, which no page holds unless its user types it.
    cors: { origins: config.allowedOrigins, ownOrigin: true },
    rateLimit: { max: config.rateLimitMax, timeWindow: config.rateLimitWindow, redis }
  }
}

/**
 * /health and every path outside /v1 get what the plugin gives its own routes: the security
 * headers, a Request-Id, the Origin check (403), the Host check (400), and problem+json errors
 * (unknown paths 404, other methods on /health 405). A scope of its own, so none of it runs twice on the API's routes.
 */
function outsideTheApi (allowedOrigins: readonly string[]) {
  return async function outsideApi (scope: FastifyInstance) {
    guardHostRoutes(scope, { prefix: '/v1', errorFormat: 'flat', allowedOrigins, allowedMethods: path => path === '/health' ? ['GET', 'HEAD'] : undefined })
    scope.get('/health', function health () { return { status: 'ok' } })
  }
}

/** The Redis client for shared rate-limit counters, connected now so a bad REDIS_URL stops start-up. */
async function connectRedis (url: string): Promise<Redis> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 })
  try {
    await redis.connect()
  } catch (error) {
    redis.disconnect()
    throw new ConfigError('REDIS_URL', `cannot be reached (${(error as Error).message})`)
  }
  return redis
}

/** The demo app, as tests build it: on the configured store as it is, never seeded. */
export async function buildDemoApp (config: DemoConfig, serverOptions: FastifyServerOptions = {}): Promise<FastifyInstance> {
  return (await assembleDemoApp(config, serverOptions)).app
}

/** What `npm start` serves: the demo app, with the sample catalogue written into an empty store unless SEED=false. */
export async function startDemoApp (config: DemoConfig, serverOptions: FastifyServerOptions = {}): Promise<{ app: FastifyInstance, sample: SeedOutcome | 'off' }> {
  const { app, store } = await assembleDemoApp(config, serverOptions)
  if (!config.seed) return { app, sample: 'off' }
  // A store that fails while it is written stops start-up, and is closed first.
  const sample = await seedWhenEmpty(store).catch(async (error: unknown) => { await app.close(); throw error })
  app.log.info({ sample, ...(sample === 'seeded' ? sampleCounts : {}) }, sample === 'seeded' ? 'sample catalogue written (SEED=false turns this off)' : 'sample catalogue not written')
  return { app, sample }
}

/** The demo's options to the plugin, over `store`, with Fastify's `prefix`: shared with the tests that assemble the demo around the plugin. */
export function demoPluginOptions (config: DemoConfig, store: Store, redis?: Redis): ApiConventionsOptions & { readonly prefix: string } {
  return {
    prefix: '/v1',
    resources: demoResources(store),
    cursorSecret: config.cursorSecret,
    requireIfMatch: config.requireIfMatch,
    // Prefer: respond-async on every write: 202 and /v1/operations/{id}, which admins see of every caller.
    async: { seesAll: principal => (principal as DemoPrincipal).right === 'admin' },
    // NATS_URL: every change also to JetStream, stream API_CHANGES, subjects api.changes.<resource>.
    // /v1/webhooks: callers' subscriptions, each change POSTed to those whose host WEBHOOK_ALLOWED_HOSTS lists; admins see every caller's.
    changes: {
      retention: config.changesRetention,
      ...config.natsUrl === undefined ? {} : { nats: { url: config.natsUrl } },
      webhooks: { allowedHosts: config.webhookAllowedHosts, ownerOf: principal => (principal as DemoPrincipal).user, seesAll: principal => (principal as DemoPrincipal).right === 'admin' }
    },
    // /v1/mcp: AI agents use the API with their caller's token and rights (docs/mcp.md).
    mcp: config.mcp,
    // Compact: the problems every operation can answer as one `default` each (200 KB instead of 232 KB; docs/openapi.md "The document's size").
    openapi: { title: 'Books demo API', version: '1.0.0', description: 'Authors, their books and readers\' reviews: the demo service of fastify-api-conventions.', license: { name: 'MIT', identifier: 'MIT' }, detail: 'compact' },
    ...demoSecurityOptions(config, redis)
  }
}

/** The demo's Fastify instance, before anything is registered. */
function demoFastify (serverOptions: FastifyServerOptions): FastifyInstance {
  return Fastify({
    genReqId,
    clientErrorHandler: createClientErrorHandler({ prefix: '/v1' }),
    frameworkErrors: createFrameworkErrorHandler({ prefix: '/v1' }),
    // Five audit headers of up to 8 KB each must fit: Node's default allows 16 KB of headers in all.
    // Node would answer an HTTP/1.1 request without Host with a bare 400; the plugin answers a problem.
    http: { maxHeaderSize: 65536, requireHostHeader: false },
    // The plugin's first registration in a process loads and compiles its optional parts (the MCP
    // SDK, the schemas): about 1 s, but over Fastify's 10 s limit on a machine busy elsewhere.
    pluginTimeout: 60_000,
    ...serverOptions
  })
}

/** /health and the rest outside the API, then the API over `store`, which closes with the app. */
async function registerDemo (app: FastifyInstance, config: DemoConfig, store: Store, redis?: Redis, overrides: Partial<ApiConventionsOptions> = {}): Promise<void> {
  app.addHook('onClose', async function closeStore () { await store.close() })
  await app.register(outsideTheApi(config.allowedOrigins))
  await app.register(apiConventions, { ...demoPluginOptions(config, store, redis), ...overrides })
}

async function assembleDemoApp (config: DemoConfig, serverOptions: FastifyServerOptions): Promise<{ app: FastifyInstance, store: Store }> {
  const app = demoFastify(serverOptions)
  // A Redis that cannot be reached stops start-up. First, as the store keeps writers' positions in it.
  const redis = config.redisUrl === undefined ? undefined : await connectRedis(config.redisUrl).catch(async (error: unknown) => { await app.close(); throw error })
  if (redis !== undefined) app.addHook('onClose', async function closeRedis () { await redis.quit() })
  // A store that cannot be opened stops start-up too; Redis, connected above, is closed first.
  const store = await createDemoStore(config, app.log, redis).catch(async (error: unknown) => { await app.close(); throw error })
  await registerDemo(app, config, store, redis)
  return { app, store }
}

/**
 * The demo app over a store made elsewhere (the benchmarks' seeded one), without Redis: the same
 * server options, routes and plugin options as `npm start`, with `overrides` over the plugin's
 * (benchmarks/ablation.ts turns conventions off one at a time).
 */
export async function buildDemoAppOver (config: DemoConfig, store: Store, serverOptions: FastifyServerOptions = {}, overrides: Partial<ApiConventionsOptions> = {}): Promise<FastifyInstance> {
  const app = demoFastify(serverOptions)
  await registerDemo(app, config, store, undefined, overrides)
  return app
}
