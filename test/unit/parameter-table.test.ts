// The query-parameter table's filter entry (lib/query/parameters.ts, lib/query/filter/from-query.ts;
// spec "Query parameters on collections", "Advanced filtering (`filter`)"): with the query it
// reads the simple filters beside its text, without one only its text; a simple filter's text
// is typed by the filter's checker, as a quoted text in `filter` is beside a date.
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { defineResource, memoryStore } from '../../lib/index.js'
import { buildRegistry } from '../../lib/registry/index.js'
import { queryParameters } from '../../lib/query/parameters.js'
import type { InvalidParam } from '../../lib/errors.js'
import { demoResources } from '../../demo/schemas/index.js'

const [, books] = buildRegistry(demoResources(memoryStore()))

t.test('the filter entry reads the simple filters from the query it is given, and none without one', async t => {
  const problems: InvalidParam[] = []
  const alone = queryParameters.filter.parse(books, 'year ge 1970', problems)
  t.same({ text: alone.text, simple: alone.simple }, { text: 'year ge 1970', simple: [] })
  t.match(alone.node, { kind: 'compare', op: 'ge', left: { kind: 'field', path: ['year'] }, right: { kind: 'literal', type: 'number', value: 1970 } })
  const withQuery = queryParameters.filter.parse(books, 'year ge 1970', problems, { filter: 'year ge 1970', title: 'A', pageSize: '2' })
  t.same(withQuery.simple, [['title', ['A']]], 'a reserved name is no simple filter')
  t.match(withQuery.node, { kind: 'and', left: alone.node, right: { kind: 'compare', op: 'eq', left: { path: ['title'] }, right: { type: 'string', value: 'A' } } })
  t.same(problems, [])
  queryParameters.filter.parse(books, undefined, problems, { colour: 'red', year: 'old' })
  t.same(problems, [{ name: 'colour', reason: 'unknown query parameter or field' }, { name: 'year', reason: "'old' is not an integer" }])
})

t.test('a date is read alike as a simple filter and quoted in filter; a number is neither', async t => {
  const [events] = buildRegistry([defineResource({
    name: 'events',
    singular: 'event',
    store: memoryStore(),
    schema: Type.Object({ id: Type.Readonly(Type.String()), on: Type.String({ format: 'date' }) }, { additionalProperties: false })
  })])
  const read = (text: string | undefined, query: Record<string, string>) => {
    const problems: InvalidParam[] = []
    return { node: queryParameters.filter.parse(events, text, problems, query).node, problems }
  }
  const date = { kind: 'literal', type: 'date', value: '2024-05-01' }
  t.same(read("on eq '2024-05-01'", {}), { node: { kind: 'compare', op: 'eq', left: { kind: 'field', path: ['on'] }, right: date }, problems: [] })
  t.same(read(undefined, { on: '2024-05-01' }), read("on eq '2024-05-01'", {}))
  t.same(read('on eq 5', {}).problems, [{ name: 'filter', reason: "'on' is a date and cannot be compared with 5" }])
  t.same(read(undefined, { on: '5' }).problems, [{ name: 'on', reason: "'5' is not a date (YYYY-MM-DD)" }])
})
