// LIST with `filter=` over HTTP (spec "Advanced filtering (`filter`)"): every
// operator, literal and function, OData null rules, relation paths, and each 400 naming `filter`.
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { defineResource, memoryStore } from '../lib/index.js'
import { buildApp, create, seed } from './helpers/app.js'
import { get, hrefOf, idsOf, walk } from './helpers/list-app.js'
import type { Item } from './helpers/list-app.js'

const filtered = (filter: string, extra = '') => `/v1/books?filter=${encodeURIComponent(filter)}&pageSize=100${extra}`

/** Titles matching a filter, in the default order (creation). */
async function titles (app: Awaited<ReturnType<typeof buildApp>>, filter: string, resource = 'books', key = 'title'): Promise<unknown[]> {
  const res = await get(app, `/v1/${resource}?filter=${encodeURIComponent(filter)}&pageSize=100`)
  if (res.statusCode !== 200) throw new Error(`${filter}: ${res.statusCode} ${res.body}`)
  return (res.json().data[resource] as Item[]).map(item => item[key])
}

async function fixture (t: Parameters<typeof buildApp>[0]) {
  const app = await buildApp(t)
  const seeded = await seed(app)
  // A quote in a title, and an author with no country, for literals and null paths.
  const nobody = await create(app, 'authors', { name: 'Anonymous' })
  await create(app, 'books', { title: "Don't Panic", authorId: nobody.id, year: 1984, rating: 3 })
  return { app, ...seeded, nobody }
}

// Seed: The Dispossessed 1974 4.5, The Left Hand of Darkness 1969 4.6, Owls Do Cry 1957 null,
// Solaris 1961 4.2 (unavailable), Don't Panic 1984 3 (author without country).
const all = ['The Dispossessed', 'The Left Hand of Darkness', 'Owls Do Cry', 'Solaris', "Don't Panic"]

t.test('comparison operators select the matching items', async t => {
  const { app } = await fixture(t)
  t.same(await titles(app, 'year eq 1961'), ['Solaris'])
  t.same(await titles(app, 'year ne 1961'), ['The Dispossessed', 'The Left Hand of Darkness', 'Owls Do Cry', "Don't Panic"])
  t.same(await titles(app, 'year gt 1969'), ['The Dispossessed', "Don't Panic"])
  t.same(await titles(app, 'year ge 1969'), ['The Dispossessed', 'The Left Hand of Darkness', "Don't Panic"])
  t.same(await titles(app, 'year lt 1961'), ['Owls Do Cry'])
  t.same(await titles(app, 'year le 1961'), ['Owls Do Cry', 'Solaris'])
  t.same(await titles(app, "title gt 'T'"), ['The Dispossessed', 'The Left Hand of Darkness'])
  t.same(await titles(app, '1961 lt year'), ['The Dispossessed', 'The Left Hand of Darkness', "Don't Panic"], 'a literal may come first')
})

t.test('comparisons with null follow OData, not SQL', async t => {
  const { app } = await fixture(t)
  t.same(await titles(app, 'rating eq null'), ['Owls Do Cry'], 'eq null is true for null')
  t.same(await titles(app, 'null eq rating'), ['Owls Do Cry'])
  t.same(await titles(app, 'rating ne null'), ['The Dispossessed', 'The Left Hand of Darkness', 'Solaris', "Don't Panic"])
  t.same(await titles(app, 'rating ne 4.5'), ['The Left Hand of Darkness', 'Owls Do Cry', 'Solaris', "Don't Panic"], 'ne is true when the value is null')
  for (const op of ['gt', 'ge', 'lt', 'le']) {
    t.notOk((await titles(app, `rating ${op} 0`)).includes('Owls Do Cry'), `${op} with a null operand is false`)
    t.same(await titles(app, `rating ${op} null`), [], `${op} null matches nothing`)
  }
  t.same(await titles(app, 'not (rating lt 4.5)'), ['The Dispossessed', 'The Left Hand of Darkness', 'Owls Do Cry'], 'not negates a false comparison')
  // A field missing from the record altogether (an optional field never set) equals null too.
  const authors = await titles(app, 'country eq null', 'authors', 'name')
  t.same(authors, ['Anonymous'])
})

