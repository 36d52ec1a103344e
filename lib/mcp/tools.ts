// The MCP endpoint's tools (docs/mcp.md; STYLE "Operations are a core, entry points are adapters"):
// a few generic tools over every resource, not one per operation and resource, so that the list a
// model reads stays small; each call is the operation its HTTP request would be, performed by the
// operation core with the caller's own principal, and answers the JSON that request answers.
import type { FastifyRequest } from 'fastify'
import type { ErrorObject, ValidateFunction } from 'ajv'
import type { FieldModel, ResourceModel, View } from '../registry/model.js'
import type { JsonSchema } from '../registry/derive.js'
import type { Fields } from '../stores/store.js'
import type { OperationContext } from '../operations/context.js'
import type { Entry, Operations } from '../operations/index.js'
import { operationInput } from '../operations/input.js'
import type { OperationInput, Outcome } from '../operations/input.js'
import { operationTable } from '../operations/table.js'
import type { ResourceOperation } from '../operations/table.js'
import { parseTagList } from '../http/conditional.js'
import { keyedAs, maxKeyLength } from '../idempotency.js'
import { checkAuthorization, refusalOf } from '../security/auth.js'
import { BodyInvalidError, ForbiddenError, NotFoundError, withInvalidParams } from '../errors.js'
import { toInvalidParams } from '../validation.js'
import { searchFields, sortableFields } from '../query/parameters.js'

type ToolName = 'describe' | 'list' | 'get' | 'aggregate' | 'create' | 'update' | 'delete'

/** MCP's tool annotations (hints to the client, never trusted by the server). */
interface Hints { readonly readOnlyHint: boolean, readonly destructiveHint: boolean, readonly idempotentHint: boolean }

interface ToolSpec {
  /** The operation it performs; null: describe, which reads only the caller's views. */
  readonly operation: ResourceOperation | null
  readonly description: string
  readonly annotations: Hints
  /** Its arguments besides `resource`. */
  readonly properties: Readonly<Record<string, JsonSchema>>
  readonly required: readonly string[]
}

/** A tool as tools/list shows it. */
export interface Tool { readonly name: ToolName, readonly description: string, readonly inputSchema: JsonSchema, readonly annotations: Hints }

/** A tool's answer (MCP CallToolResult): the HTTP answer's body as JSON text, then its status and the headers that matter. */
export interface ToolResult { readonly content: Array<{ type: 'text', text: string }>, readonly isError: boolean, readonly [key: string]: unknown }

const read: Hints = { readOnlyHint: true, destructiveHint: false, idempotentHint: true }
const id: JsonSchema = { type: 'string', minLength: 1, description: 'The record\'s id.' }
const data = (what: string): JsonSchema => ({ type: 'object', description: `${what}; the fields describe lists.` })
const ifMatch: JsonSchema = { type: 'string', description: 'The ETag from get (as If-Match): a stale one is refused with 412 and nothing is written.' }
const idempotencyKey: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: maxKeyLength,
  pattern: '^[\\x20-\\x7e]+$',
  description: 'Any unique text (as Idempotency-Key): a retry with the same key and data answers the first result and writes nothing more.'
}

const tools: Readonly<Record<ToolName, ToolSpec>> = {
  describe: {
    operation: null,
    description: 'The resources as you may see them: fields and types, relations, what each tool may do on them, and the filter and sort syntax. Call first.',
    annotations: read,
    properties: {},
    required: []
  },
  list: {
    operation: 'list',
    description: 'One page of a resource\'s records: { data, meta, links }. The next page: the token of the next link.',
    annotations: read,
    properties: {
      filter: { type: 'string', description: 'OData $filter expression (see describe): year ge 1960 and contains(title, \'war\').' },
      search: { type: 'string', description: 'OData $search over the resource\'s searchable fields (see describe), by whole words in any case: tolkien OR "le guin" NOT ring. Without sort, the most relevant first.' },
      sort: { type: 'string', description: 'Comma-separated fields, - before one for descending: -year,title.' },
      fields: { type: 'string', description: 'Comma-separated fields to return (the id and required ones always come).' },
      pageSize: { type: 'integer', minimum: 0, description: 'Records per page, at most the resource\'s maxPageSize.' },
      token: { type: 'string', description: 'The token parameter of a next or prev link, with the same filter and sort.' }
    },
    required: []
  },
  get: {
    operation: 'retrieve',
    description: 'One record by id: { data }, and its ETag.',
    annotations: read,
    properties: { id },
    required: ['id']
  },
  aggregate: {
    operation: 'list',
    description: 'Groups of a resource\'s records with counts, sums, averages, min and max, computed by the store: { data, meta, links }, one object per group. ' +
      'apply is OData $apply: groupby((authorId),aggregate($count as n,rating with average as avg)), or aggregate(…) alone for one group.',
    annotations: read,
    properties: {
      apply: { type: 'string', minLength: 1, description: 'filter(…)/groupby((field,relation/field),aggregate($count as n,field with sum|average|min|max|countdistinct as alias))/filter(n gt 1): a filter after the grouping keeps the groups it matches.' },
      filter: { type: 'string', description: 'OData $filter expression selecting the records before grouping.' }
    },
    required: ['apply']
  },
  create: {
    operation: 'create',
    description: 'Creates a record; answers it, its location and ETag.',
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    properties: { data: data('The new record\'s fields'), idempotencyKey },
    required: ['data']
  },
  update: {
    operation: 'modify',
    description: 'Changes the fields given in data (JSON merge patch: null removes a field); answers the record and its ETag.',
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    properties: { id, data: data('The fields to change'), ifMatch, idempotencyKey },
    required: ['id', 'data']
  },
  delete: {
    operation: 'delete',
    description: 'Deletes a record.',
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    properties: { id, ifMatch },
    required: ['id']
  }
}

