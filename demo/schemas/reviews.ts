// The demo's `reviews` resource (docs/demo-contract.md, "Application rules: the `reviews` resource"):
// rows that belong to a user, fields the server sets, a field only admins see, business rules, and
// the books' reviewCount and averageRating kept in step in each review write's transaction.
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import { defineResource, errors } from '../../lib/index.js'
import type { Fields, Store, Transaction } from '../../lib/index.js'
import type { DemoPrincipal } from '../app.js'

export const Review = Type.Object({
  id: Type.Readonly(Type.String({ description: 'Server-assigned identifier (UUIDv7).' })),
  bookId: Type.String({ description: 'The id of an existing book, available for review when the review is created.' }),
  rating: Type.Integer({ minimum: 1, maximum: 5 }),
  text: Type.Optional(Type.Union([Type.String({ maxLength: 2000 }), Type.Null()])),
  private: Type.Optional(Type.Boolean({ default: false, description: 'A private review is seen only by its owner and admins.' })),
  ownerId: Type.Readonly(Type.String({ description: 'The user who created the review (set by the server).' })),
  createdAt: Type.ReadonlyOptional(Type.String({ format: 'date-time', description: 'Set by the server on CREATE.' })),
  updatedAt: Type.ReadonlyOptional(Type.String({ format: 'date-time', description: 'Set by the server on every write.' })),
  moderatorNote: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'Read and written by admins only.' }))
}, { additionalProperties: false })

export type ReviewRecord = Static<typeof Review>

const isAdmin = (principal: DemoPrincipal | null): boolean => principal?.right === 'admin'

/** A string literal of the filter language. */
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`

/** The books a review write touches (two when it moves the review), in id order: the order they are locked in. */
function touchedBooks (record: ReviewRecord | null, previous: ReviewRecord | null): string[] {
  return [...new Set([record?.bookId, previous?.bookId].filter(id => id !== undefined))].sort()
}

function refusedFor (reason: string) {
  return errors.withInvalidParams(new errors.UnprocessableError('A review cannot be written for this book.'), [{ name: 'bookId', reason }])
}

/** Counts the book's reviews, private ones included (the transaction sees every row). */
async function recount (tx: Transaction, bookId: string) {
  const ratings = (await tx.list('reviews', { filter: `bookId eq ${literal(bookId)}` })).map(review => review.rating as number)
  const sum = ratings.reduce((total, rating) => total + rating, 0)
  // 100 × sum is exact, so the average is rounded once.
  const averageRating = ratings.length === 0 ? null : Math.round(sum * 100 / ratings.length) / 100
  await tx.update('books', bookId, { reviewCount: ratings.length, averageRating })
}

export function reviewsResource (store: Store) {
  return defineResource({
    name: 'reviews',
    singular: 'review',
    schema: Review,
    store,
    defaultPageSize: 20,
    maxPageSize: 100,
    searchable: ['text'],
    relations: { book: { kind: 'one', resource: 'books', field: 'bookId' } },
    rules: {
      // A caller sees the reviews that are not private and its own; an admin sees all.
      read: (principal: DemoPrincipal | null) => isAdmin(principal) ? null : 'private eq false or ownerId eq @principal.user',
      // Its owner or an admin changes a review. Without a caller (no authentication) nobody owns one: CREATE is refused.
      write: (principal: DemoPrincipal | null) => isAdmin(principal) ? null : 'ownerId eq @principal.user',
      fields: { moderatorNote: { read: isAdmin, write: isAdmin } }
    },
    serverValues: {
      ownerId: { on: 'create', value: ({ principal }) => principal?.user ?? '' },
      createdAt: { on: 'create', value: 'now' },
      updatedAt: { on: 'write', value: 'now' }
    },
    hooks: {
      async beforeWrite ({ record, previous, tx }) {
        // Review writes for one book take turns: the uniqueness check and the recount see every committed review.
        const books = new Map<string, Fields | null>()
        for (const bookId of touchedBooks(record, previous)) books.set(bookId, await tx.get('books', bookId, { lock: true }))
        // The rules of a new review hold whenever a review is (now) for a book: on CREATE, and when a write moves it.
        if (record === null || record.bookId === previous?.bookId) return
        const book = books.get(record.bookId) as Fields | null
        if (book === null) throw refusedFor('no book has this id')
        if (book.available !== true) throw refusedFor('the book is not available for review')
        const mine = await tx.list('reviews', { filter: `bookId eq ${literal(record.bookId)} and ownerId eq ${literal(record.ownerId)}`, limit: 1 })
        if (mine.length > 0) throw new errors.ConflictError('This user has already reviewed this book; change that review instead.')
      },
      async afterWrite ({ record, previous, tx }) {
        for (const bookId of touchedBooks(record, previous)) await recount(tx, bookId)
      }
    }
  })
}
