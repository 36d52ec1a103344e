// The baseline side of the benchmark: bare Fastify routes written by hand for
// exactly the requests in cases.ts, over the same seed, answering the same bytes as the plugin
// (envelope, links, problem body, ETag, Last-Modified, Location). What it does and leaves out is
// listed in benchmarks/README.md ("What the baseline does"). PORT and STORE (memory | postgres)
// from the environment; on PostgreSQL it runs the SQL the plugin's store sends, through `pg`.
import { randomUUID } from 'node:crypto'
import { pathToFileURL } from 'node:url'
import Fastify from 'fastify'
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteShorthandOptions } from 'fastify'
import pg from 'pg'
// The plugin's own UUIDv7 source (random bytes from a pool), so both sides pay the same for an id.
import { newUuidV7 as uuidv7 } from '../lib/registry/uuid.js'
import { createCursorCodec } from '../lib/paging/cursor.js'
import { securityHeaders } from '../lib/security/headers.js'
import { CURSOR_SECRET, SEED_TIME, generate } from './seed.js'
import type { BookRow, ReviewRow } from './seed.js'
import { bookItemSchema, bookListSchema, problemSchema, reviewListSchema } from './envelope-schemas.js'
import { BENCH_SCHEMA, databaseUrl, traceStatements } from './postgres.js'
import { bookBody, memoryKeys, postgresKeys, problem, writeRoutes } from './baseline-writes.js'
import type { BookBody, Row } from './baseline-writes.js'

type Query = Record<string, string | undefined>

/** The caller's user, set by the token check (declared with decorateRequest). */
type UserRequest = FastifyRequest & { user: string }

/** A review as a caller who is not an admin sees it: moderatorNote is left out by the response schema. */
const visibleTo = (user: string) => (review: ReviewRow) => !review.private || review.ownerId === user

const base = '/v1/books'
const reviewsBase = '/v1/reviews'
/** Bearer token → its user: the benchmark's caller, who is not an admin (the demo's dev-token). */
const users = new Map([['dev-token', 'dev']])
const codec = createCursorCodec({ secrets: [CURSOR_SECRET] })
// What a token is bound to (its query); tokens of one query are refused by the other.
const filteredBinding = `${base}|year ge 2000|-rating,-id|title,rating,year`
const seedModified = SEED_TIME.toUTCString()
const createdModified = new Date(SEED_TIME.getTime() + 1000).toUTCString()

/** Orders like the plugin: null first ascending, last descending, the id breaking ties in the same direction. */
function compareBy (field: 'id' | 'rating', direction: 1 | -1) {
  return (a: BookRow, b: BookRow): number => {
    const x = a[field]
    const y = b[field]
    if (x !== y) {
      if (x === null) return -direction
      if (y === null) return direction
      return (x < y ? -1 : 1) * direction
    }
    return (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) * direction
  }
}

/** A sorted array kept sorted on insert: the presorted index the filtered LIST reads. */
class SortedIndex {
  readonly rows: Row[]
  constructor (rows: Row[], readonly compare: (a: BookRow, b: BookRow) => number) {
    this.rows = [...rows].sort((a, b) => compare(a.data, b.data))
  }

  /** First position whose row sorts after `anchor`. */
  after (anchor: BookRow): number {
    let low = 0
    let high = this.rows.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (this.compare(this.rows[middle].data, anchor) <= 0) low = middle + 1
      else high = middle
    }
    return low
  }

  insert (row: Row) {
    this.rows.splice(this.after(row.data), 0, row)
  }
}

const problemResponses = { '4xx': problemSchema }
const routes = {
  retrieve: { schema: { response: { 200: bookItemSchema, ...problemResponses } } },
  list: { schema: { response: { 200: bookListSchema, ...problemResponses } } },
  reviews: { schema: { response: { 200: reviewListSchema, ...problemResponses } } },
  create: {
    schema: {
      body: bookBody,
      response: { 201: bookItemSchema, ...problemResponses }
    }
  }
} satisfies Record<string, RouteShorthandOptions>
/** What writeRoutes needs besides the store. */
const writeOptions = { create: routes.create, user: (request: FastifyRequest) => (request as UserRequest).user }

