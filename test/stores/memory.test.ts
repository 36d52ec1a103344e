// The store contract suite (test/stores/conformance.ts) on the memory store, the reference the
// SQL store is held to (issue 6 "Same behaviour as the memory store").
import t from 'tap'
import { memoryStore } from '../../lib/stores/memory.js'
import { storeSuite } from './conformance.js'

storeSuite(t, async () => memoryStore())
