// `search=` on the demo (docs/demo-contract.md "Reading more than a page", **Search**, and "What
// OData clients send": `$search`), over HTTP on each store it runs on: memory, PGlite in a fresh
// DATA_DIR, and PostgreSQL when DATABASE_URL is set (in a schema of its own, dropped afterwards).
// Each store answers the same queries; the last test checks they found the same records. On
// PostgreSQL, the plan of the query the store compiles reads the GIN index migrate made.
import t from 'tap'
import pg from 'pg'
import { placeFor, places } from './helpers/demo-http.js'
import { buildApp } from './helpers/app.js'
import { defineResource, memoryStore, pgliteStore } from '../lib/index.js'
import { openPglite } from './stores/pglite-db.js'
import { Type } from '@sinclair/typebox'
import { demoResources } from '../demo/schemas/index.js'
import { buildRegistry } from '../lib/registry/index.js'
import { resolveTable } from '../lib/stores/sql/table.js'
import { compileList } from '../lib/stores/sql/compile.js'
import { toQuery } from '../lib/stores/sql/sql.js'
import { parseSearch, RELEVANCE } from '../lib/query/search.js'
import type { ResourceModel } from '../lib/registry/model.js'

type Json = Record<string, any>

const authors: Array<[string, string[]]> = [
  ['J. R. R. Tolkien', ['The Lord of the Rings', 'The Hobbit', 'Rings of the Lord', 'Rings, rings and the lord']],
  ['Umberto Eco', ['The Name of the Rose', 'Foucault\'s Pendulum']],
  ['Gabriel García Márquez', ['Cien años de soledad', 'El amor en los tiempos del cólera']],
  ['Economy Press Collective', ['The Economy of Rings']],
  ['Ursula K. Le Guin', ['The Left Hand of Darkness']]
]

/** What each store found, by query: the titles (or names) in the order given. */
const found = new Map<string, Map<string, string[]>>()

const titles = (body: Json) => body.data.books.map((book: Json) => book.title)
const names = (body: Json) => body.data.authors.map((author: Json) => author.name)