t.test('and, or, not and parentheses combine with not > and > or', async t => {
  const { app } = await fixture(t)
  t.same(await titles(app, 'year lt 1960 or year gt 1970 and available eq true'), ['The Dispossessed', 'Owls Do Cry', "Don't Panic"])
  t.same(await titles(app, '(year lt 1960 or year gt 1970) and rating ge 4'), ['The Dispossessed'])
  t.same(await titles(app, 'not (available eq true) or year eq 1957'), ['Owls Do Cry', 'Solaris'])
  t.same(await titles(app, 'not (year gt 1960 and year lt 1980)'), ['Owls Do Cry', "Don't Panic"])
  t.same(await titles(app, 'not not (year eq 1957)'), ['Owls Do Cry'])
  t.same(await titles(app, 'year ge 1960 and year le 1970 and available eq true'), ['The Left Hand of Darkness'])
})

t.test('literals: quoted strings with doubled quotes, integers, decimals, booleans, dates', async t => {
  const { app } = await fixture(t)
  t.same(await titles(app, "title eq 'Don''t Panic'"), ["Don't Panic"])
  t.same(await titles(app, "title eq ''"), [])
  t.same(await titles(app, 'rating eq 4.6'), ['The Left Hand of Darkness'])
  t.same(await titles(app, 'rating eq 3'), ["Don't Panic"], 'an integer literal compares with a decimal field')
  t.same(await titles(app, 'rating gt 4.55e0'), ['The Left Hand of Darkness'])
  t.same(await titles(app, 'year gt -1 and year lt 1960'), ['Owls Do Cry'])
  t.same(await titles(app, 'available eq false'), ['Solaris'])
  t.same(await titles(app, 'available ne true'), ['Solaris'])
  t.same(await titles(app, 'born lt 1928-01-01', 'authors', 'name'), ['Janet Frame'])
  t.same(await titles(app, "born ge '1929-10-21'", 'authors', 'name'), ['Ursula K. Le Guin'], 'a quoted date is read as a date')
  t.same(await titles(app, 'born eq null', 'authors', 'name'), ['Stanisław Lem', 'Anonymous'])
})

t.test('in matches any listed value, null included', async t => {
  const { app } = await fixture(t)
  t.same(await titles(app, 'year in (1961, 1957)'), ['Owls Do Cry', 'Solaris'])
  t.same(await titles(app, 'rating in (4.5, null)'), ['The Dispossessed', 'Owls Do Cry'])
  t.same(await titles(app, "country in ('NZ','PL')", 'authors', 'name'), ['Janet Frame', 'Stanisław Lem'])
  t.same(await titles(app, 'not (year in (1961))'), ['The Dispossessed', 'The Left Hand of Darkness', 'Owls Do Cry', "Don't Panic"])
})

t.test('string functions: contains, startswith, endswith, tolower, toupper', async t => {
  const { app } = await fixture(t)
  t.same(await titles(app, "contains(title, 'and')"), ['The Left Hand of Darkness'])
  t.same(await titles(app, "startswith(title, 'The')"), ['The Dispossessed', 'The Left Hand of Darkness'])
  t.same(await titles(app, "endswith(title, 'ss')"), ['The Left Hand of Darkness'])
  t.same(await titles(app, "contains(tolower(title), 'the')"), ['The Dispossessed', 'The Left Hand of Darkness'])
  t.same(await titles(app, "toupper(title) eq 'SOLARIS'"), ['Solaris'])
  t.same(await titles(app, "tolower(title) eq tolower('OWLS DO CRY')"), ['Owls Do Cry'])
  t.same(await titles(app, "not startswith(title, 'The')"), ['Owls Do Cry', 'Solaris', "Don't Panic"])
  t.same(await titles(app, "contains(country, 'Z')", 'authors', 'name'), ['Janet Frame'], 'a null value contains nothing')
  t.same(await titles(app, "startswith('Solaris', title)"), ['Solaris'], 'the field may be the second argument')
})

