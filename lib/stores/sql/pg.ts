// node-postgres behind the store's query interface (issue 6 "One store, two engines").
import type pg from 'pg'
import { isUnavailable } from './store.js'
import type { QueryFunction, SqlDatabase } from './store.js'

function ignore () {}

/**
 * `owned`: the store created the pool, so closing the store ends it. `queryTimeoutMillis`: how
 * long the driver waits for any one answer before it gives up on the connection (issue 6
 * "Failure": a server that stops answering must not hold requests forever).
 */
export function poolDatabase (pool: pg.Pool, owned: boolean, queryTimeoutMillis: number): SqlDatabase {
  // An idle client whose server went away emits 'error' on the pool; unhandled, that event would
  // crash the process. The pool drops the client; the next query reconnects or fails with a 503.
  pool.on('error', ignore)
  // Not async: one promise step per query instead of three (node-postgres answers every failure as a
  // rejection, never a throw). It only reads `values`.
  const send = (client: pg.Pool | pg.PoolClient, text: string, values: readonly unknown[] = []) => {
    // node-postgres query_timeout rejects with 'Query read timeout' (a 503); the pool discards the connection.
    const config: pg.QueryArrayConfig & { query_timeout: number } = { text, values: values as unknown[], rowMode: 'array', query_timeout: queryTimeoutMillis }
    return client.query<unknown[]>(config).then(result => result.rows)
  }
  const runOn = (client: pg.Pool | pg.PoolClient): QueryFunction => (text, values) => send(client, text, values)
  return {
    query: runOn(pool),
    async transaction (work) {
      const client = await pool.connect()
      try {
        await send(client, 'BEGIN')
        const result = await work(runOn(client))
        await send(client, 'COMMIT')
        client.release()
        return result
      } catch (error) {
        // Discarding the connection ends the transaction too (the server rolls it back); on one
        // that failed or stopped answering, a ROLLBACK would only wait for the timeout again.
        if (!isUnavailable(error)) await send(client, 'ROLLBACK').catch(ignore)
        client.release(true)
        throw error
      }
    },
    async close () {
      if (owned) await pool.end()
    }
  }
}
