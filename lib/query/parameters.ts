// The query parameters of collections and items, each declared once (spec "Query parameters on
// collections", "Sorting", "Paging"): list-query.ts reads with these parsers and route-schema.ts
// documents these schemas, so the OpenAPI document says what the parser takes.
import type { View, ViewRelation } from '../registry/model.js'
import type { JsonSchema } from '../registry/derive.js'
import type { SortKey } from './store-query.js'
import type { InvalidParam } from '../errors.js'

export interface QueryParameter<T> {
  readonly name: string
  /** Also a parameter of RETRIEVE, beside LIST. */
  readonly item: boolean
  /** A list: repeating it (`sort=-year&sort=title`) reads as one comma-separated value (`sort=-year,title`). */
  readonly list: boolean
  /** Its schema in the document, description included; undefined when the model leaves nothing to send. */
  readonly schema: (model: View) => JsonSchema | undefined
  /** The value as sent, once (undefined when absent); each problem names the parameter. */
  readonly parse: (model: View, text: string | undefined, problems: InvalidParam[]) => T
}

// Leading zeros are read as decimal (`007` is 7): nothing else could be meant.
const digits = /^[0-9]+$/
/**
 * Client-driven paging 3: any position is valid, one past the end gives an empty page; beyond
 * 2^53 - 1 a number no longer names one integer.
 */
export const largestCount = Number.MAX_SAFE_INTEGER

type Entry<T> = (name: string) => QueryParameter<T>

interface Count {
  readonly minimum: number
  readonly description: (model: View) => string
  /** The model's own maximum and what a refusal calls it; 2^53 - 1 caps it either way. */
  readonly limit?: { readonly of: (model: View) => number, readonly why: string }
  /** What list-query.ts assumes when the parameter is absent: OpenAPI's `default`. */
  readonly fallback?: (model: View) => number
}

/** A non-negative integer from `minimum`. */
function count ({ minimum, description, limit, fallback }: Count): Entry<number | undefined> {
  return name => ({
    name,
    item: false,
    list: false,
    schema: model => ({
      type: 'integer',
      minimum,
      maximum: Math.min(limit?.of(model) ?? largestCount, largestCount),
      ...(fallback === undefined ? {} : { default: fallback(model) }),
      description: description(model)
    }),
    parse (model, text, problems) {
      if (text === undefined) return undefined
      if (!digits.test(text)) {
        problems.push({ name, reason: minimum === 0 ? 'must be a non-negative integer' : `must be an integer of at least ${minimum}` })
        return undefined
      }
      const value = Number(text)
      if (value < minimum) problems.push({ name, reason: `must be at least ${minimum}` })
      else if (limit !== undefined && value > limit.of(model)) problems.push({ name, reason: `must not exceed ${limit.of(model)} (${limit.why})` })
      else if (value > largestCount) problems.push({ name, reason: `must not exceed ${largestCount} (2^53 - 1)` })
      else return value
      return undefined
    }
  })
}

/** Read as sent: list-query.ts checks it with the rest of the query (the filter with the simple ones, the token against the binding). */
const text = (description: string): Entry<string | undefined> => name => ({
  name,
  item: false,
  list: false,
  schema: () => ({ type: 'string', description }),
  parse: (_model, value) => value
})

/**
 * `fields=a,b` and friends: comma-separated (the spec's form, and the document's: OpenAPI style
 * form, explode false), or the parameter repeated (`fields=a&fields=b`), or both; each item
 * trimmed. `fields=` names nothing and is refused like an unknown name.
 */
const commaList = (values: readonly string[], description: string): JsonSchema =>
  ({ type: 'array', items: { type: 'string', enum: values }, minItems: 1, description: `${description} Separate the values with commas; the parameter repeated means the same.` })

function splitList (value: string): string[] {
  return value.split(',').map(part => part.trim())
}

