// The one error path (spec "Errors" 1, 2, 6; "Response envelope" → errors): every failure leaves as
// application/problem+json with type, title, status, detail and instance, flat or under `errors`;
// 5xx bodies never leak internals; each type is documented.
import t from 'tap'
import { Writable } from 'node:stream'
import { memoryStore } from '../lib/index.js'
import type { Store } from '../lib/index.js'
import { StoreUnavailableError, problemDescriptions, problemSlug, withHeaders } from '../lib/errors.js'
import { buildApp, create, json, pick, seed } from './helpers/app.js'

const PROBLEM = 'application/problem+json; charset=utf-8'

/** A memory store whose `get` fails with the given error. */
function failingStore (error: Error): Store {
  return { ...memoryStore(), get: async () => { throw error } }
}

/** A logger stream that keeps every line, to prove what the server logged. */
function logSink () {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write (chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)))
      done()
    }
  })
  return { lines, logger: { level: 'error', stream } }
}

t.test('a schema violation answers 400 with one invalidParams entry per field', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload: { title: '', year: 'x', rating: 9, extra: 1 } })
  t.equal(res.statusCode, 400)
  t.equal(res.headers['content-type'], PROBLEM)
  t.same(res.json(), {
    type: '/v1/problems/body-invalid',
    title: 'Bad Request',
    status: 400,
    detail: 'The request body does not match the resource schema.',
    instance: '/v1/books',
    invalidParams: [
      { name: 'authorId', reason: 'is required' },
      { name: 'extra', reason: 'is not a field of this resource' },
      { name: 'title', reason: 'must NOT have fewer than 1 characters' },
      { name: 'year', reason: 'must be integer or must be null' },
      { name: 'rating', reason: 'must be <= 5 or must be null' }
    ]
  })
})

t.test('an escaped lone surrogate in a JSON body is a 400 naming the field, never stored as U+FFFD', async t => {
  const app = await buildApp(t)
  for (const [payload, name] of [['{"title":"a\\ud800","authorId":"x"}', 'title'], ['{"title":"ok","authorId":"\\udc00"}', 'authorId'], ['{"title":"x","\\ud83d":1}', '\ud83d']]) {
    const res = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload })
    t.same({ status: res.statusCode, type: res.headers['content-type'] }, { status: 400, type: PROBLEM }, payload)
    t.match(res.json(), { type: '/v1/problems/body-invalid', invalidParams: [{ name, reason: /lone surrogate/ }] })
  }
  // A proper pair, escaped or not, is text: the request goes on to the schema and the store.
  const pair = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload: '{"title":"\\ud83d\\ude00 😀"}' })
  t.match(pair.json(), { status: 400, invalidParams: [{ name: 'authorId', reason: 'is required' }] })
})

t.test('NUL in a body is a 400 naming the field, in any format, so every store answers alike', async t => {
  const app = await buildApp(t)
  const cases: Array<[string, string, string]> = [
    ['application/json', '{"title":"a\\u0000b","authorId":"x"}', 'title'],
    ['application/json', '{"title":"ok","\\u0000":1}', '\u0000'],
    ['application/x-www-form-urlencoded', 'title=a%00b&authorId=x', 'title'],
    ['application/json', '"a\\u0000"', '(body)']
  ]
  for (const [type, payload, name] of cases) {
    const res = await app.inject({ method: 'POST', url: '/v1/books', headers: { 'content-type': type }, payload })
    t.same({ status: res.statusCode, type: res.headers['content-type'] }, { status: 400, type: PROBLEM }, `${type} ${payload}`)
    t.match(res.json(), { type: '/v1/problems/body-invalid', invalidParams: [{ name, reason: /NUL/ }] })
  }
  t.equal((await app.inject({ url: '/v1/books' })).json().data.books.length, 0, 'nothing was stored')
})

