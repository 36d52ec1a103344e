// Example bodies for the writes (spec "What the service does" 3: the reference page is a console):
// one per documented write body, on its JSON media types, where Scalar prefills the request from;
// without them it fills "" into every field. Each is made from the resource's own schema and must
// pass the server's validator (test/openapi-examples.test.ts checks it by sending them).
import type { ResourceModel } from '../registry/model.js'
import { schemaNames } from '../registry/derive.js'
import type { JsonSchema } from '../registry/derive.js'
import type { ModelRules } from '../rules/compile.js'
import { componentNames } from '../routes/http-prose.js'
import type { BodyWrite } from '../operations/table.js'

// Values that pass ajv-formats' checks of each format.
const formatExamples: Record<string, string> = {
  date: '2024-05-01',
  time: '12:00:00Z',
  'date-time': '2024-05-01T12:00:00.000Z',
  duration: 'P1D',
  email: 'someone@example.com',
  hostname: 'example.com',
  ipv4: '192.0.2.1',
  ipv6: '2001:db8::1',
  uri: 'https://example.com/',
  'uri-reference': '/example',
  url: 'https://example.com/',
  uuid: '01890a5d-ac96-774b-bcce-b302099a8057',
  regex: '^[a-z]+$'
}

/**
 * A value valid against `schema`, from its own `examples`, `const`, `default` or `enum` where it
 * has them, else from its type and bounds; `name` words a plain string. Undefined when none is
 * found (a pattern too involved, `not`), which leaves an optional member out.
 */
export function exampleOf (schema: JsonSchema, name = 'example'): unknown {
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0]
  if ('const' in schema) return schema.const
  if (schema.default !== undefined) return schema.default
  if (Array.isArray(schema.enum)) return schema.enum[0]
  if (Array.isArray(schema.allOf)) return merged((schema.allOf as JsonSchema[]).map(part => exampleOf(part, name)))
  const variants = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined
  // The first variant that is not null: a nullable field shows a value.
  if (variants !== undefined) return exampleOf(variants.find(variant => variant.type !== 'null') ?? variants[0], name)
  const types = [schema.type].flat()
  const type = types.find(candidate => candidate !== 'null') ?? types[0] ?? (schema.properties === undefined ? undefined : 'object')
  switch (type) {
    case 'string': return stringExample(schema, name)
    case 'integer': return numberExample(schema, true)
    case 'number': return numberExample(schema, false)
    case 'boolean': return true
    case 'null': return null
    case 'array': return arrayExample(schema, name)
    case 'object': return objectExample(schema)
    // No type: anything goes (a `json` field), unless `not` refuses everything.
    default: return schema.not === undefined ? {} : undefined
  }
}

/** The parts of an allOf as one value: objects merged, else the first. */
function merged (parts: unknown[]): unknown {
  const objects = parts.every(part => typeof part === 'object' && part !== null && !Array.isArray(part))
  return objects ? Object.assign({}, ...parts) as unknown : parts[0]
}

function stringExample (schema: JsonSchema, name: string): string | undefined {
  const format = typeof schema.format === 'string' ? formatExamples[schema.format] : undefined
  if (format !== undefined) return format
  const minLength = typeof schema.minLength === 'number' ? schema.minLength : 0
  const maxLength = typeof schema.maxLength === 'number' ? schema.maxLength : Infinity
  const text = `Example ${name}`.padEnd(minLength, '.').slice(0, maxLength)
  if (typeof schema.pattern !== 'string') return text
  const pattern = new RegExp(schema.pattern, 'u')
  if (pattern.test(text)) return text
  const generated = fromPattern(schema.pattern)
  return generated !== undefined && pattern.test(generated) ? generated : undefined
}

/**
 * The shortest text of a simple pattern: literals, escapes, `.`, classes (their first member) and
 * quantifiers, between optional anchors; undefined for anything else (groups, alternatives).
 */
