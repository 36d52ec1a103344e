// The XML wire format (spec "Request headers": Content-Type and Accept allow application/xml): one
// mapping between JSON values and XML, both ways, driven by the schema of what is sent or read
// (xml-shape.ts), and RFC 9457 Appendix B problems.
//
// Writing: the root is <response> (or <problem xmlns="urn:ietf:rfc:7807">); each member becomes
// an element of its name, in order; null is <name xsi:nil="true"/>; booleans are true/false and
// numbers as JSON writes them; array items are <link> under the root's links, the resource's
// singular for arrays of resources, and <i> otherwise (RFC 9457 App. B). Where the schema admits
// more than one JSON type (or none is known), a non-string element says which: type="number".
// Reading: the root element holds one element per field, read by the body schema the same way.
import { XMLParser, XMLValidator } from 'fast-xml-parser'
import { BodyMalformedError, UnsupportedMediaTypeError, withInvalidParams } from '../errors.js'
import type { JsonSchema } from '../registry/derive.js'
import { coerceValue } from './coerce.js'
import { kinds, shapeOf } from './xml-shape.js'
import type { Kind, RefResolver, Shape } from './xml-shape.js'

export const xmlMediaType = 'application/xml; charset=utf-8'
export const problemXmlMediaType = 'application/problem+xml; charset=utf-8'
/** RFC 9457 Appendix B: the namespace of RFC 7807, which it keeps. */
export const problemNamespace = 'urn:ietf:rfc:7807'

const declaration = '<?xml version="1.0" encoding="UTF-8"?>'
const xsiNamespace = ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'

/** Schemas without references (bodies, problems) need no resolver. */
export const noRefs: RefResolver = { schema: () => undefined, itemName: () => undefined }

/**
 * The serializer of XML responses: the envelope under <response>, mapped by its response schema
 * (undefined: free-form, every element typed).
 * @example
 * createXmlWriter(noRefs)({ data: { n: 1 } }, { type: 'object', properties: { data: { type: 'object', properties: { n: { type: 'integer' } } } } })
 * // '<?xml …?><response xmlns:xsi="…"><data><n>1</n></data></response>'
 */
export function createXmlWriter (refs: RefResolver): (body: unknown, schema: JsonSchema | undefined) => string {
  return (body, schema) => declaration + writeRoot('response', xsiNamespace, body, shapeOf(schema, refs))
}

/** RFC 9457 Appendix B: the problem members under <problem> in the urn:ietf:rfc:7807 namespace. */
export function createProblemXmlWriter (schema: JsonSchema): (problem: unknown) => string {
  const shape = shapeOf(schema, noRefs)
  return problem => declaration + writeRoot('problem', ` xmlns="${problemNamespace}"${xsiNamespace}`, problem, shape)
}

// Names that are not XML names (or are reserved: `xml…`) are written <member name="…">.
const plainName = /^(?!xml)[A-Za-z_][A-Za-z0-9_.-]*$/i
// Characters XML 1.0 cannot carry at all, not even as references: replaced by U+FFFD.
const illegal = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g // eslint-disable-line no-control-regex
const hasIllegal = new RegExp(illegal.source)
const special = /[&<>"\r\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/ // eslint-disable-line no-control-regex
const entities: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '\r': '&#13;' }

export function escapeXml (text: string): string {
  // \r is a reference: a parser turns a literal CR (and CRLF) into LF (XML 1.0 §2.11).
  return special.test(text) ? text.replace(illegal, '\uFFFD').replace(/[&<>"\r]/g, c => entities[c]) : text
}

/** The root: its members, the root's `links` with <link> items. */
function writeRoot (name: string, attributes: string, body: unknown, shape: Shape): string {
  let content = ''
  for (const [key, member] of Object.entries(body ?? {})) if (member !== undefined) content += write(key, key === 'links' ? shape.linksMember : shape.member(key), member)
  return content === '' ? `<${name}${attributes}/>` : `<${name}${attributes}>${content}</${name}>`
}

/** The JSON type of a value as written; undefined for what JSON leaves out (functions, symbols). */
function kindOf (value: unknown): Kind | undefined {
  if (Array.isArray(value)) return 'array'
  const type = typeof value
  return kinds.has(type) ? type as Kind : undefined
}

function write (name: string, shape: Shape, value: unknown): string {
  const plain = plainName.test(name)
  const open = plain ? name : `member name="${escapeXml(name)}"`
  const close = plain ? name : 'member'
  const json = (value as { toJSON?: () => unknown } | null | undefined)?.toJSON
  // Dates and other values with toJSON are written as JSON would write them.
  if (typeof json === 'function') return write(name, shape, json.call(value))
  // JSON writes non-finite numbers and undefined array items as null.
  if (value === null || value === undefined || (typeof value === 'number' && !Number.isFinite(value))) return `<${open} xsi:nil="true"/>`
  const kind = kindOf(value)
  if (kind === undefined) return ''
  // A value the schema does not admit (a route without a serializer) is written free-form.
  const as = shape.kinds.has(kind) ? shape : shapeOf(undefined, noRefs)
  const typed = as.tagged && kind !== 'string' ? `${open} type="${kind}"` : open
  let content = ''
  if (kind === 'array') {
    for (const item of value as unknown[]) content += write(as.itemName, as.items, item)
  } else if (kind === 'object') {
    // JSON leaves undefined members out.
    for (const [key, member] of Object.entries(value as object)) if (member !== undefined) content += write(key, as.member(key), member)
  } else {
    return `<${typed}>${kind === 'string' ? escapeXml(value as string) : String(value)}</${close}>`
  }
  return content === '' ? `<${typed}/>` : `<${typed}>${content}</${close}>`
}

// Parsing. No entity processing by the parser: DTDs are refused before it runs and the five
// predefined entities and character references are decoded here, so nothing can expand.
// Element names reach us with a leading space (no XML name has one): the parser then never sees
// `constructor`, `toString` … as names, which it would refuse or rename, and members keep the
// names sent, for the validator to judge exactly as in JSON.
const parser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  transformTagName: (name: string) => ` ${name}`,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  removeNSPrefix: true,
  ignoreDeclaration: true,
  ignorePiTags: true,
  processEntities: false,
  cdataPropName: '#cdata'
})