t.test('property paths follow relations both ways', async t => {
  const { app } = await fixture(t)
  t.same(await titles(app, "author/name eq 'Janet Frame'"), ['Owls Do Cry'])
  t.same(await titles(app, "author/country eq 'US'"), ['The Dispossessed', 'The Left Hand of Darkness'])
  t.same(await titles(app, "author.country eq 'PL'"), ['Solaris'], 'a dot works as the separator too')
  t.same(await titles(app, 'author/country eq null'), ["Don't Panic"])
  t.same(await titles(app, 'author/born lt 1925-01-01'), ['Owls Do Cry'])
  // To-many: an author matches when any of their books does.
  t.same(await titles(app, 'books/year gt 1970', 'authors', 'name'), ['Ursula K. Le Guin', 'Anonymous'])
  t.same(await titles(app, "startswith(books/title, 'Sol')", 'authors', 'name'), ['Stanisław Lem'])
})

t.test('OData 4.01 as client libraries write it: booleans alone, keywords in any case, signed numbers, lambdas, dates beside date-times, functions', async t => {
  const { app } = await fixture(t)
  const available = ['The Dispossessed', 'The Left Hand of Darkness', 'Owls Do Cry', "Don't Panic"]
  const cases: Array<[string, unknown[]]> = [
    ['true', all],
    ['(true)', all],
    ['true ne false', all],
    ['available', available],
    ['not available', ['Solaris']],
    ["title EQ 'Solaris' AND rating LT 4.55", ['Solaris']],
    ['available eq tRUe', available],
    ['year eq +1961', ['Solaris']],
    ['rating eq +0.45e+1', ['The Dispossessed']],
    ['author/born gt 1925-01-01T00:00:00.000Z', ['The Dispossessed', 'The Left Hand of Darkness']],
    ['length(title) eq 7', ['Solaris']],
    ["indexof(title, 'Hand') eq 9", ['The Left Hand of Darkness']],
    ["substring(title, 0, 3) eq 'The' and substring(title, 4) eq 'Dispossessed'", ['The Dispossessed']],
    ["trim(concat(' ', title)) eq title", all],
    ['year(author/born) eq 1924 or month(author/born) eq 10 and day(author/born) eq 21', all.slice(0, 3)],
    ['author/born lt now()', all.slice(0, 3)]
  ]
  for (const [filter, expected] of cases) t.same(await titles(app, filter), expected, filter)
  t.same(await titles(app, 'books/any(b: b/year gt 1970)', 'authors', 'name'), ['Ursula K. Le Guin', 'Anonymous'])
  t.same(await titles(app, 'books/all(b: b/rating ge 4.5)', 'authors', 'name'), ['Ursula K. Le Guin'])
  t.same(await titles(app, 'not books/any(b: not b/available)', 'authors', 'name'), ['Ursula K. Le Guin', 'Janet Frame', 'Anonymous'])
  const outside = await get(app, `/v1/authors?filter=${encodeURIComponent('books/any(b: true) and b/year eq 1')}`)
  t.same({ status: outside.statusCode, invalidParams: outside.json().invalidParams },
    { status: 400, invalidParams: [{ name: 'filter', reason: "'b' is a lambda variable, known only inside its lambda" }] })
})

t.test('a filter returns everything or nothing when it should', async t => {
  const { app } = await fixture(t)
  t.same(await titles(app, 'year ne 0'), all)
  const res = await get(app, filtered('year gt 3000'))
  t.equal(res.statusCode, 200, 'no match is 200, not 404')
  t.same(res.json().data.books, [])
})

t.test('date-time literals compare as instants; a date beside a date-time is the instant its day begins in UTC', async t => {
  const store = memoryStore()
  const events = defineResource({
    name: 'events',
    singular: 'event',
    store,
    schema: Type.Object({
      id: Type.Readonly(Type.String()),
      name: Type.String(),
      at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
      tags: Type.Optional(Type.Array(Type.String()))
    }, { additionalProperties: false })
  })
  const app = await buildApp(t, { store, resources: () => [events] })
  for (const [name, at] of [['dawn', '2024-05-01T06:00:00Z'], ['noon', '2024-05-01T12:00:00+02:00'], ['never', null]]) {
    await create(app, 'events', { name, at, tags: [] })
  }
  t.same(await titles(app, 'at gt 2024-05-01T08:00:00Z', 'events', 'name'), ['noon'], 'noon at +02:00 is 10:00Z')
  t.same(await titles(app, 'at lt 2024-05-01T12:00:00+01:00', 'events', 'name'), ['dawn', 'noon'])
  t.same(await titles(app, 'at eq 2024-05-01T10:00:00Z', 'events', 'name'), ['noon'], 'the same instant in another offset is equal')
  t.same(await titles(app, "at ge '2024-05-01T10:00:00.000Z'", 'events', 'name'), ['noon'], 'a quoted date-time is read as one')
  t.same(await titles(app, 'at eq null', 'events', 'name'), ['never'])
  t.same(await titles(app, 'tags eq null', 'events', 'name'), [], 'a JSON field compares with null')
  t.same(await titles(app, 'at gt 2024-05-01', 'events', 'name'), ['dawn', 'noon'])
  t.same(await titles(app, 'at lt 2024-05-01', 'events', 'name'), [])
  const json = await get(app, `/v1/events?filter=${encodeURIComponent("tags eq 'x'")}`)
  t.equal(json.statusCode, 400)
  t.match(json.json().invalidParams, [{ name: 'filter', reason: /'tags' is a JSON value/ }])
})

