// The SQL store's change log (docs/changes.md "Positions in commit order"): a table of changes and
// the position purged through. Each write appends its change in its own statement (`recorded`),
// without a position. Positions are given afterwards, by whoever reads the log (`sequence`, before each read):
// one transaction of the schema at a time, under an advisory lock, numbers the changes committed
// and not yet numbered after the highest position, in the order they were written. A change is
// numbered only once it has committed, and every later round numbers above it, so a reader of
// `position > last` never meets a position while a smaller one may still appear (the trap of a
// bigserial or a timestamp taken at INSERT). Writers do not wait for one another: their commits
// are not serialized (an earlier design held the lock from the append to COMMIT, which made every
// write of the schema commit one at a time; benchmarks/README.md "The change record's cost").
import { createHash } from 'node:crypto'
import type { ChangeNote, ChangeQuery, ChangeRead, ChangeRecord, Fields, NewChange } from '../store.js'
import { ident, quoteIdent, raw, sql, toQuery } from './sql.js'
import { MAIN, textOut } from './table.js'
import type { Table } from './table.js'
import type { Sql } from './sql.js'
import { takeTurn } from './ddl.js'
import type { MigrateOptions, Run } from './ddl.js'

// A table of its own (not api_changes, whose positions were taken under the lock of the earlier design).
export const CHANGES_TABLE = 'api_change_log'
const PURGED_TABLE = 'api_changes_purged'

