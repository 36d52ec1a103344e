// Response format negotiation (spec "Request headers": Accept, default
// application/json; RFC 9110 §12.5.1 q-values, §12.5.5 Vary, §8.8.3 ETags per representation):
// which Accept gets JSON, XML or 406, Vary on every response Accept decided, ETags per format.
import t from 'tap'
import Fastify from 'fastify'
import { buildApp, json, pick, seed } from './helpers/app.js'
import { auth } from './helpers/auth.js'
import { buildSecureApp } from './helpers/secure-app.js'
import { createResponseFormats, formatParsers } from '../lib/formats/index.js'
import { addVary } from '../lib/http/negotiation.js'

const JSON_TYPE = 'application/json; charset=utf-8'
const XML_TYPE = 'application/xml; charset=utf-8'
const PROBLEM_JSON = 'application/problem+json; charset=utf-8'
const PROBLEM_XML = 'application/problem+xml; charset=utf-8'

/** The expected type of a 200, or a 406 in the problem type given. */
const cases: Array<[accept: string | undefined, expected: string | [406, string]]> = [
  [undefined, JSON_TYPE],
  ['*/*', JSON_TYPE],
  ['application/*', JSON_TYPE],
  ['application/json', JSON_TYPE],
  ['application/json; charset=utf-8', JSON_TYPE],
  ['application/xml', XML_TYPE],
  ['application/xml; charset=utf-8', XML_TYPE],
  ['application/xml;q=0.9, application/json;q=0.8', XML_TYPE],
  ['application/json;q=0.5, application/xml', XML_TYPE],
  // Equal q: the type Accept lists first.
  ['application/xml, application/json', XML_TYPE],
  ['application/json, application/xml', JSON_TYPE],
  // JSON refused outright, anything else welcome: XML is what is left.
  ['application/json;q=0, */*', XML_TYPE],
  // What browsers send: application/xml at 0.9 beats */* at 0.8.
  ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', XML_TYPE],
  ['text/html', [406, PROBLEM_JSON]],
  ['application/json;q=0, application/xml;q=0', [406, PROBLEM_JSON]],
  ['text/xml', [406, PROBLEM_JSON]],
  // Only problem types: no success body satisfies it (RFC 9110 §12.5.1), and the 406 takes the type named.
  ['application/problem+json', [406, PROBLEM_JSON]],
  ['application/problem+xml', [406, PROBLEM_XML]],
  ['application/problem+json, application/problem+xml;q=0.5', [406, PROBLEM_JSON]]
]

t.test('Accept decides the format by q-values; JSON by default; 406 when neither fits', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  for (const [accept, expected] of cases) {
    const res = await app.inject({ url: `/v1/books/${books[0].id}`, headers: accept === undefined ? {} : { accept } })
    if (Array.isArray(expected)) {
      t.equal(res.statusCode, 406, String(accept))
      // A client that accepts no problem type gets the default one.
      t.equal(res.headers['content-type'], expected[1], String(accept))
      if (expected[1] === PROBLEM_JSON) t.match(res.json(), { type: '/v1/problems/not-acceptable', detail: /available: application\/json, application\/xml\.$/ })
      else t.match(res.body, '<type>/v1/problems/not-acceptable</type>')
    } else {
      t.equal(res.statusCode, 200, String(accept))
      t.equal(res.headers['content-type'], expected, String(accept))
    }
  }
})

t.test('every negotiated response says Vary: Accept, once, beside what others vary on', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const url = `/v1/books/${books[0].id}`
  const etag = (await app.inject({ url })).headers.etag as string
  const responses = [
    await app.inject({ url }),
    await app.inject({ url, headers: { accept: 'application/xml' } }),
    await app.inject({ url, headers: { 'if-none-match': etag } }),
    await app.inject({ url, headers: { accept: 'text/html' } }),
    await app.inject({ url: '/v1/books/nope' }),
    await app.inject({ url: '/v1/books' }),
    await app.inject({ method: 'HEAD', url, headers: { accept: 'application/xml' } })
  ]
  t.same(responses.map(r => r.statusCode), [200, 200, 304, 406, 404, 200, 200])
  for (const res of responses) t.equal(String(res.headers.vary).split(/\s*,\s*/).filter(name => name.toLowerCase() === 'accept').length, 1, String(res.headers.vary))
})

t.test('errors raised before the Accept check (401) are rendered in the format Accept prefers, with Vary: Accept', async t => {
  const app = await buildSecureApp(t)
  const res = await app.inject({ url: '/v1/books', headers: { accept: 'application/xml' } })
  t.equal(res.statusCode, 401)
  t.same(pick(res.headers, 'content-type', 'vary'), { 'content-type': PROBLEM_XML, vary: 'Origin, Accept, Accept-Encoding' })
  t.match(res.body, '<type>/v1/problems/unauthorized</type>')
})

