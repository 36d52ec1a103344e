// Stored records (lib/values/storable.ts storedFields): fields in schema order whatever order the
// client sent them in, so that every record of a resource has one shape (and V8 one hidden class
// for them, which the serializer, filters and sorts depend on for speed); extra keys are kept.
import t from 'tap'
import { memoryStore } from '../../lib/index.js'
import { buildRegistry } from '../../lib/registry/index.js'
import { storedFields } from '../../lib/values/storable.js'
import { demoResources } from '../../demo/schemas/index.js'

const [, books] = buildRegistry(demoResources(memoryStore()))

t.test('fields come out in schema order, values unchanged, extra keys last', async t => {
  const given = { rating: 4.5, available: true, year: 1999, extra: 'x', title: 'T', authorId: 'a', id: 'b' }
  const stored = storedFields(books, given)
  t.same(Object.keys(stored), ['id', 'title', 'authorId', 'year', 'rating', 'available', 'extra'])
  t.same(stored, given)
  t.not(stored, given, 'a copy')
})
