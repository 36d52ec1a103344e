// XML over HTTP (spec "Request headers": Content-Type and Accept allow
// application/xml; "Errors" 1 with RFC 9457 Appendix B): responses in the documented mapping,
// create / replace / modify round trips, validation exactly as for JSON, and refusals of bad XML.
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { defineResource } from '../lib/index.js'
import type { Store } from '../lib/index.js'
import { buildApp, json, seed } from './helpers/app.js'

const head = '<?xml version="1.0" encoding="UTF-8"?>'
const root = '<response xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
const problemRoot = '<problem xmlns="urn:ietf:rfc:7807" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
const xmlIn = { 'content-type': 'application/xml' } as const
const xmlOut = { accept: 'application/xml' } as const
const xmlBoth = { ...xmlIn, ...xmlOut } as const

t.test('RETRIEVE with Accept: application/xml answers the envelope as XML, nulls as xsi:nil', async t => {
  const app = await buildApp(t)
  const { authors, books } = await seed(app)
  const book = await app.inject({ url: `/v1/books/${books[0].id}`, headers: xmlOut })
  t.equal(book.statusCode, 200)
  t.equal(book.headers['content-type'], 'application/xml; charset=utf-8')
  t.equal(book.body, `${head}${root}<data><book><id>${books[0].id}</id><title>The Dispossessed</title><authorId>${authors[0].id}</authorId>` +
    '<year>1974</year><rating>4.5</rating><available>true</available><reviewCount>0</reviewCount><averageRating xsi:nil="true"/></book></data></response>')
  const lem = await app.inject({ url: `/v1/authors/${authors[2].id}?expand=books`, headers: xmlOut })
  t.equal(lem.body, `${head}${root}<data><author><id>${authors[2].id}</id><name>Stanisław Lem</name><born xsi:nil="true"/><country>PL</country>` +
    `<books><book><id>${books[3].id}</id><title>Solaris</title><authorId>${authors[2].id}</authorId><year>1961</year><rating>4.2</rating><available>false</available><reviewCount>0</reviewCount><averageRating xsi:nil="true"/></book></books>` +
    '</author></data></response>')
})

t.test('LIST as XML: meta, the items named by the resource, links as <link>, & escaped in hrefs', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const res = await app.inject({ url: '/v1/authors?pageSize=1&offset=0&fields=name&total=true', headers: xmlOut })
  const href = (offset: number) => `<href>/v1/authors?fields=name&amp;total=true&amp;pageSize=1&amp;offset=${offset}</href>`
  t.equal(res.body, `${head}${root}<meta><pageSize>1</pageSize><offset>0</offset><pageOffset>1</pageOffset><total>3</total></meta>` +
    `<data><authors><author><id>${authors[0].id}</id><name>Ursula K. Le Guin</name></author></authors><pageSize>1</pageSize><pageOffset>1</pageOffset></data>` +
    `<links><link><rel>self</rel>${href(0)}</link><link><rel>first</rel>${href(0)}</link><link><rel>next</rel>${href(1)}</link><link><rel>last</rel>${href(2)}</link></links></response>`)
})

t.test('an empty collection is an empty element, 200', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ url: '/v1/books?offset=0', headers: xmlOut })
  t.equal(res.statusCode, 200)
  t.match(res.body, '<data><books/><pageSize>20</pageSize><pageOffset>1</pageOffset></data>')
})

t.test('errors are application/problem+xml per RFC 9457 Appendix B', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ url: '/v1/books/nope', headers: xmlOut })
  t.equal(res.statusCode, 404)
  t.equal(res.headers['content-type'], 'application/problem+xml; charset=utf-8')
  t.equal(res.body, `${head}${problemRoot}<type>/v1/problems/not-found</type><title>Not Found</title><status>404</status>` +
    '<detail>book nope was not found.</detail><instance>/v1/books/nope</instance></problem>')
})

t.test('with errorFormat envelope, JSON nests under errors while XML keeps the RFC\'s <problem>', async t => {
  const app = await buildApp(t, { errorFormat: 'envelope' })
  const asJson = await app.inject({ url: '/v1/books/nope' })
  const asXml = await app.inject({ url: '/v1/books/nope', headers: xmlOut })
  t.match(asJson.json(), { errors: { status: 404 } })
  t.match(asXml.body, `${head}${problemRoot}<type>/v1/problems/not-found</type>`)
})

