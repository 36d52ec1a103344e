// The peer sides of `npm run bench` (benchmarks/README.md "Peers"): the tools a user would pick
// instead of the plugin, on the same data, each asked the equivalent of a case's request. Their
// answers have other shapes, so only the status and the records returned are checked, not bytes.
// They are installed into benchmarks/peers/ (`npm run bench:peers-install`), never as dependencies
// of the package; a peer that is not installed is skipped.
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { commonHeaders, cases } from './cases.js'
import type { StoreKind } from './cases.js'
import type { LoadRequest } from './harness.js'
import { bookId, generate } from './seed.js'

// Compiled to dist/benchmarks/; the peers' node_modules live in the source tree.
const peersPackage = fileURLToPath(new URL('../../benchmarks/peers/package.json', import.meta.url))

/** `require` from benchmarks/peers/, or the line a peer server prints when the package is missing. */
export function requirePeer<T> (name: string): T | { unavailable: string } {
  try {
    return createRequire(peersPackage)(name) as T
  } catch (error) {
    if ((error as { code?: string }).code !== 'MODULE_NOT_FOUND') throw error
    return { unavailable: `${name} is not installed (npm run bench:peers-install)` }
  }
}

/** A peer's equivalent of one case: the request, and whether an answer holds the records the plugin's does. */
export interface PeerRequest extends LoadRequest {
  readonly holdsExpected: (body: unknown) => boolean
}

export interface Peer {
  /** The package and version, as pinned in benchmarks/peers/package.json. */
  readonly name: string
  readonly script: string
  readonly requests: Readonly<Record<string, PeerRequest>>
}

const book = bookId(5000)
const createCase = cases.find(c => c.name === 'create')
const ids = (body: unknown) => Array.isArray(body) ? body.map(record => (record as { id?: unknown }).id) : []
const sameIds = (expected: readonly string[]) => (body: unknown) => ids(body).join() === expected.join()

/** The first 20 books by id: LIST-20's page. */
const firstPage = Array.from({ length: 20 }, (_, i) => bookId(i))

/** The filtered case's first page, from the seed: year ≥ 2000, by rating descending (nulls last), then id descending. */
const filteredPage = generate().books
  .filter(b => b.year !== null && b.year >= 2000 && b.rating !== null)
  .sort((a, b) => (b.rating as number) - (a.rating as number) || (a.id < b.id ? 1 : -1))
  .slice(0, 20)
  .map(b => b.id)

const get = (path: string, holdsExpected: PeerRequest['holdsExpected']): PeerRequest =>
  ({ method: 'GET', path, headers: commonHeaders, keyed: false, status: 200, holdsExpected })

const create = (path: string, status: number): PeerRequest => ({
  method: 'POST',
  path,
  headers: { ...commonHeaders, 'content-type': 'application/json' },
  body: JSON.stringify(createCase?.body),
  keyed: false,
  status,
  holdsExpected: body => typeof (body as { id?: unknown }).id === 'string' && (body as { title?: unknown }).title === 'A benchmark book'
})

const isBook = (body: unknown) => (body as { id?: unknown }).id === book

// Platformatic names a table of a schema other than the default one with the schema's name in front.
const platformaticBooks = '/apiConventionsBenchBooks'

export const peers: Readonly<Record<StoreKind, Peer>> = {
  // The same PostgreSQL schema and rows the plugin's store reads (postgres.ts).
  postgres: {
    name: 'Platformatic DB 2.61 (@platformatic/sql-mapper + sql-openapi)',
    script: './peer-platformatic.js',
    requests: {
      retrieve: get(`${platformaticBooks}/${book}`, isBook),
      // Unordered, Platformatic pages in the table's physical order: ask for the plugin's order.
      'list-20': get(`${platformaticBooks}?limit=20&orderby.id=asc`, sameIds(firstPage)),
      // PostgreSQL sorts NULL first descending, the plugin last: `rating gte 0` leaves the nulls out,
      // which the first page of the plugin's order holds none of either.
      'list-filter-sort-fields': get(`${platformaticBooks}?where.year.gte=2000&where.rating.gte=0&orderby.rating=desc&orderby.id=desc&fields=id,title,rating,year&limit=20`, sameIds(filteredPage)),
      create: create(platformaticBooks, 200)
    }
  },
  // The seed in json-server's in-memory database (lowdb's memory adapter).
  memory: {
    name: 'json-server 0.17.4',
    script: './peer-json-server.js',
    requests: {
      retrieve: get(`/books/${book}`, isBook),
      'list-20': get('/books?_page=1&_limit=20', sameIds(firstPage)),
      // json-server's `_gte` compares with `<=`, for which null counts as 0: 0.1 leaves the nulls out.
      'list-filter-sort-fields': get('/books?year_gte=2000&rating_gte=0.1&_sort=rating,id&_order=desc,desc&_limit=20', sameIds(filteredPage)),
      create: create('/books', 201)
    }
  }
}
