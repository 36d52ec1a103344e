// The PostgreSQL store's factories: `postgresStore` over a node-postgres pool,
// `pgliteStore` over embedded PGlite. Both give the same SqlStore; the plugin never knows which.
// Each driver is an optional peer dependency, imported only when its factory has to open a
// connection itself: a pool or instance passed in needs no import at all.
import { mkdir } from 'node:fs/promises'
import type { Store } from '../store.js'
import { poolDatabase } from './pg.js'
import type { PostgresPool } from './pg.js'
import { pgliteDatabase } from './pglite.js'
import type { PgliteInstance } from './pglite.js'
import { importOptional } from '../../optional.js'
import { SqlStore } from './store.js'
import type { SqlDatabase } from './store.js'
import type { TableMapping } from './table.js'
import { ReadRouter } from './replica.js'
import type { PositionsRedis } from './replica.js'
import { knownKeys, refuseUnknownKeys } from '../../options-check.js'
import { OptionsInvalidError } from '../../errors.js'

export type { TableMapping } from './table.js'
export type { PostgresPool, PostgresClient } from './pg.js'
export type { PgliteInstance, PgliteQueryable } from './pglite.js'
export type { PositionsRedis } from './replica.js'

export interface SqlStoreOptions {
  /** PostgreSQL schema holding the tables, created if missing. Default: the connection's current schema (normally `public`). */
  readonly schema?: string | undefined
  /** Per resource name: a different table name, field → column names, bookkeeping column names. */
  readonly tables?: Readonly<Record<string, TableMapping>> | undefined
  /** Create missing tables and add missing columns, foreign keys and indexes on first use. Default true. */
  readonly migrate?: boolean | undefined
  /** `Retry-After` of the 503 answered while the database is unreachable. Default 2. */
  readonly retryAfterSeconds?: number | undefined
}

export interface PostgresStoreOptions extends SqlStoreOptions {
  /** A pool you own (`new pg.Pool(…)`): the store uses it and leaves closing it to you. */
  readonly pool?: PostgresPool | undefined
  /** Otherwise the store creates (and on close ends) a pool from this URL and `poolOptions`. */
  readonly connectionString?: string | undefined
  /**
   * Options of the pool the store creates; they override its defaults (`connectionTimeoutMillis`
   * 5000, `keepAlive` true, `statement_timeout` = `queryTimeoutMillis`). Any node-postgres
   * `PoolConfig`: typed loosely so that these types need no `@types/pg`; write
   * `satisfies pg.PoolConfig` to have them checked.
   */
  readonly poolOptions?: object | undefined
  /**
   * The longest a request waits on the database, in milliseconds; then it answers 503 with
   * `Retry-After`. On a pool the store creates, the server cancels a statement running this long
   * (`statement_timeout`); on any pool, a connection whose server has not answered one second
   * later is given up (node-postgres `query_timeout`), so a server that stops answering (a dead
   * host, a network partition) cannot hold requests. Connecting is bounded by the pool's
   * `connectionTimeoutMillis`. Default 10000.
   */
  readonly queryTimeoutMillis?: number | undefined
  /**
   * `'transaction'`: the connections come through a transaction-mode pooler (PgBouncer's
   * `pool_mode = transaction`, what most managed PostgreSQL offers), where consecutive statements
   * may run on different server connections. The store then keeps no session state: no startup
   * parameters (a transaction pooler refuses `statement_timeout` there), `SET LOCAL` only inside
   * its transactions, and no named prepared statements; locks are transaction-scoped either way.
   * The server-side limit on a statement outside a transaction is then the role's
   * (`ALTER ROLE … SET statement_timeout`), and the client's `queryTimeoutMillis` + 1 s still
   * bounds every answer. Default `'none'` (docs/scaling.md).
   */
  readonly pooler?: 'none' | 'transaction' | undefined
  /**
   * A streaming replica for LIST and RETRIEVE (and their expand, include and counts): a pool you
   * own, or a URL the store makes one from (with `poolOptions` too). Writes, transactions,
   * Idempotency-Keys and hooks stay on the primary, and so do a caller's reads until the replica
   * has replayed that caller's last write (docs/stores.md "Read replicas").
   */
  readonly readPool?: PostgresPool | undefined
  readonly readConnectionString?: string | undefined
  /** A replica further behind than this is skipped: reads go to the primary. Default 10000. */
  readonly maxReplicaLagMillis?: number | undefined
  /** How long a check of the replica (its position, its lag, that it is down) is trusted. Default 500. */
  readonly replicaCheckMillis?: number | undefined
  /** An ioredis client: writers' positions are kept there, so that every instance honours them. Default: in this process. The host closes it. */
  readonly redis?: PositionsRedis | undefined
}

