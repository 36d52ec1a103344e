// The query parameters of collections and items, each declared once (spec "Query parameters on
// collections", "Sorting", "Paging"): one entry per parameter says its names (its own and OData's),
// how it is read and documented, what the page links repeat of it, what a continuation token is
// bound to, and what QUERY CAPABILITIES reports of it. list-query.ts reads the query with these
// entries, route-schema.ts documents them, capabilities.ts reports them and paging/ reads the
// window's, so the parser, the document, the links and the capabilities cannot drift apart.
import type { View, ViewRelation } from '../registry/model.js'
import type { JsonSchema } from '../registry/derive.js'
import type { SortKey } from './store-query.js'
import type { InvalidParam } from '../errors.js'
import { readFilter } from './filter/from-query.js'
import type { FilterReading } from './filter/from-query.js'
import { parseApply } from './apply/parser.js'
import type { Aggregation } from './apply/parser.js'
import type { FilterSyntaxError } from './filter/lexer.js'
import { parseSearch } from './search.js'
import type { Search, SearchSyntaxError } from './search.js'

/** A query string as the framework parsed it: a repeated name holds its values in order. */
export type RawQuery = Record<string, string | string[] | undefined>

export interface QueryParameter<T> {
  readonly name: string
  /** Also a parameter of RETRIEVE, beside LIST. */
  readonly item: boolean
  /** A list: repeating it (`sort=-year&sort=title`) reads as one comma-separated value (`sort=-year,title`). */
  readonly list: boolean
  /** Its schema in the document, description included; undefined when the model leaves nothing to send. */
  readonly schema: (model: View) => JsonSchema | undefined
  /**
   * The value as sent, once (undefined when absent); each problem names the parameter. `query` is
   * the whole query, which `filter` reads its simple filters from (every name no entry reserves);
   * without it there are none.
   */
  readonly parse: (model: View, text: string | undefined, problems: InvalidParam[], query?: RawQuery) => T
}

// Leading zeros are read as decimal (`007` is 7): nothing else could be meant.
const digits = /^[0-9]+$/
/**
 * Client-driven paging 3: any position is valid, one past the end gives an empty page; beyond
 * 2^53 - 1 a number no longer names one integer.
 */
export const largestCount = Number.MAX_SAFE_INTEGER

/** An entry's reader, made for the name it is read under. */
export type Entry<T> = (name: string) => QueryParameter<T>

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

/** Read as sent: paging/ opens the token against the query's binding. */
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
  ({ type: 'array', items: { type: 'string', enum: values }, minItems: 1, description: `${description} Separate the values with commas, or repeat the parameter.` })

function splitList (value: string): string[] {
  return value.split(',').map(part => part.trim())
}

