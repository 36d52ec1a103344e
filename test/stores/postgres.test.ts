// The store contract suite on a real PostgreSQL server (issue 6 "Same behaviour as the memory
// store"), when DATABASE_URL is set (.ci/run sets it). Each store gets a fresh schema under
// apic_test_<random>_; only those schemas are dropped afterwards.
import t from 'tap'
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { postgresStore } from '../../lib/stores/sql/index.js'
import { agreesWithMemory, storeSuite } from './conformance.js'

const connectionString = process.env.DATABASE_URL
if (connectionString === undefined) {
  t.plan(0, 'DATABASE_URL is not set: the PostgreSQL run is skipped (the PGlite run covers the same suite)')
} else {
  const prefix = `apic_test_${randomBytes(4).toString('hex')}`
  const admin = new pg.Pool({ connectionString })
  t.teardown(async () => {
    const { rows } = await admin.query<{ nspname: string }>('SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)', [`${prefix}_`])
    for (const { nspname } of rows) await admin.query(`DROP SCHEMA "${nspname}" CASCADE`)
    await admin.end()
  })
  let schemas = 0
  const makeStore = async () => await postgresStore({ connectionString, schema: `${prefix}_${++schemas}` })
  // As postgresStore chooses its case collation: without one, only simple case mapping is identical.
  const { rows: [{ full }] } = await admin.query<{ full: boolean }>("SELECT EXISTS (SELECT FROM pg_collation WHERE collname IN ('pg_unicode_fast', 'und-x-icu')) AS full")
  storeSuite(t, makeStore, { simpleCaseMapping: full ? undefined : 'this server has neither pg_unicode_fast nor ICU, so tolower/toupper map one character at a time (see postgresStore)' })
  agreesWithMemory(t, makeStore, 200)
}