export interface PgliteStoreOptions extends SqlStoreOptions {
  /** A PGlite instance you own (`await PGlite.create()`): the store uses it and leaves closing it to you. */
  readonly db?: PgliteInstance | undefined
  /** Otherwise the store opens (and on close closes) PGlite with its files here, created if missing. */
  readonly dataDir?: string | undefined
}

/**
 * A store on PostgreSQL through node-postgres. Resolves once the database answers; rejects with
 * the driver's error when it cannot be reached.
 *
 * `tolower`/`toupper` in filters map case as JavaScript does when the server has the
 * `pg_unicode_fast` collation (PostgreSQL 18+) or ICU (`und-x-icu`, checked when the store
 * opens), except for characters newer than the server's Unicode version, which stay unchanged
 * (PostgreSQL 15 with ICU 72 knows Unicode 15.0). On a server with neither, case maps one
 * character at a time: `ß`, `İ`, a final `Σ` and ligatures such as `ﬀ` then differ from the
 * memory store.
 * @example
 * const store = await postgresStore({ connectionString: process.env.DATABASE_URL })
 */
export async function postgresStore (options: PostgresStoreOptions = {}): Promise<Store> {
  checkPostgresOptions(options)
  const { queryTimeoutMillis = 10_000, maxReplicaLagMillis = 10_000, replicaCheckMillis = 500, pooler = 'none' } = options
  // Fail a connection attempt in seconds rather than waiting for the operating system's timeout;
  // keepalive probes find a peer that vanished while its connection sat idle in the pool.
  const makePool = async (connectionString: string | undefined) => new (await importOptional<typeof import('pg')>('pg', 'postgresStore')).Pool({
    connectionTimeoutMillis: 5000,
    keepAlive: true,
    ...pooler === 'none' && { statement_timeout: queryTimeoutMillis },
    connectionString,
    ...options.poolOptions
  })
  // The client waits a second longer than statement_timeout (PostgreSQL "Client Connection
  // Defaults"), whose cancel (57014, also a 503) keeps the connection usable.
  const database = (pool: PostgresPool, owned: boolean) => poolDatabase(pool, owned, queryTimeoutMillis + 1000, pooler === 'transaction' ? { statementTimeoutMillis: queryTimeoutMillis } : undefined)
  const primary = database(options.pool ?? await makePool(options.connectionString), options.pool === undefined)
  const { readPool, readConnectionString } = options
  const replica = readPool !== undefined ? database(readPool, false) : readConnectionString !== undefined ? database(await makePool(readConnectionString), true) : undefined
  return await openStore(primary, options, replica === undefined
    ? undefined
    : schema => new ReadRouter(primary.query, replica, { maxLagMillis: maxReplicaLagMillis, checkMillis: replicaCheckMillis, redis: options.redis, schema })
  ).catch(async (error: unknown) => {
    await replica?.close()
    throw error
  })
}

/**
 * A store on PGlite, embedded PostgreSQL: no server to run, data kept in `dataDir`. For a
 * database in memory, pass `db: await PGlite.create()` (and close it yourself).
 * @example
 * const store = await pgliteStore({ dataDir: './data' })
 */
