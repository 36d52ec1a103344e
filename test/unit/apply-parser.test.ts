// apply='s parser by itself (lib/query/apply/parser.ts): what it accepts beyond the HTTP tests'
// cases (docs/aggregates.md): quotes and parentheses inside filter(…), keywords in any case, a dotted
// path, spaces, filter(…) after the grouping read on the groups' members; and where it points when
// it refuses.
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

t.test('filter(…) after the grouping: each path one member, its steps ANDed, the records\' filter apart', async t => {
  const read = parseApply("filter(year gt 1)/groupby((author.country),aggregate($count as n)) / filter(author/country ne 'NZ') / filter(n ge 2)", books)
  t.match(read.filter, { kind: 'compare', left: { path: ['year'] } })
  t.same(read.having, {
    kind: 'and',
    left: { kind: 'compare', op: 'ne', left: { kind: 'field', path: ['author/country'] }, right: { kind: 'literal', type: 'string', value: 'NZ' } },
    right: { kind: 'compare', op: 'ge', left: { kind: 'field', path: ['n'] }, right: { kind: 'literal', type: 'number', value: 2 } }
  })
  t.equal(parseApply('aggregate($count as n)', books).having, null)
  t.match(parseApply('groupby((title))/filter(length(title) gt 3)', books).having, { kind: 'compare', left: { kind: 'call', name: 'length', args: [{ kind: 'field', path: ['title'] }] } })
})

t.test('refusals point at the problem', async t => {
  // One lexer reads the whole text: a string left open is its error, wherever it is.
  t.equal(reason("filter(title eq 'open)/aggregate($count as n)"), 'unterminated string starting at position 16')
  t.equal(reason('groupby((year,year))'), "'year' appears more than once at position 14")
  t.equal(reason('aggregate($count as n,year with sum as n)'), "the alias 'n' is taken: name it apart from the fields, relations and other aliases at position 39")
  t.equal(reason('groupby((meta))'), "'meta' holds objects or arrays and cannot be grouped by at position 9")
  t.equal(reason('groupby((author))'), "'author' is a relation; group by one of its fields, e.g. 'author/id' at position 9")
  t.equal(reason('aggregate(author/name with max as m)'), "'author/name': aggregate a field of the books themselves at position 10")
  t.equal(reason('aggregate($count as n) x'), "unexpected 'x' at position 23")
  t.equal(reason('aggregate($count n)'), "expected 'as' and an alias, found 'n' at position 17")
  t.equal(reason("aggregate($count as 'n')"), "expected an alias, found 'n' at position 20", 'a string shows its own quotes')
  t.equal(reason('groupby((year))/filter(year(published) eq 2020 and year gt 1 and published ne null)'), "'published' is neither a grouping value nor an alias: after the grouping, filter() may name year at position 28")
  t.equal(reason('groupby((title))/filter(concat(title,title) eq title and concat eq 1)'), "'concat' is neither a grouping value nor an alias: after the grouping, filter() may name title at position 57", 'a function\'s name is not the path')
  t.equal(reason('groupby((year))/filter(year in (1, 2) and not contains(title, \'x\'))'), "'title' is neither a grouping value nor an alias: after the grouping, filter() may name year at position 55")
})