const fields: Entry<Set<string> | null> = name => ({
  name,
  item: true,
  list: true,
  schema: model => commaList([...model.fields.keys()], `Fields to return, comma-separated (a name given twice counts once); ${model.mandatory.join(', ')} always are.`),
  parse (model, value, problems) {
    if (value === undefined) return null
    const selected = new Set(model.mandatory)
    for (const field of splitList(value)) {
      if (model.fields.has(field)) selected.add(field)
      else problems.push({ name, reason: `unknown field '${field}'` })
    }
    return selected
  }
})

const relations = (description: (model: View) => string): Entry<ViewRelation[]> => name => ({
  name,
  item: true,
  list: true,
  // Without relations no value is accepted: the parameter is left out.
  schema: model => model.relations.size === 0 ? undefined : commaList([...model.relations.keys()], description(model)),
  parse (model, value, problems) {
    if (value === undefined) return []
    const chosen: ViewRelation[] = []
    for (const relationName of splitList(value)) {
      const relation = model.relations.get(relationName)
      if (relation === undefined) problems.push({ name, reason: `unknown relation '${relationName}'` })
      else if (!chosen.includes(relation)) chosen.push(relation)
    }
    return chosen
  }
})

/** Every field but objects and arrays, which have no order. */
export const sortableFields = (model: View) => [...model.fields.values()].filter(field => field.type !== 'json').map(field => field.name)

/**
 * Each field at most once, in any direction: what the parser refuses, not only equal keys. In
 * draft-07 terms (validators such as Prism's read no `minContains`): no key twice (uniqueItems), and
 * no two of a field's three forms together (a `contains` for each). In `not`, which type generators
 * leave alone, where an allOf would add members of type unknown.
 */
function onceEach (fields: readonly string[]): JsonSchema {
  const both = (one: string, other: readonly string[]) => ({ allOf: [{ contains: { enum: [one] } }, { contains: { enum: other } }] })
  return {
    uniqueItems: true,
    not: { anyOf: fields.flatMap(field => [both(field, [`-${field}`, `+${field}`]), both(`-${field}`, [`+${field}`])]) }
  }
}

/** The keys as sent, without the tie-breaker list-query.ts adds (Paging stability 1). */
const sort: Entry<SortKey[]> = name => ({
  name,
  item: false,
  list: true,
  // A bare `+` in a query string is a space, which is trimmed: `sort=+year` is ascending too.
  schema: model => ({
    ...commaList(sortableFields(model).flatMap(field => [field, `-${field}`, `+${field}`]),
      `Sort keys, the first primary; a leading - sorts descending, a leading + or none ascending; each field at most once; null sorts first ascending. The ${model.idField} always ends the order.`),
    ...onceEach(sortableFields(model))
  }),
  parse (model, value, problems) {
    const keys: SortKey[] = []
    // `sort=` names nothing: refused like `fields=`, rather than read as the default order.
    for (const expression of value === undefined ? [] : splitList(value)) {
      const descending = expression.startsWith('-')
      const field = descending || expression.startsWith('+') ? expression.slice(1) : expression
      const known = model.fields.get(field)
      if (known === undefined || known.type === 'json') {
        problems.push({ name, reason: known === undefined ? `unknown field '${field}'` : `'${field}' cannot be sorted` })
      } else if (keys.some(key => key.field === field)) {
        problems.push({ name, reason: `'${field}' appears more than once` })
      } else {
        keys.push({ field, direction: descending ? 'desc' : 'asc' })
      }
    }
    return keys
  }
})

const total: Entry<boolean> = name => ({
  name,
  item: false,
  list: false,
  schema: () => ({ type: 'boolean', default: false, description: 'Also return the number of matches across all pages, in meta.total.' }),
  parse (_model, value, problems) {
    if (value === undefined || value === 'false') return false
    if (value === 'true') return true
    problems.push({ name, reason: "must be 'true' or 'false'" })
    return false
  }
})