t.test('a number too large for a double is a 400 naming the field, in any format; it used to be stored as Infinity', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const cases: Array<[string, string]> = [
    ['application/json', `{"title":"t","authorId":"${authors[0].id}","year":1e400}`],
    ['application/json', `{"title":"t","authorId":"${authors[0].id}","year":-${'9'.repeat(400)}}`],
    ['application/x-www-form-urlencoded', `title=t&authorId=${authors[0].id}&year=1e400`],
    ['application/xml', `<book><title>t</title><authorId>${authors[0].id}</authorId><year>1e400</year></book>`]
  ]
  for (const [type, payload] of cases) {
    const res = await app.inject({ method: 'POST', url: '/v1/books', headers: { 'content-type': type }, payload })
    t.same({ status: res.statusCode, type: res.headers['content-type'] }, { status: 400, type: PROBLEM }, `${type} ${payload.slice(0, 80)}`)
    t.match(res.json(), { invalidParams: [{ name: 'year' }] }, type)
  }
  const before = (await app.inject({ url: '/v1/books?total=true' })).json().meta.total
  // A three-digit exponent a double holds only sends the body through the walk.
  const tiny = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload: `{"title":"t","authorId":"${authors[0].id}","rating":1e-308}` })
  t.equal(tiny.statusCode, 201)
  const unsafe = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload: `{"title":"t","authorId":"${authors[0].id}","year":9007199254740993}` })
  t.same({ status: unsafe.statusCode, invalidParams: unsafe.json().invalidParams }, { status: 422, invalidParams: [{ name: 'year', reason: 'must be an integer between -(2^53 - 1) and 2^53 - 1' }] }, 'as the SQL stores answer')
  t.equal((await app.inject({ url: '/v1/books?total=true' })).json().meta.total, before + 1, 'only the finite one was stored')
  t.equal((await app.inject({ url: '/v1/books' })).statusCode, 200, 'LIST still works')
})

t.test('an object nested 100,000 deep is a 400 problem, not a stack overflow, with or without NUL at the bottom', async t => {
  const app = await buildApp(t)
  for (const leaf of ['1', '"\\u0000"']) {
    const payload = '{"title":"x","authorId":"y","extra":' + '{"a":'.repeat(100_000) + leaf + '}'.repeat(100_001)
    const res = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload })
    t.same({ status: res.statusCode, type: res.headers['content-type'] }, { status: 400, type: PROBLEM }, leaf)
  }
})

t.test('a body that is not an object answers 400 naming the body', async t => {
  const app = await buildApp(t)
  for (const payload of ['[]', '"text"', 'null', '3']) {
    const res = await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload })
    t.same({ status: res.statusCode, invalidParams: res.json().invalidParams }, { status: 400, invalidParams: [{ name: '(body)', reason: 'must be object' }] }, payload)
  }
})

t.test('a nested field error names the field by its dotted path', async t => {
  const { Type } = await import('@sinclair/typebox')
  const { defineResource } = await import('../lib/index.js')
  const Place = Type.Object({
    id: Type.Readonly(Type.String()),
    position: Type.Object({ lat: Type.Number(), lon: Type.Number() }, { additionalProperties: false })
  }, { additionalProperties: false })
  const app = await buildApp(t, { resources: store => [defineResource({ name: 'places', singular: 'place', schema: Place, store })] })
  const res = await app.inject({ method: 'POST', url: '/v1/places', headers: json, payload: { position: { lat: 'north' } } })
  t.same(res.json().invalidParams, [{ name: 'position.lon', reason: 'is required' }, { name: 'position.lat', reason: 'must be number' }])
})

t.test('a body over the server\'s bodyLimit answers a 413 problem', async t => {
  const app = await buildApp(t, { server: { bodyLimit: 64 } })
  const res = await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: { name: 'x'.repeat(100) } })
  t.equal(res.statusCode, 413)
  t.same(res.json(), { type: '/v1/problems/body-too-large', title: 'Payload Too Large', status: 413, detail: 'Request body is too large', instance: '/v1/authors' })
})

