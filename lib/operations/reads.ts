// The reads (spec "Operations"): RETRIEVE and LIST of one resource, LIST of a nested collection
// (/{parents}/{id}/{children}) and QUERY CAPABILITIES, each a function of plain inputs to a plain
// outcome, with the caller's view (rules/view.ts) and conditional requests (RFC 9110 §13).
import type { RelationModel, ResourceModel, View } from '../registry/model.js'
import { attachRelated, itemPath, listBody, project, singleBody } from '../envelope/index.js'
import type { Link } from '../envelope/index.js'
import { listRequestFor, parseItemQuery } from '../query/list-query.js'
import type { ListRequest } from '../query/list-query.js'
import type { FilterNode } from '../query/filter/ast.js'
import { queryCapabilities } from '../query/capabilities.js'
import { countPastEnd } from '../paging/index.js'
import type { AggregateQuery } from '../query/apply/ast.js'
import { evaluatePreconditions, formatETag, hasPreconditions, heldETag, unversioned, variantTag } from '../http/conditional.js'
import type { Preconditions } from '../http/conditional.js'
import { NotFoundError, QueryInvalidError, withInvalidParams } from '../errors.js'
import type { ListQuery, Page, Store } from '../stores/store.js'
import { exportOutcome, isExport, withoutPaging } from './export.js'
import { readRecordOnce } from '../record-once.js'
import type { OperationContext } from './context.js'
import type { OperationInput, Outcome, Perform } from './input.js'
import { fetchRelated } from './related.js'
import { validatorHeaders } from './writes.js'

const noHeaders: Readonly<Record<string, string>> = Object.freeze({})
const notModified: Outcome = Object.freeze({ status: 304, headers: noHeaders, body: null })

/** RETRIEVE and LIST of a resource. */
export function readOperations (model: ResourceModel, context: OperationContext): { readonly retrieve: Perform, readonly list: Perform } {
  const base = `${context.envelope.prefix}/${model.name}`
  const store = context.storeOf(model)
  const notFound = (id: string) => new NotFoundError(`${model.singular} ${id}`)
  const viewOf = (principal: unknown) => context.views.forCaller(principal)(model)

  async function retrieve (input: OperationInput): Promise<Outcome> {
    const { id, preconditions } = input
    const view = viewOf(input.principal)
    const options = parseItemQuery(view, input.query)
    const record = await readRecordOnce(input.memo, store, view, id)
    if (record === null) throw notFound(id)
    let resource = project(record.data, options.fields)
    let links: Link[] | undefined
    let variant = options.variant
    // The record's own write time, unless related records are part of the representation: their
    // changes, additions and removals do not move it, so it would answer If-Modified-Since wrongly.
    let modifiedAt: Date | null = record.modifiedAt
    if (options.expand.length + options.include.length > 0) {
      const relations = [...options.expand, ...options.include]
      const related = attachRelated(context.envelope, view, [resource], options.expand, options.include, await fetchRelated(store, view, [resource], relations))
      resource = related.items[0]
      links = related.links
      // The embedded records have versions of their own: the validator must change with them.
      variant += JSON.stringify(related)
      modifiedAt = null
    }
    const etag = heldETag(formatETag(record.version, variantTag(input.format === 'xml' ? `${variant}\u0000xml` : variant)), preconditions.ifNoneMatch, () => input.codings)
    const headers = validatorHeaders(etag, modifiedAt)
    if (hasPreconditions(preconditions) && evaluatePreconditions(preconditions, { etag, version: record.version, modifiedAt }, true) === 'not-modified') {
      return { status: 304, headers, body: null }
    }
    return { status: 200, headers, body: singleBody(context.envelope, model, resource, links) }
  }

  async function list (input: OperationInput): Promise<Outcome> {
    const view = viewOf(input.principal)
    const { format } = input
    const parsed = listRequestFor(view, isExport(format) ? withoutPaging(input.query) : input.query, context.query, base)
    if (collectionNotModified(input.preconditions)) return notModified
    if (isExport(format)) return await exportOutcome(store, view, parsed, parsed.query, format)
    return await listPage(context, store, view, base, parsed, null)
  }

  return { retrieve, list }
}

/** LIST of `/{parents}/{id}/{children}`: the children of one parent, with the same query language as `/{children}`. */
export function nestedList (parent: ResourceModel, relation: RelationModel, context: OperationContext): Perform {
  const store = context.storeOf(parent)
  return async function listNested (input: OperationInput): Promise<Outcome> {
    const { id } = input
    const views = context.views.forCaller(input.principal)
    if (await store.get(views(parent), id) === null) throw new NotFoundError(`${parent.singular} ${id}`)
    const child = views(relation.target)
    const base = `${itemPath(context.envelope, parent, id)}/${relation.name}`
    const { format } = input
    const parsed = listRequestFor(child, isExport(format) ? withoutPaging(input.query) : input.query, context.query, base)
    if (collectionNotModified(input.preconditions)) return notModified
    const scope: FilterNode = { kind: 'compare', op: 'eq', left: { kind: 'field', path: [relation.field] }, right: { kind: 'literal', type: 'string', value: id } }
    if (isExport(format)) return await exportOutcome(store, child, parsed, scoped(parsed.query, scope), format)
    return await listPage(context, store, child, base, parsed, scope)
  }
}