const malformed = (reason: string) => new BodyMalformedError(`XML ${reason}`)

/**
 * Reads an XML request body into the object its root element describes, one member per child
 * element, each read by its schema (`schema`: the route's body schema): text as the field's type,
 * children as an array's items or an object's members, `xsi:nil="true"` as null; a repeated
 * element becomes an array, for the validator to judge. Throws 400 for anything not well-formed
 * or carrying a DTD.
 * @example
 * parseXml('<book><title>Solaris</title><year>1961</year></book>', bookSchema) // { title: 'Solaris', year: 1961 }
 */
export function parseXml (source: string, schema?: JsonSchema): Record<string, unknown> {
  // XML 1.0 §2.11: line ends are normalised before parsing.
  const text = source.replace(/\r\n?/g, '\n')
  checkEncoding(text)
  if (hasIllegal.test(text)) throw malformed('contains a character XML 1.0 does not allow.')
  if (hasDeclarations(text)) throw malformed('must not contain a DOCTYPE or other declarations: DTDs and entity definitions are not accepted.')
  const valid = XMLValidator.validate(text)
  if (valid !== true) {
    const { msg, line, col } = valid.err
    throw malformed(`is not well-formed: ${msg}${col === undefined ? '' : ` (line ${line}, column ${col})`}`)
  }
  let nodes: XmlNode[]
  try {
    nodes = parser.parse(text) as XmlNode[]
  } catch (error) {
    throw malformed(`could not be parsed: ${(error as Error).message}`)
  }
  const roots = nodes.filter(node => tagOf(node) !== undefined)
  if (roots.length !== 1) throw malformed('must have exactly one root element.')
  const { text: rootText, elements } = split(roots[0][tagOf(roots[0]) as string] as XmlNode[])
  if (rootText.trim() !== '') throw malformed('root element must contain only elements, one per field.')
  return membersOf(elements, shapeOf(schema, noRefs))
}

/** The body is read as UTF-8 (Fastify decodes it so); a declaration naming another encoding is refused. */
function checkEncoding (text: string) {
  const encoding = /^\uFEFF?<\?xml[^?]*\bencoding\s*=\s*["']([^"']*)["']/.exec(text)?.[1].toLowerCase()
  if (encoding !== undefined && encoding !== 'utf-8' && encoding !== 'utf8' && encoding !== 'us-ascii') {
    throw withInvalidParams(new UnsupportedMediaTypeError(`XML bodies must be UTF-8; the document declares ${encoding}.`), [{ name: 'body', reason: `the XML declaration names encoding ${encoding}; send UTF-8` }])
  }
}

/** Markup declarations (`<!DOCTYPE`, `<!ENTITY` …) anywhere outside comments and CDATA; linear. */
function hasDeclarations (text: string): boolean {
  for (let at = text.indexOf('<!'); at !== -1; at = text.indexOf('<!', at + 2)) {
    const end = text.startsWith('<!--', at) ? '-->' : text.startsWith('<![CDATA[', at) ? ']]>' : undefined
    if (end === undefined) return true
    const close = text.indexOf(end, at)
    // An unclosed comment or section is for the validator to report.
    if (close === -1) return false
    at = close
  }
  return false
}

type XmlNode = Record<string, unknown>
interface Element { readonly name: string, readonly attributes: Record<string, string>, readonly children: XmlNode[] }

