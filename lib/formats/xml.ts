// The XML wire format (spec "Request headers": Content-Type and Accept allow application/xml): one
// fixed mapping between the JSON envelope and XML, both ways, and RFC 7807 Appendix A problems.
//
// Writing: the root is <response> (or <problem xmlns="urn:ietf:rfc:7807">); each member becomes
// an element of its name, in order; null is <name xsi:nil="true"/>; booleans are true/false and
// numbers as JSON writes them; array items are <link> under links, the resource's singular for
// collections and embedded to-many relations (itemNames), and <i> otherwise (RFC 7807 App. A).
// Reading: the root element holds one element per field, all values arrive as text (or null,
// or arrays of <i> items) and coerce.ts gives them the field's type before validation.
import { XMLParser, XMLValidator } from 'fast-xml-parser'
import { BodyMalformedError, UnsupportedMediaTypeError } from '../errors.js'

export const xmlMediaType = 'application/xml; charset=utf-8'
export const problemXmlMediaType = 'application/problem+xml; charset=utf-8'

const declaration = '<?xml version="1.0" encoding="UTF-8"?>'
const xsiNamespace = ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'

/** Item element names of arrays, by the name of the member holding the array (`books` → `book`). */
export type ItemNames = ReadonlyMap<string, string>

/** The serializer of XML responses: the envelope under <response>. */
export function createXmlWriter (itemNames: ItemNames): (body: unknown) => string {
  return body => declaration + write('response', xsiNamespace, body, itemNames, false)
}

const noItemNames: ItemNames = new Map()

/** RFC 7807 Appendix A: the problem members under <problem> in the urn:ietf:rfc:7807 namespace. */
export function writeProblemXml (problem: unknown): string {
  return declaration + write('problem', ` xmlns="urn:ietf:rfc:7807"${xsiNamespace}`, problem, noItemNames, false)
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

function write (name: string, attributes: string, value: unknown, itemNames: ItemNames, inLinks: boolean): string {
  const open = plainName.test(name) ? name + attributes : `member name="${escapeXml(name)}"${attributes}`
  const close = plainName.test(name) ? name : 'member'
  if (value === null) return `<${open} xsi:nil="true"/>`
  switch (typeof value) {
    case 'string': return `<${open}>${escapeXml(value)}</${close}>`
    case 'boolean': return `<${open}>${value}</${close}>`
    // JSON writes non-finite numbers as null.
    case 'number': return Number.isFinite(value) ? `<${open}>${value}</${close}>` : `<${open} xsi:nil="true"/>`
    case 'object': break
    default: return ''
  }
  const links = inLinks || name === 'links'
  let content = ''
  if (Array.isArray(value)) {
    const item = links ? 'link' : itemNames.get(name) ?? 'i'
    for (const entry of value) content += write(item, '', entry === undefined ? null : entry, itemNames, links)
  } else {
    const json = (value as { toJSON?: () => unknown }).toJSON
    // Dates and other values with toJSON are written as JSON would write them.
    if (typeof json === 'function') return write(name, attributes, json.call(value), itemNames, inLinks)
    for (const [key, member] of Object.entries(value)) content += write(key, '', member, itemNames, links)
  }
  return content === '' ? `<${open}/>` : `<${open}>${content}</${close}>`
}

// Parsing. No entity processing by the parser: DTDs are refused before it runs and the five
// predefined entities and character references are decoded here, so nothing can expand.
const parser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
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
 * Reads an XML request body into the object its root element describes: one member per child
 * element, text values as strings, `xsi:nil="true"` as null, children all named <i> as an array,
 * repeated elements as an array. Throws 400 for anything not well-formed or carrying a DTD.
 * @example
 * parseXml('<book><title>Solaris</title><year>1961</year></book>') // { title: 'Solaris', year: '1961' }
 */
export function parseXml (source: string): Record<string, unknown> {
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
  return membersOf(elements)
}

/** The body is read as UTF-8 (Fastify decodes it so); a declaration naming another encoding is refused. */
function checkEncoding (text: string) {
  const encoding = /^\uFEFF?<\?xml[^?]*\bencoding\s*=\s*["']([^"']*)["']/.exec(text)?.[1].toLowerCase()
  if (encoding !== undefined && encoding !== 'utf-8' && encoding !== 'utf8' && encoding !== 'us-ascii') {
    throw new UnsupportedMediaTypeError(`XML bodies must be UTF-8; the document declares ${encoding}.`)
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

const tagOf = (node: XmlNode) => Object.keys(node).find(key => key !== ':@' && key !== '#text' && key !== '#cdata')

function split (children: XmlNode[]): { text: string, elements: Element[] } {
  let text = ''
  const elements: Element[] = []
  for (const node of children) {
    if ('#text' in node) text += decodeText(String(node['#text']))
    else if ('#cdata' in node) text += (node['#cdata'] as XmlNode[]).map(part => String(part['#text'])).join('')
    else {
      const name = tagOf(node) as string
      elements.push({ name, attributes: (node[':@'] ?? {}) as Record<string, string>, children: node[name] as XmlNode[] })
    }
  }
  return { text, elements }
}

function valueOf (element: Element): unknown {
  const nil = element.attributes.nil
  if (nil === 'true' || nil === '1') return null
  const { text, elements } = split(element.children)
  if (elements.length === 0) return text
  if (text.trim() !== '') throw malformed(`element <${element.name}> mixes text and elements.`)
  return elements.every(child => child.name === 'i') ? elements.map(valueOf) : membersOf(elements)
}

/** Child elements as members; a repeated name becomes an array, for the validator to judge. */
function membersOf (elements: readonly Element[]): Record<string, unknown> {
  const grouped = new Map<string, unknown[]>()
  for (const element of elements) {
    const name = element.name === 'member' && element.attributes.name !== undefined ? decodeText(element.attributes.name) : element.name
    const values = grouped.get(name)
    if (values === undefined) grouped.set(name, [valueOf(element)])
    else values.push(valueOf(element))
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