const toolNames = Object.keys(tools) as ToolName[]
const isToolName = (name: string): name is ToolName => Object.hasOwn(tools, name)

/** A tool's input schema, `resource` among the names given (describe: optional). */
function inputSchema (spec: ToolSpec, resources: readonly string[] | null): JsonSchema {
  const resource: JsonSchema = resources === null ? { type: 'string' } : { type: 'string', enum: [...resources] }
  return {
    type: 'object',
    properties: { resource, ...spec.properties },
    required: spec.operation === null ? [...spec.required] : ['resource', ...spec.required],
    additionalProperties: false
  }
}

const filterSyntax = 'OData $filter: eq ne gt ge lt le, in (a, b), and or not, ( ); contains/startswith/endswith(field, \'text\'), tolower(), length(), year(); ' +
  'a relation\'s field as author/name; on a many relation books/any(b: b/year gt 1970) or all(); literals \'text\' (quote doubled), 12, 4.5, true, null, 2024-05-01, 2024-05-01T10:00:00Z.'

/** One field, as describe words it: its type, then what constrains it. */
function fieldText (view: View, name: string): string {
  const field = view.fields.get(name) as FieldModel
  // A nullable field's schema is a union with null: its constraints are the other member's.
  const schema = (field.schema.anyOf as JsonSchema[] | undefined)?.find(member => member.type !== 'null') ?? field.schema
  const facts = [
    field.type + (field.nullable ? ' or null' : ''),
    ...(name === view.idField ? ['id'] : field.readOnly ? ['read-only'] : field.required ? ['required'] : []),
    // The format of a date or date-time field is its type already.
    ...['enum', 'format', 'minLength', 'maxLength', 'minimum', 'maximum', 'default'].filter(key => schema[key] !== undefined && (key !== 'format' || field.type === 'string')).map(key => `${key} ${JSON.stringify(schema[key])}`),
    ...(typeof field.schema.description === 'string' ? [field.schema.description] : [])
  ]
  return facts.join(', ')
}

/**
 * The tools of one plugin instance. The tools a caller sees, and the resources each names, are
 * those `auth.authorize` allows it, asked without a record (`id` and `record` undefined): a check
 * that needs the record decides again on each call, which the core makes (a refusal is a 403 result).
 */
