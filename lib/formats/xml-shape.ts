// What the XML mapping (docs/wire-formats.md: documented, and stable) reads from a JSON schema:
// the JSON types a value may take, the schemas of its members and items, and the names of the
// item elements. The writer, the reader and the OpenAPI `xml` objects all follow these shapes, so
// what is sent, what is read back and what is documented cannot drift apart.
import type { JsonSchema } from '../registry/derive.js'

/** The JSON types an element can carry (integers are numbers; null is `xsi:nil` whatever the schema). */
export type Kind = 'string' | 'number' | 'boolean' | 'array' | 'object'
export const kinds: ReadonlySet<string> = new Set<Kind>(['string', 'number', 'boolean', 'array', 'object'])

/** Looks a `$ref` up: the schema it names and, for a resource, the singular its items take. */
export interface RefResolver {
  readonly schema: (ref: string) => JsonSchema | undefined
  readonly itemName: (ref: string) => string | undefined
}

const allTypes = ['string', 'number', 'integer', 'boolean', 'null', 'array', 'object']

/**
 * One schema as the mapping sees it. Built lazily, so recursive schemas (a book embeds its
 * author, who embeds her books) cost only what a value reaches.
 */
export class Shape {
  #types: ReadonlySet<string> | undefined
  #kinds: ReadonlySet<Kind> | undefined
  #members = new Map<string, Shape>()
  #rest: Shape | undefined
  #items: Shape | undefined
  #variants: Shape[] | undefined
  #links: Shape | undefined
  // A schema reached again through its own variants (A = anyOf [A]) adds nothing.
  #visiting = false

  constructor (readonly schema: JsonSchema | undefined, readonly refs: RefResolver, private readonly links = false) {}

  /** The JSON Schema types admitted, through `$ref`, `anyOf`, `oneOf`, `allOf`, `enum` and `const`; a schema that names none admits all. */
  get types (): ReadonlySet<string> {
    if (this.#types === undefined) {
      const types = new Set<string>()
      const schema = this.schema ?? {}
      for (const name of [schema.type].flat()) if (typeof name === 'string') types.add(name)
      const values = 'const' in schema ? [schema.const] : Array.isArray(schema.enum) ? schema.enum : []
      for (const value of values) types.add(value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value)
      const variants = this.variants
      this.visit(() => { for (const variant of variants) for (const name of variant.types) types.add(name) })
      if (types.size === 0 && variants.length === 0) for (const name of allTypes) types.add(name)
      this.#types = types
    }
    return this.#types
  }

  /** The kinds a value of this schema may take. */
  get kinds (): ReadonlySet<Kind> {
    this.#kinds ??= new Set([...this.types].map(name => name === 'integer' ? 'number' : name).filter(name => kinds.has(name)) as Kind[])
    return this.#kinds
  }

  /**
   * Whether its elements say their kind (`type="number"` …): the schema admits more than one, so
   * the element alone could not tell `""` from `[]` from `{}`, or `"1"` from `1`. Links are only
   * written, and the document describes each rel precisely, so they never say it.
   */
  get tagged (): boolean {
    return !this.links && this.kinds.size !== 1
  }

  /** The first kind admitted: the only one, where the schema is untagged. */
  get kind (): Kind | undefined {
    return this.kinds.values().next().value
  }

  get nullable (): boolean {
    return this.types.has('null')
  }

  /** Items of an array. */
  get items (): Shape {
    this.#items ??= this.shape(this.find(schema => typeof schema.items === 'object' ? schema.items as JsonSchema : undefined), false)
    return this.#items
  }

  /** The element name of each item: <link> in links, the resource's singular for resources, else <i> (RFC 9457 Appendix B). */
  get itemName (): string {
    if (this.links) return 'link'
    const ref = this.items.schema?.$ref
    return (typeof ref === 'string' ? this.refs.itemName(ref) : undefined) ?? 'i'
  }

  /** A member's shape: its property's schema, else the schema for other members, else free-form. */
  member (name: string): Shape {
    let member = this.#members.get(name)
    if (member === undefined) {
      const schema = this.find(schema => {
        const properties = schema.properties as Record<string, JsonSchema> | undefined
        return properties !== undefined && Object.hasOwn(properties, name) ? properties[name] : undefined
      })
      // Only named properties are kept: the names a client sends must not grow this map.
      if (schema === undefined) return this.rest
      this.#members.set(name, member = this.shape(schema, this.links))
    }
    return member
  }