function fromPattern (pattern: string): string | undefined {
  const atoms = /\\[dws]|\\.|\[\\?[^\]^]|\.|[^\\[\](){}|*+?^$]/gy
  const quantifier = /\{(\d+)(?:,\d*)?\}|[*+?]/y
  const classRest = /(?:\\.|[^\]\\])*\]/y
  const escapes: Record<string, string> = { '\\d': '0', '\\w': 'a', '\\s': ' ' }
  let text = ''
  let at = pattern.startsWith('^') ? 1 : 0
  const end = pattern.endsWith('$') && !pattern.endsWith('\\$') ? pattern.length - 1 : pattern.length
  while (at < end) {
    atoms.lastIndex = at
    const atom = atoms.exec(pattern)?.[0]
    if (atom === undefined) return undefined
    at += atom.length
    let char = escapes[atom] ?? atom.slice(-1)
    if (atom.startsWith('[')) {
      char = escapes[atom.slice(1)] ?? atom.slice(-1)
      // The pattern compiled, so the class is closed.
      classRest.lastIndex = at
      at += (classRest.exec(pattern) as RegExpExecArray)[0].length
    } else if (atom === '.') char = 'a'
    quantifier.lastIndex = at
    const count = quantifier.exec(pattern)
    if (count !== null) at += count[0].length
    text += char.repeat(count === null ? 1 : count[1] !== undefined ? Number(count[1]) : count[0] === '+' ? 1 : 0)
  }
  return text
}

/** The first of a few likely values that meets the bounds and `multipleOf` as Ajv checks them. */
function numberExample (schema: JsonSchema, integer: boolean): number | undefined {
  const bound = (keyword: string) => typeof schema[keyword] === 'number' ? schema[keyword] : undefined
  const [minimum, maximum, above, below, step] = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'].map(bound)
  const fits = (value: number) => (!integer || Number.isInteger(value)) &&
    (minimum === undefined || value >= minimum) && (maximum === undefined || value <= maximum) &&
    (above === undefined || value > above) && (below === undefined || value < below) &&
    (step === undefined || (value / step) % 1 === 0)
  const low = minimum ?? (above === undefined ? undefined : above + 1)
  const high = maximum ?? (below === undefined ? undefined : below - 1)
  const candidates = [low, 1, 0, high, (above ?? minimum ?? 0) / 2 + (below ?? maximum ?? 0) / 2, step]
    .filter(value => value !== undefined)
    .flatMap(value => [value, Math.ceil(value), ...(step === undefined ? [] : [Math.ceil(value / step) * step])])
  return candidates.find(fits)
}

function arrayExample (schema: JsonSchema, name: string): unknown[] | undefined {
  const minItems = typeof schema.minItems === 'number' ? schema.minItems : 0
  const count = schema.maxItems === 0 ? 0 : Math.max(minItems, 1)
  const item = typeof schema.items === 'object' ? exampleOf(schema.items as JsonSchema, name) : {}
  // Repeated items would break uniqueItems.
  if (item === undefined || (count > 1 && schema.uniqueItems === true)) return undefined
  return Array.from({ length: count }, () => item)
}

function objectExample (schema: JsonSchema): Record<string, unknown> | undefined {
  const required = new Set(Array.isArray(schema.required) ? schema.required as string[] : [])
  const value: Record<string, unknown> = {}
  for (const [name, member] of Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>)) {
    const example = exampleOf(member, name)
    if (example !== undefined) value[name] = example
    else if (required.has(name)) return undefined
  }
  return value
}

