// The baseline's writes beyond a plain CREATE (benchmarks/README.md "What the baseline does"): a
// CREATE with an Idempotency-Key, and a batch of book creates, written by hand the way an
// application would do the same work the plugin does: the key claimed, the answer kept with the
// write in one transaction, and a batch's creates in one transaction.
import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteShorthandOptions } from 'fastify'
import type pg from 'pg'
import { BENCH_SCHEMA } from './postgres.js'
import type { BookRow } from './seed.js'

export interface Row { readonly data: BookRow, readonly etag: string, readonly lastModified: string }

/** What a kept answer holds: enough to send it again. */
interface Kept { readonly status: number, readonly headers: Record<string, string>, readonly body: unknown }

/** The store's part: a book create on its own, or creates and keys in one transaction (undone when `work` throws). */
export interface WriteSide {
  create (body: BookBody): Promise<Row | null>
  transaction<T> (work: (tx: WriteTx) => Promise<T>): Promise<T>
}

export interface WriteTx {
  /** The new book's row; null when its author does not exist. */
  create (body: BookBody): Promise<Row | null>
  /** Holds `key` until the transaction ends: 'busy' when another holds it, else what is kept under it. */
  claim (key: string): Promise<'busy' | { fingerprint: string, kept: Kept } | null>
  keep (key: string, fingerprint: string, kept: Kept): Promise<void>
}

export type BookBody = Pick<BookRow, 'title' | 'authorId'> & Partial<Pick<BookRow, 'year' | 'rating' | 'available'>>

/** A book's CREATE body, as the baseline validates it. */
export const bookBody = {
  type: 'object',
  properties: {
    title: { type: 'string', minLength: 1, maxLength: 500 },
    authorId: { type: 'string', minLength: 1 },
    year: { type: ['integer', 'null'] },
    rating: { type: ['number', 'null'], minimum: 0, maximum: 5 },
    available: { type: 'boolean' }
  },
  required: ['title', 'authorId'],
  additionalProperties: false
} as const

/** The one batch the benchmark sends: creates of books. */
const batchBody = {
  type: 'object',
  properties: {
    operations: {
      type: 'array',
      minItems: 1,
      maxItems: 100,
      items: {
        type: 'object',
        properties: { op: { const: 'create' }, resource: { const: 'books' }, data: bookBody },
        required: ['op', 'resource', 'data'],
        additionalProperties: false
      }
    }
  },
  required: ['operations'],
  additionalProperties: false
} as const

const ttlMillis = 86_400_000
const digest = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex')

/** A problem as the plugin writes it; `extra` holds `operation` and `invalidParams`. */
export function problem (reply: FastifyReply, request: FastifyRequest, status: number, slug: string, title: string, detail: string, extra: { operation?: number, invalidParams?: Array<{ name: string, reason: string }> } = {}) {
  return reply.code(status).type('application/problem+json; charset=utf-8').send({ type: `/v1/problems/${slug}`, title, status, detail, instance: request.url.split('?', 1)[0], ...extra })
}

const missingAuthor = (authorId: string) => ({
  detail: `authorId refers to author '${authorId}', which does not exist.`,
  invalidParams: [{ name: 'authorId', reason: 'no author has this id' }]
})

/**
 * POST /v1/books (keyed when the request sends Idempotency-Key) and POST /v1/batch. The key is
 * the sf-string or bare token the plugin reads, scoped by caller, method and path; the body's
 * fingerprint is its digest with members in one order (here: as parsed, since the benchmark
 * sends one shape).
 */
