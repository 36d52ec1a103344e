// One store read per record per request (lib/record-once.ts): the authorization check and RETRIEVE
// share it; another record named in the same request is read afresh, never answered from the first.
import t from 'tap'
import { readRecordOnce } from '../../lib/record-once.js'
import type { ResourceModel } from '../../lib/registry/model.js'
import type { Store } from '../../lib/stores/store.js'

t.test('the same record is read once per request; another record, or another request, reads again', async t => {
  const reads: string[] = []
  const store = { get: async (model: ResourceModel, id: string) => { reads.push(`${model.name}/${id}`); return { data: { id }, version: 1, modifiedAt: new Date(0) } } }
  const books = { name: 'books' } as unknown as ResourceModel
  const authors = { name: 'authors' } as unknown as ResourceModel
  const request = {}
  t.same((await readRecordOnce(request, store as unknown as Store, books, 'b1'))?.data, { id: 'b1' })
  t.same((await readRecordOnce(request, store as unknown as Store, books, 'b1'))?.data, { id: 'b1' })
  t.same((await readRecordOnce(request, store as unknown as Store, books, 'b2'))?.data, { id: 'b2' }, 'another id')
  t.same((await readRecordOnce(request, store as unknown as Store, authors, 'b2'))?.data, { id: 'b2' }, 'another resource')
  t.same((await readRecordOnce({}, store as unknown as Store, authors, 'b2'))?.data, { id: 'b2' }, 'another request')
  t.same(reads, ['books/b1', 'books/b2', 'authors/b2', 'authors/b2'])
})
