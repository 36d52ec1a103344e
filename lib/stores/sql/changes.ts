// The SQL store's change log (docs/changes.md "Positions in commit order"): a table of changes,
// a sequence of commits, and the position purged through. A transaction appends its changes as the
// last statement before COMMIT, under a transaction-scoped advisory lock that one transaction of
// the schema holds at a time: it takes the next number of the sequence while holding the lock, and
// PostgreSQL makes a commit visible before it releases the transaction's locks, so a transaction
// that takes a later number commits after every earlier one is visible or rolled back. A reader of
// `position > last` therefore never sees a position while an earlier one may still commit (the trap
// of a bigserial, taken at INSERT and committed in another order). The cost: the commits of
// writing transactions of one schema are serialized from that statement to COMMIT (benchmarks/).
import { createHash } from 'node:crypto'
import type { ChangeQuery, ChangeRead, ChangeRecord, Fields, NewChange } from '../store.js'
import { ident, quoteIdent, sql, toQuery } from './sql.js'
import type { Sql } from './sql.js'
import { takeTurn } from './ddl.js'
import type { MigrateOptions, Run } from './ddl.js'

export const CHANGES_TABLE = 'api_changes'
const COMMITS_SEQUENCE = 'api_change_commits'
const PURGED_TABLE = 'api_changes_purged'

/** A transaction's changes take positions commit × 2^20 + index: one number of the sequence per commit. */
const PER_COMMIT = 1048576

function changesTables (schema: string): Sql[] {
  const table = ident(schema, CHANGES_TABLE)
  return [
    // json, not jsonb: the record's members stay in the order written, and nothing is parsed on insert.
    sql`CREATE TABLE ${table} (position bigint PRIMARY KEY, id text NOT NULL, resource text NOT NULL, record_id text NOT NULL,
      operation text NOT NULL, version integer NOT NULL, at timestamptz NOT NULL, data json, previous json)`,
    sql`CREATE INDEX ${ident(`${CHANGES_TABLE}_at`)} ON ${table} (at)`,
    sql`CREATE SEQUENCE ${ident(schema, COMMITS_SEQUENCE)}`,
    sql`CREATE TABLE ${ident(schema, PURGED_TABLE)} (one boolean PRIMARY KEY DEFAULT true CHECK (one), through bigint NOT NULL)`,
    sql`INSERT INTO ${ident(schema, PURGED_TABLE)} (through) VALUES (0)`
  ]
}

/** Checks and (with `alter`) creates the change log, under the schema's migration lock. */
export async function migrateChanges (run: Run, schema: string, options: MigrateOptions): Promise<void> {
  if (options.alter) await takeTurn(run, schema)
  const name = `${quoteIdent(schema)}.${quoteIdent(CHANGES_TABLE)}`
  const [[exists]] = await run(sql`SELECT to_regclass(${name}) IS NOT NULL`)
  if (exists === true) return
  if (!options.alter) {
    throw new TypeError(`SQL store: table ${name}, the change log of the changes feed, does not exist, and option migrate is false; ` +
      `create it: ${changesTables(schema).map(statement => statementText(statement)).join('; ')}`)
  }
  for (const statement of changesTables(schema)) await run(statement)
}

const statementText = (statement: Sql): string => toQuery(statement).text

/** The statements of one schema's change log. */
export function changeStatements (schema: string) {
  const table = ident(schema, CHANGES_TABLE)
  const purged = ident(schema, PURGED_TABLE)
  const digest = createHash('sha256').update(`fastify-api-conventions changes ${schema}`).digest()
  const lock = sql`pg_advisory_xact_lock(${digest.readInt32BE(0)}::integer, ${digest.readInt32BE(4)}::integer)`
  return {
    /**
     * One statement: the lock, then one number of the sequence, then the rows. MATERIALIZED CTEs
     * run once each, in that order (each reads the one before).
     */
    append (changes: readonly NewChange[]): Sql {
      if (changes.length >= PER_COMMIT) throw new RangeError(`a transaction may record at most ${PER_COMMIT - 1} changes`)
      const rows = JSON.stringify(changes.map((change, index) => ({
        index,
        id: change.id,
        resource: change.resource,
        record_id: change.recordId,
        operation: change.operation,
        version: change.version,
        at: change.at.toISOString(),
        data: change.data,
        previous: change.previous
      })))
      return sql`WITH turn AS MATERIALIZED (SELECT ${lock}), commit AS MATERIALIZED (SELECT nextval(${`${quoteIdent(schema)}.${quoteIdent(COMMITS_SEQUENCE)}`}::regclass) AS n FROM turn)
        INSERT INTO ${table} (position, id, resource, record_id, operation, version, at, data, previous)
        SELECT commit.n * ${PER_COMMIT}::bigint + c.index, c.id, c.resource, c.record_id, c.operation, c.version, c.at, c.data, c.previous
        FROM commit, json_to_recordset(${rows}::json) AS c(index integer, id text, resource text, record_id text, operation text, version integer, at timestamptz, data json, previous json)`
    },
    /** One statement, so one snapshot: the rows, the head and the position purged through agree. */
    read ({ after, limit, resources }: ChangeQuery): Sql {
      const which = resources === null ? sql`` : sql` AND resource = ANY(${resources}::text[])`
      return sql`SELECT p.through::text, greatest(h.head, p.through)::text, c.position::text, c.id, c.resource, c.record_id, c.operation, c.version,
          (extract(epoch FROM c.at) * 1000)::float8, c.data::text, c.previous::text
        FROM ${purged} AS p CROSS JOIN (SELECT coalesce(max(position), 0) AS head FROM ${table}) AS h
        LEFT JOIN LATERAL (SELECT * FROM ${table} WHERE position > ${String(after ?? -1n)}::bigint${which} ORDER BY position LIMIT ${limit + 1}::integer) AS c ON true
        ORDER BY c.position`
    },
    /** A prefix of the log: through the last change made before `before`, so `through` is exact. */
    purge (before: Date): Sql {
      return sql`WITH cut AS MATERIALIZED (SELECT max(position) AS through FROM ${table} WHERE at < ${before.toISOString()}::timestamptz),
        removed AS (DELETE FROM ${table} WHERE position <= (SELECT through FROM cut) RETURNING 1),
        noted AS (UPDATE ${purged} SET through = greatest(through, (SELECT through FROM cut)) WHERE (SELECT through FROM cut) IS NOT NULL RETURNING 1)
        SELECT count(*) FROM removed`
    }
  }
}

/** The rows of `read` as the store's answer. */
export function decodeChanges (rows: readonly unknown[][], limit: number): ChangeRead {
  const [purgedThrough, head] = rows[0] as [string, string]
  const changes: ChangeRecord[] = []
  for (const row of rows) {
    if (row[2] === null) continue
    const [, , position, id, resource, recordId, operation, version, at, data, previous] = row as [string, string, string, string, string, string, ChangeRecord['operation'], number, number, string | null, string | null]
    changes.push({ position, id, resource, recordId, operation, version, at: new Date(at), data: parse(data), previous: parse(previous) })
  }
  const hasMore = changes.length > limit
  return { changes: hasMore ? changes.slice(0, limit) : changes, hasMore, purgedThrough, head }
}

const parse = (text: string | null): Fields | null => text === null ? null : JSON.parse(text) as Fields
