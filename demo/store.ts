// The demo's store, chosen by STORE (docs/demo-contract.md "Starting it"): PGlite in DATA_DIR by
// default, PostgreSQL at DATABASE_URL, or memory. Whoever creates a store closes it (app.ts).
import type { FastifyBaseLogger } from 'fastify'
import { memoryStore, pgliteStore, postgresStore } from '../lib/index.js'
import type { PositionsRedis, Store } from '../lib/index.js'
import { ConfigError } from './config.js'
import type { DemoConfig } from './config.js'

/** A store that cannot be opened stops start-up with one line naming the setting to fix. */
export async function createDemoStore (config: DemoConfig, log: FastifyBaseLogger, redis?: PositionsRedis): Promise<Store> {
  switch (config.store) {
    case 'memory':
      log.info('store: memory (nothing is kept across restarts)')
      return memoryStore()
    case 'pglite':
      log.info({ dataDir: config.dataDir }, 'store: embedded PostgreSQL (PGlite)')
      return await pgliteStore({ dataDir: config.dataDir }).catch((error: unknown) => {
        throw new ConfigError('DATA_DIR', `cannot open the embedded database in '${config.dataDir}' (${String(error)})`)
      })
    case 'postgres': {
      // The password never reaches the log or the terminal.
      const hide = (text: string) => text.replace(/:[^:@/]*@/, ':***@')
      const url = hide(String(config.databaseUrl))
      const readUrl = config.databaseReadUrl === undefined ? undefined : hide(config.databaseReadUrl)
      log.info({ url, readUrl, pooler: config.databasePooler }, readUrl === undefined ? 'store: PostgreSQL' : 'store: PostgreSQL, reads on the replica at readUrl')
      // A replica that cannot be reached does not stop start-up: reads go to the primary until it answers.
      // Writers' positions go through Redis when REDIS_URL is set (docs/demo-contract.md "Many instances").
      return await postgresStore({ connectionString: config.databaseUrl, readConnectionString: config.databaseReadUrl, pooler: config.databasePooler, redis }).catch((error: unknown) => {
        throw new ConfigError('DATABASE_URL', `cannot connect to ${url} (${String(error)})`)
      })
    }
  }
}
