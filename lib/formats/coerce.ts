// Text bodies (XML, forms, multipart) carry every value as text; this gives each top-level field
// the JSON type its schema names, before validation, so validation and invalidParams are
// exactly those of a JSON body (spec "Request headers": Content-Type).
const jsonNumber = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/

type Types = ReadonlySet<string>
const fieldTypes = new WeakMap<object, ReadonlyMap<string, Types>>()

/** The JSON types a schema admits, through anyOf / oneOf (nullable fields are `anyOf [T, null]`). */
function typesOf (schema: unknown, into = new Set<string>()): Set<string> {
  if (typeof schema !== 'object' || schema === null) return into
  const { type, anyOf, oneOf } = schema as { type?: unknown, anyOf?: unknown, oneOf?: unknown }
  for (const name of Array.isArray(type) ? type : [type]) if (typeof name === 'string') into.add(name)
  for (const variants of [anyOf, oneOf]) if (Array.isArray(variants)) for (const variant of variants) typesOf(variant, into)
  return into
}

/** Per body schema, once: the types of each property. */
function typesByField (schema: object): ReadonlyMap<string, Types> {
  let types = fieldTypes.get(schema)
  if (types === undefined) {
    const properties = (schema as { properties?: Record<string, unknown> }).properties ?? {}
    types = new Map(Object.entries(properties).map(([name, property]) => [name, typesOf(property)]))
    fieldTypes.set(schema, types)
  }
  return types
}

/**
 * Converts the text values of a parsed body to the types of `schema`'s properties. A value that
 * does not read as its type is left as text, for the validator to refuse with the usual reason.
 * `emptyIsNull` (forms, which cannot say null otherwise): an empty value of a nullable field is null.
 * @example
 * coerceBody({ year: '1961', available: 'false' }, bookSchema, false) // { year: 1961, available: false }
 */
export function coerceBody (body: Record<string, unknown>, schema: unknown, emptyIsNull: boolean): Record<string, unknown> {
  if (typeof schema !== 'object' || schema === null) return body
  const types = typesByField(schema)
  for (const name of Object.keys(body)) {
    const admitted = types.get(name)
    if (admitted !== undefined) body[name] = coerceValue(body[name], admitted, emptyIsNull)
  }
  return body
}

/** One text value as the first of `types` it reads as (xml.ts reads every element through it). */
export function coerceValue (value: unknown, types: Types, emptyIsNull: boolean): unknown {
  if (typeof value !== 'string') return value
  // An empty element or value is an empty structure for a structured (json) field.
  if (value === '' && types.has('array')) return []
  if (value === '' && types.has('object')) return {}
  if (value === '' && types.has('null') && (emptyIsNull || !types.has('string'))) return null
  // Text is text: a field that admits strings keeps it as sent.
  if (types.has('string')) return value
  if ((types.has('number') || types.has('integer')) && jsonNumber.test(value)) {
    const number = Number(value)
    if (Number.isFinite(number)) return number
  }
  if (types.has('boolean') && (value === 'true' || value === 'false')) return value === 'true'
  return value
}
