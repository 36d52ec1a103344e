// Helpers for the collection tests (spec "Query parameters on collections", "Paging"): bulk seed
// data, a spy store that records what the routes ask of it, and link lookup in either form.
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { memoryStore } from '../../lib/index.js'
import type { ListQuery, Store } from '../../lib/index.js'
import { create } from './app.js'

export type Item = Record<string, unknown> & { id: string }
export interface Link { rel: string, href: string, [member: string]: string }

/** A store that forwards to a memory store and records every list query and getMany call (outside transactions). */
export interface SpyStore extends Store {
  readonly lists: ListQuery[]
  readonly getManyCalls: Array<{ resource: string, field: string, values: readonly unknown[] }>
}

export function spyStore (inner: Store = memoryStore()): SpyStore {
  const lists: ListQuery[] = []
  const getManyCalls: SpyStore['getManyCalls'] = []
  return {
    lists,
    getManyCalls,
    list (model, query) {
      lists.push(query)
      return inner.list(model, query)
    },
    getMany (model, field, values) {
      getManyCalls.push({ resource: model.name, field, values })
      return inner.getMany(model, field, values)
    },
    get: (model, id, options) => inner.get(model, id, options),
    create: (model, fields) => inner.create(model, fields),
    update: (model, id, fields, how) => inner.update(model, id, fields, how),
    remove: (model, id, how) => inner.remove(model, id, how),
    transaction: work => inner.transaction(work),
    claimKey: key => inner.claimKey(key),
    keepResponse: (key, fingerprint, response, expiresAt) => inner.keepResponse(key, fingerprint, response, expiresAt),
    purgeKeys: now => inner.purgeKeys(now),
    close: () => inner.close()
  }
}

/** Deterministic book values: years repeat and some are null, ratings repeat and some are null. */
export function bookValues (index: number, authorId: string): Record<string, unknown> {
  return {
    title: `Book ${String(index).padStart(3, '0')}`,
    authorId,
    year: index % 7 === 3 ? null : 1950 + (index % 5),
    rating: index % 4 === 1 ? null : (index % 6) * 0.5,
    available: index % 3 !== 0
  }
}

/** Creates one author and `count` books by them through the API; returns the books as served, in creation order. */
export async function seedMany (app: FastifyInstance, count: number): Promise<{ author: Item, books: Item[] }> {
  const author = await create(app, 'authors', { name: 'Prolific', country: 'NZ' })
  const books: Item[] = []
  for (let i = 0; i < count; i++) books.push(await create(app, 'books', bookValues(i, author.id)))
  return { author, books }
}

export async function get (app: FastifyInstance, url: string): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'GET', url })
}

/** The links of a body as a list, whether served as an array or keyed by rel. */
export function linksOf (body: { links?: unknown }): Link[] {
  const links = body.links
  if (Array.isArray(links)) return links as Link[]
  return Object.values((links ?? {}) as Record<string, Link | Link[]>).flat()
}

/** The href of the navigation link `rel`, or undefined. */
export function hrefOf (body: { links?: unknown }, rel: string): string | undefined {
  return linksOf(body).find(link => link.rel === rel)?.href
}

/** The rels present, in order. */
export function relsOf (body: { links?: unknown }): string[] {
  return linksOf(body).map(link => link.rel)
}

/** The ids of a collection body's items. */
export function idsOf (body: Record<string, any>, name = 'books'): string[] {
  return (body.data[name] as Item[]).map(item => item.id)
}

/** Follows `rel` from page to page until it disappears; returns every page body. */
export async function walk (app: FastifyInstance, url: string, rel: 'next' | 'prev', limit = 1000): Promise<Array<Record<string, any>>> {
  const pages = []
  let next: string | undefined = url
  while (next !== undefined) {
    const res = await get(app, next)
    if (res.statusCode !== 200) throw new Error(`${next} answered ${res.statusCode} ${res.body}`)
    const body = res.json()
    pages.push(body)
    if (pages.length > limit) throw new Error(`more than ${limit} pages following ${rel}`)
    next = hrefOf(body, rel)
  }
  return pages
}

/** A query parameter of an href. */
export function paramOf (href: string, name: string): string | null {
  return new URL(href, 'http://localhost').searchParams.get(name)
}

/** The href with one query parameter set (or removed with null). */
export function withParam (href: string, name: string, value: string | null): string {
  const url = new URL(href, 'http://localhost')
  if (value === null) url.searchParams.delete(name)
  else url.searchParams.set(name, value)
  return url.pathname + url.search
}
