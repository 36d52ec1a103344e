// The store contract suite (test/stores/conformance.ts) on the memory store, the reference the SQL
// store is held to: every query-language result must be the same on both.
import t from 'tap'
import { memoryStore } from '../../lib/stores/memory.js'
import { storeSuite } from './conformance.js'

storeSuite(t, async () => memoryStore())