for (const where of places('demo-search')) {
  t.test(where.name, { skip: where.skip }, async t => {
    const { place, start } = await placeFor(t, where)
    const { api } = await start()
    const bookIds = new Map<string, string>()
    for (const [name, books] of authors) {
      const author = await api('dev', 'POST', '/v1/authors', { body: { name } })
      for (const [i, title] of books.entries()) {
        const book = await api('dev', 'POST', '/v1/books', { body: { title, authorId: author.body.data.author.id, year: 1950 + i * 10 } })
        bookIds.set(title, book.body.data.book.id)
      }
    }
    const mine = new Map<string, string[]>()
    found.set(where.name, mine)
    const get = async (caller: string, path: string): Promise<Json> => {
      const res = await api(caller, 'GET', path)
      t.equal(res.status, 200, `${path}: ${res.text}`)
      return res.body
    }
    const search = async (resource: 'books' | 'authors', query: string): Promise<string[]> => {
      const body = await get('reader', `/v1/${resource}?${query}`)
      const result = resource === 'books' ? titles(body) : names(body)
      mine.set(`${resource}?${query}`, result)
      return result
    }
    const set = (list: string[]) => [...list].sort()

    t.test('by whole words, in any case and accents', async t => {
      t.same(await search('authors', 'search=tolkien'), ['J. R. R. Tolkien'])
      t.same(await search('authors', 'search=TOLKIEN'), ['J. R. R. Tolkien'])
      t.same(await search('authors', 'search=eco'), ['Umberto Eco'], 'eco finds Umberto Eco, not Economy')
      t.same(await search('authors', 'search=economy'), ['Economy Press Collective'])
      t.same(await search('authors', 'search=garcia'), ['Gabriel García Márquez'], 'garcia finds García')
      t.same(await search('authors', `search=${encodeURIComponent('MÁRQUEZ')}`), ['Gabriel García Márquez'])
      t.same(await search('books', 'search=colera'), ['El amor en los tiempos del cólera'])
      t.same(await search('books', 'search=ring'), [], 'ring is not rings: no prefixes, no stems')
      t.same(await search('books', 'search=foucault'), ['Foucault\'s Pendulum'], 'punctuation ends a word')
      t.same(await search('authors', '$search=tolkien'), ['J. R. R. Tolkien'], '$search is search')
    })

    t.test('phrases, AND (also a space), OR, NOT and parentheses', async t => {
      t.same(await search('books', `search=${encodeURIComponent('"lord of the rings"')}`), ['The Lord of the Rings'])
      t.same(set(await search('books', 'search=lord%20rings')), set(['The Lord of the Rings', 'Rings of the Lord', 'Rings, rings and the lord']))
      t.same(set(await search('books', 'search=lord%20AND%20rings')), set(['The Lord of the Rings', 'Rings of the Lord', 'Rings, rings and the lord']))
      t.same(set(await search('books', 'search=hobbit%20OR%20rose')), set(['The Hobbit', 'The Name of the Rose']))
      t.same(await search('books', 'search=rings%20NOT%20lord'), ['The Economy of Rings'])
      t.same(await search('books', `search=${encodeURIComponent('(hobbit OR pendulum) NOT the')}`), ['Foucault\'s Pendulum'])
      t.same(set(await search('books', `search=${encodeURIComponent('darkness OR hobbit rose')}`)), set(['The Left Hand of Darkness']), 'AND binds tighter than OR')
      t.same(set(await search('books', `search=${encodeURIComponent('(darkness OR hobbit) the')}`)), set(['The Left Hand of Darkness', 'The Hobbit']))
      t.same(set(await search('books', `search=${encodeURIComponent('"the" and')}`)), set(['Rings, rings and the lord']), 'lower-case and is a word')
      t.same(await search('books', `search=${encodeURIComponent('"lord \\"of\\" the rings"')}`), ['The Lord of the Rings'], '\\" in a phrase is a quotation mark, which ends a word')
      t.same(await search('books', `search=${encodeURIComponent('"rings\\\\ and"')}`), ['Rings, rings and the lord'], '\\\\ in a phrase is a backslash, which ends a word')
    })

    t.test('without sort, the most relevant first, ties by id; with sort, that order', async t => {
      const ranked = await search('books', `search=${encodeURIComponent('lord OR rings OR hobbit')}`)
      const byId = (list: string[]) => [...list].sort((a, b) => (bookIds.get(a) as string) < (bookIds.get(b) as string) ? -1 : 1)
      t.same(ranked, [...byId(['The Lord of the Rings', 'Rings of the Lord', 'Rings, rings and the lord']), ...byId(['The Hobbit', 'The Economy of Rings'])])
      t.same(await search('books', `search=${encodeURIComponent('lord OR rings OR hobbit')}&sort=title`),
        ['Rings of the Lord', 'Rings, rings and the lord', 'The Economy of Rings', 'The Hobbit', 'The Lord of the Rings'])
      t.same(await search('books', `search=rings&sort=-year,title&filter=${encodeURIComponent('year ge 1960')}`), ['Rings, rings and the lord', 'Rings of the Lord'], 'combined with filter by AND')
    })

    t.test('paging, links and total', async t => {
      const query = `search=${encodeURIComponent('lord OR rings OR hobbit')}`
      const all = await search('books', query)
      for (const mode of ['', '&offset=0']) {
        const seen: string[] = []
        let body = await get('reader', `/v1/books?${query}&pageSize=2&total=true${mode}`)
        for (;;) {
          t.equal(body.meta.total, 5)
          seen.push(...titles(body))
          const next = body.links.find((link: Json) => link.rel === 'next')
          if (next === undefined) break
          t.match(next.href, /search=lord%20OR%20rings%20OR%20hobbit/, 'the link repeats the search')
          body = await get('reader', new URL(next.href, 'http://x').pathname + new URL(next.href, 'http://x').search)
        }
        t.same(seen, all, `every page in order${mode}`)
      }
      // Backwards from the end, with the last link's token.
      const first = await get('reader', `/v1/books?${query}&pageSize=2`)
      const last = first.links.find((link: Json) => link.rel === 'last')
      const lastPage = await get('reader', new URL(last.href, 'http://x').pathname + new URL(last.href, 'http://x').search)
      t.same(titles(lastPage), all.slice(-2))
      const previous = lastPage.links.find((link: Json) => link.rel === 'prev')
      t.same(titles(await get('reader', new URL(previous.href, 'http://x').pathname + new URL(previous.href, 'http://x').search)), all.slice(1, 3))
      // A token binds the search.
      const token = new URL(first.links.find((link: Json) => link.rel === 'next').href, 'http://x').searchParams.get('token') as string
      const other = await api('reader', 'GET', `/v1/books?search=hobbit&pageSize=2&token=${token}`)
      t.equal(other.status, 400)
      t.equal(other.body.invalidParams[0].name, 'token')
    })

    t.test('rules apply: a private review is found by its owner and admins only', async t => {
      const book = bookIds.get('The Hobbit') as string
      t.equal((await api('alice', 'POST', '/v1/reviews', { body: { bookId: book, rating: 5, text: 'A secret marzipan recipe', private: true } })).status, 201)
      t.equal((await api('bob', 'POST', '/v1/reviews', { body: { bookId: book, rating: 4, text: 'Plain marzipan, public' } })).status, 201)
      const texts = async (caller: string) => (await get(caller, '/v1/reviews?search=marzipan')).data.reviews.map((review: Json) => review.text).sort()
      t.same(await texts('bob'), ['Plain marzipan, public'])
      t.same(await texts('alice'), ['A secret marzipan recipe', 'Plain marzipan, public'])
      t.same(await texts('admin'), ['A secret marzipan recipe', 'Plain marzipan, public'])
      t.same((await get('bob', '/v1/reviews?search=secret&total=true')).meta.total, 0)
      // A record without the searched text has no words: only a NOT finds it.
      t.equal((await api('bob', 'POST', '/v1/reviews', { body: { bookId: bookIds.get('The Name of the Rose'), rating: 3 } })).status, 201)
      t.same((await get('bob', '/v1/reviews?search=NOT%20marzipan')).data.reviews.map((review: Json) => [review.rating, review.text ?? null]), [[3, null]])
    })

    t.test('a malformed search is a 400 naming it, with the position', async t => {
      const cases: Array<[string, RegExp]> = [
        ['', /at position 0$/],
        ['"lord', /unterminated phrase.* at position 0$/],
        ['(lord', /expected '\)' or a term, found the end at position 5$/],
        ['lord OR', /found the end at position 7$/],
        ['AND lord', /found 'AND' at position 0$/],
        ['lord )', /found '\)' at position 5$/],
        ['NOT', /at position 3$/],
        ['lord ---', /'---' holds no letter or digit to search for at position 5$/],
        ['"  "', /the phrase holds no letter or digit to search for at position 0$/],
        ['"a \\x"', /backslash in a phrase at position 3$/],
        [`${'('.repeat(40)}a${')'.repeat(40)}`, /search nests deeper than 32 levels at position 32$/],
        [`${'NOT '.repeat(33)}a`, /search nests deeper than 32 levels at position 128$/],
        ['ab'.repeat(1001), /search is longer than 2000 characters at position 2000$/]
      ]
      for (const [text, reason] of cases) {
        for (const name of ['search', '$search']) {
          const res = await api('reader', 'GET', `/v1/books?${name}=${encodeURIComponent(text)}`)
          t.equal(res.status, 400, `${name}=${text}`)
          t.match(res.headers.get('content-type'), /^application\/problem\+json/)
          t.equal(res.body.invalidParams.length, 1)
          t.equal(res.body.invalidParams[0].name, name)
          t.match(res.body.invalidParams[0].reason, reason, `${name}=${text}: ${String(res.body.invalidParams[0].reason)}`)
        }
      }
      const both = await api('reader', 'GET', '/v1/books?search=lord&$search=lord')
      t.equal(both.status, 400)
      t.same(both.body.invalidParams.map((problem: Json) => problem.name), ['search', '$search'])
    })

    t.test('OPTIONS lists the searchable fields', async t => {
      const res = await api('reader', 'OPTIONS', '/v1/reviews')
      t.same(res.body.data.searchable, ['text'])
    })

    if (where.name === 'PostgreSQL') {
      t.test('the query reads the GIN index migrate made', async t => {
        const url = place.databaseUrl as string
        const client = new pg.Client({ connectionString: url })
        await client.connect()
        t.teardown(() => client.end())
        const [{ schema }] = (await client.query('SELECT current_schema() AS schema')).rows
        const author = (await client.query('SELECT id FROM authors LIMIT 1')).rows[0].id
        await client.query(`INSERT INTO books (id, title, "authorId", version, modified_at)
          SELECT 'x' || g, 'Filler volume ' || g, $1, 1, now() FROM generate_series(1, 5000) AS g`, [author])
        await client.query('ANALYZE books')
        const [{ collation }] = (await client.query(`SELECT COALESCE((SELECT collname FROM pg_collation WHERE collname IN ('pg_unicode_fast', 'und-x-icu')
          AND collencoding IN (-1, (SELECT encoding FROM pg_database WHERE datname = current_database())) ORDER BY collname = 'pg_unicode_fast' DESC LIMIT 1), 'default') AS collation`)).rows
        const models = buildRegistry(demoResources(memoryStore()))
        const books = models.find(model => model.name === 'books') as ResourceModel
        const tables = new Map(models.map(model => [model, resolveTable(model, schema)]))
        const compiled = compileList(tables.get(books) as ReturnType<typeof resolveTable>, {
          filter: null,
          sort: [{ field: RELEVANCE, direction: 'desc' }, { field: 'id', direction: 'asc' }],
          window: { kind: 'offset', offset: 0 },
          limit: 20,
          total: false,
          search: { node: parseSearch('tolkien OR hobbit'), fields: ['title'] }
        }, { tableOf: model => tables.get(model) as ReturnType<typeof resolveTable>, caseCollation: String(collation) })
        const { text, values } = toQuery(compiled.page)
        await client.query('BEGIN')
        await client.query('SET LOCAL enable_seqscan = off')
        const plan = (await client.query(`EXPLAIN ${text}`, values as unknown[])).rows.map(row => row['QUERY PLAN']).join('\n')
        await client.query('ROLLBACK')
        t.match(plan, /Bitmap Index Scan on books_search/, plan)
        const rows = (await client.query(text, values as unknown[])).rows
        t.equal(rows.length, 1, 'The Hobbit, among 5,000 more books')
      })
    }
  })
}