t.test('filter combines with simple filters, sort and paging, and stays in every page link', async t => {
  const { app } = await fixture(t)
  const url = `/v1/books?filter=${encodeURIComponent('rating ne null')}&available=true&sort=-rating&pageSize=1`
  const pages = await walk(app, url, 'next')
  t.same(pages.map(page => page.data.books[0].title), ['The Left Hand of Darkness', 'The Dispossessed', "Don't Panic"])
  for (const page of pages) t.match(hrefOf(page, 'self'), /filter=rating%20ne%20null&available=true&sort=-rating/)
})

t.test('syntax errors are 400 naming filter with the character position', async t => {
  const { app } = await fixture(t)
  const cases: Array<[string, RegExp]> = [
    ['year gt', /expected a value after 'gt' at position 7/],
    ["title eq 'open", /unterminated string starting at position 9/],
    ['year eq 1961 and', /at position 16/],
    ['(year eq 1961', /expected '\)' at position 13/],
    ['year = 1961', /unexpected character '=' at position 5/],
    ['year between 1 and 2', /expected a comparison operator, found 'between' at position 5/],
    ['born eq 2024-02-30', /invalid date '2024-02-30' at position 8/],
    // Year 0 is in ISO 8601, but in no store: PostgreSQL would refuse to compare it, memory would not.
    ['born lt 0000-12-31', /invalid date '0000-12-31' at position 8/],
    ['not year eq 1', /expected '\(' after 'not' at position 4/],
    ["foo(title) eq 'x'", /unknown function 'foo' at position 0/],
    ['year in 1961', /expected '\(' after 'in' at position 8/],
    ['year add 1 gt 1961', /arithmetic operators \('add'\) are not supported at position 5/],
    ['year has 1', /the 'has' operator is not supported at position 5/],
    ['round(rating) eq 4', /the function round\(\) is not supported at position 0/],
    ['$it/year eq 1', /'\$it' is not supported at position 0/],
    ['year eq @y', /parameter aliases \('@y'\) are not supported at position 8/],
    ["title eq duration'P1D'", /typed literals \(duration'…'\) are not supported at position 9/],
    ['1961', /'1961' is not a condition at position 0/],
    ['', /unexpected end of filter at position 0/]
  ]
  for (const [filter, reason] of cases) {
    const res = await get(app, filtered(filter))
    t.equal(res.statusCode, 400, filter)
    t.match(res.headers['content-type'], /^application\/problem\+json/)
    t.match(res.json(), { status: 400, invalidParams: [{ name: 'filter', reason }] }, filter)
  }
})