for (const method of ['POST', 'PUT', 'PATCH'] as const) {
  t.test(`${method} without Content-Type answers a 415 problem`, async t => {
    const app = await buildApp(t)
    const res = await app.inject({ method, url: method === 'POST' ? '/v1/authors' : '/v1/authors/x', payload: '{"name":"N"}' })
    t.equal(res.statusCode, 415)
    t.same(pick(res.headers, 'content-type'), { 'content-type': PROBLEM })
    // The full list grows with the wire formats (spec "Request headers": Content-Type); JSON is
    // always in it, merge patches on PATCH.
    t.match(res.json(), { type: '/v1/problems/unsupported-media-type', status: 415, detail: /^Content-Type is required; send one of: .*application\/json/ })
    t.same(res.json().invalidParams, [{ name: 'Content-Type', reason: 'is required with a body' }])
    t.equal(res.json().detail.includes('application/merge-patch+json'), method === 'PATCH')
  })
}

t.test('an unsupported Content-Type answers a 415 problem naming the accepted types', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ method: 'POST', url: '/v1/authors', headers: { 'content-type': 'text/plain' }, payload: 'name=N' })
  t.equal(res.statusCode, 415)
  t.match(res.json().detail, /^Content-Type text\/plain is not accepted here; send one of: .*application\/json/)
  t.same(res.json().invalidParams, [{ name: 'Content-Type', reason: 'text/plain is not accepted here' }])
})

for (const method of ['POST', 'PUT'] as const) {
  t.test(`application/merge-patch+json on ${method} answers 415: merge patches are for PATCH only`, async t => {
    const app = await buildApp(t)
    const { authors } = await seed(app)
    const res = await app.inject({ method, url: method === 'POST' ? '/v1/authors' : `/v1/authors/${authors[0].id}`, headers: { 'content-type': 'application/merge-patch+json' }, payload: { name: 'N' } })
    t.equal(res.statusCode, 415)
  })
}

t.test('a body with a Content-Type on DELETE answers 415 when no parser takes it', async t => {
  const app = await buildApp(t)
  const author = await create(app, 'authors', { name: 'N' })
  const res = await app.inject({ method: 'DELETE', url: `/v1/authors/${author.id}`, headers: { 'content-type': 'text/plain' }, payload: 'x' })
  t.same({ status: res.statusCode, type: res.json().type, invalidParams: res.json().invalidParams }, {
    status: 415,
    type: '/v1/problems/unsupported-media-type',
    invalidParams: [{ name: 'Content-Type', reason: 'no body of this media type is accepted here' }]
  })
  t.equal((await app.inject({ url: `/v1/authors/${author.id}` })).statusCode, 200)
})

t.test('malformed JSON answers a 400 problem', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: '{"name":' })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { type: '/v1/problems/body-malformed', title: 'Bad Request', status: 400, instance: '/v1/authors' })
})

t.test('an empty JSON body answers a 400 problem', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: '' })
  t.same({ status: res.statusCode, type: res.json().type }, { status: 400, type: '/v1/problems/body-malformed' })
})

for (const payload of ['{"__proto__":{"admin":true},"name":"N"}', '{"constructor":{"prototype":{"admin":true}},"name":"N"}']) {
  t.test(`a prototype-poisoning body answers 400, not 500: ${payload}`, async t => {
    const app = await buildApp(t)
    const res = await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload })
    t.same({ status: res.statusCode, type: res.json().type }, { status: 400, type: '/v1/problems/body-malformed' })
    t.equal(({} as Record<string, unknown>).admin, undefined)
  })
}

t.test('an Accept the server cannot satisfy answers a 406 problem', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ url: '/v1/books', headers: { accept: 'text/html' } })
  t.equal(res.statusCode, 406)
  t.match(res.json(), {
    type: '/v1/problems/not-acceptable',
    title: 'Not Acceptable',
    status: 406,
    detail: /^None of the media types in Accept can be produced; available: .*application\/json/,
    instance: '/v1/books'
  })
})

t.test('an Accept that refuses JSON by quality answers 406', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ url: '/v1/books', headers: { accept: 'text/html, application/json;q=0' } })
  t.equal(res.statusCode, 406)
})

