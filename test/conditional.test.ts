// Conditional requests through HTTP (spec "Request headers" If-Match /
// If-None-Match, "Errors" 4, 5, 7; RFC 9110 §13): strong ETags from the stored version, 304 on
// If-None-Match / If-Modified-Since, 412 on If-Match / If-Unmodified-Since, 428 when If-Match is
// required, §13.2.2 precedence, and nothing written when a precondition stops a request.
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { demoResources } from '../demo/schemas/index.js'
import { buildApp, json, pick, seed, testClock } from './helpers/app.js'

const T0 = 'Wed, 01 May 2024 12:00:00 GMT'
const BEFORE = 'Wed, 01 May 2024 11:59:59 GMT'
const AFTER = 'Wed, 01 May 2024 12:00:01 GMT'

/** The resource as a client sees it now: ETag, Last-Modified and body. */
async function readBack (app: FastifyInstance, url: string) {
  const res = await app.inject({ url })
  return { status: res.statusCode, etag: res.headers.etag, lastModified: res.headers['last-modified'], body: res.body }
}

async function oneBook (t: Parameters<typeof buildApp>[0], overrides: Parameters<typeof buildApp>[1] = {}) {
  const app = await buildApp(t, overrides)
  const { books } = await seed(app)
  return { app, url: `/v1/books/${books[0].id}`, book: books[0] }
}

const writes = ['PUT', 'PATCH', 'DELETE'] as const

/** A write request for `method` at `url`; PUT keeps the book's author. */
function write (method: typeof writes[number], url: string, book: Record<string, unknown>, headers: Record<string, string>) {
  const payload = method === 'PUT' ? { title: 'Replaced', authorId: book.authorId } : method === 'PATCH' ? { title: 'Patched' } : undefined
  return { method, url, headers: payload === undefined ? headers : { ...json, ...headers }, payload }
}

t.test('ETag is strong and counts the writes: "1" on CREATE, "2" after PUT, "3" after PATCH', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const created = await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: { name: 'N' } })
  const url = created.headers.location as string
  const put = await app.inject({ method: 'PUT', url, headers: json, payload: { name: 'M' } })
  const patch = await app.inject({ method: 'PATCH', url, headers: json, payload: { country: 'FR' } })
  const get = await app.inject({ url })
  const head = await app.inject({ method: 'HEAD', url })
  t.same([created, put, patch, get, head].map(r => r.headers.etag), ['"1"', '"2"', '"3"', '"3"', '"3"'])
  // Per resource: another author still at its first version.
  t.equal((await app.inject({ url: `/v1/authors/${authors[0].id}` })).headers.etag, '"1"')
})

t.test('Last-Modified follows the store\'s clock on every write', async t => {
  const clock = testClock()
  const { app, url } = await oneBook(t, { clock })
  clock.advance(90_000)
  const patch = await app.inject({ method: 'PATCH', url, headers: json, payload: { year: 2001 } })
  t.equal(patch.headers['last-modified'], 'Wed, 01 May 2024 12:01:30 GMT')
  t.equal((await readBack(app, url)).lastModified, 'Wed, 01 May 2024 12:01:30 GMT')
})

t.test('a collection carries no ETag', async t => {
  const app = await buildApp(t)
  await seed(app)
  const res = await app.inject({ url: '/v1/books' })
  t.same(pick(res.headers, 'etag', 'last-modified'), { etag: undefined, 'last-modified': undefined })
})

for (const [name, value] of [
  ['the current ETag', '"1"'],
  ['a list holding the current ETag', '"7", "1"'],
  ['*', '*'],
  ['the weak form of the current ETag', 'W/"1"']
] as const) {
  for (const method of ['GET', 'HEAD'] as const) {
    t.test(`If-None-Match with ${name} answers ${method} with 304, ETag, Last-Modified and no body`, async t => {
      const { app, url } = await oneBook(t)
      const res = await app.inject({ method, url, headers: { 'if-none-match': value } })
      t.equal(res.statusCode, 304)
      t.same(pick(res.headers, 'etag', 'last-modified'), { etag: '"1"', 'last-modified': T0 })
      t.equal(res.body, '')
    })
  }
}

