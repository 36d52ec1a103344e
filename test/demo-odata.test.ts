// What OData clients send, to the demo (docs/demo-contract.md "What OData clients send"), over HTTP on
// each store it runs on: memory, PGlite in a fresh DATA_DIR, and PostgreSQL when DATABASE_URL is set
// (in a schema of its own, dropped afterwards). Each sentence has its test: the system query options
// percent-encoded as client libraries send them, with the same meaning and the same errors as the
// conventions' names; both forms of one option, a 400; a bare GUID literal, the text of that id.
import t from 'tap'
import { placeFor, places } from './helpers/demo-http.js'
import type { Answer, Api } from './helpers/demo-http.js'

type Json = Record<string, any>

/** Status and body, tokens aside (two equal queries may be sealed in different seconds). */
async function answer (api: Api, path: string): Promise<{ status: number, body: Json }> {
  const res: Answer = await api('reader', 'GET', path)
  return { status: res.status, body: JSON.parse(res.text.replace(/token=[\w-]+/g, 'token=…')) }
}

/** A refusal of the conventions' name as the OData name gets it: each invalidParams name renamed. */
function renamed (body: Json, names: Record<string, string>): Json {
  return { ...body, invalidParams: body.invalidParams.map((problem: Json) => ({ ...problem, name: names[problem.name] ?? problem.name })) }
}

for (const where of places('demo-odata')) {
  t.test(where.name, { skip: where.skip }, async t => {
    const { start } = await placeFor(t, where)
    const { api } = await start()
    // A small catalogue: the demo app tests build is never seeded.
    const catalogue: Array<[Json, Json[]]> = [
      [{ name: 'Janet Frame', country: 'NZ' }, [{ title: 'Owls Do Cry', year: 1957 }, { title: 'Faces in the Water', year: 1961, rating: 4.1 }, { title: 'Scented Gardens for the Blind', year: 1963 }]],
      [{ name: 'Alice Munro', country: 'CA' }, [{ title: 'Dance of the Happy Shades', year: 1968, rating: 4.4 }, { title: 'Runaway', year: 2004, rating: 4.6 }]],
      [{ name: 'Stanisław Lem', country: 'PL' }, [{ title: 'Solaris', year: 1961, rating: 4.2 }, { title: 'The Cyberiad', year: 1965 }]]
    ]
    for (const [author, books] of catalogue) {
      const made = await api('dev', 'POST', '/v1/authors', { body: author })
      for (const book of books) await api('dev', 'POST', '/v1/books', { body: { ...book, authorId: made.body.data.author.id } })
    }

    t.test('the OData system query options, percent-encoded as clients send them, answer as the conventions\' names', async t => {
      // URLs written as OData client libraries write them: `$` as is or as %24, spaces as %20 or +.
      const pairs: Array<[string, string]> = [
        ['%24filter=year%20ge%201960', 'filter=year%20ge%201960'],
        ['$filter=year+ge+1960+and+rating+ne+null', 'filter=year%20ge%201960%20and%20rating%20ne%20null'],
        ['%24orderby=year%20desc,title', 'sort=-year,title'],
        ['$orderby=year+desc&$top=5', 'sort=-year&pageSize=5'],
        ['%24top=3&%24skip=3', 'pageSize=3&offset=3'],
        ['$select=title,year', 'fields=title,year'],
        ['%24expand=author&%24top=2', 'expand=author&pageSize=2'],
        ['$count=true&$top=0', 'total=true&pageSize=0'],
        ['$count=false', 'total=false'],
        ['%24filter=author%2Fcountry%20eq%20%27NZ%27&%24orderby=title%20asc&%24select=title&%24expand=author&%24count=true', "filter=author%2Fcountry%20eq%20'NZ'&sort=title&fields=title&expand=author&total=true"]
      ]
      for (const [odata, conventions] of pairs) {
        const expected = await answer(api, `/v1/books?${conventions}`)
        t.equal(expected.status, 200, conventions)
        t.same(await answer(api, `/v1/books?${odata}`), expected, odata)
      }
      const some = (await answer(api, '/v1/books?%24filter=year%20ge%201960&%24count=true')).body
      t.ok(some.meta.total > 0 && some.data.books.every((book: Json) => book.year >= 1960), 'the filter is applied')
      const refusals: Array<[string, string, Record<string, string>]> = [
        ['%24top=101', 'pageSize=101', { pageSize: '$top' }],
        ['$filter=year+eq', 'filter=year%20eq', { filter: '$filter' }],
        ['$orderby=colour+desc', 'sort=-colour', { sort: '$orderby' }],
        ['$select=colour', 'fields=colour', { fields: '$select' }],
        ['$count=maybe', 'total=maybe', { total: '$count' }]
      ]
      for (const [odata, conventions, names] of refusals) {
        const expected = await answer(api, `/v1/books?${conventions}`)
        t.equal(expected.status, 400, conventions)
        t.same(await answer(api, `/v1/books?${odata}`), { ...expected, body: renamed(expected.body, names) }, odata)
      }
      t.same((await answer(api, '/v1/books?$orderby=year+down')).body.invalidParams, [{ name: '$orderby', reason: "expected 'asc' or 'desc' after 'year', found 'down' at position 5" }])
      // $search and $apply answer exactly what search and apply answer, under the name sent.
      for (const name of ['search', 'apply']) {
        const expected = await answer(api, `/v1/books?${name}=tolkien`)
        const odata = await answer(api, `/v1/books?%24${name}=tolkien`)
        t.same(odata, expected.status === 400 ? { ...expected, body: renamed(expected.body, { [name]: `$${name}` }) } : expected, `$${name}`)
      }
    })

    t.test('giving both forms of one option is a 400 naming both', async t => {
      for (const [name, odata, value] of [['filter', '$filter', 'year%20gt%201'], ['sort', '$orderby', 'year'], ['pageSize', '$top', '2'], ['offset', '$skip', '1'],
        ['fields', '$select', 'title'], ['expand', '$expand', 'author'], ['total', '$count', 'true']]) {
        const res = await answer(api, `/v1/books?${encodeURIComponent(odata)}=${value}&${name}=${value}`)
        const reason = `${name} and ${odata} are one option: send one of them`
        t.match(res, { status: 400, body: { status: 400, invalidParams: [{ name, reason }, { name: odata, reason }] } }, name)
        t.equal(res.body.invalidParams.length, 2)
      }
    })

    t.test('a bare GUID literal compares as the text of that id', async t => {
      const authors = (await answer(api, '/v1/authors?pageSize=100')).body.data.authors as Json[]
      let checked = 0
      for (const author of authors.slice(0, 3)) {
        const bare = await answer(api, `/v1/books?%24filter=authorId%20eq%20${author.id as string}&pageSize=100`)
        const quoted = await answer(api, `/v1/books?filter=authorId%20eq%20'${author.id as string}'&pageSize=100`)
        t.equal(bare.status, 200)
        t.same(bare.body.data, quoted.body.data, author.name)
        t.ok(bare.body.data.books.every((book: Json) => book.authorId === author.id))
        checked += bare.body.data.books.length
      }
      t.ok(checked > 0, 'some books matched')
    })
  })
}