for (const accept of [undefined, '*/*', 'application/json', 'application/*', 'text/html, application/json;q=0.5', 'application/json; charset=utf-8']) {
  t.test(`Accept ${String(accept)} gets JSON`, async t => {
    const app = await buildApp(t)
    const res = await app.inject({ url: '/v1/books', headers: accept === undefined ? {} : { accept } })
    t.same({ status: res.statusCode, type: res.headers['content-type'] }, { status: 200, type: 'application/json; charset=utf-8' })
  })
}

t.test('an unexpected store error answers 500 with a generic detail and logs it in full', async t => {
  const sink = logSink()
  const app = await buildApp(t, { store: failingStore(new Error('connection to db.internal:5432 refused')), server: { logger: sink.logger } })
  const res = await app.inject({ url: '/v1/books/some-id' })
  t.equal(res.statusCode, 500)
  t.same(res.json(), {
    type: '/v1/problems/internal',
    title: 'Internal Server Error',
    status: 500,
    detail: 'An unexpected error occurred.',
    instance: '/v1/books/some-id'
  })
  t.notMatch(res.body, /db\.internal|stack|Error:|at /)
  t.match(sink.lines, [{ level: 50, msg: 'request failed', err: { message: 'connection to db.internal:5432 refused' } }])
})

t.test('an error carrying a non-error status is a generic 500, not its message', async t => {
  const error = Object.assign(new Error('redirect to /secret'), { statusCode: 302 })
  const app = await buildApp(t, { store: failingStore(error) })
  const res = await app.inject({ url: '/v1/books/some-id' })
  t.same({ status: res.statusCode, detail: res.json().detail }, { status: 500, detail: 'An unexpected error occurred.' })
})

t.test('StoreUnavailableError answers a 503 problem with its headers', async t => {
  const app = await buildApp(t, { store: failingStore(withHeaders(new StoreUnavailableError(), { 'retry-after': '5' })) })
  const res = await app.inject({ url: '/v1/books/some-id' })
  t.equal(res.statusCode, 503)
  t.same(pick(res.headers, 'retry-after', 'content-type'), { 'retry-after': '5', 'content-type': PROBLEM })
  t.same(res.json(), {
    type: '/v1/problems/store-unavailable',
    title: 'Service Unavailable',
    status: 503,
    detail: 'The data store is unavailable; retry later.',
    instance: '/v1/books/some-id'
  })
})

t.test('a foreign 503 keeps the catalogue detail, never its own message', async t => {
  const error = Object.assign(new Error('pool exhausted on 10.0.0.7'), { statusCode: 503 })
  const app = await buildApp(t, { store: failingStore(error) })
  const res = await app.inject({ url: '/v1/books/some-id' })
  t.same({ status: res.statusCode, type: res.json().type, detail: res.json().detail }, { status: 503, type: '/v1/problems/service-unavailable', detail: 'The service is unavailable (for example shutting down); retry later.' })
})

t.test('a foreign 4xx with a catalogue status takes that status\'s type', async t => {
  const error = Object.assign(new Error('no such thing'), { statusCode: 409 })
  const app = await buildApp(t, { store: failingStore(error) })
  const res = await app.inject({ url: '/v1/books/some-id' })
  t.same(res.json(), { type: '/v1/problems/conflict', title: 'Conflict', status: 409, detail: 'no such thing', instance: '/v1/books/some-id' })
})

t.test('a foreign 4xx without a catalogue entry is typed about:blank', async t => {
  const error = Object.assign(new Error('short and stout'), { statusCode: 418 })
  const app = await buildApp(t, { store: failingStore(error) })
  const res = await app.inject({ url: '/v1/books/some-id' })
  t.same(res.json(), { type: 'about:blank', title: "I'm a Teapot", status: 418, detail: 'short and stout', instance: '/v1/books/some-id' })
})

t.test('a status without a standard reason phrase is titled Error', async t => {
  const error = Object.assign(new Error('client closed'), { statusCode: 499 })
  const app = await buildApp(t, { store: failingStore(error) })
  const res = await app.inject({ url: '/v1/books/some-id' })
  t.match(res.json(), { type: 'about:blank', title: 'Error', status: 499 })
})

