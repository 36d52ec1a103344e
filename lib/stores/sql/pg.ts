// node-postgres behind the store's query interface (issue 6 "One store, two engines").
import type pg from 'pg'
import type { QueryFunction, SqlDatabase } from './store.js'

function ignore () {}

/** `owned`: the store created the pool, so closing the store ends it. */
export function poolDatabase (pool: pg.Pool, owned: boolean): SqlDatabase {
  // An idle client whose server went away emits 'error' on the pool; unhandled, that event would
  // crash the process. The pool drops the client; the next query reconnects or fails with a 503.
  pool.on('error', ignore)
  const runOn = (client: pg.Pool | pg.PoolClient): QueryFunction => async (text, values) =>
    (await client.query<unknown[]>({ text, values: [...values], rowMode: 'array' })).rows
  return {
    query: runOn(pool),
    async transaction (work) {
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        const result = await work(runOn(client))
        await client.query('COMMIT')
        client.release()
        return result
      } catch (error) {
        // The connection may be gone too: the client is discarded rather than reused.
        await client.query('ROLLBACK').catch(ignore)
        client.release(true)
        throw error
      }
    },
    async close () {
      if (owned) await pool.end()
    }
  }
}