/**
 * RFC 9110 §13.2.2 on a collection, which exists and sends no ETag or Last-Modified (README
 * "Conditional requests"): `If-Match: *` passes and a tag list fails; `If-None-Match: *` is 304
 * on GET/HEAD; the date conditions have nothing to compare with (§13.1.3, §13.1.4). Checked after
 * the checks that would fail the request anyway, which take precedence (§13.2.1).
 */
const collectionNotModified = (preconditions: Preconditions) => evaluatePreconditions(preconditions, unversioned, true) === 'not-modified'

/** A nested collection's query (of records or of groups): its filter within the parent's records. */
function scoped<Q extends ListQuery | AggregateQuery> (query: Q, scope: FilterNode | null): Q {
  return scope === null ? query : { ...query, filter: query.filter === null ? scope : { kind: 'and', left: scope, right: query.filter } as const }
}

async function listPage (context: OperationContext, store: Store, model: View, base: string, parsed: ListRequest, scope: FilterNode | null): Promise<Outcome> {
  if (parsed.aggregate !== undefined) return await groupPage(context, store, model, base, parsed, parsed.aggregate, scope)
  const query = scoped(parsed.query, scope)
  const page = await store.list(model, query)
  const projected = page.items.map(record => project(record.data, parsed.fields))
  const { items, links } = parsed.expand.length + parsed.include.length === 0
    ? { items: projected, links: [] }
    : attachRelated(context.envelope, model, projected, parsed.expand, parsed.include, await fetchRelated(store, model, projected, [...parsed.expand, ...parsed.include]))
  const count = page.total ?? await countPastEnd(store, model, parsed, page, query)
  return { status: 200, headers: noHeaders, body: listBody(context.envelope, model, base, parsed, page, items, links, count) }
}

const epoch = new Date(0)

/** LIST with `apply=`: a page of groups in the list envelope, paged by offset (docs/aggregates.md). */
async function groupPage (context: OperationContext, store: Store, model: View, base: string, parsed: ListRequest, aggregate: AggregateQuery, scope: FilterNode | null): Promise<Outcome> {
  if (store.aggregate === undefined) throw withInvalidParams(new QueryInvalidError(), [{ name: 'apply', reason: `the store of ${model.name} cannot aggregate` }])
  const query = scoped(aggregate, scope)
  const page = await store.aggregate(model, query)
  // An empty page past the end: the count names the last page with groups (as countPastEnd does for records).
  const pastEnd = parsed.offset !== undefined && parsed.offset !== 0 && parsed.pageSize !== 0 && page.groups.length === 0
  const count = page.total ?? (pastEnd ? (await store.aggregate(model, { ...query, offset: 0, limit: 0, total: true })).total : undefined)
  // Offset links read only a page's length and whether more follow: the groups stand in for records.
  const asPage: Page = { items: page.groups.map(data => ({ data, version: 0, modifiedAt: epoch })), hasMore: page.hasMore, total: page.total }
  return { status: 200, headers: noHeaders, body: listBody(context.envelope, model, base, parsed, asPage, [...page.groups], [], count), freeForm: true }
}

interface CapabilitiesOf {
  /** On a collection's path (nested or not): its resource, whose query capabilities the body adds. */
  readonly collection?: ResourceModel
  /** On a path naming a record (an item's, a nested collection's): the record's resource. */
  readonly owner?: ResourceModel
}

/**
 * QUERY CAPABILITIES: the allowed methods, in `Allow` and in the body; on a collection, beside them
 * what its query parameters accept as the caller sees the resource (query/capabilities.ts); on a
 * path naming a record, 404 when there is none.
 */
export function capabilities (methods: readonly string[], context: OperationContext, { collection, owner }: CapabilitiesOf): Perform {
  const headers = Object.freeze({ allow: methods.join(', ') })
  const { views } = context
  // One body per view: callers the rules treat alike share one (rules/view.ts keeps views).
  const bodies = new WeakMap<View, { data: Record<string, unknown> }>()
  function bodyFor (principal: unknown) {
    if (collection === undefined) return { data: { methods } }
    const view = views.forCaller(principal)(collection)
    let body = bodies.get(view)
    if (body === undefined) bodies.set(view, body = { data: { methods, ...queryCapabilities(view) } })
    return body
  }
  if (owner === undefined) return async input => ({ status: 200, headers, body: bodyFor(input.principal) })
  const store = context.storeOf(owner)
  // On an item's path (or a nested collection's), the record it names must exist, as for GET.
  return async function recordCapabilities (input: OperationInput): Promise<Outcome> {
    // As the caller sees it: a record hidden from it is not there (rules/view.ts).
    if (await store.get(views.forCaller(input.principal)(owner), input.id) === null) throw new NotFoundError(`${owner.singular} ${input.id}`)
    return { status: 200, headers, body: bodyFor(input.principal) }
  }
}