const filterGrammar = [
  'OData 4.01 $filter subset, the same on every store. Comparisons eq, ne, gt, ge, lt, le and `in (…)` between fields, literals and functions;',
  'and, or, not, parentheses; a boolean alone is a condition (available, not available, true). Paths: author/name or author.name follows',
  "a relation; books/year gt 1970 on authors holds when any book does. Lambdas on 'many' relations: books/any(b: b/year gt 1970),",
  'books/all(b: b/rating ge 4), books/any(). Conditions: contains, startswith, endswith. Values: tolower, toupper, trim, concat,',
  'substring(s, start[, length]), length, indexof (code points, from 0), year, month, day (UTC), now(). Literals: \'text\' (quote doubled),',
  '12, +42, -1.5, 2.5e1, true, false, null, 2024-05-01, 2024-05-01T10:00:00Z, a bare GUID as the text it spells; a date beside a date-time is the instant its day begins',
  'in UTC. Keywords, operators and function names in any case. Not supported (400): arithmetic, has, $it, @aliases, typed literals.',
  "Example: year ge 1960 and author.country eq 'NZ'."
].join(' ')
const pastEnd = 'Past the end the page is empty.'

/** Each entry's name is its key, so it is written once. */
function named<T extends Record<string, Entry<unknown>>> (entries: T): { readonly [K in keyof T]: ReturnType<T[K]> } {
  return Object.fromEntries(Object.entries(entries).map(([name, entry]) => [name, entry(name)])) as { readonly [K in keyof T]: ReturnType<T[K]> }
}

/** The conventions' parameters; each entry is named by its key (named()). */
const conventions = {
  fields,
  filter: text(filterGrammar),
  sort,
  token: text('Continuation token from a next or prev link; only valid with the query that produced it.'),
  offset: count({ minimum: 0, description: () => `Offset paging: 0-based position of the first item. Not with token or pageOffset. ${pastEnd}` }),
  pageOffset: count({ minimum: 1, description: () => `Offset paging by page number, from 1. Not with token or offset. ${pastEnd}` }),
  page: count({ minimum: 1, description: () => 'The same as pageOffset.' }),
  pageSize: count({
    minimum: 0,
    description: model => `Items per page, at most ${model.maxPageSize} (maxPageSize); larger is 400.`,
    limit: { of: model => model.maxPageSize, why: 'maxPageSize' },
    fallback: model => model.defaultPageSize
  }),
  total,
  expand: relations(() => 'Related resources to embed in each item, comma-separated (a name given twice counts once).'),
  include: relations(model => `Related resources to list in links, comma-separated (a name given twice counts once): one link per related resource, with rel the relation name and a member ${JSON.stringify(model.singular)} naming the item.`)
}

/**
 * Every parameter a collection reserves, in the order a repeated one is reported; those marked
 * `item` are RETRIEVE's too. Any other name on a collection is a simple filter.
 */
export const queryParameters = named(conventions)

export type ParameterName = keyof typeof queryParameters

/** One `$orderby` item as sort's key (`year desc` → `-year`), or what is wrong with it and where. */
function sortKeyOf (item: string, start: number): { key: string } | { problem: string } {
  const [field, direction, extra] = [...item.matchAll(/\S+/g)].map(word => ({ text: word[0], at: start + (word.index as number) }))
  if (field === undefined) return { problem: `expected a field at position ${start}` }
  // OData would read a sign as arithmetic, which it is not here; sort would read it as a direction.
  if (/^[-+]/.test(field.text)) return { problem: `unexpected '${field.text[0]}' at position ${field.at}` }
  if (direction !== undefined && !/^(asc|desc)$/i.test(direction.text)) {
    return { problem: `expected 'asc' or 'desc' after '${field.text}', found '${direction.text}' at position ${direction.at}` }
  }
  if (extra !== undefined) return { problem: `unexpected '${extra.text}' at position ${extra.at}` }
  return { key: direction?.text.toLowerCase() === 'desc' ? `-${field.text}` : field.text }
}

/**
 * `$orderby=year desc,title` (OData 4.01 URL conventions, "System Query Option $orderby"): items
 * separated by commas, each a field and optionally `asc` or `desc` (in any case), read as sort's
 * text (`-year,title`) by sort's parser under this name, so the checks and their messages are
 * sort's. A syntax problem names its position, as filter's do.
 */