t.test('CREATE with an XML body: typed by the schema, stored as JSON would store it', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const res = await app.inject({
    method: 'POST',
    url: '/v1/books',
    headers: xmlBoth,
    payload: `<?xml version="1.0" encoding="UTF-8"?>
<book xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <title>Dune &amp; Messiah</title>
  <authorId>${authors[0].id}</authorId>
  <year>1965</year>
  <rating xsi:nil="true"/>
  <available>false</available>
</book>`
  })
  t.equal(res.statusCode, 201)
  const id = (res.headers.location as string).split('/').pop()
  t.equal(res.body, `${head}${root}<data><book><id>${id}</id><title>Dune &amp; Messiah</title><authorId>${authors[0].id}</authorId>` +
    '<year>1965</year><rating xsi:nil="true"/><available>false</available><reviewCount>0</reviewCount><averageRating xsi:nil="true"/></book></data></response>')
  const stored = await app.inject({ url: res.headers.location as string })
  t.same(stored.json().data.book, { id, title: 'Dune & Messiah', authorId: authors[0].id, year: 1965, rating: null, available: false, reviewCount: 0, averageRating: null })
})

t.test('REPLACE with an XML body: omitted fields take their defaults or null, as with JSON', async t => {
  const app = await buildApp(t)
  const { authors, books } = await seed(app)
  const url = `/v1/books/${books[3].id}`
  const res = await app.inject({ method: 'PUT', url, headers: xmlIn, payload: `<book><id>${books[3].id}</id><title>Solaris (2nd ed.)</title><authorId>${authors[2].id}</authorId></book>` })
  t.equal(res.statusCode, 200)
  t.same(res.json().data.book, { id: books[3].id, title: 'Solaris (2nd ed.)', authorId: authors[2].id, year: null, rating: null, available: true, reviewCount: 0, averageRating: null })
})

t.test('MODIFY with an XML body is a merge patch: absent fields kept, xsi:nil clears, others replaced', async t => {
  const app = await buildApp(t)
  const { authors, books } = await seed(app)
  const url = `/v1/books/${books[0].id}`
  const res = await app.inject({
    method: 'PATCH',
    url,
    headers: xmlBoth,
    payload: '<book xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><year xsi:nil="true"/><rating>3.5</rating></book>'
  })
  t.equal(res.statusCode, 200)
  t.equal(res.body, `${head}${root}<data><book><id>${books[0].id}</id><title>The Dispossessed</title><authorId>${authors[0].id}</authorId>` +
    '<year xsi:nil="true"/><rating>3.5</rating><available>true</available><reviewCount>0</reviewCount><averageRating xsi:nil="true"/></book></data></response>')
  t.same((await app.inject({ url })).json().data.book, { id: books[0].id, title: 'The Dispossessed', authorId: authors[0].id, year: null, rating: 3.5, available: true, reviewCount: 0, averageRating: null })
})

t.test('an invalid XML body gets exactly the problem the same JSON body gets', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const cases: Array<[object, string]> = [
    [{ title: '', authorId: authors[0].id, year: 19.5, id: 'x', extra: '1' },
      `<book><title></title><authorId>${authors[0].id}</authorId><year>19.5</year><id>x</id><extra>1</extra></book>`],
    [{ title: 'T', authorId: authors[0].id, year: 'soon', rating: 6, available: 'yes' },
      `<book><title>T</title><authorId>${authors[0].id}</authorId><year>soon</year><rating>6</rating><available>yes</available></book>`],
    [{ authorId: authors[0].id, title: ['a', 'b'] },
      `<book><authorId>${authors[0].id}</authorId><title>a</title><title>b</title></book>`]
  ]
  for (const [body, xml] of cases) {
    const fromJson = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload: body })
    const fromXml = await app.inject({ method: 'POST', url: '/v1/books', headers: xmlIn, payload: xml })
    t.equal(fromXml.statusCode, 400)
    t.ok(fromJson.json().invalidParams.length > 0)
    t.same(fromXml.json(), fromJson.json(), xml)
  }
})

t.test('an unknown related id in XML is 422, as in JSON', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ method: 'POST', url: '/v1/books', headers: xmlIn, payload: '<book><title>T</title><authorId>nobody</authorId></book>' })
  t.equal(res.statusCode, 422)
})

