// The PostgreSQL cases' database: one schema, seeded once per
// run through the plugin's own SQL store (so its tables, indexes and column types are the ones
// measured), then read by both sides. DATABASE_URL names the server; without it those cases skip.
import pg from 'pg'
import { postgresStore } from '../lib/stores/sql/index.js'
import type { Store } from '../lib/index.js'
import { SEED_TIME, fillStore, generate } from './seed.js'

export const BENCH_SCHEMA = 'api_conventions_bench'
const tables = ['authors', 'books', 'reviews']

export const databaseUrl = (): string | undefined => process.env.DATABASE_URL === '' ? undefined : process.env.DATABASE_URL

/**
 * How many streaming replicas the server sends its WAL to. On one machine a replica replays every
 * write on the cores the sides share (benchmarks/README.md "The database server"), so run.ts says so.
 */
export async function attachedReplicas (): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl() })
  await client.connect()
  try {
    return (await client.query<{ count: number }>('SELECT count(*)::int AS count FROM pg_stat_replication')).rows[0].count
  } finally {
    await client.end()
  }
}

/**
 * Reports each distinct SQL text a pool runs, once, as a `sql <json>` line on stdout: run.ts
 * compares the plugin's statements with the baseline's, so the baseline cannot drift from the
 * store's SQL unnoticed. One Set lookup per query.
 */
export function traceStatements (pool: pg.Pool): pg.Pool {
  const seen = new Set<string>()
  // On each connection, since the store queries through connections of its own (lib/stores/sql/pg.ts).
  pool.on('connect', client => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown
    client.query = ((...args: unknown[]) => {
      const first = args[0] as string | { text: string }
      const text = typeof first === 'string' ? first : first.text
      if (!seen.has(text)) {
        seen.add(text)
        process.stdout.write(`sql ${JSON.stringify(text)}\n`)
      }
      return query(...args)
    }) as typeof client.query
  })
  return pool
}

/** The plugin's store on the benchmark schema, over `pool` when given (the caller then ends it). */
export async function benchPostgresStore (pool?: pg.Pool): Promise<Store> {
  return await postgresStore(pool === undefined ? { connectionString: databaseUrl(), schema: BENCH_SCHEMA } : { pool, schema: BENCH_SCHEMA })
}

/** Leaves the database as it was found. */
export async function dropBenchSchema (): Promise<void> {
  const pool = new pg.Pool({ connectionString: databaseUrl() })
  try {
    await pool.query(`DROP SCHEMA IF EXISTS "${BENCH_SCHEMA}" CASCADE`)
  } finally {
    await pool.end()
  }
}

/** Drops and refills the benchmark schema: the seed's authors, books and reviews, every row stamped SEED_TIME. */
export async function seedPostgres (): Promise<void> {
  const pool = new pg.Pool({ connectionString: databaseUrl() })
  try {
    await pool.query(`DROP SCHEMA IF EXISTS "${BENCH_SCHEMA}" CASCADE`)
    const store = await benchPostgresStore()
    await fillStore(store, generate(), 50)
    await store.close()
    // The store stamps rows with now(); Last-Modified must not depend on when the seed ran.
    for (const name of tables) await pool.query(`UPDATE "${BENCH_SCHEMA}"."${name}" SET "modified_at" = $1`, [SEED_TIME])
    // What a Platformatic DB user would add for the peer's requests (peers.ts), on the same table
    // every side reads and writes: the index of its filtered LIST's order (rating DESC, id DESC,
    // NULLs first, which the plugin's (rating NULLS FIRST, id) cannot serve), and ids made by the
    // database, so that its CREATE is one INSERT (PostgreSQL 15 has no UUIDv7: version 4 text).
    await pool.query(`CREATE INDEX books_peer_rating_id ON "${BENCH_SCHEMA}".books (rating, id)`)
    await pool.query(`ALTER TABLE "${BENCH_SCHEMA}".books ALTER COLUMN id SET DEFAULT gen_random_uuid()::text`)
    await pool.query(`ANALYZE ${tables.map(name => `"${BENCH_SCHEMA}"."${name}"`).join(', ')}`)
  } finally {
    await pool.end()
  }
}