t.test('If-None-Match with another ETag answers 200 with the resource', async t => {
  const { app, url, book } = await oneBook(t)
  const res = await app.inject({ url, headers: { 'if-none-match': '"2", W/"3"' } })
  t.same({ status: res.statusCode, book: res.json().data.book }, { status: 200, book })
})

t.test('a projected GET has its own ETag, and If-None-Match compares representations', async t => {
  const { app, url } = await oneBook(t)
  const projected = await app.inject({ url: `${url}?fields=title` })
  t.match(projected.headers.etag, /^"1\.[\w-]+"$/)
  t.not(projected.headers.etag, '"1"')
  const same = await app.inject({ url: `${url}?fields=title`, headers: { 'if-none-match': projected.headers.etag as string } })
  const full = await app.inject({ url: `${url}?fields=title`, headers: { 'if-none-match': '"1"' } })
  t.same([same.statusCode, full.statusCode], [304, 200])
  t.equal(same.headers.etag, projected.headers.etag)
})

t.test('If-Modified-Since at or after Last-Modified answers 304', async t => {
  const { app, url } = await oneBook(t)
  const at = await app.inject({ url, headers: { 'if-modified-since': T0 } })
  const after = await app.inject({ method: 'HEAD', url, headers: { 'if-modified-since': AFTER } })
  t.same([at.statusCode, after.statusCode], [304, 304])
  t.same(pick(at.headers, 'etag', 'last-modified'), { etag: '"1"', 'last-modified': T0 })
})

t.test('If-Modified-Since before Last-Modified answers 200', async t => {
  const { app, url } = await oneBook(t)
  const res = await app.inject({ url, headers: { 'if-modified-since': BEFORE } })
  t.equal(res.statusCode, 200)
})

t.test('If-Modified-Since that is not a date is ignored', async t => {
  const { app, url } = await oneBook(t)
  const res = await app.inject({ url, headers: { 'if-modified-since': 'yesterday-ish' } })
  t.equal(res.statusCode, 200)
})

t.test('If-None-Match takes precedence over If-Modified-Since', async t => {
  const { app, url } = await oneBook(t)
  // The date alone would give 304; the non-matching tag decides (RFC 9110 §13.2.2 step 3 before 4).
  const res = await app.inject({ url, headers: { 'if-none-match': '"9"', 'if-modified-since': AFTER } })
  t.equal(res.statusCode, 200)
})

t.test('If-Match that does not match a GET answers 412', async t => {
  const { app, url } = await oneBook(t)
  const res = await app.inject({ url, headers: { 'if-match': '"9"' } })
  t.same({ status: res.statusCode, type: res.json().type }, { status: 412, type: '/v1/problems/precondition-failed' })
})

t.test('If-Unmodified-Since before Last-Modified on a GET answers 412', async t => {
  const { app, url } = await oneBook(t)
  const res = await app.inject({ url, headers: { 'if-unmodified-since': BEFORE } })
  t.equal(res.statusCode, 412)
})