  /** Members without a property of their own: `additionalProperties`, a `patternProperties` schema, else free-form. */
  get rest (): Shape {
    this.#rest ??= this.shape(this.find(schema => {
      if (typeof schema.additionalProperties === 'object') return schema.additionalProperties as JsonSchema
      return schema.patternProperties === undefined ? undefined : Object.values(schema.patternProperties as Record<string, JsonSchema>)[0]
    }), this.links)
    return this.#rest
  }

  /** The shape of the root member `links`, whose items are <link> at every depth. */
  get linksMember (): Shape {
    this.#links ??= new Shape(this.member('links').schema, this.refs, true)
    return this.#links
  }

  /**
   * `anyOf` / `oneOf` variants, `allOf` branches and a `$ref`'s target. Every allOf branch holds,
   * so taking them as variants is exact for one branch (a documented default, registry/derive.ts)
   * and otherwise admits more than the schema does: at worst an element says its type needlessly.
   */
  private get variants (): Shape[] {
    if (this.#variants === undefined) {
      const schema = this.schema ?? {}
      const list = [schema.anyOf, schema.oneOf, schema.allOf].flatMap(variants => Array.isArray(variants) ? variants as JsonSchema[] : [])
      const target = typeof schema.$ref === 'string' ? this.refs.schema(schema.$ref) : undefined
      if (target !== undefined) list.push(target)
      this.#variants = list.map(variant => this.shape(variant, this.links))
    }
    return this.#variants
  }

  /** The first answer `pick` gives for this schema or, depth first, for its variants. */
  private find (pick: (schema: JsonSchema) => JsonSchema | undefined): JsonSchema | undefined {
    const own = this.schema === undefined ? undefined : pick(this.schema)
    if (own !== undefined) return own
    let found: JsonSchema | undefined
    this.visit(() => { for (const variant of this.variants) if ((found = variant.find(pick)) !== undefined) return })
    return found
  }

  private visit (walk: () => void) {
    if (this.#visiting) return
    this.#visiting = true
    try {
      walk()
    } finally {
      this.#visiting = false
    }
  }

  private shape (schema: JsonSchema | undefined, links: boolean): Shape {
    return links ? new Shape(schema, this.refs, true) : shapeOf(schema, this.refs)
  }
}

const shapes = new WeakMap<RefResolver, WeakMap<object, Shape>>()
const freeForms = new WeakMap<RefResolver, Shape>()

/** The shape of a schema, once per schema object and resolver (route schemas live as long as the app). */
export function shapeOf (schema: JsonSchema | undefined, refs: RefResolver): Shape {
  if (schema === undefined) {
    let free = freeForms.get(refs)
    if (free === undefined) freeForms.set(refs, free = new Shape(undefined, refs))
    return free
  }
  let known = shapes.get(refs)
  if (known === undefined) shapes.set(refs, known = new WeakMap())
  let shape = known.get(schema)
  if (shape === undefined) known.set(schema, shape = new Shape(schema, refs))
  return shape
}

const freeFormNote = 'In XML, its elements other than strings say their JSON type: type="number", "boolean", "array" or "object"; array items are <i>.'
const openMembersNote = 'In XML, members beyond those named here are free-form: each of their elements that is not a string says its JSON type (type="number", "boolean", "array" or "object"); array items are <i>.'

/** The XML element of a document's root: <response>, <problem>, a body's resource name. */
export interface XmlRoot { readonly name: string, readonly namespace?: string }

/**
 * A schema of the OpenAPI document with OpenAPI 3.1 XML Objects describing the XML this mapping
 * sends and reads: wrapped arrays with their item names, the root element, and a note where
 * elements carry `type` (a copy; `refs` resolves the document's own `$ref`s).
 */
export function describeXml (schema: JsonSchema, refs: RefResolver, root?: XmlRoot): JsonSchema {
  const shape = shapeOf(schema, refs)
  const described = annotate(schema, shape, true)
  return root === undefined ? described : { ...described, xml: { ...root } }
}

function annotate (schema: JsonSchema, shape: Shape, isRoot = false): JsonSchema {
  // A value that can only be null (a nullable's other branch) is xsi:nil: it has no type to tell;
  // a reference's component tells it, once.
  if (shape.tagged) return shape.kinds.size === 0 || typeof schema.$ref === 'string' ? schema : { ...schema, description: noted(schema.description, freeFormNote) }
  const copy: JsonSchema = { ...schema }
  if (typeof schema.items === 'object') {
    copy.xml = { ...(schema.xml as object | undefined), wrapped: true }
    copy.items = { ...annotate(schema.items as JsonSchema, shape.items), xml: { name: shape.itemName } }
  }
  const properties = schema.properties as Record<string, JsonSchema> | undefined
  if (properties !== undefined) {
    copy.properties = Object.fromEntries(Object.entries(properties).map(([name, property]) =>
      [name, annotate(property, isRoot && name === 'links' ? shape.linksMember : shape.member(name))]))
  }
  if (typeof schema.additionalProperties === 'object') copy.additionalProperties = annotate(schema.additionalProperties as JsonSchema, shape.rest)
  else if (schema.additionalProperties === true || (schema.type === 'object' && schema.additionalProperties === undefined && properties === undefined && schema.patternProperties === undefined)) {
    copy.description = noted(schema.description, openMembersNote)
  }
  for (const keyword of ['anyOf', 'oneOf', 'allOf']) {
    const variants = schema[keyword]
    if (Array.isArray(variants)) copy[keyword] = variants.map((variant: JsonSchema) => annotate(variant, shapeOf(variant, shape.refs)))
  }
  return copy
}

const noted = (description: unknown, note: string) => typeof description === 'string' ? `${description} ${note}` : note
