// Form bodies over HTTP (spec "Request headers": Content-Type allows
// application/x-www-form-urlencoded and multipart/form-data): create / replace / modify round
// trips with values typed by the schema, validation as for JSON, file parts and size limits; JSON
// text sent as a form (curl -d without a Content-Type) told apart, here and through the demo.
import t from 'tap'
import { PassThrough, Readable } from 'node:stream'
import type { FastifyRequest } from 'fastify'
import { buildApp, json, seed } from './helpers/app.js'
import { parseMultipart, parseUrlEncoded } from '../lib/formats/form.js'
import { places, placeFor } from './helpers/demo-http.js'

const urlencoded = { 'content-type': 'application/x-www-form-urlencoded' } as const
const BOUNDARY = '----form-boundary-7MA4YWxk'
const multipart = { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` } as const

type Part = readonly [name: string, value: string] | { name: string, filename: string, type: string, content: string }
/** A multipart/form-data body of plain fields and, where asked, file parts. */
function form (...parts: Part[]): string {
  const encoded = parts.map(part => Array.isArray(part)
    ? `Content-Disposition: form-data; name="${part[0]}"\r\n\r\n${part[1]}`
    : `Content-Disposition: form-data; name="${(part as { name: string }).name}"; filename="${(part as { filename: string }).filename}"\r\nContent-Type: ${(part as { type: string }).type}\r\n\r\n${(part as { content: string }).content}`)
  return encoded.map(part => `--${BOUNDARY}\r\n${part}\r\n`).join('') + `--${BOUNDARY}--\r\n`
}

t.test('urlencoded: CREATE, REPLACE and MODIFY round trip with values typed by the schema', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const created = await app.inject({ method: 'POST', url: '/v1/books', headers: urlencoded, payload: `title=Dune+%26+Co.&authorId=${authors[0].id}&year=1965&rating=4.25&available=false` })
  t.equal(created.statusCode, 201)
  const url = created.headers.location as string
  const id = url.split('/').pop()
  t.same(created.json().data.book, { id, title: 'Dune & Co.', authorId: authors[0].id, year: 1965, rating: 4.25, available: false, reviewCount: 0, averageRating: null })

  const replaced = await app.inject({ method: 'PUT', url, headers: urlencoded, payload: `id=${id}&title=Dune&authorId=${authors[1].id}&year=` })
  t.equal(replaced.statusCode, 200)
  t.same(replaced.json().data.book, { id, title: 'Dune', authorId: authors[1].id, year: null, rating: null, available: true, reviewCount: 0, averageRating: null })

  const modified = await app.inject({ method: 'PATCH', url, headers: urlencoded, payload: 'rating=5&available=false' })
  t.equal(modified.statusCode, 200)
  t.same((await app.inject({ url })).json().data.book, { id, title: 'Dune', authorId: authors[1].id, year: null, rating: 5, available: false, reviewCount: 0, averageRating: null })
})

t.test('urlencoded MODIFY: an empty value clears a nullable field; fields not sent are kept', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const url = `/v1/authors/${authors[1].id}`
  const res = await app.inject({ method: 'PATCH', url, headers: urlencoded, payload: 'country=' })
  t.equal(res.statusCode, 200)
  t.same(res.json().data.author, { id: authors[1].id, name: 'Janet Frame', born: '1924-08-28', country: null })
})

t.test('urlencoded: an invalid body gets exactly the problem the same JSON body gets', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const cases: Array<[object, string]> = [
    [{ title: 'T', authorId: authors[0].id, year: '19x', rating: 9, available: 'on', id: 'mine' }, `title=T&authorId=${authors[0].id}&year=19x&rating=9&available=on&id=mine`],
    [{ title: ['a', 'b'], authorId: authors[0].id }, `title=a&title=b&authorId=${authors[0].id}`],
    [{ title: 'T', authorId: authors[0].id, __proto__x: '1' }, `title=T&authorId=${authors[0].id}&__proto__x=1`]
  ]
  for (const [body, encoded] of cases) {
    const fromJson = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload: body })
    const fromForm = await app.inject({ method: 'POST', url: '/v1/books', headers: urlencoded, payload: encoded })
    t.equal(fromForm.statusCode, 400)
    t.same(fromForm.json(), fromJson.json(), encoded)
  }
})

t.test('urlencoded: a __proto__ field is refused by name and pollutes nothing', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const res = await app.inject({ method: 'POST', url: '/v1/books', headers: urlencoded, payload: `title=T&authorId=${authors[0].id}&__proto__=x&constructor=y` })
  t.equal(res.statusCode, 400)
  t.same(res.json().invalidParams, [{ name: '__proto__', reason: 'is not a field of this resource' }, { name: 'constructor', reason: 'is not a field of this resource' }])
  const parsed = parseUrlEncoded('__proto__=x&a=1&a=2&a=3')
  t.same(Object.keys(parsed), ['__proto__', 'a'])
  t.same(parsed.a, ['1', '2', '3'])
  t.equal(Object.getPrototypeOf(parsed), Object.prototype)
})

t.test('urlencoded over bodyLimit is 413', async t => {
  const app = await buildApp(t, { server: { bodyLimit: 500 } })
  const res = await app.inject({ method: 'POST', url: '/v1/authors', headers: urlencoded, payload: `name=${'x'.repeat(600)}` })
  t.equal(res.statusCode, 413)
  t.match(res.json(), { type: '/v1/problems/body-too-large' })
})

// What `curl -d '{"name":"X"}'` sends: JSON text under curl's default Content-Type.
const jsonAsForm = {
  type: '/v1/problems/body-malformed',
  title: 'Bad Request',
  status: 400,
  detail: 'The request body could not be parsed: it is JSON, sent as a form (Content-Type: application/x-www-form-urlencoded, what curl -d sends unless told otherwise); send it with Content-Type: application/json',
  invalidParams: [{ name: 'body', reason: 'is JSON text, not form fields; send Content-Type: application/json' }]
}

t.test('urlencoded: a body that is JSON is a 400 saying so and naming the Content-Type to send', async t => {
  const app = await buildApp(t)
  const { authors, books } = await seed(app)
  const cases: Array<[method: string, url: string, body: string]> = [
    ['POST', '/v1/authors', '{"name":"X"}'],
    ['POST', '/v1/authors', '\n  { "name": "X", "country": "NZ" }\n'],
    ['POST', '/v1/authors', '[{"name":"X"}]'],
    ['PUT', `/v1/authors/${authors[0].id}`, `{"id":"${authors[0].id}","name":"X"}`],
    ['PATCH', `/v1/books/${books[0].id}`, '{"rating":5}']
  ]
  const book = (await app.inject({ url: `/v1/books/${books[0].id}` })).json().data.book
  for (const [method, url, payload] of cases) {
    const res = await app.inject({ method: method as 'POST', url, headers: urlencoded, payload })
    t.equal(res.statusCode, 400, `${method} ${JSON.stringify(payload)}`)
    t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
    t.same(res.json(), { ...jsonAsForm, instance: url })
  }
  t.equal((await app.inject({ url: '/v1/authors' })).json().data.authors.length, authors.length, 'nothing created')
  t.same((await app.inject({ url: `/v1/books/${books[0].id}` })).json().data.book, book, 'nothing modified')
  t.equal((await app.inject({ url: `/v1/authors/${authors[0].id}` })).json().data.author.name, authors[0].name, 'nothing replaced')
  // The same text as JSON is what the client meant.
  t.equal((await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: '{"name":"X"}' })).statusCode, 201)
})

t.test('urlencoded: form bodies that hold JSON text, or only look like it, are read as forms as before', async t => {
  const app = await buildApp(t)
  // A JSON value in a field; percent-encoded JSON (what a form encoder makes of it) is a field name.
  const valued = await app.inject({ method: 'POST', url: '/v1/authors', headers: urlencoded, payload: `name=${encodeURIComponent('{"a":1}')}` })
  t.equal(valued.statusCode, 201)
  t.equal(valued.json().data.author.name, '{"a":1}')
  for (const payload of [encodeURIComponent('{"name":"X"}'), '{name=X', '{"name":"X"']) {
    const res = await app.inject({ method: 'POST', url: '/v1/authors', headers: urlencoded, payload })
    t.equal(res.statusCode, 400, payload)
    t.same(res.json().invalidParams, [{ name: 'name', reason: 'is required' }, { name: new URLSearchParams(payload).keys().next().value, reason: 'is not a field of this resource' }])
  }
  t.same(parseUrlEncoded('{"a"=1&b=2'), { '{"a"': '1', b: '2' })
  t.throws(() => parseUrlEncoded(' {"a":1}'), { code: 'API_ERR_BODY_MALFORMED' })
})

t.test('JSON sent as a form to the demo over HTTP: the 400 that says what to send', async t => {
  const { start } = await placeFor(t, places('form-json')[0])
  const { api } = await start()
  const answer = await api('dev', 'POST', '/v1/authors', { body: '{"name":"X"}', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  t.equal(answer.status, 400)
  t.equal(answer.headers.get('content-type'), 'application/problem+json; charset=utf-8')
  t.same(answer.body, { ...jsonAsForm, instance: '/v1/authors' })
  const sent = await api('dev', 'POST', '/v1/authors', { body: '{"name":"X"}' })
  t.equal(sent.status, 201, 'with Content-Type: application/json it is created')
  // A real form still creates.
  const form = await api('dev', 'POST', '/v1/authors', { body: 'name=Y&country=NZ', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  t.same([form.status, form.body.data.author.name, form.body.data.author.country], [201, 'Y', 'NZ'])
})

t.test('multipart: CREATE, REPLACE and MODIFY round trip with fields typed by the schema', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const created = await app.inject({ method: 'POST', url: '/v1/books', headers: multipart, payload: form(['title', 'Ünïcödé & co'], ['authorId', authors[2].id], ['year', '1968'], ['rating', ''], ['available', 'false']) })
  t.equal(created.statusCode, 201)
  const url = created.headers.location as string
  const id = url.split('/').pop()
  t.same(created.json().data.book, { id, title: 'Ünïcödé & co', authorId: authors[2].id, year: 1968, rating: null, available: false, reviewCount: 0, averageRating: null })

  const replaced = await app.inject({ method: 'PUT', url, headers: multipart, payload: form(['title', 'His Master\'s Voice'], ['authorId', authors[2].id], ['rating', '3.9']) })
  t.equal(replaced.statusCode, 200)
  t.same(replaced.json().data.book, { id, title: 'His Master\'s Voice', authorId: authors[2].id, year: null, rating: 3.9, available: true, reviewCount: 0, averageRating: null })

  const modified = await app.inject({ method: 'PATCH', url, headers: multipart, payload: form(['year', '1968']) })
  t.equal(modified.statusCode, 200)
  t.same((await app.inject({ url })).json().data.book, { id, title: 'His Master\'s Voice', authorId: authors[2].id, year: 1968, rating: 3.9, available: true, reviewCount: 0, averageRating: null })
})

t.test('multipart: an invalid body gets exactly the problem the same JSON body gets', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const fromJson = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload: { title: '', authorId: authors[0].id, year: 1.5, extra: 'x' } })
  const fromForm = await app.inject({ method: 'POST', url: '/v1/books', headers: multipart, payload: form(['title', ''], ['authorId', authors[0].id], ['year', '1.5'], ['extra', 'x']) })
  t.equal(fromForm.statusCode, 400)
  t.same(fromForm.json(), fromJson.json())
})

t.test('multipart: a file part is refused with 400 naming the part', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const res = await app.inject({
    method: 'POST',
    url: '/v1/books',
    headers: multipart,
    payload: form(['title', 'T'], ['authorId', authors[0].id], { name: 'cover', filename: 'cover.png', type: 'image/png', content: 'PNG…' }, { name: 'back', filename: 'b.png', type: 'image/png', content: 'PNG…' })
  })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { type: '/v1/problems/body-invalid', invalidParams: [{ name: 'cover', reason: 'is a file part; this resource accepts plain fields only' }] })
  t.equal((await app.inject({ url: '/v1/books' })).json().data.books.length, 4, 'nothing created')
})

t.test('multipart over bodyLimit is 413, by Content-Length or by the bytes that arrive', async t => {
  const app = await buildApp(t, { server: { bodyLimit: 1000 } })
  const big = form(['name', 'x'.repeat(3000)])
  const declared = await app.inject({ method: 'POST', url: '/v1/authors', headers: multipart, payload: big })
  t.equal(declared.statusCode, 413)
  t.match(declared.json(), { type: '/v1/problems/body-too-large', detail: 'The request body is larger than 1000 bytes.' })
  // Streamed without Content-Length: counted as it arrives.
  const streamed = await app.inject({ method: 'POST', url: '/v1/authors', headers: multipart, payload: Readable.from([big.slice(0, 600), big.slice(600)]) })
  t.equal(streamed.statusCode, 413)
  t.equal((await app.inject({ url: '/v1/authors' })).json().data.authors.length, 0, 'nothing created')
})

t.test('malformed multipart is 400 API_ERR_BODY_MALFORMED', async t => {
  const app = await buildApp(t)
  const noBoundary = await app.inject({ method: 'POST', url: '/v1/authors', headers: { 'content-type': 'multipart/form-data' }, payload: 'name=x' })
  t.equal(noBoundary.statusCode, 400)
  t.match(noBoundary.json(), { type: '/v1/problems/body-malformed', detail: /Boundary not found/ })
  const truncated = await app.inject({ method: 'POST', url: '/v1/authors', headers: multipart, payload: `--${BOUNDARY}\r\nContent-Disposition: form-data; name="name"\r\n\r\nN` })
  t.equal(truncated.statusCode, 400)
  t.match(truncated.json(), { type: '/v1/problems/body-malformed', detail: /Unexpected end of multipart data/ })
})

t.test('a failing request stream rejects the multipart parse with its error', async t => {
  const payload = new PassThrough()
  const request = { headers: multipart, routeOptions: { bodyLimit: 1000 } } as unknown as FastifyRequest
  const parsing = parseMultipart(request, payload)
  payload.write(`--${BOUNDARY}\r\n`)
  payload.emit('error', new Error('connection reset'))
  await t.rejects(parsing, { message: 'connection reset' })
})
