// The demo service's settings (demo-service.md, "Starting it"): environment → a checked, frozen
// config. A bad setting throws ConfigError naming it, so start-up fails with one clear line.

export type Right = 'read' | 'write'

export interface DemoConfig {
  readonly port: number
  readonly host: string
  readonly store: 'pglite' | 'memory' | 'postgres'
  readonly dataDir: string
  readonly databaseUrl: string | undefined
  /** Bearer token → its right. */
  readonly apiTokens: ReadonlyMap<string, Right>
  /** Legacy x-api-key value → its right; empty when the legacy method is off. */
  readonly apiKeys: ReadonlyMap<string, Right>
  readonly allowedOrigins: readonly string[]
  readonly cursorSecret: string | undefined
  readonly requireIfMatch: boolean
  readonly rateLimitMax: number
  readonly rateLimitWindow: string
  readonly redisUrl: string | undefined
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
  return Object.freeze({
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: nonEmpty(env.HOST) ?? '127.0.0.1',
    store,
    dataDir: nonEmpty(env.DATA_DIR) ?? './data',
    databaseUrl,
    apiTokens: credentials(env, 'API_TOKENS', 'dev-token:write,read-token:read'),
    apiKeys: credentials(env, 'API_KEYS', 'dev-key:write'),
    allowedOrigins: origins(env.ALLOWED_ORIGINS ?? 'http://localhost:8080'),
    cursorSecret: secret(env.CURSOR_SECRET),
    requireIfMatch: boolean(env, 'REQUIRE_IF_MATCH'),
    rateLimitMax: integer(env, 'RATE_LIMIT_MAX', 1000, 1, Number.MAX_SAFE_INTEGER),
    rateLimitWindow: duration(env.RATE_LIMIT_WINDOW ?? '1 minute'),
    redisUrl: redis(env.REDIS_URL)
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

function boolean (env: Env, name: string): boolean {
  const text = nonEmpty(env[name]) ?? 'false'
  if (text !== 'true' && text !== 'false') throw new ConfigError(name, `must be true or false, received '${text}'`)
  return text === 'true'
}

/** `token:right,token:right`; an empty string means none. */
function credentials (env: Env, name: string, fallback: string): Map<string, Right> {
  const text = env[name] ?? fallback
  const result = new Map<string, Right>()
  for (const entry of text.split(',').map(e => e.trim()).filter(e => e !== '')) {
    const colon = entry.lastIndexOf(':')
    const value = entry.slice(0, colon)
    const right = entry.slice(colon + 1)
    if (colon < 1 || (right !== 'read' && right !== 'write') || !/^[A-Za-z0-9\-._~+/]+=*$/.test(value)) {
      throw new ConfigError(name, `entries must look like value:read or value:write (value from the RFC 6750 token characters), received '${entry}'`)
    }
    if (result.has(value)) throw new ConfigError(name, 'lists one value twice')
    result.set(value, right)
  }
  return result
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

/** `@fastify/rate-limit` accepts milliseconds or `N unit` strings; check the text now, not at the first request. */
function duration (text: string): string {
  const match = durationPattern.exec(text.trim())
  if (match === null || Number(match[1] ?? match[3]) === 0) throw new ConfigError('RATE_LIMIT_WINDOW', `must be a duration such as '1 minute', '30 seconds' or milliseconds, received '${text}'`)
  return text.trim()
}

function redis (text: string | undefined): string | undefined {
  const value = nonEmpty(text)
  if (value !== undefined && !/^rediss?:\/\//.test(value)) throw new ConfigError('REDIS_URL', 'must be a redis:// or rediss:// URL')
  return value
}
