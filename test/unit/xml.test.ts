// Unit tests for lib/formats/xml.ts and lib/formats/coerce.ts: the JSON ↔ XML mapping (spec
// "Request headers": Content-Type / Accept allow application/xml; RFC 7807 Appendix A) and the
// conversion of text values to a schema's types (issue 8, points 1 and 2).
import t from 'tap'
import { createXmlWriter, escapeXml, parseXml, writeProblemXml } from '../../lib/formats/xml.js'
import { coerceBody } from '../../lib/formats/coerce.js'

const head = '<?xml version="1.0" encoding="UTF-8"?>'
const xsi = 'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'
const write = createXmlWriter(new Map([['books', 'book']]))

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
    const xml = write({ data: { book: { id: 'b1', title: 'Solaris', year: 1961, rating: 4.25, available: false, born: null } } })
    t.equal(xml, `${head}<response ${xsi}><data><book><id>b1</id><title>Solaris</title><year>1961</year><rating>4.25</rating><available>false</available><born xsi:nil="true"/></book></data></response>`)
  })

  t.test('collection items are named by the resource, links <link>, other array items <i>', async t => {
    const xml = write({ meta: { pageSize: 2 }, data: { books: [{ id: 'a' }, { id: 'b' }], pageSize: 2 }, links: [{ rel: 'self', href: '/v1/books?x=1&y=2' }], tags: ['x', 'y'] })
    t.equal(xml, `${head}<response ${xsi}><meta><pageSize>2</pageSize></meta><data><books><book><id>a</id></book><book><id>b</id></book></books><pageSize>2</pageSize></data>` +
      '<links><link><rel>self</rel><href>/v1/books?x=1&amp;y=2</href></link></links><tags><i>x</i><i>y</i></tags></response>')
  })

  t.test('links keyed by relation keep <link> items under each key', async t => {
    const xml = write({ links: { self: { rel: 'self', href: '/a' }, author: [{ rel: 'author', href: '/b', book: '1' }] } })
    t.equal(xml, `${head}<response ${xsi}><links><self><rel>self</rel><href>/a</href></self><author><link><rel>author</rel><href>/b</href><book>1</book></link></author></links></response>`)
  })

  t.test('empty objects and arrays are empty elements; undefined members are left out', async t => {
    t.equal(write({ data: { books: [] }, meta: {}, missing: undefined, fn: () => 1 }), `${head}<response ${xsi}><data><books/></data><meta/></response>`)
  })

  t.test('undefined array items and non-finite numbers are nil, as JSON writes them null', async t => {
    t.equal(write({ i: [undefined, Number.NaN, Infinity] }), `${head}<response ${xsi}><i><i xsi:nil="true"/><i xsi:nil="true"/><i xsi:nil="true"/></i></response>`)
  })

  t.test('values with toJSON (dates) are written as JSON writes them', async t => {
    t.equal(write({ at: new Date('2024-05-01T12:00:00.000Z') }), `${head}<response ${xsi}><at>2024-05-01T12:00:00.000Z</at></response>`)
  })

  t.test('a member name that is not an XML name becomes <member name="…">', async t => {
    const xml = write({ 'a b': 1, '1st': null, xmlish: 'x', 'q"<': { ok: true } })
    t.equal(xml, `${head}<response ${xsi}><member name="a b">1</member><member name="1st" xsi:nil="true"/><member name="xmlish">x</member><member name="q&quot;&lt;"><ok>true</ok></member></response>`)
  })

  t.test('text is escaped; CR survives as a reference; characters XML cannot carry become U+FFFD', async t => {
    t.equal(escapeXml('plain text'), 'plain text')
    t.equal(escapeXml('a & b < c > d "e" \r\n \u0001 \uFFFF'), 'a &amp; b &lt; c &gt; d &quot;e&quot; &#13;\n \uFFFD \uFFFD')
  })

  t.test('a problem: RFC 7807 Appendix A, <problem> in urn:ietf:rfc:7807, invalidParams items <i>', async t => {
    const xml = writeProblemXml({ type: '/v1/problems/body-invalid', title: 'Bad Request', status: 400, detail: 'd', instance: undefined, invalidParams: [{ name: 'year', reason: 'must be integer' }] })
    t.equal(xml, `${head}<problem xmlns="urn:ietf:rfc:7807" ${xsi}><type>/v1/problems/body-invalid</type><title>Bad Request</title><status>400</status><detail>d</detail>` +
      '<invalidParams><i><name>year</name><reason>must be integer</reason></i></invalidParams></problem>')
  })
})

t.test('reading', async t => {
  t.test('the root element holds one element per field; values arrive as text; nil is null', async t => {
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

  t.test('children all named <i> are an array; repeated elements become an array; nesting is kept', async t => {
    const body = parseXml('<x><tags><i>a</i><i>b</i></tags><title>1</title><title>2</title><meta><a>1</a><b><i>x</i></b></meta></x>')
    t.same(body, { tags: ['a', 'b'], title: ['1', '2'], meta: { a: '1', b: ['x'] } })
  })

  t.test('<member name="…"> restores a member name that is not an XML name; other attributes are ignored', async t => {
    t.same(parseXml('<x><member name="a &amp; b">1</member><member>2</member><y lang="en">3</y></x>'), { 'a & b': '1', member: '2', y: '3' })
  })

  t.test('an empty root is an empty object; a namespace prefix is dropped', async t => {
    t.same(parseXml('<book/>'), {})
    t.same(parseXml('<a:book xmlns:a="urn:x"><a:title>t</a:title></a:book>'), { title: 't' })
  })

  t.test('a member named __proto__ stays an own member and pollutes nothing', async t => {
    const body = parseXml('<x><member name="__proto__"><polluted>yes</polluted></member></x>')
    t.same(Object.keys(body), ['__proto__'])
    t.equal(({} as Record<string, unknown>).polluted, undefined)
    t.equal(Object.getPrototypeOf(body), Object.prototype)
  })

  t.test('a written envelope reads back to the same members (as text)', async t => {
    const xml = write({ title: 'A & <B>', year: 1961, none: null, tags: ['x'], meta: { k: 'v' } })
    t.same(parseXml(xml), { title: 'A & <B>', year: '1961', none: null, tags: ['x'], meta: { k: 'v' } })
  })

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
    ['nesting beyond the parser\'s depth limit', `<a>${'<b>'.repeat(150)}${'</b>'.repeat(150)}</a>`, /could not be parsed: Maximum nested tags exceeded/],
    ['a name the parser reserves', '<x><constructor>1</constructor></x>', /could not be parsed/]
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
    t.match(refusal('<?xml version="1.0" encoding="ISO-8859-1"?><x/>'), { code: 'API_ERR_UNSUPPORTED_MEDIA_TYPE', statusCode: 415, message: /declares iso-8859-1/ })
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