t.test('malformed XML is 400 API_ERR_BODY_MALFORMED naming the fault, in the negotiated format', async t => {
  const app = await buildApp(t)
  const res = await app.inject({ method: 'POST', url: '/v1/books', headers: xmlBoth, payload: '<book><title>x</book>' })
  t.equal(res.statusCode, 400)
  t.equal(res.headers['content-type'], 'application/problem+xml; charset=utf-8')
  t.match(res.body, /<type>\/v1\/problems\/body-malformed<\/type>.*<detail>The request body could not be parsed: XML is not well-formed: Expected closing tag 'title'/)
  const empty = await app.inject({ method: 'POST', url: '/v1/books', headers: xmlIn, payload: '' })
  t.match(empty.json(), { status: 400, type: '/v1/problems/body-malformed' })
})

t.test('an XML bomb (billion laughs) is a 400 at once, nothing expanded', async t => {
  const app = await buildApp(t)
  const lol = ['<!ENTITY lol "lol">']
  for (let i = 1; i < 10; i++) lol.push(`<!ENTITY lol${i} "${`&lol${i === 1 ? '' : i - 1};`.repeat(10)}">`)
  const bomb = `<?xml version="1.0"?><!DOCTYPE lolz [${lol.join('')}]><book><title>&lol9;</title></book>`
  const started = Date.now()
  const res = await app.inject({ method: 'POST', url: '/v1/books', headers: xmlIn, payload: bomb })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { type: '/v1/problems/body-malformed', detail: /DTDs and entity definitions are not accepted/ })
  t.ok(Date.now() - started < 1000)
  const xxe = await app.inject({ method: 'POST', url: '/v1/books', headers: xmlIn, payload: '<!DOCTYPE b [<!ENTITY x SYSTEM "file:///etc/passwd">]><book><title>&x;</title></book>' })
  t.equal(xxe.statusCode, 400)
})

t.test('an XML body over bodyLimit is 413', async t => {
  const app = await buildApp(t, { server: { bodyLimit: 1000 } })
  const res = await app.inject({ method: 'POST', url: '/v1/books', headers: xmlIn, payload: `<book><title>${'x'.repeat(2000)}</title></book>` })
  t.equal(res.statusCode, 413)
  t.match(res.json(), { type: '/v1/problems/body-too-large' })
})

t.test('text/xml is 415; an XML body in another charset is 415', async t => {
  const app = await buildApp(t)
  const textXml = await app.inject({ method: 'POST', url: '/v1/books', headers: { 'content-type': 'text/xml' }, payload: '<book/>' })
  t.equal(textXml.statusCode, 415)
  t.same(textXml.json().invalidParams, [{ name: 'Content-Type', reason: 'text/xml is not accepted here' }])
  const latin = await app.inject({ method: 'POST', url: '/v1/books', headers: { 'content-type': 'application/xml; charset=ISO-8859-1' }, payload: '<book/>' })
  t.equal(latin.statusCode, 415)
  t.match(latin.json(), { detail: 'Request bodies must be UTF-8; received charset=iso-8859-1.' })
  const utf8 = await app.inject({ method: 'POST', url: '/v1/authors', headers: { 'content-type': 'application/xml; charset="UTF-8"' }, payload: '<author><name>N</name></author>' })
  t.equal(utf8.statusCode, 201)
})

// json-typed fields: arrays as <i> items, objects as elements, odd member names as <member name>.
const notes = (store: Store) => [defineResource({
  name: 'notes',
  singular: 'note',
  store,
  schema: Type.Object({
    id: Type.Readonly(Type.String()),
    text: Type.String(),
    tags: Type.Optional(Type.Array(Type.String())),
    meta: Type.Optional(Type.Record(Type.String(), Type.String())),
    remark: Type.Optional(Type.Union([Type.String(), Type.Null()]))
  }, { additionalProperties: false })
})]

t.test('structured (json) fields round-trip through XML', async t => {
  const app = await buildApp(t, { resources: notes })
  const created = await app.inject({ method: 'POST', url: '/v1/notes', headers: json, payload: { text: 't', tags: ['a', 'b'], meta: { 'odd key': 'v', plain: 'w' }, remark: '' } })
  const url = created.headers.location as string
  const id = url.split('/').pop()
  const asXml = await app.inject({ url, headers: xmlOut })
  const fields = '<text>t</text><tags><i>a</i><i>b</i></tags><meta><member name="odd key">v</member><plain>w</plain></meta><remark></remark>'
  t.equal(asXml.body, `${head}${root}<data><note><id>${id}</id>${fields}</note></data></response>`)
  // What a client read, it can send back: PUT the XML resource and nothing changes.
  const put = await app.inject({ method: 'PUT', url, headers: xmlIn, payload: `<note><id>${id}</id>${fields}</note>` })
  t.equal(put.statusCode, 200)
  t.same(put.json().data.note, { id, text: 't', tags: ['a', 'b'], meta: { 'odd key': 'v', plain: 'w' }, remark: '' })
  // Empty elements of structured fields are empty structures: [] replaces, {} merges nothing (RFC 7396).
  const emptied = await app.inject({ method: 'PATCH', url, headers: xmlIn, payload: '<note><tags/><meta/><remark xsi:nil="true" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"/></note>' })
  t.same(emptied.json().data.note, { id, text: 't', tags: [], meta: { 'odd key': 'v', plain: 'w' }, remark: null })
})

