// Builds response bodies in the spec's envelope ("Response envelope", "Shape of data", "Page
// links"): data / meta / links, field projection, expand and include; paging/ makes the page links.
import type { ResourceModel, View, ViewRelation } from '../registry/model.js'
import type { Fields, Page } from '../stores/store.js'
import type { ListRequest } from '../query/list-query.js'
import { pageLinks } from '../paging/index.js'
import type { LinkContext } from '../paging/index.js'
import type { EnvelopeOptions } from '../registry/derive.js'

export interface Link { readonly rel: string, readonly href: string, readonly [member: string]: string }

export interface EnvelopeContext extends EnvelopeOptions, LinkContext {
  /** `/v1`: the plugin's prefix, so every href stays in the same versioned namespace. */
  readonly prefix: string
  readonly totalAtRoot: boolean
}

export function itemPath (context: EnvelopeContext, model: View, id: string): string {
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
export type RelatedRecords = ReadonlyMap<ViewRelation, (item: Fields) => Fields | Fields[] | null>

/** The items with `expand`ed relations embedded, and `include` links, from records already fetched. */
export function attachRelated (context: EnvelopeContext, model: View, items: Fields[], expand: readonly ViewRelation[], include: readonly ViewRelation[], related: RelatedRecords): { items: Fields[], links: Link[] } {
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
 * `count` is the number of matches when known: the store's total, or what paging/ countPastEnd counted.
 */
export function listBody (context: EnvelopeContext, model: View, base: string, request: ListRequest, page: Page, items: Fields[], extraLinks: Link[], count: number | undefined) {
  const { pageSize } = request
  const total = page.total
  const meta: Record<string, number | boolean> = { pageSize }
  const data: Record<string, unknown> = { [model.name]: items, pageSize }
  // Client-driven paging 5: the offsets used are echoed, supplied or defaulted.
  if (request.offset !== undefined) {
    meta.offset = request.offset
    meta.pageOffset = data.pageOffset = request.pageOffset as number
  }
  if (total !== undefined) meta.total = total
  // total=estimated answered with the database's estimate (docs/export.md).
  if (page.totalEstimated === true) meta.totalEstimated = true
  const links = [...pageLinks(context, base, request, page, count), ...extraLinks]
  const body: Record<string, unknown> = { meta, data, links: formatLinks(context, links) }
  if (context.totalAtRoot && total !== undefined) body.total = total
  return body
}
