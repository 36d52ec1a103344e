// node-postgres behind the store's query interface: one of the two engines of the one SQL store.
// The part of node-postgres it uses is declared here, so that the package's types need neither
// `pg` nor `@types/pg`, and a `pg.Pool` is checked against it where a user passes one.
import { createHash } from 'node:crypto'
import { isUnavailable } from './store.js'
import type { QueryFunction, SqlDatabase } from './store.js'

interface ArrayQuery { text: string, values: unknown[], rowMode: 'array', query_timeout?: number, name?: string | undefined }
interface ArrayResult { rows: unknown[][] }

/** A connection of a node-postgres pool, as the store uses it. */
export interface PostgresClient {
  query (config: ArrayQuery): Promise<ArrayResult>
  query (config: ArrayQuery, callback: (error: Error | undefined, result: ArrayResult | undefined) => void): void
  release (error?: Error | boolean): void
  once (event: 'error', listener: (error: Error) => void): unknown
  on (event: 'error', listener: (error: Error) => void): unknown
  removeListener (event: 'error', listener: (error: Error) => void): unknown
}

/** A node-postgres `Pool` (`new pg.Pool(…)`), as the store uses it. */
export interface PostgresPool {
  connect (): Promise<PostgresClient>
  connect (callback: (error: Error | undefined, client: PostgresClient | undefined, release: (error?: Error | boolean) => void) => void): void
  on (event: 'error', listener: (error: Error) => void): unknown
  end (): Promise<void>
  /** Connections open, idle, and requests waiting for one (read for metrics). */
  readonly totalCount: number
  readonly idleCount: number
  readonly waitingCount: number
}

function ignore () {}

/** Named prepared statements per pool, at most: each connection may come to hold them all. */
const MOST_NAMED = 500

/**
 * Names for statements sent more than once, so that node-postgres parses each once per connection
 * and PostgreSQL plans it from its cache (benchmarks/README.md measured a RETRIEVE 30 % faster on
 * PostgreSQL). A statement's name is a digest of its text, so a name always means one text. Texts
 * seen once are forgotten in bulk, so that many one-off filters neither grow memory nor keep the
 * hot statements from being named.
 */
export function statementNames (): (text: string) => string | undefined {
  const named = new Map<string, string>()
  let seen = new Set<string>()
  return text => {
    const name = named.get(text)
    if (name !== undefined || named.size >= MOST_NAMED) return name
    if (!seen.has(text)) {
      if (seen.size >= 10 * MOST_NAMED) seen = new Set()
      seen.add(text)
      return undefined
    }
    seen.delete(text)
    const digest = `s${createHash('sha256').update(text).digest('base64url').slice(0, 32)}`
    named.set(text, digest)
    return digest
  }
}

/** The connection failed or stopped answering: the driver's error, or the store's 503 caused by one. */
function connectionFailed (error: unknown): boolean {
  return isUnavailable(error) || isUnavailable((error as { cause?: unknown } | null)?.cause)
}

/**
 * `owned`: the store created the pool, so closing the store ends it. `queryTimeoutMillis`: how
 * long the driver waits for any one answer before it gives up on the connection (a server that
 * stops answering must not hold requests forever: they end in 503, spec "Errors").
 * `pooled`: the connections come through a transaction pooler: no named statements (a pooler
 * hands each transaction any server connection), and `statementTimeoutMillis` set with `SET
 * LOCAL` in every transaction, since the connections carry no session settings.
 */
export function poolDatabase (pool: PostgresPool, owned: boolean, queryTimeoutMillis: number, pooled?: { statementTimeoutMillis: number }): SqlDatabase {
  const names = pooled === undefined ? statementNames() : undefined
  // Statements without parameters (BEGIN, COMMIT) go as simple queries, unnamed.
  const nameOf = (text: string, values: readonly unknown[]) => values.length === 0 ? undefined : names?.(text)
  // An idle client whose server went away emits 'error' on the pool; unhandled, that event would
  // crash the process. The pool drops the client; the next query reconnects or fails with a 503.
  pool.on('error', ignore)
  // On a connection of a transaction: node-postgres query_timeout rejects with 'Query read timeout'
  // (a 503). Not async: one promise step per query instead of three. It only reads `values`.
  const send = (client: PostgresClient, text: string, values: readonly unknown[] = []) =>
    client.query({ text, values: values as unknown[], rowMode: 'array', query_timeout: queryTimeoutMillis, name: nameOf(text, values) }).then(result => result.rows)
  // One round trip either way: with no parameters, node-postgres sends both statements as one simple query.
  const begin = pooled === undefined ? 'BEGIN' : `BEGIN; SET LOCAL statement_timeout = ${pooled.statementTimeoutMillis}`
  /**
   * A query outside a transaction: what `pool.query` does (a connection of its own, discarded when
   * anything fails), with the timeout kept here. node-postgres' own query_timeout keeps each
   * query's rows reachable long enough to outlive two young-generation collections, so every page
   * read was copied into the old generation, and the garbage collector took a large share of a
   * LIST's time (benchmarks/README.md measured it).
   */
  const query: QueryFunction = (text, values) => new Promise((resolve, reject) => {
    pool.connect((connectError, client, release) => {
      if (client === undefined) return reject(connectError)
      let settled = false
      const finish = (error: Error | null | undefined, rows?: unknown[][]) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        client.removeListener('error', finish)
        // A failure discards the connection: it may be mid-answer, or silent.
        release(error ?? undefined)
        if (error === null || error === undefined) resolve(rows as unknown[][])
        else reject(error)
      }
      // The message node-postgres gives its own timeout: a 503 (isUnavailable).
      const timer = setTimeout(() => finish(new Error('Query read timeout')), queryTimeoutMillis)
      client.once('error', finish)
      client.query({ text, values: values as unknown[], rowMode: 'array', name: nameOf(text, values) }, (error, result) => finish(error, result?.rows))
    })
  })
  return {
    query,
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    async transaction (work) {
      const client = await pool.connect()
      // pg-pool listens for a client's 'error' only while it is idle: a server that ends the
      // connection between two statements of a transaction (a shutdown's 57P01) would otherwise
      // crash the process. The next statement fails with the connection's error: a 503.
      client.on('error', ignore)
      try {
        await send(client, begin)
        const result = await work((text, values) => send(client, text, values))
        await send(client, 'COMMIT')
        client.removeListener('error', ignore)
        client.release()
        return result
      } catch (error) {
        // Discarding the connection ends the transaction too (the server rolls it back); on one
        // that failed or stopped answering, a ROLLBACK would only wait for the timeout again.
        if (!connectionFailed(error)) await send(client, 'ROLLBACK').catch(ignore)
        client.removeListener('error', ignore)
        client.release(true)
        throw error
      }
    },
    async close () {
      if (owned) await pool.end()
    }
  }
}