t.test('a 429 and a 414, both refused before the Accept check, vary on Accept', async t => {
  const app = await buildSecureApp(t, { rateLimit: { max: 1, timeWindow: '1 minute' }, maxQueryLength: 10 })
  const long = await app.inject({ url: `/v1/books?filter=${'x'.repeat(20)}`, headers: { ...auth.read, accept: 'application/problem+xml' } })
  t.same(pick(long.headers, 'content-type', 'vary'), { 'content-type': PROBLEM_XML, vary: 'Origin, Accept, Accept-Encoding' })
  t.equal(long.statusCode, 414)
  // The 414 precedes the limiter (security/index.ts), so the limit is spent here.
  t.equal((await app.inject({ url: '/v1/books', headers: auth.read })).statusCode, 200)
  const limited = await app.inject({ url: '/v1/books', headers: auth.read })
  t.equal(limited.statusCode, 429)
  t.same(pick(limited.headers, 'content-type', 'vary'), { 'content-type': PROBLEM_JSON, vary: 'Origin, Accept, Accept-Encoding' })
})

t.test('openapi.json varies on Accept: it answers 200 or 406 by it', async t => {
  const app = await buildApp(t)
  const ok = await app.inject({ url: '/v1/openapi.json' })
  const refused = await app.inject({ url: '/v1/openapi.json', headers: { accept: 'application/xml' } })
  t.same([ok.statusCode, ok.headers.vary], [200, 'Origin, Accept, Accept-Encoding'])
  t.same([refused.statusCode, refused.headers.vary, refused.headers['content-type']], [406, 'Origin, Accept, Accept-Encoding', PROBLEM_JSON])
})

t.test('routes with one fixed type (the problem pages) vary on Accept too: it decides 200 or 406', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ url: '/v1/problems/not-found', headers: { accept: 'text/html' } })
  t.equal(res.statusCode, 200)
  for (const headers of [{}, { accept: '*/*' }]) t.equal((await app.inject({ url: '/v1/problems/not-found', headers })).statusCode, 200)
  t.equal(res.headers.vary, 'Origin, Accept, Accept-Encoding')
  // Such routes do not offer XML, so even their problems stay JSON.
  const xmlOnly = await app.inject({ url: '/v1/problems/not-found', headers: { accept: 'application/xml' } })
  t.equal(xmlOnly.statusCode, 406)
  t.equal(xmlOnly.headers['content-type'], 'application/problem+json; charset=utf-8')
})

t.test('HEAD with Accept: application/xml has the XML type and ETag, and no body', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const url = `/v1/books/${books[0].id}`
  const get = await app.inject({ url, headers: { accept: 'application/xml' } })
  const head = await app.inject({ method: 'HEAD', url, headers: { accept: 'application/xml' } })
  t.equal(head.headers['content-type'], XML_TYPE)
  t.equal(head.headers.etag, get.headers.etag)
  t.equal(head.body, '')
})

t.test('ETags differ per representation: JSON and XML of one version, with and without fields', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const url = `/v1/books/${books[0].id}`
  const tags = await Promise.all([
    app.inject({ url }),
    app.inject({ url, headers: { accept: 'application/xml' } }),
    app.inject({ url: `${url}?fields=title` }),
    app.inject({ url: `${url}?fields=title`, headers: { accept: 'application/xml' } })
  ]).then(all => all.map(res => res.headers.etag as string))
  t.equal(tags[0], '"1"')
  t.match(tags[1], /^"1\.[A-Za-z0-9_-]+"$/)
  t.equal(new Set(tags).size, 4, tags.join(' '))
  // Stable: the same representation, the same tag.
  t.equal((await app.inject({ url, headers: { accept: 'application/xml' } })).headers.etag, tags[1])
})

