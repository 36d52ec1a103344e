// Unit tests for lib/formats/xml.ts and lib/formats/coerce.ts: the JSON ↔ XML mapping (spec
// "Request headers": Content-Type / Accept allow application/xml; RFC 9457 Appendix B) and the
// conversion of text values to a schema's types.
import t from 'tap'
import { createProblemXmlWriter, createXmlWriter, escapeXml, noRefs, parseXml } from '../../lib/formats/xml.js'
import { describeXml, shapeOf } from '../../lib/formats/xml-shape.js'
import type { RefResolver } from '../../lib/formats/xml-shape.js'
import { coerceBody } from '../../lib/formats/coerce.js'
import { problemSchema } from '../../lib/problem.js'

const head = '<?xml version="1.0" encoding="UTF-8"?>'
const xsi = 'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'

// A resource and its envelopes, as registry/derive.ts shapes them, behind `$ref`s.
const book = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    title: { type: 'string' },
    year: { type: ['integer', 'null'] },
    rating: { type: ['number', 'null'] },
    available: { type: 'boolean' },
    born: { type: ['string', 'null'] },
    tags: { type: 'array', items: { type: 'string' } },
    links: { type: 'array', items: { type: 'string' } },
    books: { type: 'array', items: { type: 'integer' } },
    meta: { type: 'object', additionalProperties: { type: 'string' } },
    nested: { type: 'object', properties: { n: { type: 'number' }, b: { type: 'boolean' }, l: { type: 'array', items: { type: 'object', properties: { i: { type: 'string' } } } } } },
    extra: {},
    either: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }, { type: 'null' }] }
  },
  additionalProperties: false
}
const link = { type: 'object', properties: { rel: { type: 'string' }, href: { type: 'string' } }, additionalProperties: { type: 'string' } }
const shared: Record<string, Record<string, unknown>> = {
  Book: book,
  BookItem: { type: 'object', properties: { data: { type: 'object', properties: { book: { $ref: 'Book#' } } }, links: { type: 'array', items: link } } },
  BookList: {
    type: 'object',
    properties: {
      meta: { type: 'object', properties: { pageSize: { type: 'integer' } } },
      data: { type: 'object', properties: { books: { type: 'array', items: { $ref: 'Book#' } }, pageSize: { type: 'integer' } } },
      links: { type: 'array', items: link }
    }
  },
  Keyed: { type: 'object', properties: { links: { type: 'object', additionalProperties: { anyOf: [link, { type: 'array', items: link }] } } } }
}
const refs: RefResolver = { schema: ref => shared[ref.replace(/#.*$/, '')], itemName: ref => ref.startsWith('Book#') ? 'book' : undefined }
const writer = createXmlWriter(refs)
const write = (body: unknown, id?: string) => writer(body, id === undefined ? undefined : { $ref: `${id}#` })

/** The message a body error carries (all of parseXml's refusals are 400 API_ERR_BODY_MALFORMED). */
function refusal (xml: string): { code: string, statusCode: number, message: string } {
  try {
    parseXml(xml)
  } catch (error) {
    return error as { code: string, statusCode: number, message: string }
  }
  throw new Error('parsed')
}

t.test('writing', async t => {
  t.test('an envelope: root <response>, members in order, typed scalars as text', async t => {
    const xml = write({ data: { book: { id: 'b1', title: 'Solaris', year: 1961, rating: 4.25, available: false, born: null } } }, 'BookItem')
    t.equal(xml, `${head}<response ${xsi}><data><book><id>b1</id><title>Solaris</title><year>1961</year><rating>4.25</rating><available>false</available><born xsi:nil="true"/></book></data></response>`)
  })

  t.test('collection items are named by the resource, the root\'s links <link>, other array items <i>', async t => {
    const xml = write({ meta: { pageSize: 2 }, data: { books: [{ id: 'a', tags: ['x', 'y'] }, { id: 'b' }], pageSize: 2 }, links: [{ rel: 'self', href: '/v1/books?x=1&y=2' }] }, 'BookList')
    t.equal(xml, `${head}<response ${xsi}><meta><pageSize>2</pageSize></meta><data><books><book><id>a</id><tags><i>x</i><i>y</i></tags></book><book><id>b</id></book></books><pageSize>2</pageSize></data>` +
      '<links><link><rel>self</rel><href>/v1/books?x=1&amp;y=2</href></link></links></response>')
  })

  t.test('a field named links, or like a resource\'s plural, is a plain array: items <i>', async t => {
    const xml = write({ data: { book: { id: 'b', links: ['a'], books: [1] } } }, 'BookItem')
    t.equal(xml, `${head}<response ${xsi}><data><book><id>b</id><links><i>a</i></links><books><i>1</i></books></book></data></response>`)
  })

  t.test('links keyed by relation keep <link> items under each key, untyped', async t => {
    const xml = write({ links: { self: { rel: 'self', href: '/a' }, author: [{ rel: 'author', href: '/b', book: '1' }] } }, 'Keyed')
    t.equal(xml, `${head}<response ${xsi}><links><self><rel>self</rel><href>/a</href></self><author><link><rel>author</rel><href>/b</href><book>1</book></link></author></links></response>`)
  })

  t.test('empty objects and arrays are empty elements; undefined members are left out', async t => {
    t.equal(write({ data: { books: [] }, meta: {}, missing: undefined, fn: () => 1 }, 'BookList'), `${head}<response ${xsi}><data><books/></data><meta/></response>`)
  })

  t.test('undefined array items and non-finite numbers are nil, as JSON writes them null', async t => {
    t.equal(write({ i: [undefined, Number.NaN, Infinity] }), `${head}<response ${xsi}><i type="array"><i xsi:nil="true"/><i xsi:nil="true"/><i xsi:nil="true"/></i></response>`)
  })

  t.test('a root that is no object is an empty <response/>', async t => {
    t.equal(write(null), `${head}<response ${xsi}/>`)
  })

  t.test('values with toJSON (dates) are written as JSON writes them', async t => {
    t.equal(write({ at: new Date('2024-05-01T12:00:00.000Z') }), `${head}<response ${xsi}><at>2024-05-01T12:00:00.000Z</at></response>`)
  })

  t.test('a member name that is not an XML name becomes <member name="…">', async t => {
    const xml = write({ 'a b': 1, '1st': null, xmlish: 'x', 'q"<': { ok: true } })
    t.equal(xml, `${head}<response ${xsi}><member name="a b" type="number">1</member><member name="1st" xsi:nil="true"/><member name="xmlish">x</member><member name="q&quot;&lt;" type="object"><ok type="boolean">true</ok></member></response>`)
  })

  t.test('where the schema fixes the type, elements say nothing more; where it does not, each non-string says its type', async t => {
    const xml = write({ data: { book: { nested: { n: 1, b: true, l: [{ i: 'x' }] }, meta: { i: 'x' }, extra: { n: 1, s: '', a: [], o: {}, no: null }, either: [] } } }, 'BookItem')
    t.equal(xml, `${head}<response ${xsi}><data><book><nested><n>1</n><b>true</b><l><i><i>x</i></i></l></nested><meta><i>x</i></meta>` +
      '<extra type="object"><n type="number">1</n><s></s><a type="array"/><o type="object"/><no xsi:nil="true"/></extra><either type="array"/></book></data></response>')
  })

  t.test('a value the schema does not admit is written free-form', async t => {
    t.equal(write({ meta: ['x'] }, 'BookList'), `${head}<response ${xsi}><meta type="array"><i>x</i></meta></response>`)
  })

  t.test('text is escaped; CR survives as a reference; characters XML cannot carry become U+FFFD', async t => {
    t.equal(escapeXml('plain text'), 'plain text')
    t.equal(escapeXml('a & b < c > d "e" \r\n \u0001 \uFFFF'), 'a &amp; b &lt; c &gt; d &quot;e&quot; &#13;\n \uFFFD \uFFFD')
  })

  t.test('a problem: RFC 9457 Appendix B, <problem> in urn:ietf:rfc:7807, invalidParams items <i>', async t => {
    const xml = createProblemXmlWriter(problemSchema)({ type: '/v1/problems/body-invalid', title: 'Bad Request', status: 400, detail: 'd', instance: undefined, invalidParams: [{ name: 'year', reason: 'must be integer' }] })
    t.equal(xml, `${head}<problem xmlns="urn:ietf:rfc:7807" ${xsi}><type>/v1/problems/body-invalid</type><title>Bad Request</title><status>400</status><detail>d</detail>` +
      '<invalidParams><i><name>year</name><reason>must be integer</reason></i></invalidParams></problem>')
  })
})

t.test('reading', async t => {
  t.test('the root element holds one element per field; values arrive as text without a schema; nil is null', async t => {
    const body = parseXml(`<?xml version="1.0" encoding="UTF-8"?>
<!-- a comment -->
<book xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <title>  Solaris </title>
  <year>1961</year>
  <rating xsi:nil="true"/>
  <country nil="1"/>
  <empty/>
  <?pi ignored?>
</book>`)
    t.same(body, { title: '  Solaris ', year: '1961', rating: null, country: null, empty: '' })
  })

  t.test('predefined entities, character references and CDATA are decoded; CRLF becomes LF', async t => {
    const body = parseXml('<book><t>A &amp; B &lt;c&gt; &quot;q&apos; &#233;&#x41;&#x1F600;&#13;</t><c><![CDATA[AT&T <x> &amp;]]> tail</c><n>a\r\nb\rc</n></book>')
    t.same(body, { t: 'A & B <c> "q\' éA\u{1F600}\r', c: 'AT&T <x> &amp; tail', n: 'a\nb\nc' })
  })

  t.test('by the schema: arrays whatever their items are named, objects whatever their members are named, typed at every depth', async t => {
    const body = parseXml('<x><tags><i>a</i><b>b</b></tags><title>1</title><title>2</title><meta><i>x</i></meta><links><i>l</i></links>' +
      '<nested><n>-1.5e2</n><b>false</b><l><i><i>x</i></i></l></nested><year></year><available/></x>', book)
    t.same(body, { tags: ['a', 'b'], title: ['1', '2'], meta: { i: 'x' }, links: ['l'], nested: { n: -150, b: false, l: [{ i: 'x' }] }, year: null, available: '' })
  })

  t.test('empty elements: "" for strings, [] for arrays, {} for objects, null for other nullable types', async t => {
    t.same(parseXml('<x><title/><tags/><meta></meta><year/><rating> </rating></x>', book), { title: '', tags: [], meta: {}, year: null, rating: ' ' })
  })

  t.test('where the schema leaves the type open, the type attribute decides; without one, text is text and children an object', async t => {
    const body = parseXml('<x><extra type="object"><n type="number">1</n><s></s><a type="array"/><o type="object"/><t type="boolean">true</t><no xsi:nil="true"/><u>2</u><v><w>3</w></v></extra>' +
      '<either type="array"><i>a</i></either></x>', book)
    t.same(body, { extra: { n: 1, s: '', a: [], o: {}, t: true, no: null, u: '2', v: { w: '3' } }, either: ['a'] })
    t.same(parseXml('<x><either/><extra><i>a</i></extra></x>', book), { either: '', extra: { i: 'a' } })
    t.same(parseXml('<x><a><b>1</b></a></x>', { type: 'object', properties: { a: { anyOf: [{ type: 'array', items: { type: 'integer' } }, { type: 'integer' }] } } }), { a: [1] }, 'children where only an array is structured: its items')
  })

  t.test('children where the schema wants text make an object, for the validator to refuse; text where it wants structure stays text', async t => {
    t.same(parseXml('<x><title><a>1</a></title><tags>a</tags><meta>m</meta></x>', book), { title: { a: '1' }, tags: 'a', meta: 'm' })
  })

  t.test('a type attribute that the text does not bear out is refused', async t => {
    t.throws(() => parseXml('<x><extra><n type="number">one</n></extra></x>', book), { code: 'API_ERR_BODY_MALFORMED', message: /<n> says type="number" but holds "one"/ })
    t.throws(() => parseXml('<x><extra type="boolean">yes</extra></x>', book), { message: /says type="boolean"/ })
  })

  t.test('<member name="…"> restores a member name that is not an XML name; other attributes are ignored', async t => {
    t.same(parseXml('<x><member name="a &amp; b">1</member><member>2</member><y lang="en">3</y></x>'), { 'a & b': '1', member: '2', y: '3' })
  })

  t.test('an empty root is an empty object; a namespace prefix is dropped', async t => {
    t.same(parseXml('<book/>'), {})
    t.same(parseXml('<a:book xmlns:a="urn:x"><a:title>t</a:title></a:book>'), { title: 't' })
  })

  t.test('a member named __proto__ stays an own member and pollutes nothing', async t => {
    const body = parseXml('<x><member name="__proto__"><polluted>yes</polluted></member><__proto__>1</__proto__></x>')
    t.same(Object.keys(body), ['__proto__'])
    t.equal(({} as Record<string, unknown>).polluted, undefined)
    t.equal(Object.getPrototypeOf(body), Object.prototype)
  })

  t.test('Object.prototype names are members like any other, as in JSON', async t => {
    const names = ['toString', 'valueOf', 'hasOwnProperty', 'constructor', 'prototype', '__defineGetter__']
    const body = parseXml(`<x>${names.map(name => `<${name} constructor="a" hasOwnProperty="b">v</${name}>`).join('')}<e><toString/></e></x>`, book)
    t.same(Object.keys(body), [...names, 'e'])
    for (const name of names) t.equal(body[name], 'v', name)
    t.same(body.e, { toString: '' })
  })

  t.test('what the writer sends reads back to the same value, by the same schema', async t => {
    const record = { id: 'b', title: '', year: 1961, rating: null, available: true, tags: [], links: ['a'], books: [1], meta: { i: 'x' }, nested: { n: 0.5, b: false, l: [] }, extra: { '': 'odd', s: '1', n: 1, a: [[], {}, ''], o: { i: [true] } }, either: '' }
    const xml = write({ data: { book: record } }, 'BookItem').replace(/^.*<book>/, '<book>').replace(/<\/data><\/response>$/, '')
    t.same(parseXml(xml, book), record)
  })
})

t.test('documenting: OpenAPI XML Objects follow the same shapes', async t => {
  t.test('wrapped arrays with their item names, the root named, a note where elements say their type', async t => {
    const described = describeXml(shared.BookList as Record<string, unknown>, refs, { name: 'response' })
    t.match(described, {
      xml: { name: 'response' },
      properties: {
        data: { properties: { books: { xml: { wrapped: true }, items: { $ref: 'Book#', xml: { name: 'book' } } } } },
        links: { xml: { wrapped: true }, items: { xml: { name: 'link' } } }
      }
    })
    const resource = describeXml(book, refs)
    t.match(resource, { properties: { tags: { xml: { wrapped: true }, items: { xml: { name: 'i' } } }, links: { items: { xml: { name: 'i' } } }, extra: { description: /type="number"/ } } })
    t.equal(resource.xml, undefined, 'a resource is named by where it stands')
    t.match(describeXml({ type: 'object', additionalProperties: true, properties: { a: { anyOf: [{ type: 'array', items: { type: 'string' } }, { type: 'null' }] } } }, noRefs), {
      description: /members beyond those named here are free-form/,
      properties: { a: { anyOf: [{ xml: { wrapped: true } }, { type: 'null' }] } }
    })
    t.match(describeXml({ type: 'object', description: 'Open.' }, noRefs), { description: /^Open\. In XML, members beyond/ })
    t.match(describeXml({ type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } } }, noRefs), { additionalProperties: { xml: { wrapped: true } } })
  })

  t.test('a schema that is its own variant, or names only enum values, has a shape', async t => {
    const loop: Record<string, unknown> = { anyOf: [] }
    ;(loop.anyOf as unknown[]).push(loop)
    t.same([...shapeOf(loop, noRefs).kinds], [])
    t.same([...shapeOf({ enum: ['a', 1, null, [1]] }, noRefs).types], ['string', 'number', 'null', 'array'])
    t.same([...shapeOf({ const: true }, noRefs).kinds], ['boolean'])
    t.equal(shapeOf({ type: 'object', patternProperties: { '^a': { type: 'integer' } } }, noRefs).rest.schema?.type, 'integer')
    t.equal(shapeOf({ anyOf: [{ $ref: 'Book#' }] }, refs).member('year').nullable, true, 'through a variant\'s $ref')
    const unresolved = { type: 'object', properties: { a: { type: 'array', items: { $ref: 'Nowhere#' } }, b: { $ref: 'Nowhere#' } } }
    t.same(parseXml('<x><a><i>1</i></a><b>2</b></x>', unresolved), { a: ['1'], b: '2' }, 'a $ref nothing resolves is free-form')
    t.match(describeXml(unresolved, noRefs), { properties: { a: { items: { xml: { name: 'i' } } } } })
  })
})

t.test('parse refusals', async t => {
  const refusals: Array<[string, string, RegExp]> = [
    ['billion laughs', '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]><lolz>&lol2;</lolz>', /DOCTYPE or other declarations/],
    ['an external entity (XXE)', '<!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><x>&xxe;</x>', /DOCTYPE/],
    ['a DOCTYPE inside the root', '<x><!-- ok --><![CDATA[ok]]><!DOCTYPE y></x>', /DOCTYPE/],
    ['an undefined entity', '<x><t>&nbsp;</t></x>', /undefined entity &nbsp;;/],
    ['a bare ampersand', '<x><t>AT&T</t></x>', /not well-formed: char '&' is not expected/],
    ['a reference that is no name', '<x><t>&1a;</t></x>', /bare '&' \(&\);/],
    ['an empty character reference', '<x><t>&#x;</t></x>', /bare '&'/],
    ['a reference beyond Unicode', '<x><t>&#x110000;</t></x>', /does not allow/],
    ['a reference to a character XML forbids', '<x><t>&#0;</t></x>', /does not allow \(&#0;\)/],
    ['a raw character XML forbids', '<x><t>\u0001</t></x>', /character XML 1.0 does not allow/],
    ['unbalanced tags', '<book><title>x</book>', /not well-formed: Expected closing tag 'title'.*\(line 1, column \d+\)/],
    ['no element at all', '', /not well-formed: Start tag expected\.$/],
    ['two roots', '<a/><b/>', /exactly one root element/],
    ['text in the root', '<book>hello</book>', /root element must contain only elements/],
    ['mixed content', '<book><t>a<b/>c</t></book>', /<t> mixes text and elements/],
    ['nesting beyond the parser\'s depth limit', `<a>${'<b>'.repeat(150)}${'</b>'.repeat(150)}</a>`, /could not be parsed: Maximum nested tags exceeded/]
  ]
  for (const [what, xml, reason] of refusals) {
    t.test(`refuses ${what} with 400 API_ERR_BODY_MALFORMED`, async t => {
      const error = refusal(xml)
      t.match(error, { code: 'API_ERR_BODY_MALFORMED', statusCode: 400 })
      t.match(error.message, reason)
    })
  }

  t.test('an unclosed comment is left to the well-formedness check', async t => {
    t.match(refusal('<x><!-- never closed </x>').code, 'API_ERR_BODY_MALFORMED')
  })

  t.test('a declaration of another encoding is 415; UTF-8 and US-ASCII are read', async t => {
    t.match(refusal('<?xml version="1.0" encoding="ISO-8859-1"?><x/>'), {
      code: 'API_ERR_UNSUPPORTED_MEDIA_TYPE',
      statusCode: 415,
      message: /declares iso-8859-1/,
      invalidParams: [{ name: 'body', reason: 'the XML declaration names encoding iso-8859-1; send UTF-8' }]
    })
    t.same(parseXml('<?xml version="1.0" encoding="utf8"?><x/>'), {})
    t.same(parseXml("\uFEFF<?xml version='1.0' encoding='US-ASCII'?><x/>"), {})
  })

  t.test('a billion-laughs document of a megabyte is refused at once, without expansion', async t => {
    const bomb = `<!DOCTYPE b [<!ENTITY a "${'x'.repeat(1_000_000)}">]><b>${'&a;'.repeat(1000)}</b>`
    const started = process.hrtime.bigint()
    t.match(refusal(bomb).message, /DOCTYPE/)
    t.ok(process.hrtime.bigint() - started < 1_000_000_000n, 'well under a second')
  })
})

t.test('coercion by the schema', async t => {
  const schema = {
    type: 'object',
    properties: {
      title: { type: 'string' },
      year: { anyOf: [{ type: 'integer' }, { type: 'null' }] },
      rating: { anyOf: [{ anyOf: [{ type: 'number' }, { type: 'null' }] }, { type: 'null' }] },
      available: { type: 'boolean' },
      note: { type: ['string', 'null'] },
      tags: { type: 'array' },
      meta: { oneOf: [{ type: 'object' }] },
      id: { not: {} },
      anything: true
    }
  }

  t.test('text becomes the field\'s type; unknown members and non-text values are left alone', async t => {
    t.same(coerceBody({ title: '12', year: '1961', rating: '-4.5e-1', available: 'false', id: '1', extra: '2', tags: ['a'] }, schema, false),
      { title: '12', year: 1961, rating: -0.45, available: false, id: '1', extra: '2', tags: ['a'] })
    t.same(coerceBody({ available: 'true', year: null, anything: '1' }, schema, false), { available: true, year: null, anything: '1' })
  })

  t.test('text that does not read as the type is kept, for the validator to refuse', async t => {
    t.same(coerceBody({ year: '19x', rating: '1e999', available: 'yes', tags: 'a', meta: 'b' }, schema, false),
      { year: '19x', rating: '1e999', available: 'yes', tags: 'a', meta: 'b' })
    t.same(coerceBody({ year: '01', rating: '.5' }, schema, false), { year: '01', rating: '.5' })
  })

  t.test('empty text: null for nullable non-strings, an empty structure for json fields, kept for strings', async t => {
    t.same(coerceBody({ year: '', note: '', title: '', tags: '', meta: '', available: '' }, schema, false),
      { year: null, note: '', title: '', tags: [], meta: {}, available: '' })
  })

  t.test('forms (emptyIsNull): an empty value of any nullable field is null', async t => {
    t.same(coerceBody({ note: '', title: '' }, schema, true), { note: null, title: '' })
  })

  t.test('without a schema (a route with no body schema) the body is returned as parsed', async t => {
    const body = { a: '1' }
    t.equal(coerceBody(body, undefined, false), body)
    t.same(coerceBody({ a: '1' }, { type: 'object' }, false), { a: '1' })
  })
})
