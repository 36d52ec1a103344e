// The demo service's settings (docs/demo-contract.md, "Starting it"): environment → a checked, frozen
// config. A bad setting throws ConfigError naming it, so start-up fails with one clear line.

/** `read`: GET/HEAD/OPTIONS only; `write`: everything; `admin`: everything, and every row and field. */
export type Right = 'read' | 'write' | 'admin'

/** What a credential grants: its right, and the user id row rules compare with. */
export interface Credential { readonly right: Right, readonly user: string }

export interface DemoConfig {
  readonly port: number
  readonly host: string
  readonly store: 'pglite' | 'memory' | 'postgres'
  readonly dataDir: string
  readonly databaseUrl: string | undefined
  /** A streaming replica of DATABASE_URL for reads (postgres only). */
  readonly databaseReadUrl: string | undefined
  /** `transaction`: DATABASE_URL points at a transaction-mode pooler (PgBouncer). */
  readonly databasePooler: 'none' | 'transaction'
  /** Bearer token → its right and user. */
  readonly apiTokens: ReadonlyMap<string, Credential>
  /** Legacy x-api-key value → its right (read or write) and user (the key itself); empty when the legacy method is off. */
  readonly apiKeys: ReadonlyMap<string, Credential>
  readonly allowedOrigins: readonly string[]
  readonly cursorSecret: string | undefined
  readonly requireIfMatch: boolean
  readonly rateLimitMax: number
  readonly rateLimitWindow: string
  /** CHANGES_RETENTION: how long the change feed keeps changes. */
  readonly changesRetention: string
  readonly redisUrl: string | undefined
  /** NATS_URL: also publish every change to NATS JetStream (stream API_CHANGES); none: off. */
  readonly natsUrl: string | undefined
  /** WEBHOOK_ALLOWED_HOSTS: the hosts webhook URLs may name, and the private addresses deliveries may reach; every other one is refused. */
  readonly webhookAllowedHosts: readonly string[]
  /** Write the sample catalogue (seed.ts) into an empty store at start-up. */
  readonly seed: boolean
  /** MCP: serve the MCP endpoint at /v1/mcp. */
  readonly mcp: boolean
}

export class ConfigError extends Error {
  constructor (readonly setting: string, problem: string) {
    super(`Invalid setting ${setting}: ${problem}`)
    this.name = 'ConfigError'
  }
}

type Env = Readonly<Record<string, string | undefined>>

