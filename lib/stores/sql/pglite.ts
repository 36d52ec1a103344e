// PGlite (embedded PostgreSQL in WebAssembly) behind the store's query interface: the SQL store's
// other engine. PGlite runs one statement at a time; transactions hold it exclusively.
// The part of PGlite it uses is declared here: PGlite's own types need Emscripten's
// (`@types/emscripten`), which the package's types must not ask of every user.
import type { QueryFunction, SqlDatabase } from './store.js'

/** A PGlite instance or one of its transactions, as the store queries it. */
export interface PgliteQueryable {
  query (text: string, params: unknown[], options: { rowMode: 'array' }): Promise<{ rows: unknown[] }>
}

/** A PGlite instance (`await PGlite.create()`), as the store uses it. */
export interface PgliteInstance extends PgliteQueryable {
  transaction<T> (work: (tx: PgliteQueryable) => Promise<T>): Promise<T>
  close (): Promise<void>
}

/** `owned`: the store created the instance, so closing the store closes it. */
export function pgliteDatabase (db: PgliteInstance, owned: boolean): SqlDatabase {
  const runOn = (target: PgliteQueryable): QueryFunction => async (text, values) =>
    (await target.query(text, [...values], { rowMode: 'array' })).rows as unknown[][]
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