const invalidQuery = (reply: FastifyReply, request: FastifyRequest, name: string, reason: string) =>
  problem(reply, request, 400, 'query-invalid', 'Bad Request', 'One or more query parameters are invalid.', { invalidParams: [{ name, reason }] })

/** What a LIST asks for, or the 400 already sent. */
type ListRequest =
  | { kind: 'default', pageSize: number, token?: string, after?: string }
  | { kind: 'filtered', pageSize: number }
  | { kind: 'answered', reply: FastifyReply }

/** pageSize, the one filtered query the cases send (books only), and the default order's token; anything else is 400. */
function readList (request: FastifyRequest, reply: FastifyReply, collection = base): ListRequest {
  const query = request.query as Query
  let pageSize = 20
  if (query.pageSize !== undefined) {
    pageSize = Number(query.pageSize)
    if (!/^(0|[1-9][0-9]{0,8})$/.test(query.pageSize)) return { kind: 'answered', reply: invalidQuery(reply, request, 'pageSize', 'must be a non-negative integer') }
    if (pageSize > 100) return { kind: 'answered', reply: invalidQuery(reply, request, 'pageSize', 'must not exceed 100 (maxPageSize)') }
  }
  if (query.filter !== undefined || query.sort !== undefined || query.fields !== undefined) {
    if (collection !== base || query.filter !== 'year ge 2000' || query.sort !== '-rating' || query.fields !== 'title,rating,year' || query.token !== undefined) {
      return { kind: 'answered', reply: invalidQuery(reply, request, 'filter', 'the baseline serves only the benchmark query') }
    }
    return { kind: 'filtered', pageSize }
  }
  if (query.token === undefined) return { kind: 'default', pageSize }
  try {
    const position = codec.open(query.token, `${collection}|id`)
    if (position.window !== 'after' || position.values.length !== 1) throw new Error('not the benchmark token')
    return { kind: 'default', pageSize, token: query.token, after: position.values[0] as string }
  } catch (error) {
    return { kind: 'answered', reply: invalidQuery(reply, request, 'token', (error as Error).message) }
  }
}

/** First position in an id-sorted array whose id sorts after `id`. */
function afterId (rows: ReadonlyArray<{ readonly id: string }>, id: string): number {
  let low = 0
  let high = rows.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (rows[middle].id <= id) low = middle + 1
    else high = middle
  }
  return low
}

const project = (book: BookRow): Partial<BookRow> => ({ id: book.id, title: book.title, authorId: book.authorId, year: book.year, rating: book.rating })

/** A review as a page shows it, without moderatorNote (which the response schema leaves out anyway). */
type ShownReview = Omit<ReviewRow, 'moderatorNote'>
type Item = Partial<BookRow> | ShownReview

/**
 * The envelope with self, first, prev and next links; `items` holds one row more than the page when
 * a next page exists. `collection` and `member` name the books (default) or the reviews.
 */
function listPage (reply: FastifyReply, list: Exclude<ListRequest, { kind: 'answered' }>, items: Item[], collection = base, member = 'books') {
  const { pageSize } = list
  const [stable, binding, key] = list.kind === 'filtered'
    ? ['filter=year%20ge%202000&sort=-rating&fields=title%2Crating%2Cyear', filteredBinding, (item: Item) => [item.rating ?? null, item.id as string]]
    : ['', `${collection}|id`, (item: Item) => [item.id as string]]
  const token = list.kind === 'default' ? list.token : undefined
  const hasMore = items.length > pageSize
  if (hasMore) items.length = pageSize
  const prefix = `${collection}?${stable === '' ? '' : `${stable}&`}pageSize=${pageSize}`
  const links = [
    { rel: 'self', href: token === undefined ? prefix : `${prefix}&token=${encodeURIComponent(token)}` },
    { rel: 'first', href: prefix }
  ]
  if (token !== undefined && items.length > 0) links.push({ rel: 'prev', href: `${prefix}&token=${codec.sealShared({ window: 'before', values: key(items[0]) }, binding)}` })
  if (hasMore && pageSize > 0) {
    // Tokens shared by the pages of a second, as the plugin's are (lib/paging/cursor.ts sealShared).
    links.push({ rel: 'next', href: `${prefix}&token=${codec.sealShared({ window: 'after', values: key(items[items.length - 1]) }, binding)}` })
    // A token with no position: the page that precedes the end.
    links.push({ rel: 'last', href: `${prefix}&token=${codec.sealShared({ window: 'before', values: [] }, binding)}` })
  } else if (pageSize > 0) {
    links.push({ rel: 'last', href: links[0].href })
  }
  return reply.send({ meta: { pageSize }, data: { [member]: items, pageSize }, links })
}