t.test('writes answered in XML carry the XML ETag of the new version, which GET then confirms', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const url = `/v1/authors/${authors[0].id}`
  const xml = { accept: 'application/xml', 'content-type': 'application/xml' }
  const put = await app.inject({ method: 'PUT', url, headers: xml, payload: '<author><name>U. K. Le Guin</name></author>' })
  const patch = await app.inject({ method: 'PATCH', url, headers: xml, payload: '<author><country>GB</country></author>' })
  const get = await app.inject({ url, headers: { accept: 'application/xml' } })
  t.match(put.headers.etag, /^"2\./)
  t.match(patch.headers.etag, /^"3\./)
  t.equal(get.headers.etag, patch.headers.etag)
  const created = await app.inject({ method: 'POST', url: '/v1/authors', headers: xml, payload: '<author><name>New</name></author>' })
  t.equal(created.headers.etag, (await app.inject({ url: created.headers.location as string, headers: { accept: 'application/xml' } })).headers.etag)
  t.equal((await app.inject({ url: created.headers.location as string })).headers.etag, '"1"')
})

t.test('If-None-Match: the XML ETag gives 304 to an XML GET only', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const url = `/v1/books/${books[0].id}`
  const xmlTag = (await app.inject({ url, headers: { accept: 'application/xml' } })).headers.etag as string
  const again = await app.inject({ url, headers: { accept: 'application/xml', 'if-none-match': xmlTag } })
  t.equal(again.statusCode, 304)
  t.equal(again.headers.etag, xmlTag)
  const asJson = await app.inject({ url, headers: { 'if-none-match': xmlTag } })
  t.equal(asJson.statusCode, 200)
  t.equal(asJson.headers.etag, '"1"')
})

t.test('If-Match: an ETag of the XML representation lets a JSON PATCH through; a stale one is 412', async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const url = `/v1/books/${books[0].id}`
  const xmlTag = (await app.inject({ url, headers: { accept: 'application/xml' } })).headers.etag as string
  const patched = await app.inject({ method: 'PATCH', url, headers: { ...json, 'if-match': xmlTag }, payload: { year: 1975 } })
  t.equal(patched.statusCode, 200)
  t.equal(patched.headers.etag, '"2"')
  const stale = await app.inject({ method: 'PATCH', url, headers: { ...json, 'if-match': xmlTag }, payload: { year: 1976 } })
  t.equal(stale.statusCode, 412)
})

t.test('XML responses wired on a bare Fastify route', async t => {
  // White box: createResponseFormats' serializer on routes the plugin does not build.
  const app = Fastify()
  t.teardown(() => app.close())
  const formats = createResponseFormats(app, [])
  for (const parser of formatParsers) if (parser.parseAs === 'buffer') app.addContentTypeParser([...parser.types], { parseAs: 'buffer' }, parser.parse)
  const xml = { onRequest: (request: Parameters<typeof formats.useXml>[0], reply: Parameters<typeof formats.useXml>[1], done: () => void) => { formats.useXml(request, reply); done() } }
  app.get('/text', xml, (_request, reply) => reply.type('text/plain').send('as sent'))
  app.get('/raw', xml, () => ({ a: 1, extra: [true] }))
  const byType = { type: 'object', properties: { a: { type: 'integer' } } }
  app.get('/typed', { ...xml, schema: { response: { 200: { content: { 'application/json': { schema: byType } } } } } }, () => ({ a: 2, dropped: 'x' }))
  app.get('/vary', (_request, reply) => {
    reply.header('vary', 'Origin, accept')
    addVary(reply, 'Accept')
    return reply.send('')
  })
  app.get('/vary-more', (_request, reply) => {
    reply.header('vary', 'Origin')
    addVary(reply, 'Accept')
    return reply.send('')
  })
  app.get('/vary-new', (_request, reply) => {
    addVary(reply, 'Accept')
    return reply.send('')
  })
  app.post('/echo', request => request.body)
  const text = await app.inject({ url: '/text' })
  t.same([text.headers['content-type'], text.body], ['text/plain', 'as sent'], 'text a handler sends is left as it is')
  const raw = await app.inject({ url: '/raw' })
  t.equal(raw.body, '<?xml version="1.0" encoding="UTF-8"?><response xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><a type="number">1</a><extra type="array"><i type="boolean">true</i></extra></response>', 'no response schema: free-form, each element typed')
  const typed = await app.inject({ url: '/typed' })
  t.match(typed.body, /<response [^>]*><a>2<\/a><\/response>$/, 'a schema per content type: its JSON shape')
  t.equal((await app.inject({ url: '/vary' })).headers.vary, 'Origin, accept', 'Accept already named: left alone')
  t.equal((await app.inject({ url: '/vary-more' })).headers.vary, 'Origin, Accept', 'Accept added to what is there')
  t.equal((await app.inject({ url: '/vary-new' })).headers.vary, 'Accept', 'no Vary yet: Accept alone')
  const echo = await app.inject({ method: 'POST', url: '/echo', headers: { 'content-type': 'application/xml' }, payload: '<x><n>1</n></x>' })
  t.same(echo.json(), { n: '1' }, 'no body schema: values stay text')
})
