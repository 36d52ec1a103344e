// Paging, in one place (spec "Paging", "Page links", "Paging stability", "Client-driven paging"):
// the window a LIST reads (an offset, or a position a continuation token holds), what a token is
// bound to, the page links and the tokens they carry, and the count an empty offset page past the
// end needs. list-query.ts reads the window here, the envelope the links, the reads the count;
// cursor.ts seals and opens the tokens.
import { CursorError } from './cursor.js'
import type { CursorCodec } from './cursor.js'
import { largestCount } from '../query/parameters.js'
import { RELEVANCE } from '../query/search.js'
import type { Readings } from '../query/parameters.js'
import type { View } from '../registry/model.js'
import type { ListQuery, Page, PageWindow, SortKey, Store, StoredRecord } from '../stores/store.js'
import type { InvalidParam } from '../errors.js'
import type { Link } from '../envelope/index.js'

/** How one LIST request pages. */
export interface Paging {
  readonly pageSize: number
  /** Offset paging: the 0-based position; absent in token paging. */
  readonly offset?: number
  /** Offset paging: the 1-based page number (as sent, or derived from `offset`); absent in token paging. */
  readonly pageOffset?: number
  /** The continuation token the page was read with, for its `self` link. */
  readonly token?: string
  /** How the client asked for the page, so links keep that form. */
  readonly pagingMode: 'token' | 'offset' | 'pageOffset'
  /** What a continuation token is bound to (bindingOf). */
  readonly binding: string
}

/** A LIST request as its page links read it. */
export interface PagedRequest extends Paging {
  readonly query: ListQuery
  /** `filter=…&sort=…` etc., for page links; empty when none. */
  readonly stableQuery: string
}

export interface WindowContext {
  readonly cursor: CursorCodec
  /** Paging used when the client names none. */
  readonly defaultPaging: 'token' | 'offset'
}

export interface LinkContext {
  readonly cursor: CursorCodec
  /** Whether list pages carry `last` (the spec lets a server omit it). */
  readonly lastLink: boolean
}

/**
 * Paging stability 2–3: a token opens only with the query it was issued for. `base` is the
 * collection's path (a nested one names its parent); `parts`, what the parameters bind
 * (parameters.ts). JSON keeps the parts apart whatever characters they hold.
 */
export function bindingOf (base: string, parts: readonly unknown[]): string {
  return JSON.stringify([base, ...parts])
}

/**
 * The page a LIST reads, from its window's parameters (`token`, `offset`, `pageOffset` or its
 * alias `page`, `pageSize`); a token is opened against `binding` and must hold one value per key
 * of `sort`. Each problem names its parameter.
 */
export function readWindow (model: View, { given, read, sentAs }: Readings, sort: readonly SortKey[], binding: string, context: WindowContext, problems: InvalidParam[]): Omit<Paging, 'binding'> & { readonly window: PageWindow } {
  const pageSize = read('pageSize') ?? model.defaultPageSize
  // `page` is the spec's alias of `pageOffset` (its link examples use it); naming both is ambiguous.
  const pageName = given.pageOffset !== undefined ? 'pageOffset' : 'page'
  if (given.pageOffset !== undefined && given.page !== undefined) problems.push({ name: 'page', reason: 'page is an alias of pageOffset; send one of them' })
  const pageText = given[pageName]
  const pageOffset = read(pageName)
  const offsetValue = read('offset')
  if (given.offset !== undefined && pageText !== undefined) problems.push({ name: pageName, reason: `${sentAs('offset')} and ${pageName} cannot be combined` })
  const token = read('token')
  if (token !== undefined && (given.offset !== undefined || pageText !== undefined)) problems.push({ name: 'token', reason: `a token cannot be combined with ${sentAs('offset')} or pageOffset` })

  let window: PageWindow = { kind: 'offset', offset: 0 }
  let pagingMode: Paging['pagingMode'] = context.defaultPaging
  if (token !== undefined) {
    if (problems.length === 0) {
      try {
        const position = context.cursor.open(token, binding)
        // No values: the `last` link's token, a backward read from the end.
        const fromEnd = position.window === 'before' && position.values.length === 0
        if (position.values.length !== sort.length && !fromEnd) throw new CursorError('foreign-query')
        window = { kind: position.window, values: position.values }
      } catch (error) {
        if (!(error instanceof CursorError)) throw error
        problems.push({ name: 'token', reason: error.message })
      }
    }
    pagingMode = 'token'
  } else if (offsetValue !== undefined) {
    window = { kind: 'offset', offset: offsetValue }
    pagingMode = 'offset'
  } else if (pageOffset !== undefined) {
    // A page that starts past 2^53 - 1 lies past the end of any collection, as does that position.
    window = { kind: 'offset', offset: Math.min((pageOffset - 1) * pageSize, largestCount) }
    pagingMode = 'pageOffset'
  }
  const offset = window.kind === 'offset' && pagingMode !== 'token' ? window.offset : undefined
  return {
    window,
    pageSize,
    offset,
    // With pageSize 0 every page starts at 0: echo the page asked for rather than one derived.
    pageOffset: offset === undefined ? undefined : pageOffset ?? (pageSize === 0 ? 1 : Math.floor(offset / pageSize) + 1),
    token,
    pagingMode
  }
}

/**
 * An empty offset page past the end tells only that count <= offset, so `prev` could not name the
 * last page with items: one count finds it. Any other page needs none.
 */
function needsPastEndCount (request: Paging, page: Page): boolean {
  return request.offset !== undefined && request.offset !== 0 && request.pageSize !== 0 && page.items.length === 0
}

/**
 * The number of matches, for an empty offset page past the end, with `ran`, the query the store
 * ran, so that a nested collection counts its own parent's children only. Any other page gets
 * undefined rather than a promise.
 */
export function countPastEnd (store: Store, model: View, request: Paging, page: Page, ran: ListQuery): Promise<number | undefined> | undefined {
  if (!needsPastEndCount(request, page)) return undefined
  return store.list(model, { ...ran, window: { kind: 'offset', offset: 0 }, limit: 0, total: true }).then(counted => counted.total)
}

/**
 * self, first, prev, next and last (spec "Page links"); each href repeats the query options
 * (Paging stability 2). `count` is the number of matches when known: the store's total, or what
 * countPastEnd counted.
 */
export function pageLinks (context: LinkContext, base: string, request: PagedRequest, page: Page, count: number | undefined): Link[] {
  const { pageSize, stableQuery } = request
  const href = (paging: string) => `${base}?${stableQuery === '' ? '' : `${stableQuery}&`}pageSize=${pageSize}${paging}`
  const links = request.offset === undefined
    ? tokenLinks(context, request, page, href)
    : offsetLinks(request, request.offset, page, count, href)
  return context.lastLink ? links : links.filter(link => link.rel !== 'last')
}

/** `known` is the count when the store gave it or it was counted for an empty page past the end. */
function offsetLinks (request: Paging, offset: number, page: Page, known: number | undefined, href: (paging: string) => string): Link[] {
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
function tokenLinks (context: LinkContext, request: PagedRequest, page: Page, href: (paging: string) => string): Link[] {
  const { window, sort } = request.query
  const self = href(request.token === undefined ? '' : `&token=${request.token}`)
  const links: Link[] = [{ rel: 'self', href: self }, { rel: 'first', href: href('') }]
  if (request.pageSize === 0) return links
  const seal = (kind: 'after' | 'before', record: StoredRecord) =>
    href(`&token=${context.cursor.sealShared({ window: kind, values: sort.map(key => key.field === RELEVANCE ? record.rank : record.data[key.field] ?? null) }, request.binding)}`)
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
