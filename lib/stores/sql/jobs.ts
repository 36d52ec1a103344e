// The work queue's table (stores/jobs.ts) on PostgreSQL and PGlite: one per schema, beside the
// table of kept responses. Claims take the oldest claimable rows with `FOR UPDATE SKIP LOCKED`, so
// instances sharing the database never claim the same attempt and never wait for each other; a
// job whose work is running is locked by that work's transaction (`holdJob`) and skipped too.
import type { Job, JobState, NewJob } from '../jobs.js'
import { ident, quoteIdent, sql, toQuery } from './sql.js'
import type { Sql } from './sql.js'
import { takeTurn } from './ddl.js'
import type { MigrateOptions, Run } from './ddl.js'

export const JOBS_TABLE = 'api_jobs'

/**
 * `payload` and `outcome` are `json`, kept as written (member order, as the synchronous answer
 * had it). The partial index serves claims; the other, purges of finished jobs.
 */
function jobsTable (schema: string): Sql[] {
  const table = ident(schema, JOBS_TABLE)
  return [
    sql`CREATE TABLE ${table} (id text COLLATE "C" PRIMARY KEY, kind text NOT NULL, owner text, payload json NOT NULL,
      state text NOT NULL DEFAULT 'pending', attempt integer NOT NULL DEFAULT 0, lease_until timestamptz, outcome json,
      created_at timestamptz NOT NULL DEFAULT clock_timestamp(), updated_at timestamptz NOT NULL DEFAULT clock_timestamp(), keep_until timestamptz)`,
    sql`CREATE INDEX ${ident(`${JOBS_TABLE}_claimable`)} ON ${table} (kind, created_at) WHERE state IN ('pending', 'running')`,
    sql`CREATE INDEX ${ident(`${JOBS_TABLE}_keep_until`)} ON ${table} (keep_until) WHERE keep_until IS NOT NULL`
  ]
}

/** The statements that make it, as text: for those who manage their tables themselves (`migrate: false`). */
export function jobsTableDefinition (schema: string): string {
  return jobsTable(schema).map(statement => toQuery(statement).text).join('; ')
}

/** Checks and (with `alter`) creates the table, as migrateKeys does the table of kept responses. */
export async function migrateJobs (run: Run, schema: string, options: MigrateOptions): Promise<void> {
  if (options.alter) await takeTurn(run, schema)
  const name = `${quoteIdent(schema)}.${quoteIdent(JOBS_TABLE)}`
  const [[exists]] = await run(sql`SELECT to_regclass(${name}) IS NOT NULL`)
  if (exists === true) return
  if (!options.alter) {
    throw new TypeError(`SQL store: table ${name}, where asynchronous work is kept, does not exist, and option migrate is false; create it: ${jobsTableDefinition(schema)}`)
  }
  for (const statement of jobsTable(schema)) await run(statement)
}

const columns = sql`id, kind, owner, payload::text, state, attempt, outcome::text, created_at, updated_at`

/** A row of `columns` as a Job. */
export function jobOf (row: unknown[]): Job {
  const [id, kind, owner, payload, state, attempt, outcome, createdAt, updatedAt] = row
  return {
    id: id as string,
    kind: kind as string,
    owner: owner as string | null,
    payload: JSON.parse(payload as string),
    state: state as JobState,
    attempt: Number(attempt),
    outcome: outcome === null ? null : JSON.parse(outcome as string),
    createdAt: new Date(createdAt as string),
    updatedAt: new Date(updatedAt as string)
  }
}

export const jobStatements = {
  add: (table: Sql, job: NewJob) => sql`INSERT INTO ${table} (id, kind, owner, payload, created_at, updated_at)
    VALUES (${job.id}::text, ${job.kind}::text, ${job.owner}::text, ${JSON.stringify(job.payload ?? null)}::json, ${job.createdAt.toISOString()}::timestamptz, ${job.createdAt.toISOString()}::timestamptz)`,
  /** Pending ones, and running ones whose lease ran out; rows a running transaction holds are skipped. */
  claim: (table: Sql, kinds: readonly string[], limit: number, leaseMillis: number) => sql`UPDATE ${table} SET state = 'running', attempt = attempt + 1,
      lease_until = clock_timestamp() + ${leaseMillis}::integer * interval '1 millisecond', updated_at = clock_timestamp()
    WHERE id IN (SELECT id FROM ${table} WHERE kind = ANY(${kinds}::text[]) AND (state = 'pending' OR (state = 'running' AND lease_until <= clock_timestamp()))
      ORDER BY created_at LIMIT ${limit}::integer FOR UPDATE SKIP LOCKED)
    RETURNING ${columns}`,
  hold: (table: Sql, id: string, attempt: number) => sql`SELECT 1 FROM ${table} WHERE id = ${id}::text AND state = 'running' AND attempt = ${attempt}::integer FOR UPDATE`,
  finish: (table: Sql, id: string, state: string, outcome: unknown, keepUntil: Date) => sql`UPDATE ${table}
    SET state = ${state}::text, outcome = ${JSON.stringify(outcome ?? null)}::json, lease_until = NULL, updated_at = clock_timestamp(), keep_until = ${keepUntil.toISOString()}::timestamptz
    WHERE id = ${id}::text`,
  get: (table: Sql, id: string) => sql`SELECT ${columns} FROM ${table} WHERE id = ${id}::text`,
  purge: (table: Sql, now: Date) => sql`WITH purged AS (DELETE FROM ${table} WHERE keep_until < ${now.toISOString()}::timestamptz RETURNING 1) SELECT count(*) FROM purged`
}