export async function pgliteStore (options: PgliteStoreOptions): Promise<Store> {
  checkOptions(options, pgliteKeys, 'pgliteStore')
  const { db, dataDir } = options
  if ((db === undefined) === (dataDir === undefined)) throw new OptionsInvalidError('pgliteStore: give either db (a PGlite instance) or dataDir, one of them')
  if (db !== undefined && (typeof db !== 'object' || db === null || typeof db.query !== 'function' || typeof db.transaction !== 'function')) {
    throw new OptionsInvalidError(`pgliteStore.db must be a PGlite instance (await PGlite.create()), received ${described(db)}`)
  }
  if (dataDir !== undefined && (typeof dataDir !== 'string' || dataDir === '')) throw new OptionsInvalidError(`pgliteStore.dataDir must be a directory path, received ${described(dataDir)}`)
  if (dataDir !== undefined) await mkdir(dataDir, { recursive: true })
  return await openStore(pgliteDatabase(db ?? await openPglite(dataDir), db === undefined), options)
}

async function openPglite (dataDir: string | undefined): Promise<PgliteInstance> {
  const { PGlite } = await importOptional<typeof import('@electric-sql/pglite')>('@electric-sql/pglite', 'pgliteStore')
  return await PGlite.create({ dataDir })
}

const sqlKeys = { schema: true, tables: true, migrate: true, retryAfterSeconds: true } as const satisfies Record<keyof SqlStoreOptions, true>
const replicaKeys = { readPool: true, readConnectionString: true, maxReplicaLagMillis: true, replicaCheckMillis: true, redis: true } as const
const postgresKeys = knownKeys({ ...sqlKeys, pool: true, connectionString: true, poolOptions: true, queryTimeoutMillis: true, pooler: true, ...replicaKeys } satisfies Record<keyof PostgresStoreOptions, true>)
const pgliteKeys = knownKeys({ ...sqlKeys, db: true, dataDir: true } satisfies Record<keyof PgliteStoreOptions, true>)
const tableKeys = knownKeys({ table: true, columns: true, versionColumn: true, modifiedAtColumn: true } satisfies Record<keyof TableMapping, true>)

/** A value in an error message: a string quoted, an object or function by its kind (a pool's JSON would be huge, or circular). */
const described = (value: unknown) => typeof value === 'string'
  ? JSON.stringify(value)
  : typeof value === 'function' || (typeof value === 'object' && value !== null) ? `a value of type ${typeof value}` : String(value)

function checkPostgresOptions (options: PostgresStoreOptions) {
  checkOptions(options, postgresKeys, 'postgresStore')
  const { pool, connectionString, poolOptions, readPool, readConnectionString, redis, pooler = 'none' } = options
  if (pool !== undefined && (connectionString !== undefined || poolOptions !== undefined)) {
    throw new OptionsInvalidError('postgresStore: give either pool, or connectionString and poolOptions, not both')
  }
  if (readPool !== undefined && readConnectionString !== undefined) throw new OptionsInvalidError('postgresStore: give either readPool or readConnectionString, not both')
  for (const [name, given] of Object.entries({ pool, readPool })) {
    if (given !== undefined && typeof (given as { connect?: unknown } | null)?.connect !== 'function') {
      throw new OptionsInvalidError(`postgresStore.${name} must be a node-postgres Pool, received ${described(given)}`)
    }
  }
  // Left out, connectionString lets node-postgres read the PG* environment variables (PGHOST,
  // PGUSER…). Given as undefined, it is most often an unset variable (`process.env.DATABASE_URL`),
  // which would fail only when connecting, with the driver's word about a user or a host.
  if (pool === undefined && Object.hasOwn(options, 'connectionString')) checkUrl(connectionString, 'connectionString')
  // readConnectionString undefined is no replica, as when it is left out.
  if (readConnectionString !== undefined) checkUrl(readConnectionString, 'readConnectionString')
  if (poolOptions !== undefined && (typeof poolOptions !== 'object' || poolOptions === null || Array.isArray(poolOptions))) {
    throw new OptionsInvalidError(`postgresStore.poolOptions must be an object of node-postgres pool settings, received ${described(poolOptions)}`)
  }
  if (redis !== undefined && typeof (redis as { eval?: unknown } | null)?.eval !== 'function') {
    throw new OptionsInvalidError('postgresStore.redis must be an ioredis client')
  }
  if (pooler !== 'none' && pooler !== 'transaction') throw new OptionsInvalidError(`postgresStore.pooler must be 'none' or 'transaction', received ${described(pooler)}`)
  for (const name of ['queryTimeoutMillis', 'maxReplicaLagMillis', 'replicaCheckMillis'] as const) {
    const value = options[name]
    if (value !== undefined && (!Number.isInteger(value) || value < 1)) throw new OptionsInvalidError(`postgresStore.${name} must be a positive integer, received ${described(value)}`)
  }
}