/** A write's example as an OpenAPI Example Object; undefined when a required field has none. */
function writeExample (model: ResourceModel, rules: ModelRules | null, operation: BodyWrite): JsonSchema | undefined {
  const related = new Map([...model.relations.values()].filter(relation => relation.kind === 'one').map(relation => [relation.field, relation.target]))
  const value: Record<string, unknown> = {}
  const placeholders: string[] = []
  for (const field of model.fields.values()) {
    // The server's fields, those only some callers may write, and relations: their ids are not known here.
    if (field.readOnly || rules?.fields.has(field.name) === true) continue
    const target = related.get(field.name)
    if (target !== undefined && (operation === 'modify' || !field.required)) continue
    const example = exampleOf(field.schema, field.name)
    if (example === undefined && field.required && operation !== 'modify') return undefined
    if (example === undefined) continue
    value[field.name] = example
    if (target !== undefined) placeholders.push(`\`${field.name}\` must be the ${target.idField} of an existing ${target.singular}`)
  }
  const summary = { create: `A new ${model.singular}`, replace: `The ${model.singular} as a whole`, modify: 'Some of its fields' }[operation]
  const made = 'Made from the schema: it passes validation.'
  return { summary, description: placeholders.length === 0 ? made : `${made} ${placeholders.join('; ')}: replace the placeholder.`, value }
}

/**
 * A batch that creates one record of each resource it can, each after those its required
 * relations name, which it refers to by their lid.
 */
function batchExample (models: readonly ResourceModel[], rulesOf: (model: ResourceModel) => ModelRules | null, creatable: ReadonlySet<string>): JsonSchema | undefined {
  const lids = new Map<string, string>()
  const operations: JsonSchema[] = []
  let pending = models.filter(model => creatable.has(model.name))
  for (let added = true; added;) {
    added = false
    for (const model of pending) {
      const data = writeExample(model, rulesOf(model), 'create')?.value as Record<string, unknown> | undefined
      const relations = [...model.relations.values()].filter(relation => relation.kind === 'one' && data !== undefined && relation.field in data)
      if (data === undefined || !relations.every(relation => lids.has(relation.target.name))) continue
      for (const relation of relations) data[relation.field] = { lid: lids.get(relation.target.name) }
      lids.set(model.name, model.singular)
      operations.push({ op: 'create', resource: model.name, lid: model.singular, data })
      added = true
    }
    pending = pending.filter(model => !lids.has(model.name))
  }
  if (operations.length === 0) return undefined
  return { summary: 'Related records created at once', description: 'Each create names its record with a lid, which later operations use for its id.', value: { operations } }
}

interface MediaType { schema?: { $ref?: string }, examples?: Record<string, JsonSchema> }
interface Operation { requestBody?: { content: Record<string, MediaType> } }
interface OpenApiDocument { components: { schemas: Record<string, JsonSchema> }, paths: Record<string, Record<string, object>> }

// The media types Scalar's console fills from an example; the others read the body in other forms.
const jsonTypes = ['application/json', 'application/merge-patch+json']

/** Puts each write body's example on its JSON media types, under `example`. */
export function documentExamples<T extends OpenApiDocument> (openapi: T, models: readonly ResourceModel[], rulesOf: (model: ResourceModel) => ModelRules | null): T {
  const byComponent = new Map<string, () => JsonSchema | undefined>()
  for (const model of models) {
    const names = schemaNames(model)
    for (const operation of ['create', 'replace', 'modify'] as const) byComponent.set(names[operation], () => writeExample(model, rulesOf(model), operation))
  }
  byComponent.set(componentNames.batch, () => {
    const branches = (openapi.components.schemas[componentNames.batch].properties as { operations: { items: { oneOf: JsonSchema[] } } }).operations.items.oneOf
    const creates = branches.map(branch => branch.properties as Record<string, { enum: string[] }>).filter(branch => branch.op.enum[0] === 'create')
    return batchExample(models, rulesOf, new Set(creates.map(branch => branch.resource.enum[0])))
  })
  for (const item of Object.values(openapi.paths)) {
    for (const operation of Object.values(item) as Operation[]) {
      const content = operation.requestBody?.content ?? {}
      for (const type of jsonTypes) {
        const ref = content[type]?.schema?.$ref
        const example = ref === undefined ? undefined : byComponent.get(ref.slice(ref.lastIndexOf('/') + 1))?.()
        // A copy: @fastify/swagger shares one media type object between the body's types.
        if (example !== undefined) content[type] = { ...content[type], examples: { example } }
      }
    }
  }
  return openapi
}
