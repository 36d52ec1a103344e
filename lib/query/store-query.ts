// The query a store runs (spec "Filtering", "Sorting", "Paging"): what the query parameters
// become once parsed and checked against the model. Stores receive it; they never see raw strings.
import type { FilterNode } from './filter/ast.js'
import type { Search } from './search.js'

export interface SortKey { readonly field: string, readonly direction: 'asc' | 'desc' }

/**
 * Where a page starts. `offset` skips that many matches. `after`/`before` are keyset positions:
 * the sort-key values (one per `sort` entry, id last) of the item the page follows or precedes;
 * `before` with no values precedes the end: the last page.
 */
export type PageWindow =
  | { readonly kind: 'offset', readonly offset: number }
  | { readonly kind: 'after' | 'before', readonly values: readonly unknown[] }

export interface ListQuery {
  readonly filter: FilterNode | null
  /** Total order: always ends with the id (Paging stability 1). */
  readonly sort: readonly SortKey[]
  readonly window: PageWindow
  readonly limit: number
  /**
   * Also count every match (spec "Total"); `estimated`: a store may answer with its estimate
   * when that is 10,000 or more, and says so (Page.totalEstimated).
   */
  readonly total: boolean | 'estimated'
  /**
   * `search=` (query/search.ts), ANDed with the filter; absent or null: none. Ordered by relevance
   * when `sort` holds the RELEVANCE key, whose value each item then carries as `rank`.
   */
  readonly search?: Search | null
  /**
   * Present: the caller reads only each item's data, and of it only these fields, the sort's
   * and the id (null: every field). A store may leave the rest unread, the version and the
   * modification time included (0 and the epoch then). Absent: whole records.
   */
  readonly reads?: ReadonlySet<string> | null
}