/**
 * The memory side: a Map by id, and arrays kept sorted by id and by rating (the presorted index).
 * Like the plugin's memory store, each sorted array is built when a LIST first needs it and kept
 * sorted by writes from then on: with both built up front, CREATE paid for keeping an index that
 * the plugin, asked for no LIST, never built (every created book has rating 4.5 and goes to the
 * front of a growing group of equal ratings, so each insert moved most of the array).
 */
function memoryRoutes (app: FastifyInstance) {
  const { authors, books, reviews } = generate()
  const authorIds = new Set(authors.map(author => author.id))
  const seeded = books.map(data => ({ data, etag: '"1"', lastModified: seedModified }))
  const byId = new Map(seeded.map(row => [row.data.id, row]))
  const sorted = (compare: (a: BookRow, b: BookRow) => number) => {
    let index: SortedIndex | undefined
    return {
      get: () => (index ??= new SortedIndex([...byId.values()], compare)),
      insert: (row: Row) => index?.insert(row),
      remove: (row: Row) => { const at = index?.rows.indexOf(row) ?? -1; if (at !== -1) index?.rows.splice(at, 1) }
    }
  }
  const byIdIndex = sorted(compareBy('id', 1))
  const byRatingDesc = sorted(compareBy('rating', -1))
  let queue: Promise<unknown> = Promise.resolve()

  app.get('/v1/books/:id', routes.retrieve, function retrieveBook (request, reply) {
    const { id } = request.params as { id: string }
    const row = byId.get(id)
    if (row === undefined) return problem(reply, request, 404, 'not-found', 'Not Found', `book ${id} was not found.`)
    reply.header('etag', row.etag).header('last-modified', row.lastModified)
    if (request.headers['if-none-match'] === row.etag) return reply.code(304).send()
    return reply.send({ data: { book: row.data } })
  })

  app.get('/v1/books', routes.list, function listBooks (request, reply) {
    const list = readList(request, reply)
    if (list.kind === 'answered') return list.reply
    if (list.kind === 'filtered') {
      const items: Array<Partial<BookRow>> = []
      const rows = byRatingDesc.get().rows
      for (let position = 0; position < rows.length && items.length <= list.pageSize; position++) {
        const book = rows[position].data
        if (book.year !== null && book.year >= 2000) items.push(project(book))
      }
      return listPage(reply, list, items)
    }
    const index = byIdIndex.get()
    const start = list.after === undefined ? 0 : index.after({ id: list.after } as BookRow)
    return listPage(reply, list, index.rows.slice(start, start + list.pageSize + 1).map(row => row.data))
  })

  // Generated in id order: the array is the id index.
  app.get('/v1/reviews', routes.reviews, function listReviews (request, reply) {
    const list = readList(request, reply, reviewsBase)
    if (list.kind === 'answered') return list.reply
    const visible = visibleTo((request as UserRequest).user)
    const items: ReviewRow[] = []
    const after = list.kind === 'default' ? list.after : undefined
    let position = after === undefined ? 0 : afterId(reviews, after)
    for (; position < reviews.length && items.length <= list.pageSize; position++) {
      if (visible(reviews[position])) items.push(reviews[position])
    }
    return listPage(reply, list, items, reviewsBase, 'reviews')
  })

  const createRow = (body: BookBody): Row | null => {
    if (!authorIds.has(body.authorId)) return null
    const id = uuidv7()
    const row = {
      data: { id, title: body.title, authorId: body.authorId, year: body.year ?? null, rating: body.rating ?? null, available: body.available ?? true, reviewCount: 0, averageRating: null },
      etag: '"1"',
      lastModified: createdModified
    }
    byId.set(id, row)
    byIdIndex.insert(row)
    byRatingDesc.insert(row)
    return row
  }
  const keys = memoryKeys()
  writeRoutes(app, {
    create: async body => createRow(body),
    // One at a time, as the plugin's memory store runs transactions; what a failed one created is removed.
    transaction: async work => {
      const made: Row[] = []
      const run = queue.then(async () => await work({
        create: async body => { const row = createRow(body); if (row !== null) made.push(row); return row },
        claim: async key => keys.claim(key),
        keep: async (key, fingerprint, kept) => keys.keep(key, fingerprint, kept)
      }))
      queue = run.catch(() => {})
      try {
        return await run
      } catch (error) {
        for (const row of made) {
          byId.delete(row.data.id)
          byIdIndex.remove(row)
          byRatingDesc.remove(row)
        }
        throw error
      }
    }
  }, writeOptions)
}

