// Builds response bodies in the spec's envelope ("Response envelope", "Shape of data", "Page
// links"): data / meta / links, field projection, expand and include.
import type { RelationModel, ResourceModel } from '../registry/model.js'
import type { Fields, Page, StoredRecord } from '../stores/store.js'
import type { ListRequest } from '../query/list-query.js'
import type { CursorCodec } from '../paging/cursor.js'
import type { EnvelopeOptions } from '../registry/derive.js'

export interface Link { readonly rel: string, readonly href: string, readonly [member: string]: string }

export interface EnvelopeContext extends EnvelopeOptions {
  /** `/v1`: the plugin's prefix, so every href stays in the same versioned namespace. */
  readonly prefix: string
  readonly totalAtRoot: boolean
  /** Whether list pages carry `last` (the spec lets a server omit it). */
  readonly lastLink: boolean
  readonly cursor: CursorCodec
}

export function itemPath (context: EnvelopeContext, model: ResourceModel, id: string): string {
  return `${context.prefix}/${model.name}/${encodeURIComponent(id)}`
}

/** Keeps the selected fields of a record (`fields=`); mandatory ones are already in the set. */
export function project (data: Fields, fields: ReadonlySet<string> | null): Fields {
  if (fields === null) return data
  const picked: Fields = {}
  for (const name of fields) if (name in data) picked[name] = data[name]
  return picked
}

export function singleBody (context: EnvelopeContext, model: ResourceModel, resource: Fields, links?: Link[]) {
  const data = context.singleResource === 'nested' ? { [model.singular]: resource } : resource
  return links === undefined || links.length === 0 ? { data } : { data, links: formatLinks(context, links) }
}

export function formatLinks (context: EnvelopeContext, links: Link[]): Link[] | Record<string, Link | Link[]> {
  if (context.links === 'array') return links
  const keyed: Record<string, Link | Link[]> = {}
  for (const link of links) {
    const existing = keyed[link.rel]
    if (existing === undefined) keyed[link.rel] = isNavigation(link.rel) ? link : [link]
    else (existing as Link[]).push(link)
  }
  return keyed
}

const navigation = new Set(['self', 'first', 'prev', 'next', 'last'])
const isNavigation = (rel: string) => navigation.has(rel)

/** The related records of each item, by relation: one record, its list, or null (operations/related.ts fetches them). */
export type RelatedRecords = ReadonlyMap<RelationModel, (item: Fields) => Fields | Fields[] | null>

/** The items with `expand`ed relations embedded, and `include` links, from records already fetched. */
export function attachRelated (context: EnvelopeContext, model: ResourceModel, items: Fields[], expand: readonly RelationModel[], include: readonly RelationModel[], related: RelatedRecords): { items: Fields[], links: Link[] } {
  const links: Link[] = []
  let result = items
  for (const [relation, relatedOf] of related) {
    if (expand.includes(relation)) {
      result = result.map(item => ({ ...item, [relation.name]: relatedOf(item) }))
    }
    if (include.includes(relation)) {
      for (const item of items) {
        const parent = { [model.singular]: String(item[model.idField]) }
        const targets = relatedOf(item)
        for (const target of Array.isArray(targets) ? targets : targets === null ? [] : [targets]) {
          links.push({ rel: relation.name, href: itemPath(context, relation.target, String(target[relation.target.idField])), ...parent })
        }
      }
    }
  }
  return { items: result, links }
}

/**
 * Collection envelope with paging metadata and navigation links (spec "Paging", "Page links").
 * `count` is the number of matches when known: the store's total, or what countPastEnd counted.
 */
export function listBody (context: EnvelopeContext, model: ResourceModel, base: string, request: ListRequest, page: Page, items: Fields[], extraLinks: Link[], count: number | undefined) {
  const { pageSize } = request
  const total = page.total
  const meta: Record<string, number> = { pageSize }
  const data: Record<string, unknown> = { [model.name]: items, pageSize }
  // Client-driven paging 5: the offsets used are echoed, supplied or defaulted.
  if (request.offset !== undefined) {
    meta.offset = request.offset
    meta.pageOffset = data.pageOffset = request.pageOffset as number
  }
  if (total !== undefined) meta.total = total
  const links = [...pageLinks(context, base, request, page, count), ...extraLinks]
  const body: Record<string, unknown> = { meta, data, links: formatLinks(context, links) }
  if (context.totalAtRoot && total !== undefined) body.total = total
  return body
}