export function createTools (context: OperationContext, core: Operations) {
  const models = [...context.models.values()]
  const { prefix } = context.envelope
  const authorize = context.options.auth?.authorize
  // Arguments are checked against a tool's schema with any resource name: the core answers an unknown one (404) or a refused one (403).
  const validators = new Map(toolNames.map(name => [name, context.ajv.compile(inputSchema(tools[name], null)) as ValidateFunction]))

  /** Whether `authorize` allows the caller `operation` on `model`, asked without a record. */
  const allows = (request: FastifyRequest, model: ResourceModel, operation: ResourceOperation) => authorize === undefined
    ? Promise.resolve(true)
    : new Promise<boolean>(resolve => {
      const ask = { principal: request.principal, model, operation, method: operationTable[operation].method, id: undefined, store: context.storeOf(model), memo: {}, request }
      checkAuthorization(authorize, context.views, ask, error => resolve(error === null))
    })

  /** For each tool, the resources the caller may use it on; a tool with none is not offered. */
  async function reachOf (request: FastifyRequest): Promise<Readonly<Record<ToolName, readonly string[]>>> {
    const reachOfOperation = async (operation: ResourceOperation) => {
      const allowed = await Promise.all(models.map(async model => model.operations.has(operation) && await allows(request, model, operation)))
      return models.filter((_, i) => allowed[i]).map(model => model.name)
    }
    const reach = Object.fromEntries(await Promise.all(toolNames.map(async name => {
      const { operation } = tools[name]
      return [name, operation === null ? [] : await reachOfOperation(operation)]
    }))) as Record<ToolName, string[]>
    // describe: the resources the caller may read.
    reach.describe = models.map(model => model.name).filter(name => reach.list.includes(name) || reach.get.includes(name))
    return reach
  }

  async function list (request: FastifyRequest): Promise<Tool[]> {
    const reach = await reachOf(request)
    return toolNames.filter(name => reach[name].length > 0).map(name => ({
      name,
      description: tools[name].description,
      inputSchema: inputSchema(tools[name], reach[name]),
      annotations: tools[name].annotations
    }))
  }

  async function describe (request: FastifyRequest, only: string | undefined): Promise<Outcome> {
    const reach = await reachOf(request)
    const viewOf = context.views.forCaller(request.principal)
    const resources: Record<string, unknown> = {}
    for (const name of reach.describe) {
      if (only !== undefined && name !== only) continue
      const view = viewOf(context.models.get(name) as ResourceModel)
      resources[name] = {
        singular: view.singular,
        tools: toolNames.filter(tool => tool !== 'describe' && reach[tool].includes(name)),
        fields: Object.fromEntries([...view.fields.keys()].map(field => [field, fieldText(view, field)])),
        ...(view.relations.size > 0 && { relations: Object.fromEntries([...view.relations.values()].map(relation => [relation.name, `${relation.kind} ${relation.target.name} by ${relation.kind === 'one' ? '' : `${relation.target.name}.`}${relation.field}`])) }),
        ...(searchFields(view).length > 0 && { searchable: searchFields(view).join(',') }),
        sortable: sortableFields(view).join(','),
        pageSize: { default: view.defaultPageSize, max: view.maxPageSize }
      }
    }
    if (only !== undefined && resources[only] === undefined) {
      const model = context.models.get(only)
      return core.problem(model === undefined ? new NotFoundError(`${prefix}/${only}`) : new ForbiddenError(refusalOf('list', model)), `${prefix}/${only}`)
    }
    return { status: 200, headers: {}, body: { resources, filter: filterSyntax } }
  }

  /** The HTTP request a tool call stands for, performed by the core. */
  function perform (request: FastifyRequest, name: Exclude<ToolName, 'describe'>, args: Record<string, unknown>): Promise<Outcome> {
    const resource = String(args.resource)
    const itemPath = `${prefix}/${resource}/${encodeURIComponent(String(args.id))}`
    const operation = tools[name].operation as ResourceOperation
    const base = { principal: request.principal, id: args.id === undefined ? '' : String(args.id), body: (args.data ?? null) as Fields | null }
    let input: OperationInput
    let entry: Entry = { request }
    try {
      input = operationInput({ ...base, query: queryOf(args), preconditions: { ifMatch: parseTagList(args.ifMatch as string | undefined, 'ifMatch') } })
      if (typeof args.idempotencyKey === 'string') {
        const keyed = operation === 'create'
          ? keyedAs(request, 'POST', `${prefix}/${resource}`, args.idempotencyKey, 'application/json', args.data)
          : keyedAs(request, 'PATCH', itemPath, args.idempotencyKey, 'application/merge-patch+json', args.data)
        entry = { request, idempotency: keyed }
      }
    } catch (error) {
      return Promise.resolve(core.problem(error, itemPath))
    }
    return core.perform(resource, operation, input, entry)
  }

  /** The tool's answer, or undefined for a tool that does not exist (a protocol error). */
  async function call (request: FastifyRequest, name: string, args: Record<string, unknown>): Promise<ToolResult | undefined> {
    if (!isToolName(name)) return undefined
    const validate = validators.get(name) as ValidateFunction
    if (!validate(args)) return resultOf(core.problem(withInvalidParams(new BodyInvalidError(), argumentProblems(validate.errors as ErrorObject[])), `${prefix}/mcp`))
    return resultOf(name === 'describe' ? await describe(request, args.resource as string | undefined) : await perform(request, name, args))
  }

  return { list, call }
}

/** Ajv's errors of a tool's arguments as invalidParams: as a body's, but an unknown name is no field, an argument. */
function argumentProblems (errors: readonly ErrorObject[]) {
  const unknown = errors.filter(error => error.keyword === 'additionalProperties' && error.instancePath === '')
  return [
    ...toInvalidParams(errors.filter(error => !unknown.includes(error))),
    ...unknown.map(error => ({ name: String(error.params.additionalProperty), reason: 'is not an argument of this tool' }))
  ]
}

/** The list and aggregate tools' arguments as the query string their HTTP request would send. */
function queryOf (args: Record<string, unknown>): Record<string, string> {
  const query: Record<string, string> = {}
  for (const name of ['filter', 'search', 'sort', 'fields', 'pageSize', 'token', 'apply']) if (args[name] !== undefined) query[name] = String(args[name])
  return query
}

/** An outcome as a tool result: a refusal (4xx, 5xx) is a tool error holding the problem, never a protocol error. */
function resultOf ({ status, headers, body }: Outcome): ToolResult {
  const facts = {
    status,
    ...(headers.etag !== undefined && { etag: headers.etag }),
    ...(headers.location !== undefined && { location: headers.location }),
    ...(headers['idempotent-replayed'] !== undefined && { replayed: true })
  }
  return {
    content: [...(body === null ? [] : [{ type: 'text' as const, text: JSON.stringify(body) }]), { type: 'text', text: JSON.stringify(facts) }],
    isError: status >= 400
  }
}
