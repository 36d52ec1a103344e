// apply='s parser by itself (lib/query/apply/parser.ts): what it accepts beyond the HTTP tests'
// cases (docs/aggregates.md): quotes and parentheses inside filter(…), keywords in any case, a dotted
// path, spaces; and where it points when it refuses.
import t from 'tap'
import { memoryStore } from '../../lib/stores/memory.js'
import { parseApply } from '../../lib/query/apply/parser.js'
import { suiteModels } from '../stores/conformance.js'

const { books } = suiteModels(memoryStore())
const reason = (text: string) => {
  try {
    parseApply(text, books)
    return null
  } catch (error) {
    return (error as Error).message
  }
}

t.test('filter(…) ends at its own closing parenthesis: quotes, doubled quotes and nested parentheses inside', async t => {
  const read = parseApply("filter(title eq 'a)b''(' and (year gt 1))/aggregate($count as n)", books)
  t.match(read.filter, { kind: 'and', left: { kind: 'compare', right: { value: "a)b'(" } } })
  t.same(read.aggregates, [{ method: 'count', alias: 'n', type: 'integer' }])
})

t.test('keywords in any case, spaces around punctuation, a dotted path', async t => {
  const read = parseApply(' GroupBy ( ( author.country , year ) , Aggregate ( $COUNT AS n , rating WITH Average AS avg ) ) ', books)
  t.same(read.groupBy.map(key => key.name), ['author/country', 'year'])
  t.same(read.aggregates.map(one => [one.alias, one.method, one.type]), [['n', 'count', 'integer'], ['avg', 'average', 'number']])
  t.same([...read.groups.fields.keys()], ['author/country', 'year', 'n', 'avg'], 'the groups\' members, which sort may name')
})

t.test('refusals point at the problem', async t => {
  t.equal(reason("filter(title eq 'open)/aggregate($count as n)"), 'unterminated string starting in filter() at position 16')
  t.equal(reason('groupby((year,year))'), "'year' appears more than once at position 14")
  t.equal(reason('aggregate($count as n,year with sum as n)'), "the alias 'n' is taken: name it apart from the fields, relations and other aliases at position 39")
  t.equal(reason('groupby((meta))'), "'meta' holds objects or arrays and cannot be grouped by at position 9")
  t.equal(reason('groupby((author))'), "'author' is a relation; group by one of its fields, e.g. 'author/id' at position 9")
  t.equal(reason('aggregate(author/name with max as m)'), "'author/name': aggregate a field of the books themselves at position 10")
  t.equal(reason('aggregate($count as n) x'), "unexpected 'x' at position 23")
  t.equal(reason('aggregate($count n)'), "expected 'as' and an alias, found 'n' at position 17")
})
