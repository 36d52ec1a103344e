// `apply=` aggregates on the demo (docs/demo-contract.md "Reading more than a page", Aggregates;
// docs/aggregates.md), over HTTP on each store it runs on: memory, PGlite in a fresh DATA_DIR, and
// PostgreSQL when DATABASE_URL is set (in a schema of its own, dropped afterwards). Each sentence
// of the paragraph has its test: the contract's example, aggregate without groupby, average of no
// values, a relation path, sort, paging and total over groups, filter() of the groups after the
// grouping (HAVING) with its paging and total, each refusal (400 naming apply, with the position),
// and the row and field rules of reviews for bob, alice and the admin; and a store without aggregate.
import t from 'tap'
import { placeFor, places } from './helpers/demo-http.js'
import { buildApp } from './helpers/app.js'
import { memoryStore } from '../lib/index.js'
import type { Store } from '../lib/index.js'

type Json = Record<string, any>
const q = encodeURIComponent

for (const where of places('demo-aggregates')) {
  t.test(where.name, { skip: where.skip }, async t => {
    const { start } = await placeFor(t, where)
    const { api, base } = await start()
    const made = async (path: string, body: Json, caller = 'admin') => {
      const res = await api(caller, 'POST', path, { body })
      if (res.status !== 201) throw new Error(`${path}: ${res.status} ${res.text}`)
      return Object.values(res.body.data)[0] as Json
    }
    const frame = await made('/v1/authors', { name: 'Janet Frame', country: 'NZ' })
    const lem = await made('/v1/authors', { name: 'Stanisław Lem', country: 'PL' })
    const nowhere = await made('/v1/authors', { name: 'Anonymous' })
    const books = [
      await made('/v1/books', { title: 'Owls Do Cry', year: 1957, rating: 4.5, authorId: frame.id }),
      await made('/v1/books', { title: 'Faces in the Water', year: 1961, rating: 4.1, authorId: frame.id }),
      await made('/v1/books', { title: 'Scented Gardens for the Blind', year: 1963, rating: 3.9, authorId: frame.id }),
      await made('/v1/books', { title: 'Solaris', year: 1961, rating: 4.2, authorId: lem.id }),
      await made('/v1/books', { title: 'The Cyberiad', year: 1965, authorId: lem.id }),
      await made('/v1/books', { title: 'Go Ask Alice', authorId: nowhere.id })
    ]
    const get = async (path: string, caller = 'reader'): Promise<{ status: number, body: Json, type: string | null }> => {
      const res = await api(caller, 'GET', path)
      return { status: res.status, body: res.body, type: res.headers.get('content-type') }
    }
    /** Each problem as `name: reason`. */
    const refusal = (body: Json) => body.invalidParams.map((problem: Json) => `${problem.name}: ${problem.reason}`)
    // The sums the stores make: in id order, from the first value.
    const gardens = 3.9
    const frameSum = books.slice(0, 3).sort((a, b) => a.id < b.id ? -1 : 1).map(book => book.rating as number).reduce((sum, rating) => sum + rating)
    const frameAverage = frameSum / 3
    const byAuthor = [frame.id, lem.id, nowhere.id].sort()

    t.test('the contract\'s example: one object per group, the grouping fields and the aliases, in the list envelope', async t => {
      const res = await get(`/v1/books?apply=${q('groupby((authorId),aggregate($count as n,rating with average as avgRating))')}`)
      t.equal(res.status, 200)
      t.match(res.type, /^application\/json/)
      const expected: Record<string, Json> = {
        [frame.id]: { authorId: frame.id, n: 3, avgRating: frameAverage },
        [lem.id]: { authorId: lem.id, n: 2, avgRating: 4.2 },
        [nowhere.id]: { authorId: nowhere.id, n: 1, avgRating: null }
      }
      t.same(res.body.data.books, byAuthor.map(id => expected[id]), 'ordered by the grouping values; average of no values is null')
      t.equal(res.body.data.pageSize, 20)
      t.same(res.body.meta, { pageSize: 20, offset: 0, pageOffset: 1 })
      t.match(res.body.links, [{ rel: 'self', href: `/v1/books?apply=${q('groupby((authorId),aggregate($count as n,rating with average as avgRating))')}&pageSize=20&offset=0` }])
    })

    t.test('aggregate(…) without groupby gives one object; sum, min, max, countdistinct; filter(…) before it', async t => {
      const apply = `filter(authorId eq '${frame.id}')/aggregate($count as n,rating with sum as total,year with min as first,year with max as last,year with countdistinct as years,title with max as lastTitle)`
      const res = await get(`/v1/books?apply=${q(apply)}`)
      t.equal(res.status, 200)
      t.same(res.body.data.books, [{ n: 3, total: frameSum, first: 1957, last: 1963, years: 3, lastTitle: 'Scented Gardens for the Blind' }])
      const none = await get(`/v1/books?apply=${q("filter(title eq 'no such book')/aggregate($count as n,rating with average as avg,rating with sum as total,year with countdistinct as years)")}`)
      t.same(none.body.data.books, [{ n: 0, avg: null, total: null, years: 0 }], 'one group of no records: counts 0, the others null')
    })

    t.test('filter= and the simple filters apply before grouping, with apply\'s own filter()', async t => {
      const res = await get(`/v1/books?year=1961&apply=${q('groupby((year),aggregate($count as n))')}`)
      t.same(res.body.data.books, [{ year: 1961, n: 2 }])
      const both = await get(`/v1/books?filter=${q('year ge 1960')}&apply=${q('filter(rating ne null)/groupby((year),aggregate($count as n))')}`)
      t.same(both.body.data.books, [{ year: 1961, n: 2 }, { year: 1963, n: 1 }])
      const steps = await get(`/v1/books?apply=${q('filter(year ge 1960)/filter(rating ne null)/groupby((year),aggregate($count as n))')}`)
      t.same(steps.body.data.books, [{ year: 1961, n: 2 }, { year: 1963, n: 1 }], 'two filter() steps: records that match both')
    })

    t.test('a one relation\'s field groups as a path, under the relation\'s name; a missing value is its own group', async t => {
      const res = await get(`/v1/books?apply=${q('groupby((author/country),aggregate($count as n,year with max as latest))')}`)
      t.equal(res.status, 200)
      t.same(res.body.data.books, [
        { author: { country: null }, n: 1, latest: null },
        { author: { country: 'NZ' }, n: 3, latest: 1963 },
        { author: { country: 'PL' }, n: 2, latest: 1965 }
      ])
      const two = await get(`/v1/books?apply=${q('groupby((author/country,available),aggregate($count as n))')}&sort=${q('-author/country')}`)
      t.same(two.body.data.books, [
        { author: { country: 'PL' }, available: true, n: 2 },
        { author: { country: 'NZ' }, available: true, n: 3 },
        { author: { country: null }, available: true, n: 1 }
      ], 'sorted descending on the path, null last')
    })

    t.test('groupby without aggregate lists the distinct values', async t => {
      const res = await get(`/v1/books?apply=${q('groupby((year))')}&sort=-year`)
      t.same(res.body.data.books, [{ year: 1965 }, { year: 1963 }, { year: 1961 }, { year: 1957 }, { year: null }])
    })

    t.test('sort names aliases and grouping fields; pageSize and offset page over groups; total counts groups', async t => {
      const apply = q('groupby((authorId),aggregate($count as n))')
      const first = await get(`/v1/books?apply=${apply}&sort=-n&pageSize=2&total=true`)
      t.equal(first.status, 200)
      t.same(first.body.data.books.map((group: Json) => group.n), [3, 2])
      t.equal(first.body.meta.total, 3)
      const next = first.body.links.find((link: Json) => link.rel === 'next')
      t.equal(next.href, `/v1/books?apply=${apply}&sort=-n&total=true&pageSize=2&offset=2`)
      const second = await get(next.href)
      t.same(second.body.data.books, [{ authorId: nowhere.id, n: 1 }])
      t.same(second.body.links.map((link: Json) => link.rel), ['self', 'first', 'prev', 'last'])
      const past = await get(`/v1/books?apply=${apply}&pageSize=2&offset=10`)
      t.same(past.body.data.books, [])
      t.equal(past.body.links.find((link: Json) => link.rel === 'prev').href, `/v1/books?apply=${apply}&pageSize=2&offset=2`, 'past the end, prev names the last page of groups')
      const odata = await get(`/v1/books?$apply=${apply}&$orderby=${q('n desc')}&$top=1&$count=true`)
      t.same([odata.status, odata.body.data.books, odata.body.meta.total], [200, [{ authorId: frame.id, n: 3 }], 3], '$apply, $orderby, $top and $count too')
      const one = await get(`/v1/books?apply=${q('aggregate($count as n)')}&total=true`)
      t.same([one.body.data.books, one.body.meta.total], [[{ n: 6 }], 1])
    })

    t.test('filter(…) after the grouping keeps the groups it holds for (HAVING): on aliases and grouping values', async t => {
      const having = 'groupby((authorId),aggregate($count as n,rating with average as avgRating))/filter(n ge 2 and avgRating gt 3)'
      const res = await get(`/v1/books?apply=${q(having)}`)
      t.equal(res.status, 200)
      const expected: Record<string, Json> = {
        [frame.id]: { authorId: frame.id, n: 3, avgRating: frameAverage },
        [lem.id]: { authorId: lem.id, n: 2, avgRating: 4.2 }
      }
      t.same(res.body.data.books, [frame.id, lem.id].sort().map(id => expected[id]), 'the anonymous author\'s one book with no rating is filtered out')
      const sorted = await get(`/v1/books?apply=${q(having)}&sort=-avgRating&pageSize=1&total=true`)
      t.same([sorted.body.data.books, sorted.body.meta.total], [[expected[lem.id]], 2], 'sort, paging and total over the groups that remain')
      const next = sorted.body.links.find((link: Json) => link.rel === 'next')
      t.same((await get(next.href)).body.data.books, [expected[frame.id]])
      const past = await get(`/v1/books?apply=${q(having)}&pageSize=1&offset=5`)
      t.same([past.body.data.books, past.body.links.find((link: Json) => link.rel === 'prev').href], [[], `/v1/books?apply=${q(having)}&pageSize=1&offset=1`], 'past the end, prev names the last page of the groups that remain')
      const steps = await get(`/v1/books?apply=${q('groupby((authorId),aggregate($count as n,rating with average as avgRating))/filter(n ge 2)/filter(avgRating gt 4.18)')}`)
      t.same(steps.body.data.books, [expected[lem.id]], 'two filter() steps after the grouping: groups that match both')
      const country = await get(`/v1/books?apply=${q("filter(year ne null)/groupby((author/country),aggregate(year with min as first))/filter(author.country ne null and first lt 1960 or author/country eq 'PL')")}`)
      t.same(country.body.data.books, [{ author: { country: 'NZ' }, first: 1957 }, { author: { country: 'PL' }, first: 1961 }], 'a relation\'s grouping value by its path, either way written; before and after the grouping')
      const values = await get(`/v1/books?apply=${q('groupby((year))/filter(year gt 1960 and year ne 1965 or year eq null)')}&total=true`)
      t.same([values.body.data.books, values.body.meta.total], [[{ year: null }, { year: 1961 }, { year: 1963 }], 3], 'groupby without aggregate')
    })

    t.test('filter(…) after aggregate(…) alone: its one group, or none', async t => {
      const kept = await get(`/v1/books?apply=${q('aggregate($count as n,rating with max as best)/filter(n gt 1 and best ge 4.5)')}&total=true`)
      t.same([kept.status, kept.body.data.books, kept.body.meta.total], [200, [{ n: 6, best: 4.5 }], 1])
      const none = await get(`/v1/books?apply=${q('aggregate($count as n)/filter(n gt 6)')}&total=true`)
      t.same([none.status, none.body.data.books, none.body.meta.total], [200, [], 0], 'filtered out: an empty list')
      const nested = await get(`/v1/authors/${lem.id}/books?apply=${q('filter(rating eq null)/aggregate($count as n,rating with average as avg)/filter(avg eq null)')}`)
      t.same(nested.body.data.books, [{ n: 1, avg: null }], 'a nested collection; an average of no values compares as null')
      const past = await get(`/v1/books?apply=${q('aggregate($count as n)/filter(n gt 1)')}&offset=3&pageSize=2`)
      t.same([past.body.data.books, past.body.links.find((link: Json) => link.rel === 'prev').href], [[], `/v1/books?apply=${q('aggregate($count as n)/filter(n gt 1)')}&pageSize=2&offset=0`])
    })

    t.test('a nested collection aggregates its parent\'s children', async t => {
      const res = await get(`/v1/authors/${frame.id}/books?apply=${q('aggregate($count as n,rating with min as lowest)')}`)
      t.same([res.status, res.body.data.books], [200, [{ n: 3, lowest: gardens }]])
      const filtered = await get(`/v1/authors/${frame.id}/books?apply=${q('filter(year gt 1960)/groupby((year),aggregate($count as n))')}`)
      t.same([filtered.status, filtered.body.data.books], [200, [{ year: 1961, n: 1 }, { year: 1963, n: 1 }]], 'apply\'s filter() within the parent\'s children')
    })

    t.test('each malformed or refused apply is a 400 naming apply, with the position', async t => {
      const cases: Array<[string, string]> = [
        ['groupby((nope),aggregate($count as n))', "unknown field 'nope' at position 9"],
        ['groupby((authorId),aggregate($count as n)', "expected ')' closing groupby(, found end of apply at position 41"],
        ['aggregate(rating with median as m)', "unknown aggregation method 'median': sum, average, min, max or countdistinct at position 22"],
        ['aggregate(title with sum as s)', 'sum needs a number, and \'title\' is string at position 21'],
        ['aggregate(available with max as s)', "max needs values with an order, and 'available' is boolean at position 25"],
        ['filter(year gt)/aggregate($count as n)', "expected a value after 'gt' in filter() at position 14"],
        ['filter(nope eq 1)/aggregate($count as n)', "unknown field 'nope' in filter() at position 7"],
        ['aggregate($count as n)/filter(n gt 1)/groupby((year))', 'groupby() after groupby() or aggregate() is not supported at position 38'],
        ['groupby((year))/aggregate($count as n)', 'aggregate() after groupby() or aggregate() is not supported at position 16'],
        ["groupby((authorId),aggregate($count as n))/filter(n gt 1 and title eq 'x')", "'title' is neither a grouping value nor an alias: after the grouping, filter() may name authorId, n at position 61"],
        ['groupby((author/country))/filter(author/name eq null)', "'author/name' is neither a grouping value nor an alias: after the grouping, filter() may name author/country at position 33"],
        ['groupby((authorId),aggregate($count as n))/filter(n gt)', "expected a value after 'gt' in filter() at position 54"],
        ["aggregate($count as n)/filter(n eq 'x')", "'n' is an integer and cannot be compared with 'x' in filter() at position 30"],
        ['groupby((authorId))/filter(books/any())', "any() needs a 'many' relation, and 'books' is none in filter() at position 27"],
        ['aggregate($count as n)/filter($count gt 1)', "'$count' is not supported in filter() at position 30"],
        ['filter($it/year gt 1)/aggregate($count as n)', "'$it' is not supported in filter() at position 7"],
        ['aggregate($count as n)/filter(n gt 1', "expected ')' closing filter( at position 36"],
        ['aggregate($count as n)/', 'expected a transformation: aggregate, groupby or filter, found end of apply at position 23'],
        ['filter(year gt 1)', 'expected aggregate(…) or groupby(…) after the filters at position 17'],
        ['groupby((reviews/rating))', "'reviews/rating' follows a 'many' relation; group by a field of a 'one' relation at position 9"],
        ['aggregate($count as title)', "the alias 'title' is taken: name it apart from the fields, relations and other aliases at position 20"],
        ['compute(year as y)', 'the transformation compute() is not supported at position 0'],
        ['groupby((author/country/code))', "'author/country/code' is too deep: a path may follow one relation at position 9"],
        ['groupby((publisher/name))', "unknown relation 'publisher' in 'publisher/name' at position 9"],
        ['groupby((author/nope))', "unknown field 'author/nope' at position 9"],
        ['aggregate($count as $n)', "'$n' is not an alias: a name of letters, digits and _ at position 20"],
        ['aggregate($sum as s)', "'$sum' is not supported at position 10"],
        ['filter(year gt 1', "expected ')' closing filter( at position 16"],
        [`filter(${'year eq 1 or '.repeat(160)}year eq 1)/aggregate($count as n)`, 'filter is longer than 2000 characters in filter() at position 2007'],
        ['', 'expected a transformation: aggregate, groupby or filter, found end of apply at position 0']
      ]
      for (const [apply, reason] of cases) {
        const res = await get(`/v1/books?apply=${q(apply)}`)
        t.equal(res.status, 400, apply)
        t.same(refusal(res.body), [`apply: ${reason}`], apply)
      }
      const odata = await get(`/v1/books?$apply=${q('groupby((nope))')}`)
      t.same(refusal(odata.body), ["$apply: unknown field 'nope' at position 9"], 'under the name it was sent as')
      const sorted = await get(`/v1/books?apply=${q('groupby((year))')}&sort=title`)
      t.same(refusal(sorted.body), ["sort: unknown field 'title'"], 'sort names only grouping fields and aliases')
    })

    t.test('fields, expand, include, token and search with apply are a 400', async t => {
      const apply = q('aggregate($count as n)')
      for (const [name, value] of [['fields', 'title'], ['expand', 'author'], ['include', 'author'], ['token', 'abc'], ['$select', 'title'], ['search', 'eco']]) {
        const res = await get(`/v1/books?apply=${apply}&${name}=${value}`)
        t.equal(res.status, 400, name)
        t.same(refusal(res.body), [`${name}: cannot be combined with apply`, `apply: cannot be combined with ${name}`], name)
      }
    })

    t.test('row rules apply before grouping, and a field the caller may not read is unknown', async t => {
      const book = books[0].id
      await made('/v1/reviews', { bookId: book, rating: 2, private: true }, 'alice')
      await made('/v1/reviews', { bookId: book, rating: 5 }, 'bob')
      const counts = async (caller: string) => (await get(`/v1/reviews?apply=${q(`filter(bookId eq '${book}')/groupby((bookId),aggregate($count as n,rating with average as avg))`)}`, caller)).body.data.reviews
      t.same(await counts('bob'), [{ bookId: book, n: 1, avg: 5 }], 'bob never counts alice\'s private review')
      t.same(await counts('alice'), [{ bookId: book, n: 2, avg: 3.5 }], 'alice counts her own')
      t.same(await counts('admin'), [{ bookId: book, n: 2, avg: 3.5 }], 'the admin counts all')
      const nested = await get(`/v1/books/${book}/reviews?apply=${q('aggregate($count as n)')}`, 'bob')
      t.same(nested.body.data.reviews, [{ n: 1 }])
      const low = q('filter(rating lt 5)/aggregate($count as n)')
      t.same((await get(`/v1/books/${book}/reviews?apply=${low}`, 'bob')).body.data.reviews, [{ n: 0 }], 'a nested collection with filter(): bob\'s rows only')
      t.same((await get(`/v1/books/${book}/reviews?apply=${low}`, 'alice')).body.data.reviews, [{ n: 1 }], 'alice\'s private review among hers')
      const hidden = await get(`/v1/reviews?apply=${q('groupby((moderatorNote),aggregate($count as n))')}`, 'bob')
      t.same([hidden.status, refusal(hidden.body)], [400, ["apply: unknown field 'moderatorNote' at position 9"]])
      const counted = await get(`/v1/reviews?apply=${q('aggregate(moderatorNote with countdistinct as notes)')}`, 'bob')
      t.same([counted.status, refusal(counted.body)], [400, ["apply: unknown field 'moderatorNote' at position 10"]])
      const twice = q(`filter(bookId eq '${book}')/groupby((bookId),aggregate($count as n))/filter(n ge 2)`)
      t.same((await get(`/v1/reviews?apply=${twice}`, 'bob')).body.data.reviews, [], 'after the grouping too, bob\'s group holds his rows only')
      t.same((await get(`/v1/reviews?apply=${twice}`, 'alice')).body.data.reviews, [{ bookId: book, n: 2 }])
      const note = await get(`/v1/reviews?apply=${q('groupby((bookId),aggregate($count as n))/filter(moderatorNote eq null)')}`, 'admin')
      t.same([note.status, refusal(note.body)], [400, ["apply: 'moderatorNote' is neither a grouping value nor an alias: after the grouping, filter() may name bookId, n at position 48"]], 'a record\'s field is none of the groups\'')
      const admin = await get(`/v1/reviews?apply=${q('groupby((moderatorNote),aggregate($count as n))')}`, 'admin')
      t.same([admin.status, admin.body.data.reviews], [200, [{ moderatorNote: null, n: 2 }]])
    })

    t.test('XML answers carry the groups too', async t => {
      const res = await fetch(`${base}/v1/books?apply=${q('aggregate($count as n)')}`, { headers: { accept: 'application/xml', authorization: 'Bearer read-token' } })
      t.equal(res.status, 200)
      t.match(res.headers.get('content-type'), /xml/)
      t.match(await res.text(), /<books type="array"><i type="object"><n type="number">6<\/n><\/i><\/books>/)
    })
  })
}

t.test('a store without aggregate refuses apply with a 400 naming it', async t => {
  const store: Store = { ...memoryStore() }
  delete store.aggregate
  const app = await buildApp(t, { store })
  const res = await app.inject({ url: `/v1/books?apply=${q('aggregate($count as n)')}` })
  t.equal(res.statusCode, 400)
  t.same(res.json().invalidParams, [{ name: 'apply', reason: 'the store of books cannot aggregate' }])
  t.equal((await app.inject({ url: '/v1/books' })).statusCode, 200, 'its lists still answer')
})
