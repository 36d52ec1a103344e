// The demo's settings (docs/demo-contract.md, "Starting it"): every environment
// variable, its default, and each kind of bad value, which must name the setting in one line.
import t from 'tap'
import { ConfigError, loadConfig } from '../demo/config.js'
import { buildDemoAppOver, demoPluginOptions } from '../demo/app.js'
import { memoryStore } from '../lib/index.js'
import type { Store } from '../lib/index.js'

t.test('with no environment every setting takes its documented default', async t => {
  const config = loadConfig({})
  t.same({ ...config, apiTokens: [...config.apiTokens], apiKeys: [...config.apiKeys] }, {
    port: 3000,
    host: '127.0.0.1',
    store: 'pglite',
    dataDir: './data',
    databaseUrl: undefined,
    databasePooler: 'none',
    apiTokens: [
      ['dev-token', { right: 'write', user: 'dev' }],
      ['read-token', { right: 'read', user: 'reader' }],
      ['alice-token', { right: 'write', user: 'alice' }],
      ['bob-token', { right: 'write', user: 'bob' }],
      ['admin-token', { right: 'admin', user: 'admin' }]
    ],
    apiKeys: [['dev-key', { right: 'write', user: 'dev-key' }]],
    allowedOrigins: ['http://localhost:8080'],
    cursorSecret: undefined,
    requireIfMatch: false,
    rateLimitMax: 1000,
    rateLimitWindow: '1 minute',
    changesRetention: '7 days',
    redisUrl: undefined,
    natsUrl: undefined,
    webhookAllowedHosts: ['127.0.0.1', 'localhost'],
    seed: true,
    mcp: true
  })
  t.ok(Object.isFrozen(config))
})

t.test('every setting is read from its variable', async t => {
  const config = loadConfig({
    PORT: '8081',
    HOST: ' 0.0.0.0 ',
    STORE: 'memory',
    DATA_DIR: '/var/lib/demo',
    API_TOKENS: ' alpha:read , beta.token~/+=:write , gamma:admin:Root.User-1_~@+ ',
    API_KEYS: 'legacy:read',
    ALLOWED_ORIGINS: 'https://app.example.com, http://localhost:3001',
    CURSOR_SECRET: 'sixteen-chars-ok',
    REQUIRE_IF_MATCH: 'true',
    RATE_LIMIT_MAX: '5',
    RATE_LIMIT_WINDOW: ' 30 seconds ',
    CHANGES_RETENTION: '2 days',
    REDIS_URL: 'redis://127.0.0.1:6379',
    NATS_URL: 'nats://127.0.0.1:4222',
    WEBHOOK_ALLOWED_HOSTS: 'hooks.example.com',
    SEED: 'false',
    MCP: 'false'
  })
  t.same({ ...config, apiTokens: [...config.apiTokens], apiKeys: [...config.apiKeys] }, {
    port: 8081,
    host: '0.0.0.0',
    store: 'memory',
    dataDir: '/var/lib/demo',
    databaseUrl: undefined,
    databasePooler: 'none',
    apiTokens: [
      ['alpha', { right: 'read', user: 'alpha' }],
      ['beta.token~/+=', { right: 'write', user: 'beta.token~/+=' }],
      ['gamma', { right: 'admin', user: 'Root.User-1_~@+' }]
    ],
    apiKeys: [['legacy', { right: 'read', user: 'legacy' }]],
    allowedOrigins: ['https://app.example.com', 'http://localhost:3001'],
    cursorSecret: 'sixteen-chars-ok',
    requireIfMatch: true,
    rateLimitMax: 5,
    rateLimitWindow: '30 seconds',
    changesRetention: '2 days',
    redisUrl: 'redis://127.0.0.1:6379',
    natsUrl: 'nats://127.0.0.1:4222',
    webhookAllowedHosts: ['hooks.example.com'],
    seed: false,
    mcp: false
  })
})

t.test('DATABASE_READ_URL names a replica of DATABASE_URL for reads; empty, there is none', async t => {
  t.match(loadConfig({ DATABASE_URL: 'postgres://h/db', DATABASE_READ_URL: 'postgresql://replica:5433/db' }), { store: 'postgres', databaseReadUrl: 'postgresql://replica:5433/db' })
  t.equal(loadConfig({ DATABASE_URL: 'postgres://h/db', DATABASE_READ_URL: ' ' }).databaseReadUrl, undefined)
  t.equal(loadConfig({}).databaseReadUrl, undefined)
})

