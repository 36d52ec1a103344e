// This run's PostgreSQL schemas (a fresh schema per run; drop only what the run made): a random
// prefix for the schema names, and an administrator pool whose teardown drops every schema named
// with that prefix, and nothing else.
import { randomBytes } from 'node:crypto'
import pg from 'pg'

interface TestLike { teardown (fn: () => unknown): void }

export function runSchemas (t: TestLike, connectionString: string | undefined): { readonly prefix: string, readonly admin: pg.Pool } {
  const prefix = `apic_test_${randomBytes(4).toString('hex')}`
  const admin = new pg.Pool({ connectionString })
  t.teardown(async () => {
    const { rows } = await admin.query<{ nspname: string }>('SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)', [`${prefix}_`])
    for (const { nspname } of rows) await admin.query(`DROP SCHEMA "${nspname}" CASCADE`)
    await admin.end()
  })
  return { prefix, admin }
}