for (const method of writes) {
  t.test(`${method} with If-Match of the current ETag succeeds`, async t => {
    const { app, url, book } = await oneBook(t)
    const res = await app.inject(write(method, url, book, { 'if-match': '"1"' }))
    t.equal(res.statusCode, method === 'DELETE' ? 204 : 200)
    if (method !== 'DELETE') t.equal(res.headers.etag, '"2"')
  })

  t.test(`${method} with a stale If-Match answers a 412 problem and writes nothing`, async t => {
    const { app, url, book } = await oneBook(t)
    const before = await readBack(app, url)
    const res = await app.inject(write(method, url, book, { 'if-match': '"0", "2"' }))
    t.equal(res.statusCode, 412)
    t.same(res.json(), {
      type: '/v1/problems/precondition-failed',
      title: 'Precondition Failed',
      status: 412,
      detail: 'If-Match does not match the current version of the resource; fetch it again and retry.',
      instance: url
    })
    t.same(await readBack(app, url), before)
  })

  t.test(`${method} with If-Match * succeeds on an existing resource`, async t => {
    const { app, url, book } = await oneBook(t)
    const res = await app.inject(write(method, url, book, { 'if-match': '*' }))
    t.equal(res.statusCode, method === 'DELETE' ? 204 : 200)
  })

  t.test(`${method} with a weak If-Match never matches: 412`, async t => {
    const { app, url, book } = await oneBook(t)
    const before = await readBack(app, url)
    const res = await app.inject(write(method, url, book, { 'if-match': 'W/"1"' }))
    t.equal(res.statusCode, 412)
    t.same(await readBack(app, url), before)
  })

  for (const tag of ['"1"', '*']) {
    t.test(`${method} with If-Match ${tag} on a missing resource answers 412`, async t => {
      const app = await buildApp(t)
      const { authors } = await seed(app)
      const res = await app.inject(write(method, '/v1/books/missing', { authorId: authors[0].id }, { 'if-match': tag }))
      t.same({ status: res.statusCode, type: res.json().type }, { status: 412, type: '/v1/problems/precondition-failed' })
      t.equal((await app.inject({ url: '/v1/books/missing' })).statusCode, 404)
    })
  }

  t.test(`${method} with If-Match from a projected GET of the current version succeeds`, async t => {
    const { app, url, book } = await oneBook(t)
    const projected = await app.inject({ url: `${url}?fields=title,year` })
    t.not(projected.headers.etag, '"1"')
    const res = await app.inject(write(method, url, book, { 'if-match': projected.headers.etag as string }))
    t.equal(res.statusCode, method === 'DELETE' ? 204 : 200)
  })

  t.test(`${method} with If-Match from a projected GET of an older version answers 412`, async t => {
    const { app, url, book } = await oneBook(t)
    const projected = await app.inject({ url: `${url}?fields=title` })
    await app.inject({ method: 'PATCH', url, headers: json, payload: { year: 1 } })
    const res = await app.inject(write(method, url, book, { 'if-match': projected.headers.etag as string }))
    t.equal(res.statusCode, 412)
  })

  t.test(`${method} with If-Unmodified-Since at Last-Modified succeeds`, async t => {
    const { app, url, book } = await oneBook(t)
    const res = await app.inject(write(method, url, book, { 'if-unmodified-since': T0 }))
    t.equal(res.statusCode, method === 'DELETE' ? 204 : 200)
  })

  t.test(`${method} with If-Unmodified-Since before Last-Modified answers 412 and writes nothing`, async t => {
    const { app, url, book } = await oneBook(t)
    const before = await readBack(app, url)
    const res = await app.inject(write(method, url, book, { 'if-unmodified-since': BEFORE }))
    t.same({ status: res.statusCode, detail: res.json().detail }, { status: 412, detail: 'The resource was modified after If-Unmodified-Since.' })
    t.same(await readBack(app, url), before)
  })

  t.test(`${method}: a matching If-Match overrides a failing If-Unmodified-Since`, async t => {
    const { app, url, book } = await oneBook(t)
    const res = await app.inject(write(method, url, book, { 'if-match': '"1"', 'if-unmodified-since': BEFORE }))
    t.equal(res.statusCode, method === 'DELETE' ? 204 : 200)
  })

  t.test(`${method}: a failing If-Match is 412 whatever If-Unmodified-Since says`, async t => {
    const { app, url, book } = await oneBook(t)
    const res = await app.inject(write(method, url, book, { 'if-match': '"5"', 'if-unmodified-since': AFTER }))
    t.equal(res.statusCode, 412)
  })

  t.test(`${method} with If-None-Match * on an existing resource answers 412 and writes nothing`, async t => {
    const { app, url, book } = await oneBook(t)
    const before = await readBack(app, url)
    const res = await app.inject(write(method, url, book, { 'if-none-match': '*' }))
    t.same({ status: res.statusCode, detail: res.json().detail }, { status: 412, detail: 'If-None-Match matches the current resource.' })
    t.same(await readBack(app, url), before)
  })

  t.test(`${method} with If-None-Match of another ETag proceeds`, async t => {
    const { app, url, book } = await oneBook(t)
    const res = await app.inject(write(method, url, book, { 'if-none-match': '"7"' }))
    t.equal(res.statusCode, method === 'DELETE' ? 204 : 200)
  })

  t.test(`${method} with a malformed If-Match answers 400 naming If-Match`, async t => {
    const { app, url, book } = await oneBook(t)
    const before = await readBack(app, url)
    const res = await app.inject(write(method, url, book, { 'if-match': '1' }))
    t.same(res.json(), {
      type: '/v1/problems/header-invalid',
      title: 'Bad Request',
      status: 400,
      detail: 'One or more request headers are invalid.',
      instance: url,
      invalidParams: [{ name: 'If-Match', reason: 'must be * or a list of quoted entity tags' }]
    })
    t.same(await readBack(app, url), before)
  })

  t.test(`requireIfMatch makes ${method} without If-Match answer a 428 problem`, async t => {
    const { app, url, book } = await oneBook(t, { requireIfMatch: true })
    const before = await readBack(app, url)
    const res = await app.inject(write(method, url, book, {}))
    t.same(res.json(), {
      type: '/v1/problems/precondition-required',
      title: 'Precondition Required',
      status: 428,
      detail: 'This server requires If-Match on PUT, PATCH and DELETE: send the ETag of the version you read.',
      instance: url
    })
    t.same(await readBack(app, url), before)
  })

  t.test(`requireIfMatch lets ${method} with If-Match through`, async t => {
    const { app, url, book } = await oneBook(t, { requireIfMatch: true })
    const res = await app.inject(write(method, url, book, { 'if-match': '"1"' }))
    t.equal(res.statusCode, method === 'DELETE' ? 204 : 200)
  })
}