t.test('DATABASE_POOLER says whether DATABASE_URL is a transaction-mode pooler; none by default', async t => {
  t.equal(loadConfig({ DATABASE_URL: 'postgres://h/db', DATABASE_POOLER: 'transaction' }).databasePooler, 'transaction')
  t.equal(loadConfig({ DATABASE_URL: 'postgres://h/db', DATABASE_POOLER: ' ' }).databasePooler, 'none')
  t.equal(loadConfig({}).databasePooler, 'none')
})

t.test('DATABASE_URL implies STORE=postgres', async t => {
  t.match(loadConfig({ DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test' }), { store: 'postgres', databaseUrl: 'postgres://postgres@127.0.0.1:5432/test' })
  t.match(loadConfig({ STORE: 'postgres', DATABASE_URL: 'postgresql://h/db' }), { store: 'postgres' })
})

t.test('empty variables mean their defaults', async t => {
  t.match(loadConfig({ PORT: '', HOST: ' ', DATA_DIR: '', DATABASE_URL: ' ', CURSOR_SECRET: '', REQUIRE_IF_MATCH: '', RATE_LIMIT_MAX: '', REDIS_URL: '', SEED: '', MCP: '' }), {
    port: 3000, host: '127.0.0.1', store: 'pglite', dataDir: './data', databaseUrl: undefined, cursorSecret: undefined, requireIfMatch: false, rateLimitMax: 1000, redisUrl: undefined, seed: true, mcp: true
  })
})

t.test('API_TOKENS: the user defaults to the token; one user may hold several tokens', async t => {
  t.same([...loadConfig({ API_TOKENS: 'x:read,y:write:x,z:admin:x' }).apiTokens], [
    ['x', { right: 'read', user: 'x' }],
    ['y', { right: 'write', user: 'x' }],
    ['z', { right: 'admin', user: 'x' }]
  ])
})

t.test('API_KEYS keeps key:right with read or write, its user the key itself', async t => {
  t.same([...loadConfig({ API_KEYS: 'k1:read, k2:write' }).apiKeys], [['k1', { right: 'read', user: 'k1' }], ['k2', { right: 'write', user: 'k2' }]])
})

t.test('an empty API_KEYS turns the legacy method off; empty lists are allowed', async t => {
  const config = loadConfig({ API_KEYS: '', API_TOKENS: '', ALLOWED_ORIGINS: '' })
  t.same([config.apiKeys.size, config.apiTokens.size, config.allowedOrigins], [0, 0, []])
})

for (const [port, expected] of [['0', 0], ['65535', 65535]] as const) {
  t.test(`PORT ${port} is accepted`, async t => {
    t.equal(loadConfig({ PORT: port }).port, expected)
  })
}

for (const window of ['500', '1 ms', '2 milliseconds', '1 second', '2 minutes', '1 hour', '3 days']) {
  t.test(`RATE_LIMIT_WINDOW '${window}' is accepted`, async t => {
    t.equal(loadConfig({ RATE_LIMIT_WINDOW: window }).rateLimitWindow, window)
  })
}

t.test('NATS_URL: host:port without nats://, several comma-separated; empty, none', async t => {
  t.equal(loadConfig({ NATS_URL: '127.0.0.1:4222, nats://b' }).natsUrl, '127.0.0.1:4222, nats://b')
  t.equal(loadConfig({ NATS_URL: ' ' }).natsUrl, undefined)
})

t.test('the demo publishes its changes to NATS (stream API_CHANGES, api.changes.<resource>) only with NATS_URL', async t => {
  const store = memoryStore()
  t.teardown(() => store.close())
  t.match(demoPluginOptions(loadConfig({ STORE: 'memory', NATS_URL: 'nats://broker:4222' }), store).changes, { retention: '7 days', nats: { url: 'nats://broker:4222' } })
  t.notOk('nats' in (demoPluginOptions(loadConfig({ STORE: 'memory' }), store).changes as object))
})

t.test('WEBHOOK_ALLOWED_HOSTS: the hosts webhook URLs may name, 127.0.0.1 and localhost by default', async t => {
  const store = memoryStore()
  t.teardown(() => store.close())
  t.same(loadConfig({}).webhookAllowedHosts, ['127.0.0.1', 'localhost'])
  t.same(loadConfig({ WEBHOOK_ALLOWED_HOSTS: 'hooks.example.com, [::1] ,10.0.0.5' }).webhookAllowedHosts, ['hooks.example.com', '[::1]', '10.0.0.5'])
  t.same(loadConfig({ WEBHOOK_ALLOWED_HOSTS: '' }).webhookAllowedHosts, [])
  for (const bad of ['https://hooks.example.com', 'hooks.example.com:8443', 'a b', 'hooks.example.com/x']) {
    t.throws(() => loadConfig({ WEBHOOK_ALLOWED_HOSTS: bad }), { name: 'ConfigError', setting: 'WEBHOOK_ALLOWED_HOSTS' }, bad)
  }
  t.match(demoPluginOptions(loadConfig({ STORE: 'memory', WEBHOOK_ALLOWED_HOSTS: 'hooks.example.com' }), store).changes, { webhooks: { allowedHosts: ['hooks.example.com'] } })
})

t.test('REDIS_URL accepts rediss:// too', async t => {
  t.equal(loadConfig({ REDIS_URL: 'rediss://cache:6380' }).redisUrl, 'rediss://cache:6380')
})

const bad: ReadonlyArray<readonly [Record<string, string>, string, RegExp]> = [
  [{ STORE: 'sqlite' }, 'STORE', /must be pglite, memory or postgres, received 'sqlite'/],
  [{ STORE: 'postgres' }, 'DATABASE_URL', /is required when STORE=postgres/],
  [{ STORE: 'memory', DATABASE_URL: 'postgres://h/db' }, 'STORE', /is 'memory' but DATABASE_URL is set/],
  [{ DATABASE_URL: 'mysql://h/db' }, 'DATABASE_URL', /must be a postgres:\/\/ or postgresql:\/\/ URL/],
  [{ DATABASE_READ_URL: 'postgres://replica/db' }, 'DATABASE_READ_URL', /is a replica of DATABASE_URL, which is not set \(STORE is 'pglite'\)/],
  [{ STORE: 'memory', DATABASE_READ_URL: 'postgres://replica/db' }, 'DATABASE_READ_URL', /\(STORE is 'memory'\)/],
  [{ DATABASE_URL: 'postgres://h/db', DATABASE_READ_URL: 'mysql://replica/db' }, 'DATABASE_READ_URL', /must be a postgres:\/\/ or postgresql:\/\/ URL/],
  [{ DATABASE_URL: 'postgres://h/db', DATABASE_POOLER: 'session' }, 'DATABASE_POOLER', /must be none or transaction, received 'session'/],
  [{ DATABASE_POOLER: 'transaction' }, 'DATABASE_POOLER', /describes DATABASE_URL, which is not set \(STORE is 'pglite'\)/],
  [{ PORT: 'eighty' }, 'PORT', /must be an integer from 0 to 65535, received 'eighty'/],
  [{ PORT: '65536' }, 'PORT', /received '65536'/],
  [{ PORT: '-1' }, 'PORT', /received '-1'/],
  [{ PORT: '80.5' }, 'PORT', /received '80.5'/],
  [{ API_TOKENS: 'token' }, 'API_TOKENS', /entries must look like token:right or token:right:user \(right read, write or admin; .*\), received 'token'/],
  [{ API_TOKENS: 'token:owner' }, 'API_TOKENS', /received 'token:owner'/],
  [{ API_TOKENS: 'token:Write' }, 'API_TOKENS', /received 'token:Write'/],
  [{ API_TOKENS: ':write' }, 'API_TOKENS', /received ':write'/],
  [{ API_TOKENS: ':write:alice' }, 'API_TOKENS', /received ':write:alice'/],
  [{ API_TOKENS: 'two words:read' }, 'API_TOKENS', /received 'two words:read'/],
  [{ API_TOKENS: 'token:write:' }, 'API_TOKENS', /received 'token:write:'/],
  [{ API_TOKENS: 'token:write:two words' }, 'API_TOKENS', /received 'token:write:two words'/],
  [{ API_TOKENS: 'token:write:alice:extra' }, 'API_TOKENS', /received 'token:write:alice:extra'/],
  [{ API_TOKENS: 'token::alice' }, 'API_TOKENS', /received 'token::alice'/],
  [{ API_TOKENS: 'dev-token:write:dev,read-token:reader' }, 'API_TOKENS', /received 'read-token:reader'/],
  [{ API_TOKENS: 'a:read,a:write' }, 'API_TOKENS', /lists one value twice/],
  [{ API_TOKENS: 'a:read:x,a:write:y' }, 'API_TOKENS', /lists one value twice/],
  [{ API_KEYS: 'key' }, 'API_KEYS', /entries must look like key:read or key:write \(key from the RFC 6750 token characters\), received 'key'/],
  [{ API_KEYS: 'key:admin' }, 'API_KEYS', /received 'key:admin'/],
  [{ API_KEYS: 'key:write:alice' }, 'API_KEYS', /received 'key:write:alice'/],
  [{ API_KEYS: 'bad key:read' }, 'API_KEYS', /received 'bad key:read'/],
  [{ API_KEYS: 'k:read,k:write' }, 'API_KEYS', /lists one value twice/],
  [{ ALLOWED_ORIGINS: '*' }, 'ALLOWED_ORIGINS', /no \*, path or trailing slash\), received '\*'/],
  [{ ALLOWED_ORIGINS: 'https://app.example.com/' }, 'ALLOWED_ORIGINS', /received 'https:\/\/app.example.com\/'/],
  [{ ALLOWED_ORIGINS: 'https://ok.example.com,app.example.com' }, 'ALLOWED_ORIGINS', /received 'app.example.com'/],
  [{ CURSOR_SECRET: 'short' }, 'CURSOR_SECRET', /must be at least 16 characters/],
  [{ REQUIRE_IF_MATCH: 'yes' }, 'REQUIRE_IF_MATCH', /must be true or false, received 'yes'/],
  [{ SEED: 'no' }, 'SEED', /must be true or false, received 'no'/],
  [{ MCP: 'off' }, 'MCP', /must be true or false, received 'off'/],
  [{ RATE_LIMIT_MAX: '0' }, 'RATE_LIMIT_MAX', /must be an integer from 1 to/],
  [{ RATE_LIMIT_MAX: 'many' }, 'RATE_LIMIT_MAX', /received 'many'/],
  [{ RATE_LIMIT_WINDOW: '1 fortnight' }, 'RATE_LIMIT_WINDOW', /must be a duration such as '1 minute', '30 seconds' or milliseconds, received '1 fortnight'/],
  [{ RATE_LIMIT_WINDOW: '0' }, 'RATE_LIMIT_WINDOW', /received '0'/],
  [{ CHANGES_RETENTION: 'a week' }, 'CHANGES_RETENTION', /received 'a week'/],
  [{ RATE_LIMIT_WINDOW: '0 minutes' }, 'RATE_LIMIT_WINDOW', /received '0 minutes'/],
  [{ REDIS_URL: 'http://cache' }, 'REDIS_URL', /must be a redis:\/\/ or rediss:\/\/ URL/],
  [{ NATS_URL: 'http://broker:4222' }, 'NATS_URL', /must be nats:\/\/host:port \(or several, comma-separated\), received 'http:\/\/broker:4222'/],
  [{ NATS_URL: 'nats://a:4222,nats://b:x' }, 'NATS_URL', /received 'nats:\/\/a:4222,nats:\/\/b:x'/]
]

for (const [env, setting, message] of bad) {
  t.test(`${JSON.stringify(env)} fails naming ${setting} in one line`, async t => {
    const error = (() => { try { loadConfig(env) } catch (e) { return e } })()
    t.type(error, ConfigError)
    t.match(error, { name: 'ConfigError', setting, message })
    t.match((error as Error).message, new RegExp(`^Invalid setting ${setting}: [^\\n]+$`))
  })
}

t.test('buildDemoAppOver: the demo over a store made elsewhere (the benchmarks\' seeded one), options over the plugin\'s', async t => {
  const given = memoryStore()
  // The write runs in a transaction of the store given (its change is recorded with it).
  let transactions = 0
  const store: Store = { ...given, transaction: async work => { transactions++; return await given.transaction(work) } }
  const app = await buildDemoAppOver(loadConfig({}), store, { logger: false }, { mcp: false })
  t.teardown(() => app.close())
  const bearer = { authorization: 'Bearer dev-token' }
  const made = await app.inject({ method: 'POST', url: '/v1/authors', headers: { ...bearer, 'content-type': 'application/json' }, payload: { name: 'Given' } })
  t.equal(made.statusCode, 201)
  t.ok(transactions > 0, 'written through the store given')
  t.equal((await app.inject({ url: '/health' })).statusCode, 200, 'the routes outside the API, as npm start serves them')
  t.equal((await app.inject({ url: '/v1/changes', headers: bearer })).statusCode, 200, 'the demo\'s own options: the change feed')
  t.equal((await app.inject({ method: 'POST', url: '/v1/mcp', headers: { ...bearer, 'content-type': 'application/json' }, payload: {} })).statusCode, 404, 'an override: MCP off')
})
