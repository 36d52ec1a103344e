// A peer side on PostgreSQL (peers.ts): Platformatic DB's mapper and REST routes (sql-mapper +
// sql-openapi on Fastify 5), as `platformatic db` would serve them, over the benchmark schema
// run.ts seeded. Loaded from benchmarks/peers/. Prints `listening <url>` or `unavailable <why>`.
import { BENCH_SCHEMA, databaseUrl } from './postgres.js'
import { requirePeer } from './peers.js'

interface App {
  register (plugin: unknown, options?: unknown): Promise<unknown>
  listen (options: { port: number, host: string }): Promise<string>
  close (): Promise<void>
}

async function main () {
  if (databaseUrl() === undefined) return process.stdout.write('unavailable DATABASE_URL is not set\n')
  const fastify = requirePeer<(options: unknown) => App>('fastify')
  const mapper = requirePeer<unknown>('@platformatic/sql-mapper')
  const openapi = requirePeer<unknown>('@platformatic/sql-openapi')
  for (const loaded of [fastify, mapper, openapi]) if (typeof loaded === 'object' && loaded !== null && 'unavailable' in loaded) return process.stdout.write(`unavailable ${String(loaded.unavailable)}\n`)
  const app = (fastify as (options: unknown) => App)({ logger: false })
  await app.register(mapper, {
    connectionString: databaseUrl(),
    schema: [BENCH_SCHEMA],
    // The plugin's bookkeeping columns (version, modified_at) have defaults: hidden here, as a
    // Platformatic user who did not make them would hide them, so creates leave them to PostgreSQL.
    ignore: { books: { version: true, modified_at: true }, authors: { version: true, modified_at: true }, reviews: true },
    autoTimestamp: false
    // The ids: the table's default (postgres.ts), as a Platformatic user would leave them to the database.
  })
  await app.register(openapi, { exposeDocumentation: false })
  const url = await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' })
  process.stdout.write(`listening ${url}\n`)
  process.on('SIGTERM', () => { app.close().then(() => process.exit(0), () => process.exit(1)) })
}

await main()
