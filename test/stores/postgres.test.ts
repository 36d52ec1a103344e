// The store contract suite on a real PostgreSQL server, held to the memory store's behaviour, when
// DATABASE_URL is set (.ci/run sets it). Each store gets a fresh schema under apic_test_<random>_;
// only those schemas are dropped afterwards.
import t from 'tap'
import { postgresStore } from '../../lib/stores/sql/index.js'
import { agreesWithMemory, storeSuite } from './conformance.js'
import { runSchemas } from './run-schemas.js'

const connectionString = process.env.DATABASE_URL
if (connectionString === undefined) {
  t.plan(0, 'DATABASE_URL is not set: the PostgreSQL run is skipped (the PGlite run covers the same suite)')
} else {
  const { prefix, admin } = runSchemas(t, connectionString)
  let schemas = 0
  const makeStore = async () => await postgresStore({ connectionString, schema: `${prefix}_${++schemas}` })
  // As postgresStore chooses its case collation: without one, only simple case mapping is identical.
  const { rows: [{ full }] } = await admin.query<{ full: boolean }>("SELECT EXISTS (SELECT FROM pg_collation WHERE collname IN ('pg_unicode_fast', 'und-x-icu')) AS full")
  storeSuite(t, makeStore, { simpleCaseMapping: full ? undefined : 'this server has neither pg_unicode_fast nor ICU, so tolower/toupper map one character at a time (see postgresStore)' })
  agreesWithMemory(t, makeStore, 200)
}