function checkUrl (value: unknown, name: string) {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new OptionsInvalidError(`postgresStore.${name} must be a PostgreSQL URL (postgres://user@host/database), received ${described(value)}` +
      (value === undefined ? '; leave it out to use the PG* environment variables' : ''))
  }
}

function checkOptions (options: SqlStoreOptions, known: readonly string[], factory: string) {
  refuseUnknownKeys(options, known, factory)
  for (const [name, mapping] of Object.entries(options.tables ?? {})) {
    if (typeof mapping !== 'object' || mapping === null) {
      throw new OptionsInvalidError(`${factory}.tables.${name} must be an object { table?, columns?, versionColumn?, modifiedAtColumn? }, received ${JSON.stringify(mapping)}`)
    }
    refuseUnknownKeys(mapping, tableKeys, `${factory}.tables.${name}`)
  }
  const { schema, retryAfterSeconds, migrate } = options
  if (migrate !== undefined && typeof migrate !== 'boolean') throw new OptionsInvalidError(`${factory}.migrate must be true or false, received ${described(migrate)}`)
  if (schema !== undefined && (typeof schema !== 'string' || schema === '' || schema.includes('\u0000'))) {
    throw new OptionsInvalidError(`${factory}.schema must be a non-empty name, received ${described(schema)}`)
  }
  if (retryAfterSeconds !== undefined && (!Number.isInteger(retryAfterSeconds) || retryAfterSeconds < 0)) {
    throw new OptionsInvalidError(`${factory}.retryAfterSeconds must be a non-negative integer, received ${described(retryAfterSeconds)}`)
  }
}

async function openStore (db: SqlDatabase, options: SqlStoreOptions, readRouter?: (schema: string) => ReadRouter): Promise<Store> {
  try {
    // tolower/toupper need full Unicode case mapping, as JavaScript's toLowerCase/toUpperCase
    // (ß → SS, İ → i̇, final sigma, ligatures): pg_unicode_fast (PostgreSQL 18+) or ICU's root
    // locale do it; the libc 'default' maps character by character, where those differ.
    const [[current, caseCollation]] = await db.query(`SELECT current_schema(), COALESCE((SELECT collname FROM pg_collation
      WHERE collname IN ('pg_unicode_fast', 'und-x-icu') AND collencoding IN (-1, (SELECT encoding FROM pg_database WHERE datname = current_database()))
      ORDER BY collname = 'pg_unicode_fast' DESC LIMIT 1), 'default')`, [])
    const schema = options.schema ?? current
    if (typeof schema !== 'string') throw new TypeError('SQL store: the connection has no current schema (no schema in search_path exists); set the schema option')
    return new SqlStore(db, {
      schema,
      tables: options.tables ?? {},
      migrate: options.migrate ?? true,
      caseCollation: String(caseCollation),
      retryAfterSeconds: options.retryAfterSeconds ?? 2
    }, readRouter?.(schema))
  } catch (error) {
    await db.close()
    throw error
  }
}