t.test('instance is the path without the query string', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ url: '/v1/books/none?fields=title' })
  t.equal(res.json().instance, '/v1/books/none')
})

t.test('errorFormat envelope puts the members under errors and nothing else at the top', async t => {
  const app = await buildApp(t, { errorFormat: 'envelope' })
  const res = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload: { title: 'T' } })
  t.equal(res.statusCode, 400)
  t.equal(res.headers['content-type'], PROBLEM)
  t.same(res.json(), {
    errors: {
      type: '/v1/problems/body-invalid',
      title: 'Bad Request',
      status: 400,
      detail: 'The request body does not match the resource schema.',
      instance: '/v1/books',
      invalidParams: [{ name: 'authorId', reason: 'is required' }]
    }
  })
})

t.test('errorFormat envelope also shapes 404, 405 and 500', async t => {
  const app = await buildApp(t, { errorFormat: 'envelope', store: failingStore(new Error('boom')) })
  const notFound = await app.inject({ url: '/v1/nothing' })
  const notAllowed = await app.inject({ method: 'DELETE', url: '/v1/books' })
  const failed = await app.inject({ url: '/v1/books/x' })
  t.same(Object.keys(notFound.json()), ['errors'])
  t.match(notFound.json(), { errors: { status: 404, type: '/v1/problems/not-found' } })
  t.same({ allow: notAllowed.headers.allow, keys: Object.keys(notAllowed.json()), status: notAllowed.json().errors.status }, { allow: 'GET, HEAD, POST, OPTIONS', keys: ['errors'], status: 405 })
  t.same(failed.json(), { errors: { type: '/v1/problems/internal', title: 'Internal Server Error', status: 500, detail: 'An unexpected error occurred.', instance: '/v1/books/x' } })
})

t.test('problemTypeBase sets the type URLs and the plugin serves no pages of its own', async t => {
  const app = await buildApp(t, { problemTypeBase: 'https://docs.example.com/problems#' })
  const res = await app.inject({ url: '/v1/nothing' })
  t.equal(res.json().type, 'https://docs.example.com/problems#not-found')
  t.equal((await app.inject({ url: '/v1/problems/not-found' })).statusCode, 404)
})

for (const [code, description] of Object.entries(problemDescriptions)) {
  t.test(`the type page of ${code} answers 200 HTML describing it`, async t => {
    const app = await buildApp(t)
    const res = await app.inject({ url: `/v1/problems/${problemSlug(code)}` })
    t.equal(res.statusCode, 200)
    t.equal(res.headers['content-type'], 'text/html; charset=utf-8')
    t.match(res.body, `<h1>${code}</h1>`)
    t.match(res.body, description.replaceAll("'", '&#39;').slice(0, 40))
  })
}

for (const url of ['/v1/problems', '/v1/problems/']) {
  t.test(`${url} lists every problem type with a link to its page`, async t => {
    const app = await buildApp(t)
    const res = await app.inject({ url })
    t.equal(res.statusCode, 200)
    t.equal(res.headers['content-type'], 'text/html; charset=utf-8')
    for (const code of Object.keys(problemDescriptions)) t.match(res.body, `<a href="/v1/problems/${problemSlug(code)}"><code>${code}</code></a>`)
  })
}

for (const accept of ['text/html', '*/*', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8']) {
  t.test(`a type page answers Accept: ${accept}`, async t => {
    const app = await buildApp(t)
    const res = await app.inject({ url: '/v1/problems/not-found', headers: { accept } })
    t.same({ status: res.statusCode, type: res.headers['content-type'] }, { status: 200, type: 'text/html; charset=utf-8' })
  })
}

t.test('a type page answers 406 to a client that accepts only JSON', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ url: '/v1/problems/not-found', headers: { accept: 'application/json' } })
  t.same({ status: res.statusCode, detail: res.json().detail }, { status: 406, detail: 'None of the media types in Accept can be produced; available: text/html.' })
})

t.test('an unknown problem type answers a 404 problem', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ url: '/v1/problems/no-such-type' })
  t.same({ status: res.statusCode, type: res.headers['content-type'] }, { status: 404, type: PROBLEM })
})