// The statements lib/stores/sql/ sends for these requests (captured from its pool), so both sides
// ask PostgreSQL the same questions; only the code around them differs. run.ts compares both
// sides' statements after each case and fails the run when they differ.
// The store reads its bookkeeping time as epoch milliseconds (a bigint, as text).
const modifiedAtMillis = '(extract(epoch from date_trunc(\'milliseconds\', "t0"."modified_at")) * 1000)::bigint'
// A LIST reads what its page shows (ListQuery.reads): the fields asked, without the version and time.
const dataColumns = '"t0"."id", "t0"."title", "t0"."authorId", "t0"."year", "t0"."rating", "t0"."available", "t0"."reviewCount", "t0"."averageRating"'
const filteredColumns = '"t0"."id", "t0"."title", "t0"."authorId", "t0"."year", "t0"."rating"'
const columns = `${dataColumns}, "t0"."version", ${modifiedAtMillis}`
const table = `"${BENCH_SCHEMA}"."books" AS "t0"`
const byIdOrder = '"t0"."id" COLLATE "C" ASC'
// The store reads date-time columns as ISO text, and of a review the fields the caller may read (not moderatorNote).
const isoText = (column: string) => `to_char("t0"."${column}" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
const reviewColumns = `"t0"."id", "t0"."bookId", "t0"."rating", "t0"."text", "t0"."private", "t0"."ownerId", ${isoText('createdAt')}, ${isoText('updatedAt')}`
const reviewTable = `"${BENCH_SCHEMA}"."reviews" AS "t0"`
/** The reviews' row rule for a caller who is not an admin: $1 false, $2 the caller's user. */
const visibleReview = '("t0"."private" = $1::boolean OR "t0"."ownerId" COLLATE "C" = $2::text)'
export const statements = {
  retrieve: `SELECT ${columns} FROM ${table} WHERE "t0"."id" = $1::text`,
  first: `SELECT ${dataColumns} FROM ${table} ORDER BY ${byIdOrder} LIMIT $1 OFFSET $2`,
  after: `SELECT ${dataColumns} FROM ${table} WHERE "t0"."id" COLLATE "C" > $1::text ORDER BY ${byIdOrder} LIMIT $2`,
  filtered: `SELECT ${filteredColumns} FROM ${table} WHERE "t0"."year" >= $1::bigint ORDER BY "t0"."rating" DESC NULLS LAST, "t0"."id" COLLATE "C" DESC LIMIT $2 OFFSET $3`,
  reviews: `SELECT ${reviewColumns} FROM ${reviewTable} WHERE ${visibleReview} ORDER BY ${byIdOrder} LIMIT $3 OFFSET $4`,
  reviewsAfter: `SELECT ${reviewColumns} FROM ${reviewTable} WHERE ${visibleReview} AND "t0"."id" COLLATE "C" > $3::text ORDER BY ${byIdOrder} LIMIT $4`,
  create: `INSERT INTO ${table} ("id", "title", "authorId", "year", "rating", "available", "reviewCount", "averageRating", "version", "modified_at") VALUES ($1::text, $2::text, $3::text, $4::bigint, $5::double precision, $6::boolean, $7::bigint, $8::double precision, 1, now()) RETURNING ${columns}`
}

type DbRow = [string, string, string, string | null, number | null, boolean, string, number | null, number, string]
/** A LIST's row: the data columns alone (the filtered one's end at rating). */
export type DbListRow = [string, string, string, string | null, number | null, boolean?, string?, (number | null)?]

/** A LIST row as the envelope shows it. */
export function listData ([id, title, authorId, year, rating, available, reviewCount, averageRating]: DbListRow): Partial<BookRow> {
  return available === undefined
    ? { id, title, authorId, year: year === null ? null : Number(year), rating }
    : { id, title, authorId, year: year === null ? null : Number(year), rating, available, reviewCount: Number(reviewCount), averageRating: averageRating ?? null }
}

/** A row as the envelope wants it; bigint arrives as text. */
function fromDb ([id, title, authorId, year, rating, available, reviewCount, averageRating, version, modifiedAt]: DbRow): Row {
  return {
    data: { id, title, authorId, year: year === null ? null : Number(year), rating, available, reviewCount: Number(reviewCount), averageRating },
    etag: `"${version}"`,
    lastModified: new Date(Number(modifiedAt)).toUTCString()
  }
}

type DbReview = [string, string, string, string | null, boolean, string, string, string]

/** A review as the envelope wants it: rating (bigint) arrives as text. */
function reviewFromDb ([id, bookId, rating, text, isPrivate, ownerId, createdAt, updatedAt]: DbReview): ShownReview {
  return { id, bookId, rating: Number(rating), text, private: isPrivate, ownerId, createdAt, updatedAt }
}

/** The PostgreSQL side: the same routes over a `pg` pool, with the plugin store's SQL. */
function postgresRoutes (app: FastifyInstance, pool: pg.Pool) {
  const query = async (text: string, values: unknown[]) => (await pool.query<DbRow>({ text, values, rowMode: 'array' })).rows.map(fromDb)

  app.get('/v1/books/:id', routes.retrieve, async function retrieveBook (request, reply) {
    const { id } = request.params as { id: string }
    const [row] = await query(statements.retrieve, [id])
    if (row === undefined) return problem(reply, request, 404, 'not-found', 'Not Found', `book ${id} was not found.`)
    reply.header('etag', row.etag).header('last-modified', row.lastModified)
    if (request.headers['if-none-match'] === row.etag) return reply.code(304).send()
    return reply.send({ data: { book: row.data } })
  })

  app.get('/v1/books', routes.list, async function listBooks (request, reply) {
    const list = readList(request, reply)
    if (list.kind === 'answered') return list.reply
    const page = async (text: string, values: unknown[]) => (await pool.query<DbListRow>({ text, values, rowMode: 'array' })).rows.map(listData)
    const rows = list.kind === 'filtered'
      ? await page(statements.filtered, [2000, list.pageSize + 1, 0])
      : list.after === undefined
        ? await page(statements.first, [list.pageSize + 1, 0])
        : await page(statements.after, [list.after, list.pageSize + 1])
    return listPage(reply, list, rows)
  })

  // The caller sees the reviews that are not private, and its own.
  app.get('/v1/reviews', routes.reviews, async function listReviews (request, reply) {
    const list = readList(request, reply, reviewsBase)
    if (list.kind === 'answered') return list.reply
    const { user } = request as UserRequest
    const after = list.kind === 'default' ? list.after : undefined
    const { rows } = after === undefined
      ? await pool.query<DbReview>({ text: statements.reviews, values: [false, user, list.pageSize + 1, 0], rowMode: 'array' })
      : await pool.query<DbReview>({ text: statements.reviewsAfter, values: [false, user, after, list.pageSize + 1], rowMode: 'array' })
    return listPage(reply, list, rows.map(reviewFromDb), reviewsBase, 'reviews')
  })

  const createOn = async (client: pg.Pool | pg.PoolClient, body: BookBody): Promise<Row | null> => {
    try {
      // A new book has no reviews yet (demo/schemas/index.ts).
      const { rows } = await client.query<DbRow>({ text: statements.create, values: [uuidv7(), body.title, body.authorId, body.year ?? null, body.rating ?? null, body.available ?? true, 0, null], rowMode: 'array' })
      return fromDb(rows[0])
    } catch (error) {
      // foreign_key_violation: the author does not exist.
      if ((error as { code?: string }).code === '23503') return null
      throw error
    }
  }
  writeRoutes(app, {
    create: async body => await createOn(pool, body),
    transaction: async work => {
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        // A failed statement ends what the transaction can do: a missing author rolls it back, as the plugin's store does.
        const result = await work({ create: async body => await createOn(client, body), ...postgresKeys(client) })
        await client.query('COMMIT')
        return result
      } catch (error) {
        await client.query('ROLLBACK')
        throw error
      } finally {
        client.release()
      }
    }
  }, writeOptions)
}

/**
 * The response headers the plugin's demo configuration sends on every answer besides the
 * baseline's own (security and caching headers, Vary, Request-Id, RateLimit-Policy and RateLimit),
 * set the way a hand-written route would: one prepared object and two per-request values. The
 * RateLimit value counts down without limiting anything. For the `BASELINE_HEADERS=plugin` side of
 * run.ts: what sending those bytes costs by itself, without the plugin.
 */
function pluginHeaders () {
  const fixed = { ...securityHeaders(), vary: 'Origin, Accept', 'ratelimit-policy': '"default";q=100000000;w=60' }
  let remaining = 100_000_000
  return function addPluginHeaders (reply: FastifyReply) {
    reply.headers(fixed)
    reply.header('request-id', randomUUID())
    reply.header('ratelimit', `"default";r=${--remaining};t=60`)
  }
}

export async function buildBaselineApp (store: 'memory' | 'postgres' = 'memory', withPluginHeaders = false): Promise<FastifyInstance> {
  const app = Fastify({ logger: false })
  const addHeaders = withPluginHeaders ? pluginHeaders() : undefined
  // Authentication is work every real API does, and one Map lookup: the baseline does it too, and
  // keeps the caller's user for the reviews' row rule.
  app.decorateRequest('user', '')
  app.addHook('onRequest', function checkToken (request, reply, done) {
    addHeaders?.(reply)
    const header = request.headers.authorization
    const user = header !== undefined && header.startsWith('Bearer ') ? users.get(header.slice(7)) : undefined
    if (user === undefined) return problem(reply, request, 401, 'unauthorized', 'Unauthorized', 'Valid credentials are required.')
    ;(request as UserRequest).user = user
    done()
  })
  if (store === 'memory') {
    memoryRoutes(app)
  } else {
    const pool = traceStatements(new pg.Pool({ connectionString: databaseUrl() }))
    app.addHook('onClose', async function closePool () { await pool.end() })
    postgresRoutes(app, pool)
  }
  return app
}

async function main () {
  const store = process.env.STORE ?? 'memory'
  if (store !== 'memory' && store !== 'postgres') throw new Error(`STORE must be memory or postgres, received ${store}`)
  if (store === 'postgres' && databaseUrl() === undefined) {
    process.stdout.write('unavailable DATABASE_URL is not set\n')
    return
  }
  const app = await buildBaselineApp(store, process.env.BASELINE_HEADERS === 'plugin')
  const url = await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' })
  process.stdout.write(`listening ${url}\n`)
  process.on('SIGTERM', () => { app.close().then(() => process.exit(0), () => process.exit(1)) })
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main()
