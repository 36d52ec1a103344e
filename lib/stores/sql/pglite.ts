// PGlite (embedded PostgreSQL in WebAssembly) behind the store's query interface: the SQL store's
// other engine. PGlite runs one statement at a time; transactions hold it exclusively.
import type { PGlite, Transaction } from '@electric-sql/pglite'
import type { QueryFunction, SqlDatabase } from './store.js'

/** `owned`: the store created the instance, so closing the store closes it. */
export function pgliteDatabase (db: PGlite, owned: boolean): SqlDatabase {
  const runOn = (target: PGlite | Transaction): QueryFunction => async (text, values) =>
    (await target.query<unknown[]>(text, [...values], { rowMode: 'array' })).rows
  return {
    query: runOn(db),
    // PGlite decodes each text with TextDecoder('utf-8'), which removes a leading U+FEFF (0.5.16).
    dropsLeadingBom: true,
    async transaction (work) {
      return await db.transaction(async tx => await work(runOn(tx)))
    },
    async close () {
      if (owned) await db.close()
    }
  }
}