/**
 * An empty offset page past the end tells only that count <= offset, so `prev` could not name the
 * last page with items: one count finds it (the route runs it). Any other page needs none.
 */
export function needsPastEndCount (request: ListRequest, page: Page): boolean {
  return request.offset !== undefined && request.offset !== 0 && request.pageSize !== 0 && page.items.length === 0
}

/** self, first, prev, next and last (spec "Page links"); each href repeats the query options (Paging stability 2). */
function pageLinks (context: EnvelopeContext, base: string, request: ListRequest, page: Page, count: number | undefined): Link[] {
  const { pageSize, stableQuery } = request
  const href = (paging: string) => `${base}?${stableQuery === '' ? '' : `${stableQuery}&`}pageSize=${pageSize}${paging}`
  const links = request.offset === undefined
    ? tokenLinks(context, request, page, href)
    : offsetLinks(request, request.offset, page, count, href)
  return context.lastLink ? links : links.filter(link => link.rel !== 'last')
}

/** `known` is the count when the store gave it or it was counted for an empty page past the end. */
function offsetLinks (request: ListRequest, offset: number, page: Page, known: number | undefined, href: (paging: string) => string): Link[] {
  const { pageSize } = request
  const byPage = request.pagingMode === 'pageOffset'
  const at = (position: number) => byPage ? `&pageOffset=${pageSize === 0 ? 1 : Math.floor(position / pageSize) + 1}` : `&offset=${position}`
  const links: Link[] = [{ rel: 'self', href: href(byPage ? `&pageOffset=${request.pageOffset}` : at(offset)) }, { rel: 'first', href: href(at(0)) }]
  if (pageSize === 0) return links
  // The count is known when asked for or counted, or for free on the last page with items (or at offset 0).
  const count = known ?? (page.hasMore || (page.items.length === 0 && offset > 0) ? undefined : offset + page.items.length)
  const lastStart = count === undefined ? undefined : Math.max(0, Math.ceil(count / pageSize) - 1) * pageSize
  if (offset > 0) links.push({ rel: 'prev', href: href(at(Math.max(0, Math.min(offset - pageSize, lastStart ?? Infinity)))) })
  if (page.hasMore) links.push({ rel: 'next', href: href(at(offset + pageSize)) })
  if (lastStart !== undefined) links.push({ rel: 'last', href: href(at(lastStart)) })
  return links
}

/**
 * Keyset links: `next` continues after the page's last item, `prev` reads backwards from its first,
 * `last` reads backwards from the end (a token with no position: no count is needed to name it).
 */
function tokenLinks (context: EnvelopeContext, request: ListRequest, page: Page, href: (paging: string) => string): Link[] {
  const { window, sort } = request.query
  const self = href(request.token === undefined ? '' : `&token=${request.token}`)
  const links: Link[] = [{ rel: 'self', href: self }, { rel: 'first', href: href('') }]
  if (request.pageSize === 0) return links
  const seal = (kind: 'after' | 'before', record: StoredRecord) =>
    href(`&token=${context.cursor.sealShared({ window: kind, values: sort.map(key => record.data[key.field] ?? null) }, request.binding)}`)
  const { items, hasMore } = page
  if (items.length === 0) {
    // Emptied meanwhile. Nothing lies before an empty `before` page, so what follows it is the first
    // page; what precedes an empty `after` page is the last page, which a keyset cannot name.
    if (window.kind === 'before') links.push({ rel: 'next', href: href('') })
    if (window.kind === 'offset') links.push({ rel: 'last', href: self })
    return links
  }
  // Read forward (first page or `after`), hasMore tells what follows and an `after` page has something
  // before it; read backward (`before`), hasMore tells what precedes and the anchor follows, unless
  // the page was read from the end.
  const fromEnd = window.kind === 'before' && window.values.length === 0
  const moreBefore = window.kind === 'before' ? hasMore : window.kind === 'after'
  const moreAfter = window.kind === 'before' ? !fromEnd : hasMore
  if (moreBefore) links.push({ rel: 'prev', href: seal('before', items[0]) })
  if (moreAfter) {
    links.push({ rel: 'next', href: seal('after', items[items.length - 1]) })
    links.push({ rel: 'last', href: href(`&token=${context.cursor.sealShared({ window: 'before', values: [] }, request.binding)}`) })
  } else {
    links.push({ rel: 'last', href: self })
  }
  return links
}