t.test('every store found the same records', async t => {
  const [first, ...others] = [...found.entries()]
  t.ok(first !== undefined && first[1].size > 20)
  for (const [name, results] of others) t.same(Object.fromEntries(results), Object.fromEntries(first[1]), `${name} as ${first[0]}`)
})

t.test('a resource without searchable fields refuses search; registration checks the fields', async t => {
  const Note = Type.Object({ id: Type.Readonly(Type.String()), text: Type.String(), size: Type.Optional(Type.Integer()) }, { additionalProperties: false })
  const app = await buildApp(t, { resources: store => [defineResource({ name: 'notes', singular: 'note', schema: Note, store })] })
  const res = await app.inject({ url: '/v1/notes?search=anything' })
  t.equal(res.statusCode, 400)
  t.same(res.json().invalidParams, [{ name: 'search', reason: 'notes has no searchable fields' }])
  const document = (await app.inject({ url: '/v1/openapi.json' })).json()
  const listParameters = JSON.stringify(document.paths['/notes'].get.parameters)
  t.match(listParameters, /filter/, 'the other parameters are listed')
  t.notMatch(listParameters, /search/, 'the document leaves search out where nothing is searchable')
  for (const searchable of [['size'], ['missing'], ['text', 'text']]) {
    t.throws(() => buildRegistry([{ name: 'notes', singular: 'note', schema: Note, searchable }]), /searchable must list string fields/, JSON.stringify(searchable))
  }
})