export function loadConfig (env: Env): DemoConfig {
  const databaseUrl = nonEmpty(env.DATABASE_URL)
  const store = env.STORE ?? (databaseUrl === undefined ? 'pglite' : 'postgres')
  if (store !== 'pglite' && store !== 'memory' && store !== 'postgres') throw new ConfigError('STORE', `must be pglite, memory or postgres, received '${store}'`)
  if (store === 'postgres' && databaseUrl === undefined) throw new ConfigError('DATABASE_URL', 'is required when STORE=postgres')
  if (databaseUrl !== undefined) {
    if (store !== 'postgres') throw new ConfigError('STORE', `is '${store}' but DATABASE_URL is set, which implies postgres`)
    if (!/^postgres(ql)?:\/\//.test(databaseUrl)) throw new ConfigError('DATABASE_URL', 'must be a postgres:// or postgresql:// URL')
  }
  const databaseReadUrl = nonEmpty(env.DATABASE_READ_URL)
  if (databaseReadUrl !== undefined) {
    if (store !== 'postgres') throw new ConfigError('DATABASE_READ_URL', `is a replica of DATABASE_URL, which is not set (STORE is '${store}')`)
    if (!/^postgres(ql)?:\/\//.test(databaseReadUrl)) throw new ConfigError('DATABASE_READ_URL', 'must be a postgres:// or postgresql:// URL')
  }
  const databasePooler = nonEmpty(env.DATABASE_POOLER) ?? 'none'
  if (databasePooler !== 'none' && databasePooler !== 'transaction') throw new ConfigError('DATABASE_POOLER', `must be none or transaction, received '${databasePooler}'`)
  if (databasePooler !== 'none' && store !== 'postgres') throw new ConfigError('DATABASE_POOLER', `describes DATABASE_URL, which is not set (STORE is '${store}')`)
  return Object.freeze({
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: nonEmpty(env.HOST) ?? '127.0.0.1',
    store,
    dataDir: nonEmpty(env.DATA_DIR) ?? './data',
    databaseUrl,
    databaseReadUrl,
    databasePooler,
    apiTokens: tokens(env.API_TOKENS ?? defaultTokens),
    apiKeys: keys(env.API_KEYS ?? 'dev-key:write'),
    allowedOrigins: origins(env.ALLOWED_ORIGINS ?? 'http://localhost:8080'),
    cursorSecret: secret(env.CURSOR_SECRET),
    requireIfMatch: boolean(env, 'REQUIRE_IF_MATCH'),
    rateLimitMax: integer(env, 'RATE_LIMIT_MAX', 1000, 1, Number.MAX_SAFE_INTEGER),
    rateLimitWindow: duration(env.RATE_LIMIT_WINDOW ?? '1 minute'),
    changesRetention: duration(env.CHANGES_RETENTION ?? '7 days', 'CHANGES_RETENTION'),
    redisUrl: redis(env.REDIS_URL),
    natsUrl: nats(env.NATS_URL),
    webhookAllowedHosts: hosts(env.WEBHOOK_ALLOWED_HOSTS ?? '127.0.0.1,localhost'),
    seed: boolean(env, 'SEED', true),
    mcp: boolean(env, 'MCP', true)
  })
}

function nonEmpty (value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim()
}

function integer (env: Env, name: string, fallback: number, min: number, max: number): number {
  const text = nonEmpty(env[name])
  if (text === undefined) return fallback
  const value = Number(text)
  if (!/^\d+$/.test(text) || value < min || value > max) throw new ConfigError(name, `must be an integer from ${min} to ${max}, received '${text}'`)
  return value
}

function boolean (env: Env, name: string, fallback = false): boolean {
  const text = nonEmpty(env[name]) ?? String(fallback)
  if (text !== 'true' && text !== 'false') throw new ConfigError(name, `must be true or false, received '${text}'`)
  return text === 'true'
}

const defaultTokens = 'dev-token:write:dev,read-token:read:reader,alice-token:write:alice,bob-token:write:bob,admin-token:admin:admin'

// RFC 6750 token characters; a user id is letters, digits and - . _ ~ @ +.
const tokenPattern = /^[A-Za-z0-9\-._~+/]+=*$/
const userPattern = /^[A-Za-z0-9\-._~@+]+$/

/** API_TOKENS: `token:right[:user]`, comma-separated; the user defaults to the token itself. */
function tokens (text: string): Map<string, Credential> {
  return entries('API_TOKENS', text, 'token:right or token:right:user (right read, write or admin; token from the RFC 6750 token characters; user from letters, digits and - . _ ~ @ +)', parts => {
    const [token, right, user, ...rest] = parts
    const userOk = user === undefined || userPattern.test(user)
    return rest.length === 0 && isRight(right) && userOk ? [token, { right, user: user ?? token }] : undefined
  })
}

/** API_KEYS, the legacy method: `key:right` with read or write only (admin is a bearer token's right); the user is the key itself. */
function keys (text: string): Map<string, Credential> {
  return entries('API_KEYS', text, 'key:read or key:write (key from the RFC 6750 token characters)', parts => {
    const [key, right, ...rest] = parts
    return rest.length === 0 && (right === 'read' || right === 'write') ? [key, { right, user: key }] : undefined
  })
}

function isRight (text: string | undefined): text is Right {
  return text === 'read' || text === 'write' || text === 'admin'
}

/** Comma-separated entries of colon-separated parts, the first a secret; an empty string means none. */
function entries (name: string, text: string, shape: string, parse: (parts: string[]) => [string, Credential] | undefined): Map<string, Credential> {
  const result = new Map<string, Credential>()
  for (const entry of text.split(',').map(e => e.trim()).filter(e => e !== '')) {
    const parts = entry.split(':')
    const parsed = tokenPattern.test(parts[0]) ? parse(parts) : undefined
    if (parsed === undefined) throw new ConfigError(name, `entries must look like ${shape}, received '${entry}'`)
    if (result.has(parsed[0])) throw new ConfigError(name, 'lists one value twice')
    result.set(...parsed)
  }
  return result
}

/** Host names or addresses, comma-separated: no scheme, port or path. */
function hosts (text: string): string[] {
  const list = text.split(',').map(host => host.trim()).filter(host => host !== '')
  // A colon only in an IPv6 address: a port is not part of a host.
  const bad = list.find(host => /[\s/@?#]/.test(host) || (host.includes(':') && !/^\[?[0-9a-fA-F:.]+\]?$/.test(host)))
  if (bad !== undefined) throw new ConfigError('WEBHOOK_ALLOWED_HOSTS', `entries must be host names or addresses (no scheme, port or path), received '${bad}'`)
  return list
}

function origins (text: string): string[] {
  const list = text.split(',').map(o => o.trim()).filter(o => o !== '')
  for (const origin of list) {
    // The spec forbids the wildcard in Access-Control-Allow-Origin: an allow-list names origins.
    let parsed: URL | undefined
    try { parsed = new URL(origin) } catch { parsed = undefined }
    if (origin === '*' || parsed === undefined || parsed.origin !== origin) {
      throw new ConfigError('ALLOWED_ORIGINS', `entries must be origins such as https://app.example.com (no *, path or trailing slash), received '${origin}'`)
    }
  }
  return list
}

function secret (text: string | undefined): string | undefined {
  if (text === undefined || text === '') return undefined
  if (text.length < 16) throw new ConfigError('CURSOR_SECRET', 'must be at least 16 characters')
  return text
}

const durationPattern = /^(\d+)\s*(ms|millisecond|second|minute|hour|day)s?$|^(\d+)$/

/** The rate limit's window and the feed's retention take milliseconds or `N unit` strings; check the text now, not at the first request. */
function duration (text: string, setting = 'RATE_LIMIT_WINDOW'): string {
  const match = durationPattern.exec(text.trim())
  if (match === null || Number(match[1] ?? match[3]) === 0) throw new ConfigError(setting, `must be a duration such as '1 minute', '30 seconds' or milliseconds, received '${text}'`)
  return text.trim()
}

/** A NATS server, or several comma-separated: `nats://host:port` or `host:port` each. */
function nats (text: string | undefined): string | undefined {
  const value = nonEmpty(text)
  if (value !== undefined && !value.split(',').every(server => /^(nats:\/\/)?[^\s/:,]+(:[0-9]{1,5})?$/.test(server.trim()))) {
    throw new ConfigError('NATS_URL', `must be nats://host:port (or several, comma-separated), received '${value}'`)
  }
  return value
}

function redis (text: string | undefined): string | undefined {
  const value = nonEmpty(text)
  if (value !== undefined && !/^rediss?:\/\//.test(value)) throw new ConfigError('REDIS_URL', 'must be a redis:// or rediss:// URL')
  return value
}