t.test('unknown fields and type mismatches are 400 naming filter', async t => {
  const { app } = await fixture(t)
  const cases: Array<[string, RegExp]> = [
    ["titel eq 'x'", /unknown field 'titel'/],
    ["author eq 'x'", /'author' is a relation/],
    ["author/nope eq 'x'", /unknown field 'author\/nope'/],
    ["publisher/name eq 'x'", /unknown relation 'publisher'/],
    ["author/books/title eq 'x'", /too deep/],
    ["year eq 'old'", /'year' is an integer and cannot be compared with 'old'/],
    ['available eq 1', /'available' is a boolean/],
    ['title eq 3', /'title' is a string/],
    ['year eq title', /cannot be compared with 'title'/],
    ['contains(year, 1)', /contains\(\) needs strings/],
    ["tolower(year) eq 'x'", /tolower\(\) needs strings/],
    ["author/born eq 'yesterday'", /'author\/born' is a date/],
    ["1 eq 'a'", /1 is a number and cannot be compared with 'a'/],
    ['title', /'title' is a string and cannot be compared with true/],
    ["author/any(a: a/name eq 'x')", /any\(\) needs a 'many' relation; 'author' leads to one author/],
    ['length(year) eq 1', /length\(\) needs strings/],
    ['substring(title, 1.5) eq title', /substring\(\) needs integers, not 1.5/],
    ["year in ('a')", /'year' is an integer/]
  ]
  for (const [filter, reason] of cases) {
    const res = await get(app, filtered(filter))
    t.equal(res.statusCode, 400, filter)
    t.match(res.json(), { invalidParams: [{ name: 'filter', reason }] }, filter)
  }
})

t.test('over-long and over-deep filters are 400 naming filter', async t => {
  const { app } = await fixture(t)
  const long = `title eq '${'x'.repeat(2000)}'`
  const tooLong = await get(app, filtered(long))
  t.equal(tooLong.statusCode, 400)
  t.match(tooLong.json().invalidParams, [{ name: 'filter', reason: 'filter is longer than 2000 characters' }])
  const deep = `${'('.repeat(33)}year eq 1${')'.repeat(33)}`
  const tooDeep = await get(app, filtered(deep))
  t.equal(tooDeep.statusCode, 400)
  t.match(tooDeep.json().invalidParams, [{ name: 'filter', reason: 'filter nests deeper than 32 levels at position 32' }])
  const notDeep = `${'not '.repeat(33)}(year eq 1)`
  t.match((await get(app, filtered(notDeep))).json().invalidParams, [{ name: 'filter', reason: /nests deeper than 32 levels/ }])
  // A long flat chain is not deep, and within the length limit it is fine.
  const chain = Array.from({ length: 120 }, (_, i) => `year eq ${1800 + i}`).join(' or ')
  t.ok(chain.length <= 2000)
  t.same(await titles(app, chain), [])
})

t.test('filter given twice is 400', async t => {
  const { app } = await fixture(t)
  const res = await get(app, '/v1/books?filter=year%20eq%201&filter=year%20eq%202')
  t.equal(res.statusCode, 400)
  t.match(res.json().invalidParams, [{ name: 'filter', reason: 'must be given at most once' }])
})

t.test('several bad parameters are reported together', async t => {
  const { app } = await fixture(t)
  const res = await get(app, `${filtered('year eq')}&sort=nope&pageSize=x`)
  t.equal(res.statusCode, 400)
  t.same(res.json().invalidParams.map((p: { name: string }) => p.name).sort(), ['filter', 'pageSize', 'sort'])
})

t.test('the same filter text is evaluated consistently on repeated requests (cached parse)', async t => {
  const { app } = await fixture(t)
  const first = await titles(app, "startswith(title, 'The') or year eq 1961")
  const second = await titles(app, "startswith(title, 'The') or year eq 1961")
  t.same(first, ['The Dispossessed', 'The Left Hand of Darkness', 'Solaris'])
  t.same(second, first)
  // An error is never cached as a success.
  t.equal((await get(app, filtered('year eq'))).statusCode, 400)
  t.equal((await get(app, filtered('year eq'))).statusCode, 400)
  t.same(idsOf((await get(app, filtered('year eq 1961'))).json()).length, 1)
})

t.test('NUL in a filter value is a 400 naming its parameter, whichever store: no stored text holds one', async t => {
  const { app } = await fixture(t)
  const nul = 'cannot contain the NUL character, which no stored text holds'
  for (const [query, invalidParams] of [
    ['title=%00', [{ name: 'title', reason: nul }]],
    ['author.name=a%00b', [{ name: 'author.name', reason: nul }]],
    [`filter=${encodeURIComponent("contains(title, '\u0000')")}`, [{ name: 'filter', reason: nul }]],
    ['year=old&title=%00', [{ name: 'title', reason: nul }, { name: 'year', reason: "'old' is not an integer" }]]
  ] as const) {
    const res = await get(app, `/v1/books?${query}`)
    t.same({ status: res.statusCode, invalidParams: res.json().invalidParams }, { status: 400, invalidParams }, query)
  }
})