t.test('the document describes search where a resource has searchable fields', async t => {
  const app = await buildApp(t)
  const document = (await app.inject({ url: '/v1/openapi.json' })).json()
  t.match(JSON.stringify(document.paths['/books'].get.parameters), /search/, 'on books')
  t.match(JSON.stringify(document), /OData \$search of the searchable fields/)
})

t.test('several searchable fields: a word of any matches, and every store finds the same', async t => {
  const Letter = Type.Object({ id: Type.Readonly(Type.String()), subject: Type.String(), body: Type.Optional(Type.String()) }, { additionalProperties: false })
  const db = await openPglite()
  t.teardown(() => db.close())
  const stores = { memory: memoryStore(), PGlite: await pgliteStore({ db, schema: 'search_fields' }) }
  const answers: Record<string, string[][]> = {}
  for (const [name, store] of Object.entries(stores)) {
    const app = await buildApp(t, { store, resources: store => [defineResource({ name: 'letters', singular: 'letter', schema: Letter, store, searchable: ['subject', 'body'] })] })
    for (const letter of [{ subject: 'Harvest news', body: 'The apples are in.' }, { subject: 'Apples', body: 'None this year' }, { subject: 'No body at all' }]) {
      t.equal((await app.inject({ method: 'POST', url: '/v1/letters', payload: letter })).statusCode, 201)
    }
    const subjects = async (search: string) => (await app.inject({ url: `/v1/letters?sort=subject&search=${encodeURIComponent(search)}` })).json().data.letters.map((letter: Json) => letter.subject)
    answers[name] = [await subjects('apples'), await subjects('body'), await subjects('harvest AND apples'), await subjects('"year"')]
  }
  t.same(answers.memory, [['Apples', 'Harvest news'], ['No body at all'], ['Harvest news'], ['Apples']], 'a word of the subject or of the body; a missing body holds nothing')
  t.same(answers.PGlite, answers.memory, 'PGlite finds what the memory store finds')
})