t.test('If-Match from an expanded GET of the current version satisfies PATCH', async t => {
  const { app, url } = await oneBook(t)
  const expanded = await app.inject({ url: `${url}?expand=author` })
  const res = await app.inject({ method: 'PATCH', url, headers: { ...json, 'if-match': expanded.headers.etag as string }, payload: { year: 3 } })
  t.equal(res.statusCode, 200)
})

t.test('a representation with related records sends no Last-Modified, so If-Modified-Since cannot hide their changes', async t => {
  const clock = testClock()
  const app = await buildApp(t, { clock })
  const { books } = await seed(app)
  const url = `/v1/books/${books[0].id}`
  const plain = await app.inject({ url })
  const since = plain.headers['last-modified'] as string
  for (const query of ['expand=author', 'include=author']) {
    const before = await app.inject({ url: `${url}?${query}` })
    t.same({ status: before.statusCode, lastModified: before.headers['last-modified'], hasEtag: typeof before.headers.etag }, { status: 200, lastModified: undefined, hasEtag: 'string' }, query)
  }
  clock.advance(60_000)
  const renamed = await app.inject({ method: 'PATCH', url: `/v1/authors/${books[0].authorId as string}`, headers: { 'content-type': 'application/merge-patch+json' }, payload: { name: 'Renamed' } })
  t.equal(renamed.statusCode, 200)
  const expanded = await app.inject({ url: `${url}?expand=author`, headers: { 'if-modified-since': since } })
  t.same({ status: expanded.statusCode, name: expanded.json().data.book.author.name }, { status: 200, name: 'Renamed' })
  t.equal((await app.inject({ url, headers: { 'if-modified-since': since } })).statusCode, 304, 'the book alone is unchanged')
  const etag = expanded.headers.etag as string
  t.equal((await app.inject({ url: `${url}?expand=author`, headers: { 'if-none-match': etag } })).statusCode, 304, 'its ETag still revalidates')
})

t.test('empty elements in an If-Match list are skipped', async t => {
  const { app, url } = await oneBook(t)
  const res = await app.inject({ method: 'PATCH', url, headers: { ...json, 'if-match': ', "9", ,"1",' }, payload: { year: 3 } })
  t.equal(res.statusCode, 200)
})

t.test('a malformed If-None-Match on GET answers 400 naming If-None-Match', async t => {
  const { app, url } = await oneBook(t)
  const res = await app.inject({ url, headers: { 'if-none-match': '"1" "2"' } })
  t.same({ status: res.statusCode, invalidParams: res.json().invalidParams }, { status: 400, invalidParams: [{ name: 'If-None-Match', reason: 'must be * or a list of quoted entity tags' }] })
})

t.test('requireIfMatch leaves GET, HEAD and POST alone', async t => {
  const { app, url } = await oneBook(t, { requireIfMatch: true })
  const get = await app.inject({ url })
  const head = await app.inject({ method: 'HEAD', url })
  const post = await app.inject({ method: 'POST', url: '/v1/authors', headers: json, payload: { name: 'N' } })
  t.same([get.statusCode, head.statusCode, post.statusCode], [200, 200, 201])
})