function changesTables (schema: string): Sql[] {
  const table = ident(schema, CHANGES_TABLE)
  return [
    // json, not jsonb: the record's members stay in the order written, and nothing is parsed on insert.
    // `written`, `index`: the order the changes of one round of numbering take. Few indexes, since
    // every change is written twice (appended, then numbered): no key on `id` (a UUIDv7 made once
    // per change; numbering finds its rows by ctid), positions unique where given.
    sql`CREATE TABLE ${table} (id text NOT NULL, position bigint, written timestamptz NOT NULL, index integer NOT NULL,
      resource text NOT NULL, record_id text NOT NULL, operation text NOT NULL, version integer NOT NULL, at timestamptz NOT NULL, data json, previous json)`,
    sql`CREATE UNIQUE INDEX ${ident(`${CHANGES_TABLE}_position`)} ON ${table} (position) WHERE position IS NOT NULL`,
    sql`CREATE INDEX ${ident(`${CHANGES_TABLE}_at`)} ON ${table} (at)`,
    sql`CREATE INDEX ${ident(`${CHANGES_TABLE}_unnumbered`)} ON ${table} (written, index) WHERE position IS NULL`,
    sql`CREATE TABLE IF NOT EXISTS ${ident(schema, PURGED_TABLE)} (one boolean PRIMARY KEY DEFAULT true CHECK (one), through bigint NOT NULL)`,
    sql`INSERT INTO ${ident(schema, PURGED_TABLE)} (through) VALUES (0) ON CONFLICT DO NOTHING`
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

export type ChangeStatements = ReturnType<typeof changeStatements>

/** The statements of one schema's change log. */
export function changeStatements (schema: string, dropsLeadingBom: boolean) {
  const log = ident(schema, CHANGES_TABLE)
  const purged = ident(schema, PURGED_TABLE)
  const digest = createHash('sha256').update(`fastify-api-conventions changes ${schema}`).digest()
  return {
    /**
     * A write and its change in one statement: `write` (an INSERT, UPDATE or DELETE of `table`
     * aliased t0, without RETURNING) returns its row to a WITH named t0, the change is appended
     * from that row, unnumbered, and `returning` (over t0) is what the statement answers. The
     * change's data is the row as decode() makes it; a delete's version is the next one of the row
     * removed, and it keeps that row as `previous` when `change.previous` is true; an update keeps
     * the `previous` it is given. One statement is atomic, so a write outside a transaction needs
     * none, and in one, the write and its change can never part. `change`'s values are parameters
     * (changeParams), or Slots of a statement made once.
     */
    recorded (table: Table, write: Sql, operation: NewChange['operation'], change: { readonly id: unknown, readonly previous: unknown }, returning: Sql): Sql {
      const row = ident(MAIN)
      const removed = operation === 'delete'
      const previous = change.previous === true ? table.json : sql`${change.previous}::json`
      const version = sql`${ident(MAIN, table.version)}${raw(removed ? ' + 1' : '')}`
      const at = removed ? sql`now()` : ident(MAIN, table.modifiedAt)
      return sql`WITH ${row} AS (${write} RETURNING *),
        logged AS (INSERT INTO ${log} (position, written, index, id, resource, record_id, operation, version, at, data, previous)
          SELECT NULL::bigint, clock_timestamp(), 0, ${change.id}::text, ${table.model.name}::text, ${ident(MAIN, table.id.name)}::text, ${operation}::text,
            ${version}, date_trunc('milliseconds', ${at}), ${removed ? sql`NULL::json` : table.json}, ${previous} FROM ${row})
        SELECT ${returning} FROM ${row}`
    },
    /**
     * Numbering: one DO block, so one round trip and one transaction. It takes the schema's lock
     * first (one numbering of the schema at a time), then numbers in a statement of its own, whose
     * snapshot (READ COMMITTED, a new one per statement of the block) is taken once the lock is
     * held, so it sees every numbering before it. It numbers what has committed unnumbered after
     * the highest position (or the position purged through, when the log was purged empty), in the
     * order written: one record's changes are written in the order of its versions, since its
     * writers wait on its row lock, and a change written after another's commit was acknowledged
     * is written after it.
     */
    numbering: numberingBlock(sql`WITH base AS (SELECT greatest((SELECT coalesce(max(position), 0) FROM ${log}), (SELECT through FROM ${purged})) AS n),
        todo AS (SELECT ctid AS row, row_number() OVER (ORDER BY written, index, id) AS rank FROM ${log} WHERE position IS NULL)
      UPDATE ${log} AS c SET position = base.n + todo.rank FROM base, todo WHERE c.ctid = todo.row`, digest.readInt32BE(0), digest.readInt32BE(4)),
    /** One statement, so one snapshot: the rows, the head and the position purged through agree. */
    read ({ after, limit, resources }: ChangeQuery): Sql {
      const which = resources === null ? sql`` : sql` AND resource = ANY(${resources}::text[])`
      return sql`SELECT p.through::text, greatest(h.head, p.through)::text, c.position::text, c.id, c.resource, ${textOut(sql`c.record_id`, dropsLeadingBom)}, c.operation, c.version,
          (extract(epoch FROM c.at) * 1000)::float8, c.data::text, c.previous::text
        FROM ${purged} AS p CROSS JOIN (SELECT coalesce(max(position), 0) AS head FROM ${log}) AS h
        LEFT JOIN LATERAL (SELECT * FROM ${log} WHERE position > ${String(after ?? -1n)}::bigint${which} ORDER BY position LIMIT ${limit + 1}::integer) AS c ON true
        ORDER BY c.position`
    },
    /** A prefix of the log: through the last change made before `before`, so `through` is exact. */
    purge (before: Date): Sql {
      return sql`WITH cut AS MATERIALIZED (SELECT max(position) AS through FROM ${log} WHERE at < ${before.toISOString()}::timestamptz),
        removed AS (DELETE FROM ${log} WHERE position <= (SELECT through FROM cut) RETURNING 1),
        noted AS (UPDATE ${purged} SET through = greatest(through, (SELECT through FROM cut)) WHERE (SELECT through FROM cut) IS NOT NULL RETURNING 1)
        SELECT count(*) FROM removed`
    }
  }
}

/** A change's id and the record before, as `recorded` takes them: true (the row removed), or JSON text or null. */
export function changeParams (change: ChangeNote): { readonly id: string, readonly previous: string | null | true } {
  const { previous } = change
  return { id: change.id, previous: previous === true ? true : previous === false || previous === null ? null : JSON.stringify(previous) }
}

/**
 * `update` after the transaction-scoped advisory lock (two int4 keys) in one DO block. A DO block
 * takes no parameters: the keys are integers and `update` holds only identifiers (no values), written
 * into the block's text between dollar quotes of a tag that the text does not hold (a schema's name may).
 */
function numberingBlock (update: Sql, key1: number, key2: number): Sql {
  const { text } = toQuery(update)
  let tag = '$numbering$'
  while (text.includes(tag)) tag = `$${tag.slice(1, -1)}_$`
  // The changes to number are found through the partial index of unnumbered ones by an index scan,
  // never a bitmap scan (the planner's pick): numbering leaves the entries of the rows it numbered
  // in that index, pointing at their old versions, until a VACUUM, and only an index scan marks
  // them dead and skips them from then on; a bitmap scan visits every one, every time (under load
  // a numbering took 22 ms where it now takes under 1: benchmarks/README.md "Numbering's scan").
  return raw(`DO ${tag} BEGIN PERFORM pg_advisory_xact_lock(${key1}, ${key2}); PERFORM set_config('enable_bitmapscan', 'off', true); ${text}; END ${tag}`)
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
