// The store contract suite on embedded PGlite, the SQL store's second engine, held to the memory
// store's behaviour: one PGlite instance for the file (pglite-db.ts), a fresh schema per store,
// plus a randomized comparison with the memory store.
import t from 'tap'
import { pgliteStore } from '../../lib/stores/sql/index.js'
import { agreesWithMemory, storeSuite } from './conformance.js'
import { openPglite } from './pglite-db.js'

const db = await openPglite()
t.teardown(() => db.close())
let schemas = 0
const makeStore = async () => await pgliteStore({ db, schema: `suite_${++schemas}` })

storeSuite(t, makeStore, { transactionsTakeTurns: 'PGlite has one connection: a claim waits for the open transaction' })
agreesWithMemory(t, makeStore)
