// The document's repeated parts written once (spec "What the service does" 2, 3: a document a client
// can read): every parameter, the problem responses and the response headers go to `components`,
// and each operation refers to them. The route schemas (routes/route-schema.ts) stay complete per
// route; this pass, at document time, replaces each copy by a $ref.
import type { JsonSchema } from '../registry/derive.js'
import { componentHint } from '../routes/http-prose.js'
import { listValuedNames } from '../query/parameters.js'

type Json = Record<string, unknown>
interface Parameter extends Json { in: string, name: string, schema?: JsonSchema }
interface Response extends Json { description: string, headers?: Record<string, Json>, content?: Json }
interface Operation { parameters?: Array<Parameter | Json>, responses: Record<string, Response | Json> }
export interface ComponentsObject { components: Record<string, Record<string, unknown>>, paths: Record<string, Record<string, Operation>> }

/**
 * The parts of one kind (`parameters`, `responses`, `headers`), by name: the first value given a
 * name keeps it; another value under the same name is numbered (`Allow.2`), so nothing is lost
 * whatever the routes document. Equal values share one entry; with `byName`, only under the same
 * name (a header's name is what it means: an ETag is not a Cache-Control of the same schema).
 */
class Shared {
  readonly entries: Record<string, Json> = {}
  readonly #names = new Map<string, string>()
  readonly #uses = new Map<string, number>()

  constructor (readonly kind: string, readonly byName = false) {}

  #key (name: string, value: Json): string {
    return this.byName ? `${name} ${JSON.stringify(value)}` : JSON.stringify(value)
  }

  /** Counts a use, for `repeated`. */
  use (name: string, value: Json): void {
    const key = this.#key(name, value)
    this.#uses.set(key, (this.#uses.get(key) ?? 0) + 1)
  }

  /** Whether the value was used more than once. */
  repeated (name: string, value: Json): boolean {
    return (this.#uses.get(this.#key(name, value)) as number) > 1
  }

  ref (name: string, value: Json): { $ref: string } {
    const key = this.#key(name, value)
    let named = this.#names.get(key)
    if (named === undefined) {
      // OpenAPI 3.1 §4.8.7.1: a component's key matches ^[a-zA-Z0-9._-]+$ (an OData `$top` is `_top`).
      named = name.replace(/[^a-zA-Z0-9._-]/g, '_')
      const base = named
      for (let n = 2; this.entries[named] !== undefined; n++) named = `${base}.${n}`
      this.entries[named] = value
      this.#names.set(key, named)
    }
    return { $ref: `#/components/${this.kind}/${named}` }
  }
}

/**
 * A parameter as the document shares it: lists comma-separated, defaults left out, named by its
 * hint (`Book.sort`), or by its own name where it is the same for every resource (`filter`).
 */
function documentedParameter (parameter: Parameter): { hint: string, shared: Parameter } {
  const { [componentHint]: hint, ...schema } = parameter.schema as JsonSchema
  // Defaults are said by leaving them out: `required: false`, and a query's style form with explode
  // true, which route-schema.ts gives every query parameter (headers and paths have no style).
  const { required, style: _style, explode: _explode, ...rest } = parameter
  const shared: Parameter = { ...rest, ...(required === true ? { required } : {}), schema }
  // Style form, explode false: `sort=-year,title`, the spec's form (query/parameters.ts).
  if (parameter.in === 'query' && listValuedNames.has(parameter.name)) Object.assign(shared, { style: 'form', explode: false })
  return { hint: typeof hint === 'string' ? hint : parameter.name, shared }
}

function shareParameters (operations: readonly Operation[], parameters: Shared): void {
  const hints = new Map<string, Set<string>>()
  for (const operation of operations) {
    for (const parameter of operation.parameters ?? []) {
      const { hint, shared } = documentedParameter(parameter as Parameter)
      const key = JSON.stringify(shared)
      hints.set(key, (hints.get(key) ?? new Set()).add(hint))
    }
  }
  for (const operation of operations) {
    if (operation.parameters === undefined) continue
    operation.parameters = operation.parameters.map(parameter => {
      const { hint, shared } = documentedParameter(parameter as Parameter)
      return parameters.ref((hints.get(JSON.stringify(shared)) as Set<string>).size > 1 ? shared.name : hint, shared)
    })
  }
}

/** Each header a response shares with another (Request-Id, ETag, the limit fields): the others stay where they are. */
function shareHeaders (headers: Shared, response: Response): Response {
  if (response.headers === undefined) return response
  const shared = Object.entries(response.headers).map(([name, header]) => [name, headers.repeated(name, header) ? headers.ref(name, header) : header])
  return { ...response, headers: Object.fromEntries(shared) }
}

/**
 * Responses are the same on many operations but for what their description says: one component
 * per status and shape (a problem with both problem types, JSON only, or without a body for HEAD; a
 * page of books on /books and /authors/{id}/books), with the description most operations give;
 * an operation that says more gives its own beside the $ref (an OpenAPI 3.1 Reference Object may).
 * A success used once stays where it is; every problem is a reference.
 */