const tagOf = (node: XmlNode) => Object.keys(node).find(key => key[0] === ' ')

function split (children: XmlNode[]): { text: string, elements: Element[] } {
  let text = ''
  const elements: Element[] = []
  for (const node of children) {
    if ('#text' in node) text += decodeText(String(node['#text']))
    else if ('#cdata' in node) text += (node['#cdata'] as XmlNode[]).map(part => String(part['#text'])).join('')
    else {
      const tag = tagOf(node) as string
      // The parser may add the space twice (to self-closing tags).
      elements.push({ name: tag.trimStart(), attributes: (node[':@'] ?? {}) as Record<string, string>, children: node[tag] as XmlNode[] })
    }
  }
  return { text, elements }
}

function valueOf (element: Element, shape: Shape): unknown {
  const nil = element.attributes['@nil']
  if (nil === 'true' || nil === '1') return null
  const { text, elements } = split(element.children)
  if (elements.length > 0 && text.trim() !== '') throw malformed(`element <${element.name}> mixes text and elements.`)
  const named = shape.tagged ? namedKind(element) : undefined
  const kind = shape.tagged ? named ?? guessKind(shape, elements.length > 0) : shape.kind
  if (kind === 'array') {
    if (elements.length > 0) return elements.map(item => valueOf(item, shape.items))
    return text.trim() === '' ? [] : text
  }
  if (kind === 'object' || elements.length > 0) {
    // Children where a scalar belongs: an object, which the validator refuses by the field's type.
    if (elements.length > 0) return membersOf(elements, kind === 'object' ? shape : shapeOf(undefined, noRefs))
    return text.trim() === '' ? {} : text
  }
  // Text stays text where strings are allowed, unless the element names another kind.
  if (named === undefined && shape.kinds.has('string')) return text
  const value = coerceValue(text, named === undefined ? shape.types : new Set([named]), false)
  if (named !== undefined && named !== 'string' && typeof value === 'string') throw malformed(`element <${element.name}> says type="${named}" but holds ${JSON.stringify(text)}.`)
  return value
}

/** The kind an element says it holds (type="number" …), where the schema admits several. */
function namedKind (element: Element): Kind | undefined {
  const named = element.attributes['@type']
  return named !== undefined && kinds.has(named) ? named as Kind : undefined
}

/** Without type="…": children make an object (an array if only that is admitted); text is read by the admitted types. */
function guessKind (shape: Shape, hasChildren: boolean): Kind | undefined {
  if (!hasChildren) return undefined
  return shape.kinds.has('array') && !shape.kinds.has('object') ? 'array' : 'object'
}

/** Child elements as members, each by its member's shape; a repeated name becomes an array, for the validator to judge. */
function membersOf (elements: readonly Element[], shape: Shape): Record<string, unknown> {
  const grouped = new Map<string, unknown[]>()
  for (const element of elements) {
    const label = element.attributes['@name']
    const name = element.name === 'member' && label !== undefined ? decodeText(label) : element.name
    const value = valueOf(element, shape.member(name))
    const values = grouped.get(name)
    if (values === undefined) grouped.set(name, [value])
    else values.push(value)
  }
  const members: Record<string, unknown> = {}
  // defineProperty: a member named __proto__ stays an own member the validator refuses by name.
  for (const [name, values] of grouped) Object.defineProperty(members, name, { value: values.length === 1 ? values[0] : values, enumerable: true, writable: true, configurable: true })
  return members
}

const predefined: Readonly<Record<string, string>> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" }

function decodeText (raw: string): string {
  if (!raw.includes('&')) return raw
  return raw.replace(/&(#x[0-9A-Fa-f]+|#[0-9]+|[A-Za-z_][A-Za-z0-9_.-]*)?(;?)/g, (match, reference: string | undefined, semicolon: string) => {
    if (reference === undefined || semicolon === '') throw malformed(`has a bare '&' (${match}); write &amp;.`)
    if (reference[0] !== '#') {
      const character = predefined[reference]
      if (character === undefined) throw malformed(`uses the undefined entity &${reference};; only &lt; &gt; &amp; &quot; &apos; and character references are accepted.`)
      return character
    }
    const code = reference[1] === 'x' ? parseInt(reference.slice(2), 16) : parseInt(reference.slice(1), 10)
    if (!isXmlChar(code)) throw malformed(`references a character XML 1.0 does not allow (${match}).`)
    return String.fromCodePoint(code)
  })
}

// XML 1.0 §2.2 Char.
const isXmlChar = (code: number) =>
  code === 0x9 || code === 0xA || code === 0xD || (code >= 0x20 && code <= 0xD7FF) ||
  (code >= 0xE000 && code <= 0xFFFD) || (code >= 0x10000 && code <= 0x10FFFF)