// Object.prototype names are member names like any other: XML is judged exactly as JSON.
t.test('XML members named like Object.prototype members get the same 400 invalidParams as JSON', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  for (const name of ['toString', 'valueOf', 'hasOwnProperty', 'constructor', 'prototype']) {
    const fromJson = await app.inject({ method: 'POST', url: '/v1/books', headers: json, payload: `{"title":"T","authorId":"${authors[0].id}","${name}":"x"}` })
    const fromXml = await app.inject({ method: 'POST', url: '/v1/books', headers: xmlIn, payload: `<book><title>T</title><authorId>${authors[0].id}</authorId><${name}>x</${name}></book>` })
    t.same({ status: fromXml.statusCode, type: fromXml.headers['content-type'] }, { status: 400, type: 'application/problem+json; charset=utf-8' }, name)
    t.same(fromXml.json(), fromJson.json(), name)
    t.match(fromXml.json(), { type: '/v1/problems/body-invalid', invalidParams: [{ name, reason: 'is not a field of this resource' }] }, name)
  }
})

// A resource whose json fields defeat a name-driven mapping: keys named like items, fields named
// links or like a resource's plural, empty strings, arrays and objects, nested numbers and
// booleans, and values the schema leaves free-form.
const tricky = (store: Store) => [defineResource({
  name: 'notes',
  singular: 'note',
  store,
  schema: Type.Object({
    id: Type.Readonly(Type.String()),
    text: Type.String(),
    meta: Type.Record(Type.String(), Type.String()),
    links: Type.Array(Type.String()),
    notes: Type.Array(Type.String()),
    nested: Type.Object({
      n: Type.Number(),
      b: Type.Boolean(),
      list: Type.Array(Type.Integer()),
      empty: Type.String(),
      none: Type.Array(Type.String()),
      bare: Type.Object({ i: Type.Optional(Type.String()) })
    }),
    payload: Type.Unknown(),
    either: Type.Union([Type.String(), Type.Array(Type.String())])
  }, { additionalProperties: false })
})]

t.test('a record read as XML and sent back as an XML body is the same record', async t => {
  const app = await buildApp(t, { resources: tricky })
  const record = {
    text: '',
    meta: { i: 'x', link: 'y' },
    links: ['a'],
    notes: ['n'],
    nested: { n: 1.5, b: false, list: [1, 2], empty: '', none: [], bare: {} },
    payload: { i: ['', 0, true, null, {}, []], s: '1', o: { link: 'l' } },
    either: []
  }
  const created = await app.inject({ method: 'POST', url: '/v1/notes', headers: json, payload: record })
  t.equal(created.statusCode, 201)
  const url = created.headers.location as string
  const id = url.split('/').pop() as string
  const asXml = await app.inject({ url, headers: xmlOut })
  t.equal(asXml.body, `${head}${root}<data><note><id>${id}</id><text></text><meta><i>x</i><link>y</link></meta><links><i>a</i></links><notes><i>n</i></notes>` +
    '<nested><n>1.5</n><b>false</b><list><i>1</i><i>2</i></list><empty></empty><none/><bare/></nested>' +
    '<payload type="object"><i type="array"><i></i><i type="number">0</i><i type="boolean">true</i><i xsi:nil="true"/><i type="object"/><i type="array"/></i><s>1</s><o type="object"><link>l</link></o></payload>' +
    '<either type="array"/></note></data></response>')
  const note = /<note>.*<\/note>/.exec(asXml.body)?.[0] as string
  const put = await app.inject({ method: 'PUT', url, headers: { ...xmlIn, 'if-match': asXml.headers.etag as string }, payload: note.replace('<note>', '<note xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">') })
  t.equal(put.statusCode, 200, put.body)
  t.same(put.json().data.note, { id, ...record })
  t.same((await app.inject({ url })).json().data.note, { id, ...record })
})