const orderby: Entry<SortKey[]> = name => {
  const asSort = sort(name)
  return {
    name,
    item: false,
    list: true,
    schema: model => ({
      type: 'string',
      description: `Sort keys in OData's syntax, the first primary: a field, then asc (the default) or desc, comma-separated (year desc,title); each field at most once. The ${model.idField} always ends the order.`
    }),
    parse (model, value, problems) {
      if (value === undefined) return []
      const keys: string[] = []
      let start = 0
      for (const item of value.split(',')) {
        const read = sortKeyOf(item, start)
        if ('problem' in read) {
          problems.push({ name, reason: read.problem })
          return []
        }
        keys.push(read.key)
        start += item.length + 1
      }
      return asSort.parse(model, keys.join(','), problems)
    }
  }
}

/**
 * The OData system query options (OData 4.01 URL conventions, "System Query Options") as OData
 * client libraries write them, in the order of the table above: each stands for the parameter it
 * names, with its meaning and its errors, reported under the name sent; `$orderby` has OData's own
 * syntax. Both names of one option together are a 400 (list-query.ts). `$search` and `$apply` take
 * one line each here once `search` and `apply` exist; until then they are unknown names, as
 * `search` and `apply` are.
 */
const odataNames = {
  $select: 'fields',
  $filter: 'filter',
  $orderby: 'sort',
  $skip: 'offset',
  $top: 'pageSize',
  $count: 'total',
  $expand: 'expand'
} as const satisfies Record<`$${string}`, ParameterName>

/** Where OData's syntax is not the conventions': its own parser and schema. */
const odataSyntax: Partial<Record<keyof typeof odataNames, Entry<unknown>>> = { $orderby: orderby }

function odataParameter (name: keyof typeof odataNames): QueryParameter<unknown> {
  const means = odataNames[name]
  const parameter = (odataSyntax[name] ?? conventions[means])(name)
  return {
    ...parameter,
    schema (model) {
      const schema = parameter.schema(model)
      if (schema === undefined) return undefined
      // No default: a client that sends every default would send both names, a 400.
      const { default: _, description, ...rest } = schema
      return { ...rest, description: `OData's name of ${means}, not to be sent with it. ${String(description)}` }
    }
  }
}

/** The OData name of each parameter that has one, by the parameter's own name. */
export const odataParameters: ReadonlyMap<ParameterName, QueryParameter<unknown>> =
  new Map((Object.keys(odataNames) as Array<keyof typeof odataNames>).map(name => [odataNames[name], odataParameter(name)]))

const entries = [...Object.values(queryParameters), ...odataParameters.values()] as ReadonlyArray<QueryParameter<unknown>>
const byName: ReadonlyMap<string, QueryParameter<unknown>> = new Map(entries.map(parameter => [parameter.name, parameter]))
/** The names a collection reserves, the OData ones included. */
export const listParameterNames: ReadonlySet<string> = new Set(byName.keys())
/** The names RETRIEVE takes, the OData ones included. */
export const itemParameterNames: ReadonlySet<string> = new Set(entries.filter(parameter => parameter.item).map(parameter => parameter.name))
/** The lists (`fields`, `sort`, `expand`, `include`): documented comma-separated, style form with explode false. */
export const listValuedNames: ReadonlySet<string> = new Set(entries.filter(parameter => parameter.list).map(parameter => parameter.name))

/**
 * A parameter's text as one value: a list's repetitions joined by commas, undefined for any other
 * parameter given more than once (a problem naming it).
 */
export function singleValue (name: string, value: string | string[] | undefined, problems: InvalidParam[]): string | undefined {
  if (!Array.isArray(value)) return value
  if ((byName.get(name) as QueryParameter<unknown>).list) return value.join(',')
  problems.push({ name, reason: 'must be given at most once' })
  return undefined
}

/** The documented schemas of LIST's reserved parameters, or RETRIEVE's, by name. */
export function parameterSchemas (model: View, operation: 'list' | 'retrieve'): Record<string, JsonSchema> {
  const schemas: Record<string, JsonSchema> = {}
  for (const parameter of entries) {
    const schema = operation === 'list' || parameter.item ? parameter.schema(model) : undefined
    if (schema !== undefined) schemas[parameter.name] = schema
  }
  return schemas
}
