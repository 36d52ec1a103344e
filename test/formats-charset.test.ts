// Text bodies are UTF-8 (spec "Errors" 6; RFC 8259 §8.1): a Content-Type whose
// charset names another encoding is 415 problem+json naming Content-Type, before the body is
// read, in every text format; UTF-8 in any spelling is read.
import t from 'tap'
import { buildApp, pick, seed } from './helpers/app.js'

const bodies: ReadonlyArray<[type: string, method: 'POST' | 'PATCH', payload: (authorId: string) => string]> = [
  ['application/json', 'POST', authorId => JSON.stringify({ title: 'Été', authorId })],
  ['application/merge-patch+json', 'PATCH', () => JSON.stringify({ title: 'Été' })],
  ['application/xml', 'POST', authorId => `<book><title>Été</title><authorId>${authorId}</authorId></book>`],
  ['application/x-www-form-urlencoded', 'POST', authorId => `title=%C3%89t%C3%A9&authorId=${authorId}`]
]

t.test('a text body in another charset is 415 naming Content-Type, and nothing is written', async t => {
  const app = await buildApp(t)
  const { authors, books } = await seed(app)
  for (const [type, method, payload] of bodies) {
    for (const charset of ['iso-8859-1', 'UTF-16', '"windows-1252"']) {
      const url = method === 'POST' ? '/v1/books' : `/v1/books/${books[0].id}`
      const res = await app.inject({ method, url, headers: { 'content-type': `${type}; charset=${charset}` }, payload: payload(authors[0].id) })
      const named = charset.replaceAll('"', '').toLowerCase()
      t.same(pick(res.headers, 'content-type'), { 'content-type': 'application/problem+json; charset=utf-8' }, `${type} ${charset}`)
      t.same({ status: res.statusCode, ...res.json() }, {
        status: 415,
        type: '/v1/problems/unsupported-media-type',
        title: 'Unsupported Media Type',
        detail: `Request bodies must be UTF-8; received charset=${named}.`,
        instance: url,
        invalidParams: [{ name: 'Content-Type', reason: `charset ${named} is not accepted; send UTF-8` }]
      }, `${type} ${charset}`)
    }
  }
  const list = await app.inject({ url: '/v1/books?total=true' })
  t.equal(list.json().meta.total, books.length, 'no book was created')
  t.equal((await app.inject({ url: `/v1/books/${books[0].id}` })).json().data.book.title, books[0].title, 'none was changed')
})

t.test('charset=utf-8 in any case, utf8 and us-ascii are read', async t => {
  const app = await buildApp(t)
  const { authors, books } = await seed(app)
  for (const [type, method, payload] of bodies) {
    for (const charset of ['utf-8', 'UTF-8', '"Utf-8"', 'utf8', 'us-ascii']) {
      const url = method === 'POST' ? '/v1/books' : `/v1/books/${books[0].id}`
      const res = await app.inject({ method, url, headers: { 'content-type': `${type};charset=${charset}` }, payload: payload(authors[0].id) })
      t.equal(res.statusCode, method === 'POST' ? 201 : 200, `${type} ${charset}`)
      t.equal(res.json().data.book.title, 'Été', `${type} ${charset}`)
    }
  }
})

t.test('the charset is checked on every method that may carry a body, never on GET', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const latin = { 'content-type': 'application/json; charset=latin1' }
  const remove = await app.inject({ method: 'DELETE', url: `/v1/books/${books[0].id}`, headers: latin, payload: '{}' })
  t.same([remove.statusCode, remove.json().invalidParams], [415, [{ name: 'Content-Type', reason: 'charset latin1 is not accepted; send UTF-8' }]])
  t.equal((await app.inject({ method: 'OPTIONS', url: '/v1/books', headers: latin, payload: '{}' })).statusCode, 415)
  t.equal((await app.inject({ url: `/v1/books/${books[0].id}`, headers: latin })).statusCode, 200, 'GET reads no body')
  t.equal((await app.inject({ url: `/v1/books/${books[0].id}` })).statusCode, 200, 'DELETE did nothing')
})

t.test('bytes that are not UTF-8 are a 400 in every text format, never stored as U+FFFD', async t => {
  const app = await buildApp(t)
  const { authors, books } = await seed(app)
  const latin1 = (text: string) => Buffer.from(text, 'latin1')
  for (const [type, payload] of [
    ['application/json', latin1(JSON.stringify({ title: 'Été', authorId: authors[0].id }))],
    ['application/xml', latin1(`<book><title>Été</title><authorId>${authors[0].id}</authorId></book>`)],
    ['application/x-www-form-urlencoded', Buffer.concat([Buffer.from('title='), latin1('Été'), Buffer.from(`&authorId=${authors[0].id}`)])]
  ] as const) {
    const res = await app.inject({ method: 'POST', url: '/v1/books', headers: { 'content-type': type }, payload })
    t.same({ status: res.statusCode, type: res.json().type, detail: res.json().detail }, { status: 400, type: '/v1/problems/body-malformed', detail: 'The request body could not be parsed: it is not valid UTF-8' }, type)
  }
  t.equal((await app.inject({ url: '/v1/books?total=true' })).json().meta.total, books.length, 'nothing was stored')
})