const fields: Entry<Set<string> | null> = name => ({
  name,
  item: true,
  list: true,
  schema: model => commaList([...model.fields.keys()], `Fields to return (a name given twice counts once); ${model.mandatory.join(', ')} always are.`),
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

/** `true`, `false`, or `estimated`: the database's estimate for 10,000 matches or more (docs/export.md). */
export type TotalRequest = boolean | 'estimated'

const total: Entry<TotalRequest> = name => ({
  name,
  item: false,
  list: false,
  // A boolean, or `estimated`: not an enum of three texts, which documentation consoles fill in (`total=false&$count=true`, a 400).
  schema: () => ({
    anyOf: [{ type: 'boolean' }, { type: 'string', enum: ['estimated'] }],
    default: false,
    description: 'Also return the number of matches across all pages, in meta.total. estimated: on PostgreSQL the planner\'s estimate when it is 10,000 or more, flagged with meta.totalEstimated; below that, and on other stores, the exact count.'
  }),
  parse (_model, value, problems) {
    if (value === undefined || value === 'false') return false
    if (value === 'true') return true
    if (value === 'estimated') return 'estimated'
    problems.push({ name, reason: "must be 'true', 'false' or 'estimated'" })
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

/** `filter`'s text and the simple filters (every other name of the query), as one tree. */
const filter: Entry<FilterReading> = name => ({
  name,
  item: false,
  list: false,
  schema: () => ({ type: 'string', description: filterGrammar }),
  parse: (model, value, problems, query = {}) => readFilter(model, value, name, query, listParameterNames, problems)
})

// Short: it is repeated on every LIST of the document (docs/aggregates.md has the rest).
const applyGrammar = 'OData $apply: filter(…) steps, then aggregate(…) or groupby((field,relation/field),aggregate(…)), then filter(…) of the groups ' +
  '(HAVING: grouping values, aliases); aggregates: $count as a, field with sum|average|min|max|countdistinct as a. One object per group instead of records. ' +
  'Not with fields, expand, include, token.'

/** `apply=` as sent, and what it asks (null when it is malformed: a problem says why). */
export interface ApplyReading { readonly text: string, readonly aggregation: Aggregation | null }

const apply: Entry<ApplyReading | null> = name => ({
  name,
  item: false,
  list: false,
  schema: () => ({ type: 'string', description: applyGrammar }),
  parse (model, text, problems) {
    if (text === undefined) return null
    try {
      return { text, aggregation: parseApply(text, model) }
    } catch (error) {
      // parseApply throws FilterSyntaxError only.
      problems.push({ name, reason: (error as FilterSyntaxError).message })
      return { text, aggregation: null }
    }
  }
})

/** The fields a caller's `search` matches: the resource's searchable ones that the caller may read. */
export const searchFields = (model: View): string[] => model.model.searchable.filter(field => model.fields.has(field))

/** `search=` (query/search.ts); refused where there is nothing to search, as the document leaves it out there. */
const search: Entry<Search | null> = name => ({
  name,
  item: false,
  list: false,
  schema: model => searchFields(model).length === 0
    ? undefined
    : {
        type: 'string',
        description: 'OData $search of the searchable fields (OPTIONS): whole words, any case or accent; "phrase", AND or space, OR, NOT, ( ). Without sort, most relevant first.'
      },
  parse (model, value, problems) {
    if (value === undefined) return null
    const fields = searchFields(model)
    if (fields.length === 0) {
      problems.push({ name, reason: `${model.name} has no searchable fields` })
      return null
    }
    try {
      return { node: parseSearch(value), fields }
    } catch (error) {
      // parseSearch throws SearchSyntaxError only.
      problems.push({ name, reason: (error as SearchSyntaxError).message })
      return null
    }
  }
})

/** One parameter of one LIST request: its value, and how it was sent. */
export interface Sent<T> {
  /** Its own name, the one its links use. */
  readonly name: string
  readonly value: T
  /** The name it came under: its own, or its OData name. */
  readonly as: string
  /** As sent under that name, a list's repetitions apart. */
  readonly raw: string | string[] | undefined
}

/** What a LIST asks of the store once every parameter is read: the order made total, the fields projected. */
export interface Resolved {
  readonly sort: readonly SortKey[]
  readonly fields: ReadonlySet<string> | null
}

/** `name=value` pairs of a page link; a list repeats its name, an undefined value is left out. */
export type LinkPairs = ReadonlyArray<readonly [string, string | readonly string[] | undefined]>

/** A member of QUERY CAPABILITIES' body (spec "Operations": OPTIONS). */
export interface Capability {
  readonly member: string
  /** Its value for a model as one caller sees it (rules/view.ts): what it hides is not listed. */
  readonly of: (model: View) => unknown
  /** Its schema in the document, from the registered model. */
  readonly schema: (model: View) => JsonSchema
}

/**
 * What a parameter does to a list. The page links, the token's binding and the capabilities list
 * the parameters by part, in this order: what matches, its order, each item's shape, the count,
 * the page. The window's parameters are read by paging/ (the page, its size and position).
 */
const parts = ['filter', 'order', 'shape', 'count', 'window'] as const

/** One collection parameter: how it is read, and what it does beside. */
export interface ParameterDefinition<T> {
  /** How it is read and documented, under its own name. */
  readonly read: Entry<T>
  readonly part: typeof parts[number]
  /**
   * Its name among OData's system query options (OData 4.01 URL conventions, "System Query
   * Options"), meaning the same, with its errors reported under that name; `read` when OData's
   * syntax is not the conventions'. Both names together are a 400 (readParameters).
   */
  readonly odata?: { readonly name: `$${string}`, readonly read?: Entry<T> }
  /**
   * What each page link repeats of it, under its own name (Page links 4), whichever name it came
   * under: either name leads on alike. None for the window's, which each link writes itself.
   */
  readonly link?: (sent: Sent<T>) => LinkPairs
  /** Its part of what a continuation token is bound to (Paging stability 2–3); none when pages may differ in it. */
  readonly bind?: (sent: Sent<T>, resolved: Resolved) => unknown[]
  readonly capability?: Capability
}

/** Typed per entry: `link` and `bind` read the value `read` makes. */
const define = <T>(definition: ParameterDefinition<T>): ParameterDefinition<T> => definition

// An enum names at least one value (JSON Schema validation §6.1.2): an empty list is said by maxItems.
const nameList = (values: readonly string[], description: string): JsonSchema => values.length === 0
  ? { type: 'array', items: { type: 'string' }, maxItems: 0, description }
  : { type: 'array', items: { type: 'string', enum: [...values] }, description }

/** A capability listing names: the document's enum is every name of the registered model. */
const names = (member: string, of: (model: View) => string[], description: (model: View) => string): Capability =>
  ({ member, of, schema: model => nameList(of(model), description(model)) })

const fieldNames = (model: View) => [...model.fields.keys()]
const relationNames = (model: View) => [...model.relations.keys()]
const sortKey = (key: SortKey) => (key.direction === 'desc' ? '-' : '') + key.field
/** Keys as `sort` spells them. */
const sortText = (keys: readonly SortKey[]) => keys.map(sortKey).join(',')
/** A list as sent, comma-separated or repeated: the links are followed by the client that chose the form. */
const asSent = ({ name, raw }: Sent<unknown>): LinkPairs => [[name, raw]]
const pageSizeOf = (of: string, value: number): JsonSchema => ({ type: 'integer', enum: [value], description: `${of} (pageSize).` })

/** The conventions' parameters, each named by its key; their order is the document's and the order a repeated one is reported in. */
const definitions = {
  fields: define({
    read: fields,
    part: 'shape',
    odata: { name: '$select' },
    link: asSent,
    // The fields returned, the mandatory ones and the relation keys included, in any order.
    bind: (_, { fields }) => [fields === null ? null : [...fields].sort()],
    capability: names('fields', fieldNames, model => `Fields \`fields\` may select; ${model.mandatory.join(', ')} always come.`)
  }),
  filter: define({
    read: filter,
    part: 'filter',
    odata: { name: '$filter' },
    link: ({ name, value }) => [[name, value.text], ...value.simple],
    // JSON keeps the parts apart whatever characters they hold.
    bind: ({ value }) => [value.text ?? null, value.simple],
    capability: names('filterable', fieldNames, () => 'Fields `filter` and the simple filters may name; a related resource\'s through its relation (author/name).')
  }),
  apply: define({
    read: apply,
    part: 'filter',
    odata: { name: '$apply' },
    link: ({ name, value }) => [[name, value?.text]]
  }),
  search: define({
    read: search,
    part: 'filter',
    odata: { name: '$search' },
    link: asSent,
    bind: ({ raw }) => [typeof raw === 'string' ? raw : null],
    capability: names('searchable', searchFields, () => 'Fields `search` matches.')
  }),
  sort: define({
    read: sort,
    part: 'order',
    odata: { name: '$orderby', read: orderby },
    // `$orderby` as sort's text.
    link: ({ name, value, as, raw }) => [[name, as === name ? raw : sortText(value)]],
    // The order made total (Paging stability 1): the keys a token's position is made of.
    bind: (_, { sort }) => [sort.map(sortKey)],
    capability: names('sortable', sortableFields, () => 'Fields `sort` may name.')
  }),
  token: define({ read: text('Continuation token from a next or prev link; only valid with the query that produced it.'), part: 'window' }),
  offset: define({
    read: count({ minimum: 0, description: () => `Offset paging: 0-based position of the first item. Not with token or pageOffset. ${pastEnd}` }),
    part: 'window',
    odata: { name: '$skip' }
  }),
  pageOffset: define({ read: count({ minimum: 1, description: () => `Offset paging by page number, from 1. Not with token or offset. ${pastEnd}` }), part: 'window' }),
  page: define({ read: count({ minimum: 1, description: () => 'The same as pageOffset.' }), part: 'window' }),
  pageSize: define({
    read: count({
      minimum: 0,
      description: model => `Items per page, at most ${model.maxPageSize} (maxPageSize); larger is 400.`,
      limit: { of: model => model.maxPageSize, why: 'maxPageSize' },
      fallback: model => model.defaultPageSize
    }),
    part: 'window',
    odata: { name: '$top' },
    capability: {
      member: 'pageSize',
      of: model => ({ default: model.defaultPageSize, max: model.maxPageSize }),
      schema: model => ({
        type: 'object',
        properties: { default: pageSizeOf('Items per page when pageSize is absent', model.defaultPageSize), max: pageSizeOf('The largest pageSize accepted', model.maxPageSize) },
        required: ['default', 'max'],
        description: 'Page sizes.'
      })
    }
  }),
  total: define({
    read: total,
    part: 'count',
    odata: { name: '$count' },
    link: ({ name, value }) => [[name, value === false ? undefined : String(value)]]
  }),
  expand: define({
    read: relations(() => 'Related resources to embed in each item (a name given twice counts once).'),
    part: 'shape',
    odata: { name: '$expand' },
    link: asSent,
    capability: names('expandable', relationNames, () => 'Relations `expand` may embed.')
  }),
  include: define({
    read: relations(model => `Related resources to list in links (a name given twice counts once): one link per related resource, with rel the relation name and a member ${JSON.stringify(model.singular)} naming the item.`),
    part: 'shape',
    link: asSent,
    capability: names('includable', relationNames, () => 'Relations `include` may link.')
  })
}

type Definitions = typeof definitions
export type ParameterName = keyof Definitions
type ValueOf<N extends ParameterName> = ReturnType<ReturnType<Definitions[N]['read']>['parse']>

const conventionNames = Object.keys(definitions) as ParameterName[]

/**
 * Every parameter a collection reserves, by its own name, in the table's order; those marked
 * `item` are RETRIEVE's too. Any other name on a collection is a simple filter.
 */
export const queryParameters = Object.fromEntries(conventionNames.map(name => [name, definitions[name].read(name)])) as
  { readonly [N in ParameterName]: QueryParameter<ValueOf<N>> }

/**
 * The entries in the order of their parts (filter, order, shape, count, window), each in the
 * table's order within its part: the order of the page links' parameters, of a token's binding
 * and of QUERY CAPABILITIES' members.
 */
export const byPart: ReadonlyArray<{ readonly name: ParameterName, readonly definition: ParameterDefinition<unknown> }> = conventionNames
  .map(name => ({ name, definition: definitions[name] as ParameterDefinition<unknown> }))
  .sort((a, b) => parts.indexOf(a.definition.part) - parts.indexOf(b.definition.part))

/** The parameters paging/ reads: the page, its size and position. */
export const windowNames: ReadonlySet<ParameterName> = new Set(conventionNames.filter(name => definitions[name].part === 'window'))

/**
 * Where OData's name is not the conventions', it says so in the document, without a default. Read
 * as the conventions' parameter is, the name is all it says: that parameter, beside it on every
 * LIST, says the rest; read its own way (`$orderby`), it says how.
 */
function odataParameter (means: ParameterName, name: string, read: Entry<unknown>, ownSyntax: boolean): QueryParameter<unknown> {
  const parameter = read(name)
  return {
    ...parameter,
    schema (model) {
      const schema = parameter.schema(model)
      if (schema === undefined) return undefined
      // No default: a client that sends every default would send both names, a 400.
      const { default: _, description, ...rest } = schema
      const alias = `OData's name of ${means}, not to be sent with it.`
      return { ...rest, description: ownSyntax ? `${alias} ${String(description)}` : alias }
    }
  }
}

/**
 * The OData name of each parameter that has one, by the parameter's own name, in the table's
 * order.
 */
export const odataParameters: ReadonlyMap<ParameterName, QueryParameter<unknown>> = new Map(conventionNames.flatMap(means => {
  const { odata, read } = definitions[means] as ParameterDefinition<unknown>
  return odata === undefined ? [] : [[means, odataParameter(means, odata.name, odata.read ?? read, odata.read !== undefined)] as const]
}))

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

/** The parameters of one request as readParameters read them. */
export interface Readings {
  /** Each one's text as one value, under the name it was sent as; undefined when absent. */
  readonly given: Partial<Record<ParameterName, string>>
  /** Its value, parsed when asked for (`page` is read only without `pageOffset`). */
  readonly read: <N extends ParameterName>(name: N) => ValueOf<N>
  /** The name it was sent as: its own or its OData name. */
  readonly sentAs: (name: ParameterName) => string
}

/**
 * Reads each of `names` once, under the name it was sent as: its own, or its OData name, whose
 * parser then names it in each problem. Both names of one option are a problem naming each, and
 * the option is read as absent.
 */
export function readParameters (model: View, raw: RawQuery, names: readonly ParameterName[], problems: InvalidParam[]): Readings {
  const given: Partial<Record<ParameterName, string>> = {}
  const parameters: Partial<Record<ParameterName, QueryParameter<unknown>>> = {}
  for (const name of names) {
    const odata = odataParameters.get(name)
    const parameter = odata !== undefined && raw[odata.name] !== undefined ? odata : queryParameters[name]
    parameters[name] = parameter
    if (parameter !== odata || raw[name] === undefined) {
      given[name] = singleValue(parameter.name, raw[parameter.name], problems)
    } else {
      for (const sent of [name, odata.name]) problems.push({ name: sent, reason: `${name} and ${odata.name} are one option: send one of them` })
    }
  }
  const sentAs = (name: ParameterName): string => (parameters[name] as QueryParameter<unknown>).name
  const read = <N extends ParameterName>(name: N) => (parameters[name] as QueryParameter<unknown>).parse(model, given[name], problems, raw) as ValueOf<N>
  return { given, read, sentAs }
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
