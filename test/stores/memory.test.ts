// The store contract suite (test/stores/conformance.ts) on the memory store, the reference the SQL
// store is held to: every query-language result must be the same on both.
import t from 'tap'
import { memoryStore } from '../../lib/stores/memory.js'
import { storeSuite } from './conformance.js'

storeSuite(t, async () => memoryStore())

t.test('an unknown option is refused at the factory call, naming the key meant', async t => {
  t.throws(() => memoryStore({ Now: () => new Date() } as never), { code: 'API_ERR_OPTIONS_INVALID', message: 'Invalid api-conventions options: memoryStore.Now is not a known key; did you mean "now"?' })
  t.throws(() => memoryStore({ clock: () => new Date() } as never), { code: 'API_ERR_OPTIONS_INVALID', message: /memoryStore\.clock is not a known key; known: now$/ })
})