t.test('requireIfMatch answers 428 before looking the resource up', async t => {
  const app = await buildApp(t, { requireIfMatch: true })
  const res = await app.inject({ method: 'DELETE', url: '/v1/books/missing' })
  t.equal(res.statusCode, 428)
})

t.test('a resource\'s requireIfMatch overrides the plugin option either way', async t => {
  const app = await buildApp(t, {
    requireIfMatch: true,
    resources: store => demoResources(store).map(r => ({ ...r, requireIfMatch: r.name === 'authors' ? false : undefined }))
  })
  const { authors, books } = await seed(app)
  const author = await app.inject({ method: 'PATCH', url: `/v1/authors/${authors[0].id}`, headers: json, payload: { country: 'GB' } })
  const book = await app.inject({ method: 'PATCH', url: `/v1/books/${books[0].id}`, headers: json, payload: { year: 2 } })
  t.same([author.statusCode, book.statusCode], [200, 428])

  const strict = await buildApp(t, { resources: store => demoResources(store).map(r => ({ ...r, requireIfMatch: r.name === 'books' })) })
  const seeded = await seed(strict)
  const lax = await strict.inject({ method: 'DELETE', url: `/v1/books/${seeded.books[0].id}` })
  const laxAuthor = await strict.inject({ method: 'PATCH', url: `/v1/authors/${seeded.authors[0].id}`, headers: json, payload: { country: 'GB' } })
  t.same([lax.statusCode, laxAuthor.statusCode], [428, 200])
})

t.test('a 304 writes nothing and a later GET still answers the same version', async t => {
  const { app, url } = await oneBook(t)
  const before = await readBack(app, url)
  await app.inject({ url, headers: { 'if-none-match': '"1"' } })
  t.same(await readBack(app, url), before)
})

const PROBLEM_TYPE = 'application/problem+json; charset=utf-8'
const ifMatchFailed = (url: string) => ({
  type: '/v1/problems/precondition-failed',
  title: 'Precondition Failed',
  status: 412,
  detail: 'If-Match does not match the current version of the resource; fetch it again and retry.',
  instance: url
})

// If-Match compares strongly against the tags the server issues for
// the current version, `"1"` or `"1.<variant>"`, and nothing else (RFC 9110 §8.8.3.2).
for (const method of writes) {
  for (const tag of ['"1.garbage"', '"1."', '"1.a.b"', '"01"']) {
    t.test(`${method} with If-Match ${tag}, which the server never issued, answers a 412 problem and writes nothing`, async t => {
      const { app, url, book } = await oneBook(t)
      const before = await readBack(app, url)
      const res = await app.inject(write(method, url, book, { 'if-match': tag }))
      t.same({ status: res.statusCode, type: res.headers['content-type'], etag: res.headers.etag }, { status: 412, type: PROBLEM_TYPE, etag: undefined })
      t.same(res.json(), ifMatchFailed(url))
      t.same(await readBack(app, url), before)
    })
  }
}

t.test('If-Match with the tag of a projected GET plus a character answers 412', async t => {
  const { app, url } = await oneBook(t)
  const projected = (await app.inject({ url: `${url}?fields=title` })).headers.etag as string
  const before = await readBack(app, url)
  const res = await app.inject({ method: 'PATCH', url, headers: { ...json, 'if-match': `${projected.slice(0, -1)}x"` }, payload: { year: 3 } })
  t.same({ status: res.statusCode, type: res.headers['content-type'] }, { status: 412, type: PROBLEM_TYPE })
  t.same(res.json(), ifMatchFailed(url))
  t.same(await readBack(app, url), before)
})

t.test('If-Match with the weak form of a projected GET\'s tag never matches: 412', async t => {
  const { app, url } = await oneBook(t)
  const projected = (await app.inject({ url: `${url}?fields=title` })).headers.etag as string
  const before = await readBack(app, url)
  const res = await app.inject({ method: 'PATCH', url, headers: { ...json, 'if-match': `W/${projected}` }, payload: { year: 3 } })
  t.same({ status: res.statusCode, type: res.headers['content-type'] }, { status: 412, type: PROBLEM_TYPE })
  t.same(res.json(), ifMatchFailed(url))
  t.same(await readBack(app, url), before)
})

