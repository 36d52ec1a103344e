// A node-postgres pool faked over PGlite, for the PostgreSQL store's pool code without a server.
import type { PGlite } from '@electric-sql/pglite'
import type { PostgresClient, PostgresPool } from '../../lib/stores/sql/index.js'

export interface FakePool extends PostgresPool {
  /** The statements that reached the database through this pool, checks of the replica and positions left out. */
  readonly served: string[]
  /** The name each statement was sent under (undefined: unnamed), in order. */
  readonly names: Array<string | undefined>
  ended: boolean
}

/**
 * A pool whose one connection is the PGlite; `answer` may answer a statement itself. Requests run
 * one at a time in these tests, so the single connection never holds two transactions.
 */
export function fakePool (db: PGlite, answer: (text: string) => unknown[][] | undefined = () => undefined): FakePool {
  const served: string[] = []
  const names: Array<string | undefined> = []
  const run = async (text: string, values: unknown[]) => {
    const own = answer(text)
    if (own !== undefined) return { rows: own }
    served.push(text)
    // Statements without parameters may be several, as node-postgres' simple query sends them.
    if (values.length === 0 && text.includes(';')) {
      await db.exec(text)
      return { rows: [] }
    }
    return { rows: (await db.query(text, values, { rowMode: 'array' })).rows as unknown[][] }
  }
  const client = {
    query (config: { text: string, values: unknown[], name?: string }, callback?: (error: Error | undefined, result: { rows: unknown[][] } | undefined) => void) {
      names.push(config.name)
      const result = run(config.text, config.values)
      if (callback === undefined) return result
      result.then(rows => callback(undefined, rows), (error: Error) => callback(error, undefined))
    },
    release () {},
    once () {},
    on () {},
    removeListener () {}
  } as unknown as PostgresClient
  const pool = {
    served,
    names,
    ended: false,
    totalCount: 1,
    idleCount: 1,
    waitingCount: 0,
    connect (callback?: (error: Error | undefined, client: PostgresClient, release: () => void) => void) {
      if (callback === undefined) return Promise.resolve(client)
      callback(undefined, client, () => {})
    },
    on () {},
    async end () { pool.ended = true }
  }
  return pool as unknown as FakePool
}
