// The HTTP benchmark cases (benchmarks/README.md "Cases"): what is sent, what must come back, and
// the target ratio (plugin ÷ baseline req/s). Each case runs on every store it
// names; run.ts sends the same request to both sides and checks the answers match first.
import { bookId } from './seed.js'

export type StoreKind = 'memory' | 'postgres'

export interface BenchCase {
  readonly name: string
  readonly method: 'GET' | 'POST'
  /** `{token}` is replaced by run.ts with a continuation token each side hands out (see `tokenDepth`). */
  readonly path: string
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: unknown
  /** The status every response must have; any other counts as an error. */
  readonly status: number
  /** Minimum plugin ÷ baseline ratio per store, where the project sets one. */
  readonly targets?: Readonly<Partial<Record<StoreKind, number>>>
  readonly stores: readonly StoreKind[]
  /** For `{token}`: the token continues after this many items of the default order. */
  readonly tokenDepth?: number
  /** Each request carries an Idempotency-Key of its own (harness.ts), as a client's first try does. */
  readonly keyed?: boolean
  readonly description: string
}

/** Sent with every request: a write-capable demo token, and the Accept a JSON client sends. */
export const commonHeaders: Readonly<Record<string, string>> = {
  authorization: 'Bearer dev-token',
  accept: 'application/json'
}

const both: readonly StoreKind[] = ['memory', 'postgres']
const book = bookId(5000)

export const cases: readonly BenchCase[] = [
  {
    name: 'retrieve',
    method: 'GET',
    path: `/v1/books/${book}`,
    status: 200,
    targets: { memory: 0.80, postgres: 0.90 },
    stores: both,
    description: 'RETRIEVE one book: ETag, Last-Modified, `{ data: { book } }`.'
  },
  {
    name: 'list-20',
    method: 'GET',
    path: '/v1/books',
    status: 200,
    targets: { memory: 0.75, postgres: 0.90 },
    stores: both,
    description: 'LIST, first page of the default 20 in id order, with self/first/next links (the next one an encrypted token).'
  },
  {
    name: 'list-20-br',
    method: 'GET',
    path: '/v1/books',
    headers: { 'accept-encoding': 'br' },
    status: 200,
    stores: ['memory'],
    description: 'LIST-20 with `Accept-Encoding: br`: the plugin sends the page brotli-compressed (quality 4), the baseline as it is. Its ratio against list-20\'s is what compression costs.'
  },
  {
    name: 'list-20-gzip',
    method: 'GET',
    path: '/v1/books',
    headers: { 'accept-encoding': 'gzip' },
    status: 200,
    stores: ['memory'],
    description: 'LIST-20 with `Accept-Encoding: gzip`: the page gzip-compressed (zlib level 6). Its ratio against list-20\'s is what compression costs.'
  },
  {
    name: 'list-filter-sort-fields',
    method: 'GET',
    path: '/v1/books?filter=year%20ge%202000&sort=-rating&fields=title,rating,year',
    status: 200,
    targets: { memory: 0.50, postgres: 0.90 },
    stores: both,
    description: 'LIST `filter=year ge 2000&sort=-rating&fields=title,rating,year` (about a fifth of the books match); the memory baseline walks an index presorted by rating.'
  },
  {
    name: 'list-token-deep',
    method: 'GET',
    path: '/v1/books?pageSize=20&token={token}',
    tokenDepth: 5000,
    status: 200,
    stores: both,
    description: 'LIST page after the 5,000th book, reached by a continuation token (keyset): prev and next tokens sealed, self echoes the token.'
  },
  {
    name: 'retrieve-304',
    method: 'GET',
    path: `/v1/books/${book}`,
    headers: { 'if-none-match': '"1"' },
    status: 304,
    stores: both,
    description: 'RETRIEVE with a matching If-None-Match: 304 with ETag and Last-Modified, no body.'
  },
  {
    name: 'create',
    method: 'POST',
    path: '/v1/books',
    headers: { 'content-type': 'application/json' },
    body: { title: 'A benchmark book', authorId: '00000000-0000-7000-8000-000000000007', year: 2024, rating: 4.5 },
    status: 201,
    stores: both,
    description: 'CREATE a book: body validation, author check (422 otherwise), new UUIDv7, 201 with Location, ETag, Last-Modified.'
  },
  {
    name: 'create-keyed',
    method: 'POST',
    path: '/v1/books',
    headers: { 'content-type': 'application/json' },
    body: { title: 'A benchmark book', authorId: '00000000-0000-7000-8000-000000000007', year: 2024, rating: 4.5 },
    keyed: true,
    status: 201,
    stores: both,
    description: 'CREATE with a new Idempotency-Key each time: the key claimed and the answer kept with the book, in one transaction. Its ratio against create\'s is what the key costs.'
  },
  {
    name: 'batch-10',
    method: 'POST',
    path: '/v1/batch',
    headers: { 'content-type': 'application/json' },
    body: {
      operations: Array.from({ length: 10 }, (_, i) => ({
        op: 'create', resource: 'books', data: { title: `A batch book ${i}`, authorId: '00000000-0000-7000-8000-000000000007', year: 2024, rating: 4.5 }
      }))
    },
    status: 200,
    stores: both,
    description: 'A batch of 10 book creates, all or nothing in one transaction: 200 with one result (Location, ETag, the book) per operation.'
  },
  {
    name: 'reviews-list',
    method: 'GET',
    path: '/v1/reviews',
    status: 200,
    stores: both,
    description: 'LIST reviews, first page of 20, as a caller who is not an admin: the row rule (not private, or the caller\'s own) read with the page, moderatorNote left out. Its ratio against list-20\'s is what the rule costs.'
  },
  {
    name: 'bad-request',
    method: 'GET',
    path: '/v1/books?pageSize=1000',
    status: 400,
    stores: both,
    description: 'LIST with pageSize above maxPageSize: 400 application/problem+json naming pageSize in invalidParams.'
  }
]