t.test('If-Match with the tag of an XML GET of the current version satisfies a JSON PUT', async t => {
  const { app, url, book } = await oneBook(t)
  const xml = await app.inject({ url, headers: { accept: 'application/xml' } })
  t.match(xml.headers.etag, /^"1\.[\w-]{12}"$/)
  const res = await app.inject(write('PUT', url, book, { 'if-match': xml.headers.etag as string }))
  t.same({ status: res.statusCode, etag: res.headers.etag }, { status: 200, etag: '"2"' })
  t.same(res.json().data.book, { ...book, title: 'Replaced', year: null, rating: null, available: true })
})

t.test('a GET with If-Match of a tag the server never issued answers 412', async t => {
  const { app, url } = await oneBook(t)
  const res = await app.inject({ url, headers: { 'if-match': '"1.garbage"' } })
  t.same({ status: res.statusCode, type: res.headers['content-type'] }, { status: 412, type: PROBLEM_TYPE })
  t.same(res.json(), ifMatchFailed(url))
})

// RFC 9110 §13.1.3, §13.1.4: a value that is no HTTP-date (§5.6.7) is ignored, however lenient
// parsers read it.
const notHttpDates = ['1', '2099', '3000-01-01', 'Wed, 01 May 2099 12:00:00 +0000', 'wed, 01 may 2099 12:00:00 gmt', 'Tue, 31 Feb 2099 12:00:00 GMT']

for (const value of notHttpDates) {
  t.test(`If-Modified-Since ${JSON.stringify(value)} is no HTTP-date and is ignored: 200 with the resource`, async t => {
    const { app, url, book } = await oneBook(t)
    const res = await app.inject({ url, headers: { 'if-modified-since': value } })
    t.same(pick(res.headers, 'etag', 'last-modified'), { etag: '"1"', 'last-modified': T0 })
    t.same({ status: res.statusCode, book: res.json().data.book }, { status: 200, book })
  })

  for (const method of writes) {
    t.test(`${method} with If-Unmodified-Since ${JSON.stringify(value)}, no HTTP-date, ignores it and writes`, async t => {
      const { app, url, book } = await oneBook(t)
      const res = await app.inject(write(method, url, book, { 'if-unmodified-since': value }))
      t.equal(res.statusCode, method === 'DELETE' ? 204 : 200)
      if (method !== 'DELETE') t.same({ etag: res.headers.etag, title: res.json().data.book.title }, { etag: '"2"', title: method === 'PUT' ? 'Replaced' : 'Patched' })
      t.equal((await readBack(app, url)).status, method === 'DELETE' ? 404 : 200)
    })
  }
}

// RFC 9110 §5.6.7: recipients must accept the obsolete rfc850 and asctime forms.
for (const [form, later, earlier] of [
  ['rfc850', 'Wednesday, 01-May-24 12:00:01 GMT', 'Wednesday, 01-May-24 11:59:59 GMT'],
  ['asctime', 'Wed May  1 12:00:01 2024', 'Wed May  1 11:59:59 2024']
] as const) {
  t.test(`If-Modified-Since in the ${form} form answers 304 with ETag, Last-Modified and no body`, async t => {
    const { app, url } = await oneBook(t)
    const res = await app.inject({ url, headers: { 'if-modified-since': later } })
    t.equal(res.statusCode, 304)
    t.same(pick(res.headers, 'etag', 'last-modified'), { etag: '"1"', 'last-modified': T0 })
    t.equal(res.body, '')
  })

  t.test(`PATCH with If-Unmodified-Since in the ${form} form before Last-Modified answers a 412 problem and writes nothing`, async t => {
    const { app, url, book } = await oneBook(t)
    const before = await readBack(app, url)
    const res = await app.inject(write('PATCH', url, book, { 'if-unmodified-since': earlier }))
    t.same({ status: res.statusCode, type: res.headers['content-type'] }, { status: 412, type: PROBLEM_TYPE })
    t.same(res.json(), {
      type: '/v1/problems/precondition-failed',
      title: 'Precondition Failed',
      status: 412,
      detail: 'The resource was modified after If-Unmodified-Since.',
      instance: url
    })
    t.same(await readBack(app, url), before)
  })
}
