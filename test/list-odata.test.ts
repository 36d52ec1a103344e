// OData clients (docs/demo-contract.md "What OData clients send"; docs/query-language.md "OData names"):
// the OData system query options stand for the conventions' parameters with the same meaning and
// the same errors, named as sent; both names of one option are a 400 naming both; page links use
// the conventions' names and tokens bind alike whichever name made them; a bare GUID in a filter
// is the text of the id it spells, on every store.
import t from 'tap'
import type { Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { memoryStore, pgliteStore, postgresStore } from '../lib/index.js'
import type { Store } from '../lib/index.js'
import { buildApp, seed } from './helpers/app.js'
import type { Seeded } from './helpers/app.js'
import { hrefOf, idsOf, linksOf, walk } from './helpers/list-app.js'
import { openPglite } from './stores/pglite-db.js'
import { runSchemas } from './stores/run-schemas.js'
import { inlined } from './helpers/openapi.js'

type Json = Record<string, any>

/** A query as OData clients write it: names as they are (`$filter`), values percent-encoded. */
const query = (...pairs: Array<readonly [string, string]>) => pairs.map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&')

/** Status, ETag and body, with tokens aside: two equal queries may be sealed in different seconds. */
async function answer (app: FastifyInstance, url: string): Promise<{ status: number, etag: unknown, body: Json }> {
  const res = await app.inject({ url })
  return { status: res.statusCode, etag: res.headers.etag, body: JSON.parse(res.body.replace(/token=[\w-]+/g, 'token=…')) }
}

async function seeded (t: Test, overrides = {}): Promise<{ app: FastifyInstance, data: Seeded }> {
  const app = await buildApp(t, overrides)
  return { app, data: await seed(app) }
}

t.test('each OData name answers as the parameter it stands for: status, ETag and the whole body, links included', async t => {
  const { app, data } = await seeded(t)
  const author = data.authors[0].id
  const book = data.books[0].id
  const pairs: Array<[string, string]> = [
    [query(['$filter', 'year ge 1960']), query(['filter', 'year ge 1960'])],
    [query(['$orderby', 'year desc,title']), query(['sort', '-year,title'])],
    [query(['$orderby', 'rating']), query(['sort', 'rating'])],
    [query(['$orderby', 'rating asc']), query(['sort', 'rating'])],
    [query(['$orderby', ' rating  DESC , title Asc ']), query(['sort', '-rating,title'])],
    // Repeated, it reads as one comma-separated value, which the links write as sort's text.
    [query(['$orderby', 'rating desc'], ['$orderby', 'title']), query(['sort', '-rating,title'])],
    [query(['$top', '2']), query(['pageSize', '2'])],
    [query(['$top', '0'], ['$count', 'true']), query(['pageSize', '0'], ['total', 'true'])],
    [query(['$skip', '1'], ['$top', '2']), query(['offset', '1'], ['pageSize', '2'])],
    [query(['$skip', '9']), query(['offset', '9'])],
    [query(['$select', 'title,year']), query(['fields', 'title,year'])],
    [query(['$select', 'year'], ['$select', 'rating']), query(['fields', 'year'], ['fields', 'rating'])],
    [query(['$expand', 'author']), query(['expand', 'author'])],
    [query(['$count', 'true']), query(['total', 'true'])],
    [query(['$count', 'false']), query(['total', 'false'])],
    [query(['$filter', 'rating ne null'], ['$orderby', 'rating desc'], ['$top', '1'], ['$skip', '1'], ['$select', 'rating'], ['$expand', 'author'], ['$count', 'true']),
      query(['filter', 'rating ne null'], ['sort', '-rating'], ['pageSize', '1'], ['offset', '1'], ['fields', 'rating'], ['expand', 'author'], ['total', 'true'])],
    // With the conventions' own names and a simple filter beside them.
    [query(['$filter', 'year gt 1900'], ['sort', 'title'], ['available', 'true'], ['$top', '1']), query(['filter', 'year gt 1900'], ['sort', 'title'], ['available', 'true'], ['pageSize', '1'])]
  ]
  for (const [odata, conventions] of pairs) {
    for (const base of ['/v1/books', `/v1/authors/${author}/books`]) {
      const expected = await answer(app, `${base}?${conventions}`)
      t.equal(expected.status, 200, conventions)
      t.same(await answer(app, `${base}?${odata}`), expected, `${base}?${odata}`)
    }
  }
  // RETRIEVE takes $select and $expand as it takes fields and expand: the same representation, the same tag.
  const item = await answer(app, `/v1/books/${book}?${query(['fields', 'year'], ['expand', 'author'])}`)
  t.equal(item.status, 200)
  t.same(await answer(app, `/v1/books/${book}?${query(['$select', 'year'], ['$expand', 'author'])}`), item)
})

t.test('the names arrive percent-encoded and with + for spaces, as clients send them', async t => {
  const { app } = await seeded(t)
  const expected = await answer(app, `/v1/books?${query(['filter', 'year ge 1960'], ['sort', '-year'])}`)
  for (const url of ['/v1/books?%24filter=year%20ge%201960&%24orderby=year%20desc', '/v1/books?$filter=year+ge+1960&$orderby=year+desc', '/v1/books?%24filter=year+ge+1960&$orderby=year%20desc']) {
    t.same(await answer(app, url), expected, url)
  }
  t.equal(expected.body.data.books.length, 3)
})

/** The problem a conventions name gets, as its OData name gets it: each of `names` (conventions → OData) renamed. */
function renamed (body: Json, names: Record<string, string>): Json {
  return { ...body, invalidParams: body.invalidParams.map((problem: Json) => ({ ...problem, name: names[problem.name] ?? problem.name })) }
}

t.test('a refused OData name is refused as the parameter it stands for, naming the name sent', async t => {
  const { app, data } = await seeded(t)
  const refusals: Array<[string, string, Record<string, string>]> = [
    [query(['$top', '101']), query(['pageSize', '101']), { pageSize: '$top' }],
    [query(['$top', 'many']), query(['pageSize', 'many']), { pageSize: '$top' }],
    [query(['$top', '1'], ['$top', '2']), query(['pageSize', '1'], ['pageSize', '2']), { pageSize: '$top' }],
    [query(['$skip', '-1']), query(['offset', '-1']), { offset: '$skip' }],
    [query(['$skip', String(2 ** 53)]), query(['offset', String(2 ** 53)]), { offset: '$skip' }],
    [query(['$count', 'yes']), query(['total', 'yes']), { total: '$count' }],
    [query(['$select', 'colour,title']), query(['fields', 'colour,title']), { fields: '$select' }],
    [query(['$select', '']), query(['fields', '']), { fields: '$select' }],
    [query(['$expand', 'nothing']), query(['expand', 'nothing']), { expand: '$expand' }],
    [query(['$filter', 'year eq']), query(['filter', 'year eq']), { filter: '$filter' }],
    [query(['$filter', "year eq 'old'"]), query(['filter', "year eq 'old'"]), { filter: '$filter' }],
    [query(['$filter', 'title eq 1'], ['$filter', 'title eq 2']), query(['filter', 'title eq 1'], ['filter', 'title eq 2']), { filter: '$filter' }],
    [query(['$filter', 'title eq \u0000']), query(['filter', 'title eq \u0000']), { filter: '$filter' }],
    [query(['$orderby', 'colour']), query(['sort', 'colour']), { sort: '$orderby' }],
    [query(['$orderby', 'year,year desc']), query(['sort', 'year,-year']), { sort: '$orderby' }],
    [query(['$orderby', 'year desc'], ['$select', 'nope'], ['$top', '500']), query(['sort', '-year'], ['fields', 'nope'], ['pageSize', '500']), { fields: '$select', pageSize: '$top' }]
  ]
  for (const [odata, conventions, names] of refusals) {
    const expected = await answer(app, `/v1/books?${conventions}`)
    t.equal(expected.status, 400, conventions)
    t.same(await answer(app, `/v1/books?${odata}`), { ...expected, body: renamed(expected.body, names) }, odata)
  }
  const item = await answer(app, `/v1/books/${data.books[0].id}?${query(['fields', 'colour'], ['expand', 'nothing'])}`)
  t.equal(item.status, 400)
  t.same(await answer(app, `/v1/books/${data.books[0].id}?${query(['$select', 'colour'], ['$expand', 'nothing'])}`),
    { ...item, body: renamed(item.body, { fields: '$select', expand: '$expand' }) })
  const filter = await answer(app, `/v1/books?${query(['$filter', 'year eq'])}`)
  t.same(filter.body.invalidParams, [{ name: '$filter', reason: "expected a value after 'eq' at position 7" }], 'the position, as for filter')
})

t.test("$orderby takes OData's syntax; a syntax problem is a 400 naming $orderby and the position", async t => {
  const { app } = await seeded(t)
  const cases: Array<[string, string]> = [
    ['year down', "expected 'asc' or 'desc' after 'year', found 'down' at position 5"],
    ['year desc title', "unexpected 'title' at position 10"],
    ['title,year desc,', 'expected a field at position 16'],
    [',title', 'expected a field at position 0'],
    ['', 'expected a field at position 0'],
    ['title, -year', "unexpected '-' at position 7"],
    ['+year', "unexpected '+' at position 0"]
  ]
  for (const [text, reason] of cases) {
    const res = await app.inject({ url: `/v1/books?${query(['$orderby', text])}` })
    t.equal(res.statusCode, 400, text)
    t.match(res.headers['content-type'], /^application\/problem\+json/)
    t.same(res.json().invalidParams, [{ name: '$orderby', reason }], text)
  }
  // sort's own syntax is not OData's: `-year` is refused above, `year desc` by sort.
  t.same((await app.inject({ url: `/v1/books?${query(['sort', 'year desc'])}` })).json().invalidParams, [{ name: 'sort', reason: "unknown field 'year desc'" }])
})

t.test('both names of one option are a 400 naming both', async t => {
  const { app, data } = await seeded(t)
  const options: Array<[string, string, string]> = [
    ['filter', '$filter', 'year gt 1'], ['sort', '$orderby', 'year'], ['pageSize', '$top', '1'], ['offset', '$skip', '1'],
    ['fields', '$select', 'title'], ['expand', '$expand', 'author'], ['total', '$count', 'true']
  ]
  for (const [name, odata, value] of options) {
    const res = await app.inject({ url: `/v1/books?${query([odata, value], [name, value])}` })
    t.equal(res.statusCode, 400, name)
    const reason = `${name} and ${odata} are one option: send one of them`
    t.match(res.json(), { status: 400, type: '/v1/problems/query-invalid' })
    t.same(res.json().invalidParams, [{ name, reason }, { name: odata, reason }], name)
  }
  const item = await app.inject({ url: `/v1/books/${data.books[0].id}?${query(['$select', 'title'], ['fields', 'year'])}` })
  t.equal(item.statusCode, 400)
  t.same(item.json().invalidParams, [{ name: 'fields', reason: 'fields and $select are one option: send one of them' }, { name: '$select', reason: 'fields and $select are one option: send one of them' }])
})

t.test('$skip is offset paging, with its combinations refused as offset\'s are, naming $skip', async t => {
  const { app } = await seeded(t)
  const page = (await app.inject({ url: `/v1/books?${query(['$skip', '1'], ['pageOffset', '2'])}` })).json()
  t.same(page.invalidParams, [{ name: 'pageOffset', reason: '$skip and pageOffset cannot be combined' }])
  const first = (await app.inject({ url: `/v1/books?${query(['pageSize', '1'])}` })).json()
  const token = new URL(hrefOf(first, 'next') as string, 'http://x').searchParams.get('token') as string
  const mixed = (await app.inject({ url: `/v1/books?${query(['$skip', '1'], ['pageSize', '1'], ['token', token])}` })).json()
  t.same(mixed.invalidParams, [{ name: 'token', reason: 'a token cannot be combined with $skip or pageOffset' }])
  // With offset paging the default, as without.
  const offsetApp = await buildApp(t, { paging: 'offset' })
  await seed(offsetApp)
  const expected = await answer(offsetApp, `/v1/books?${query(['offset', '2'], ['pageSize', '1'])}`)
  t.same(await answer(offsetApp, `/v1/books?${query(['$skip', '2'], ['$top', '1'])}`), expected)
  t.same(expected.body.meta, { pageSize: 1, offset: 2, pageOffset: 3 })
})

t.test('page links use the conventions\' names; following them, or a token with either name, walks the same pages', async t => {
  const { app, data } = await seeded(t)
  const byYear = [...data.books].sort((a, b) => (b.year as number) - (a.year as number)).map(book => book.id)
  const pages = await walk(app, `/v1/books?${query(['$orderby', 'year desc'], ['$top', '1'], ['$select', 'year'])}`, 'next')
  t.same(pages.flatMap(body => idsOf(body)), byYear, 'every book once, in the order asked')
  t.same(pages.flatMap(body => linksOf(body)).filter(link => /\$|%24/.test(link.href)), [], 'no link holds an OData name')
  t.equal(hrefOf(pages[0], 'first'), '/v1/books?sort=-year&fields=year&pageSize=1')
  // docs/query-language.md "OData names", its example.
  const example = (await app.inject({ url: `/v1/books?${query(['$filter', 'year ge 1960'], ['$orderby', 'year desc'], ['$top', '1'], ['$select', 'year'], ['$count', 'true'])}` })).json()
  t.same(example.meta, { pageSize: 1, total: 3 })
  t.same(example.data.books.map((book: Json) => book.year), [1974])
  t.equal(hrefOf(example, 'self'), '/v1/books?filter=year%20ge%201960&sort=-year&fields=year&total=true&pageSize=1')

  // A token made under OData names continues under the conventions', and the other way round.
  const filter = 'year gt 1960'
  const odataFirst = (await app.inject({ url: `/v1/books?${query(['$filter', filter], ['$orderby', 'year'], ['$top', '1'])}` })).json()
  const token = new URL(hrefOf(odataFirst, 'next') as string, 'http://x').searchParams.get('token') as string
  const second = await answer(app, `/v1/books?${query(['filter', filter], ['sort', 'year'], ['pageSize', '1'], ['token', token])}`)
  t.equal(second.status, 200)
  t.same(await answer(app, `/v1/books?${query(['$filter', filter], ['$orderby', 'year asc'], ['$top', '1'], ['token', token])}`), second)
  t.same(second.body.data.books.map((book: Json) => book.year), [1969])
  // A token from another query is refused the same way under either name.
  const foreign = await answer(app, `/v1/books?${query(['filter', 'year gt 1'], ['sort', 'year'], ['token', token])}`)
  t.same(foreign.body.invalidParams, [{ name: 'token', reason: 'token was issued for a different query' }])
  t.same(await answer(app, `/v1/books?${query(['$filter', 'year gt 1'], ['$orderby', 'year'], ['token', token])}`), foreign)
  t.same((await answer(app, `/v1/books?${query(['$filter', filter], ['$orderby', 'year desc'], ['token', token])}`)).body.invalidParams, foreign.body.invalidParams, 'another order')
})

t.test('$search answers what search answers, naming the name sent', async t => {
  const { app } = await seeded(t)
  for (const value of ['the', '(the']) {
    const expected = await answer(app, `/v1/books?${query(['search', value])}`)
    const odata = await answer(app, `/v1/books?${query(['$search', value])}`)
    t.same(odata, expected.status === 400 ? { ...expected, body: renamed(expected.body, { search: '$search' }) } : expected, value)
  }
})

t.test('$apply answers what apply answers, naming the name sent; other $ names are unknown', async t => {
  const { app } = await seeded(t)
  for (const [odata, name] of [['$format', 'format'], ['$Filter', 'Filter']]) {
    const expected = await answer(app, `/v1/books?${query([name, 'x'])}`)
    t.equal(expected.status, 400, name)
    t.same(expected.body.invalidParams, [{ name, reason: 'unknown query parameter or field' }])
    t.same(await answer(app, `/v1/books?${query([odata, 'x'])}`), { ...expected, body: renamed(expected.body, { [name]: odata }) }, odata)
  }
  const apply = await answer(app, `/v1/books?${query(['apply', 'x'])}`)
  t.same(apply.body.invalidParams, [{ name: 'apply', reason: "unknown transformation 'x': aggregate, groupby or filter at position 0" }])
  t.same(await answer(app, `/v1/books?${query(['$apply', 'x'])}`), { ...apply, body: renamed(apply.body, { apply: '$apply' }) }, '$apply')
  const grouped = await answer(app, `/v1/books?${query(['$apply', 'aggregate($count as n)'])}`)
  t.same(grouped.body, await answer(app, `/v1/books?${query(['apply', 'aggregate($count as n)'])}`).then(res => res.body), '$apply groups as apply does')
})

t.test('the OpenAPI document lists the OData names beside the parameters they stand for', async t => {
  const app = await buildApp(t)
  // Parameters shared by reference (components), read in place.
  const document = inlined((await app.inject({ url: '/v1/openapi.json' })).json())
  const names = (path: string) => (document.paths[path].get.parameters as Json[]).filter(parameter => parameter.in === 'query').map(parameter => parameter.name as string)
  t.same(names('/books').filter(name => name.startsWith('$')), ['$select', '$filter', '$apply', '$search', '$orderby', '$skip', '$top', '$count', '$expand'])
  t.same(names('/books/{id}').filter(name => name.startsWith('$')), ['$select', '$expand'])
  const top = (document.paths['/books'].get.parameters as Json[]).find(parameter => parameter.name === '$top') as Json
  t.match(top, { description: /^OData's name of pageSize, not to be sent with it\./, schema: { type: 'integer', minimum: 0, maximum: 100 } })
  t.notOk('default' in top.schema, 'no default: a client sending defaults would send both names')
})

/** The stores a GUID literal is checked on: memory, PGlite, and PostgreSQL when DATABASE_URL is set. */
const connectionString = process.env.DATABASE_URL
const schemas = connectionString === undefined ? undefined : runSchemas(t, connectionString)
const stores: Array<[string, (t: Test) => Promise<Store>]> = [
  ['memory', async () => memoryStore()],
  ['PGlite', async t => {
    const db = await openPglite()
    t.teardown(() => db.close())
    return await pgliteStore({ db, schema: 'odata_guids' })
  }],
  ['PostgreSQL', async t => {
    const store = await postgresStore({ connectionString, schema: `${schemas?.prefix ?? ''}_guids` })
    t.teardown(() => store.close())
    return store
  }]
]

for (const [label, makeStore] of stores) {
  t.test(`${label}: a bare GUID in a filter is the text of the id it spells`, { skip: label === 'PostgreSQL' && connectionString === undefined && 'needs DATABASE_URL' }, async t => {
    const { app, data } = await seeded(t, { store: await makeStore(t) })
    const [ursula, janet] = data.authors.map(author => author.id)
    const ids = async (filter: string) => {
      const res = await app.inject({ url: `/v1/books?${query(['$filter', filter], ['$orderby', 'title'])}` })
      t.equal(res.statusCode, 200, filter)
      return idsOf(res.json())
    }
    const byUrsula = data.books.filter(book => book.authorId === ursula).map(book => book.id).sort()
    t.same((await ids(`authorId eq ${ursula}`)).sort(), byUrsula)
    t.same(await ids(`authorId eq ${ursula}`), await ids(`authorId eq '${ursula}'`), 'as the quoted text')
    t.same(await ids(`${janet} eq authorId`), await ids(`authorId eq '${janet}'`))
    t.same((await ids(`id in (${data.books[0].id}, ${data.books[2].id})`)).sort(), [data.books[0].id, data.books[2].id].sort())
    t.same(await ids(`authorId ne ${ursula} and author/id eq ${janet}`), await ids(`authorId eq '${janet}'`))
    t.same(await ids(`authorId eq ${ursula.toUpperCase()}`), [], 'text: another case is another id')
    const typed = await app.inject({ url: `/v1/books?${query(['$filter', `year eq ${ursula}`])}` })
    t.equal(typed.statusCode, 400)
    t.same(typed.json().invalidParams, (await app.inject({ url: `/v1/books?${query(['$filter', `year eq '${ursula}'`])}` })).json().invalidParams, 'compared with a number, refused as quoted text is')
  })
}