export function writeRoutes (app: FastifyInstance, side: WriteSide, options: { create: RouteShorthandOptions, user: (request: FastifyRequest) => string }) {
  const running = new Set<string>()

  async function keyed (request: FastifyRequest, reply: FastifyReply, header: string, work: (tx: WriteTx) => Promise<Kept | 'answered'>) {
    const given = header.startsWith('"') ? header.slice(1, -1) : header
    const key = digest([options.user(request), request.method, request.url.split('?', 1)[0], given])
    if (running.has(key)) return problem(reply, request, 409, 'conflict', 'Conflict', 'A request with this Idempotency-Key is still being processed; retry later.')
    running.add(key)
    try {
      const fingerprint = digest(['application/json', request.body])
      const answer = await side.transaction(async tx => {
        const claim = await tx.claim(key)
        if (claim === 'busy') return 'busy' as const
        if (claim !== null) return claim.fingerprint === fingerprint ? { replay: claim.kept } : 'reused' as const
        const kept = await work(tx)
        if (kept !== 'answered') await tx.keep(key, fingerprint, kept)
        return kept
      })
      if (answer === 'busy') return problem(reply, request, 409, 'conflict', 'Conflict', 'A request with this Idempotency-Key is still being processed; retry later.')
      if (answer === 'reused') return problem(reply, request, 422, 'unprocessable', 'Unprocessable Entity', 'This Idempotency-Key was used with another request body; use a new key for a new request.')
      if (answer === 'answered') return reply
      if ('replay' in answer) return reply.code(answer.replay.status).headers(answer.replay.headers).header('idempotent-replayed', 'true').send(answer.replay.body)
      return reply.code(answer.status).headers(answer.headers).send(answer.body)
    } finally {
      running.delete(key)
    }
  }

  const created = (row: Row): Kept => ({
    status: 201,
    headers: { etag: row.etag, 'last-modified': row.lastModified, location: `/v1/books/${row.data.id}` },
    body: { data: { book: row.data } }
  })

  app.post('/v1/books', options.create, async function createBook (request, reply) {
    const body = request.body as BookBody
    const header = request.headers['idempotency-key']
    const create = async (tx: Pick<WriteTx, 'create'>): Promise<Kept | 'answered'> => {
      const row = await tx.create(body)
      if (row === null) {
        problem(reply, request, 422, 'unprocessable', 'Unprocessable Entity', missingAuthor(body.authorId).detail, { invalidParams: missingAuthor(body.authorId).invalidParams })
        return 'answered'
      }
      return created(row)
    }
    if (typeof header === 'string') return await keyed(request, reply, header, create)
    const answer = await create(side)
    if (answer === 'answered') return reply
    return reply.code(answer.status).headers(answer.headers).send(answer.body)
  })

  app.post('/v1/batch', { schema: { body: batchBody } }, async function runBatch (request, reply) {
    const { operations } = request.body as { operations: Array<{ data: BookBody }> }
    try {
      const results = await side.transaction(async tx => {
        const done = []
        for (const [index, { data }] of operations.entries()) {
          const row = await tx.create(data)
          // Thrown, so that the transaction undoes the creates before it.
          if (row === null) throw new FailedOperation(index, data.authorId)
          done.push({ status: 201, location: `/v1/books/${row.data.id}`, etag: row.etag, data: { book: row.data } })
        }
        return done
      })
      return reply.send({ data: { results } })
    } catch (error) {
      if (!(error instanceof FailedOperation)) throw error
      const { detail, invalidParams } = missingAuthor(error.authorId)
      return problem(reply, request, 422, 'unprocessable', 'Unprocessable Entity', detail, { operation: error.index, invalidParams: invalidParams.map(param => ({ ...param, name: `operations/${error.index}/${param.name}` })) })
    }
  })
}

class FailedOperation extends Error {
  constructor (readonly index: number, readonly authorId: string) { super('a batch operation failed') }
}

/** Keys in memory, as the plugin's memory store keeps them: what a transaction claimed stays claimed until it ends. */
export function memoryKeys () {
  const kept = new Map<string, { fingerprint: string, kept: Kept, expiresAt: number }>()
  return {
    claim (key: string) {
      const entry = kept.get(key)
      return entry === undefined || entry.expiresAt <= Date.now() ? null : { fingerprint: entry.fingerprint, kept: entry.kept }
    },
    keep (key: string, fingerprint: string, answer: Kept) {
      kept.set(key, { fingerprint, kept: answer, expiresAt: Date.now() + ttlMillis })
    }
  }
}

const keysTable = `"${BENCH_SCHEMA}"."api_idempotency_keys"`

/** The SQL the plugin's store sends for keys, on the transaction's client. */
export const keyStatements = {
  lock: 'SELECT pg_try_advisory_xact_lock($1::integer, $2::integer)',
  read: `SELECT fingerprint, response::text FROM ${keysTable} WHERE key = $1::text AND expires_at > now()`,
  keep: `INSERT INTO ${keysTable} (key, fingerprint, response, expires_at)
      VALUES ($1::text, $2::text, $3::json, $4::timestamptz)
      ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, response = excluded.response, expires_at = excluded.expires_at`
}

/** The key half of a PostgreSQL transaction on `client`. */
export function postgresKeys (client: pg.PoolClient) {
  return {
    async claim (key: string) {
      const lock = createHash('sha256').update(`fastify-api-conventions idempotency ${BENCH_SCHEMA}\u0000${key}`).digest()
      const { rows: [[held]] } = await client.query<[boolean]>({ text: keyStatements.lock, values: [lock.readInt32BE(0), lock.readInt32BE(4)], rowMode: 'array' })
      if (!held) return 'busy' as const
      const { rows } = await client.query<[string, string]>({ text: keyStatements.read, values: [key], rowMode: 'array' })
      return rows.length === 0 ? null : { fingerprint: rows[0][0], kept: JSON.parse(rows[0][1]) as Kept }
    },
    async keep (key: string, fingerprint: string, answer: Kept) {
      await client.query({ text: keyStatements.keep, values: [key, fingerprint, JSON.stringify(answer), new Date(Date.now() + ttlMillis).toISOString()] })
    }
  }
}