function shareResponses (openapi: ComponentsObject, responses: Shared): void {
  const uses: Array<{ operation: Operation, status: string, response: Response, shape: string }> = []
  const reasons = new Map<string, Map<string, number>>()
  for (const item of Object.values(openapi.paths)) {
    for (const operation of Object.values(item)) {
      for (const [status, response] of Object.entries(operation.responses) as Array<[string, Response]>) {
        const { description, ...rest } = response
        const shape = `${status} ${JSON.stringify(rest)}`
        uses.push({ operation, status, response, shape })
        const counts = reasons.get(shape) ?? new Map<string, number>()
        reasons.set(shape, counts.set(description, (counts.get(description) ?? 0) + 1))
      }
    }
  }
  // The shape most operations answer a status with is named by the status (`404`); the others say how they differ.
  const byUse = [...reasons].sort(([, a], [, b]) => total(b) - total(a)).map(([shape]) => shape)
  for (const { operation, status, response, shape } of uses) {
    // A default (openapi/compact.ts) stands for problems.
    const problem = status === 'default' || Number(status) >= 400
    if (!problem && total(reasons.get(shape) as Map<string, number>) === 1) continue
    const counts = [...(reasons.get(shape) as Map<string, number>)]
    const [usual] = counts.reduce((most, entry) => entry[1] > most[1] ? entry : most)
    const first = byUse.find(other => other.startsWith(`${status} `)) === shape
    const suffix = first || !problem ? '' : shapeSuffixes[Object.keys(response.content ?? {}).length]
    // A success with a body is named by it (`BookList`); a problem, or an answer without a body, by its status.
    const body = Object.values(response.content ?? {})[0] as MediaType | undefined
    const named = !problem && typeof body?.schema.$ref === 'string' ? `${body.schema.$ref.slice(body.schema.$ref.lastIndexOf('/') + 1)}` : `${status}${suffix}`
    const ref = responses.ref(named, { ...response, description: usual })
    operation.responses[status] = response.description === usual ? ref : { ...ref, description: response.description }
  }
}

// By the media types a problem's other shapes have: none (HEAD), JSON only, or both (then numbered).
const shapeSuffixes = ['-without-body', '-json-only', '']
const total = (counts: Map<string, number>) => [...counts.values()].reduce((sum, count) => sum + count, 0)

interface MediaType { schema: JsonSchema }

/**
 * A body documented inline whose schema names its component (the QUERY CAPABILITIES bodies): one
 * schema for its JSON and XML forms, the XML one, whose XML Objects JSON readers pass over.
 */
function shareBody (schemas: Record<string, unknown>, response: Response): Response {
  const content = response.content as Record<string, MediaType> | undefined
  const forms = Object.values(content ?? {})
  const named = forms.find(form => typeof form.schema[componentHint] === 'string')
  if (content === undefined || named === undefined) return response
  // The XML form, which openapi/index.ts documentXml adds, comes last (http/negotiation.ts lists JSON first).
  const { [componentHint]: name, ...schema } = forms[forms.length - 1].schema
  schemas[name as string] = schema
  return { ...response, content: Object.fromEntries(Object.keys(content).map(type => [type, { schema: { $ref: `#/components/schemas/${name as string}` } }])) }
}

/**
 * The parameters every operation of a path takes (its id, the request headers of the spec) go to
 * the Path Item once, which its operations inherit.
 */
function hoistCommonParameters (item: Record<string, Operation | unknown>): void {
  const operations = Object.values(item) as Operation[]
  if (operations.length < 2) return
  const lists = operations.map(operation => (operation.parameters ?? []).map(parameter => JSON.stringify(parameter)))
  const common = lists[0].filter(parameter => lists.every(list => list.includes(parameter)))
  if (common.length === 0) return
  operations.forEach((operation, index) => {
    const rest = lists[index].filter(parameter => !common.includes(parameter))
    if (rest.length === 0) delete operation.parameters
    else operation.parameters = rest.map(parameter => JSON.parse(parameter) as unknown as Json)
  })
  item.parameters = common.map(parameter => JSON.parse(parameter) as unknown)
}

/** Moves the document's parameters, problem responses and response headers to components (see the module header). */
export function shareComponents<T extends ComponentsObject> (openapi: T): T {
  const parameters = new Shared('parameters')
  const responses = new Shared('responses')
  const headers = new Shared('headers', true)
  const operations = Object.values(openapi.paths).flatMap(item => Object.values(item))
  for (const operation of operations) {
    for (const response of Object.values(operation.responses) as Response[]) for (const [name, header] of Object.entries(response.headers ?? {})) headers.use(name, header)
  }
  shareParameters(operations, parameters)
  for (const operation of operations) {
    for (const [status, response] of Object.entries(operation.responses) as Array<[string, Response]>) {
      operation.responses[status] = shareBody(openapi.components.schemas as Record<string, unknown>, shareHeaders(headers, response))
    }
  }
  shareResponses(openapi, responses)
  for (const item of Object.values(openapi.paths)) hoistCommonParameters(item)
  Object.assign(openapi.components, { parameters: parameters.entries, responses: responses.entries, headers: headers.entries })
  return openapi
}
