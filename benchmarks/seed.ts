// The benchmark data set: authors, books and reviews generated from a fixed seed, so the
// plugin's server and the hand-written baseline hold exactly the same records with the same ids.
import type { Store } from '../lib/index.js'
import { buildRegistry } from '../lib/registry/index.js'
import { demoResources } from '../demo/schemas/index.js'

export type AuthorRow = { id: string, name: string, born: string | null, country: string | null }
export type BookRow = {
  id: string
  title: string
  authorId: string
  year: number | null
  rating: number | null
  available: boolean
  /** Derived from the book's reviews, as the demo's review hooks keep them (demo/schemas/reviews.ts). */
  reviewCount: number
  averageRating: number | null
}
export type ReviewRow = {
  id: string
  bookId: string
  rating: number
  text: string | null
  private: boolean
  ownerId: string
  createdAt: string
  updatedAt: string
  moderatorNote: string | null
}

/** Every seeded record was last modified at this instant, so Last-Modified is the same on both sides. */
export const SEED_TIME = new Date('2024-05-01T12:00:00.000Z')

/** Shared by both servers and by run.ts, which builds the paging-token URL from it. */
export const CURSOR_SECRET = 'benchmark-cursor-secret-0123456789'

// mulberry32: tiny, fast, and the same sequence on every machine.
function random (seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

// Ids shaped like UUIDs and sorted in creation order; records created during a run get UUIDv7s
// (starting 01…), which sort after every seeded one, so the seeded pages never shift.
const uuid = (kind: number, index: number) => `00000000-0000-7000-8${kind}00-${String(index).padStart(12, '0')}`
export const authorId = (index: number) => uuid(0, index)
export const bookId = (index: number) => uuid(1, index)
export const reviewId = (index: number) => uuid(2, index)

/**
 * The users reviews belong to: the demo's token users (API_TOKENS' default) and readers who hold no
 * token. `dev` is the benchmark's caller (cases.ts), so some of the private reviews it lists are its own.
 */
const reviewers = ['dev', 'reader', 'alice', 'bob', 'admin', ...Array.from({ length: 45 }, (_, i) => `reader-${i}`)]

const words = ['silent', 'river', 'glass', 'winter', 'garden', 'shadow', 'paper', 'iron', 'golden', 'night',
  'harbour', 'stone', 'letters', 'orchard', 'empire', 'small', 'wild', 'last', 'hidden', 'summer']
const countries = ['NZ', 'AU', 'GB', 'US', 'FR', 'DE', 'JP', 'IT', 'ES', 'CA']

export interface Dataset { authors: AuthorRow[], books: BookRow[], reviews: ReviewRow[] }

export function generate (authorCount = 1000, bookCount = 10000, seed = 9): Dataset {
  const next = random(seed)
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]
  const authors: AuthorRow[] = []
  for (let i = 0; i < authorCount; i++) {
    const born = next() < 0.1 ? null : `${1900 + Math.floor(next() * 100)}-0${1 + Math.floor(next() * 9)}-1${Math.floor(next() * 10)}`
    authors.push({ id: authorId(i), name: `${pick(words)} ${pick(words)} ${i}`, born, country: next() < 0.1 ? null : pick(countries) })
  }
  const books: BookRow[] = []
  for (let i = 0; i < bookCount; i++) {
    books.push({
      id: bookId(i),
      title: `The ${pick(words)} ${pick(words)} ${i}`,
      authorId: authors[Math.floor(next() * authorCount)].id,
      year: next() < 0.05 ? null : 1900 + Math.floor(next() * 125),
      rating: next() < 0.05 ? null : Math.round(next() * 50) / 10,
      available: next() < 0.8,
      reviewCount: 0,
      averageRating: null
    })
  }
  // Reviews come after the books, from the same sequence, so the books above are what they were
  // before reviews existed. Up to three per available book (the demo refuses reviews of an
  // unavailable one), by distinct users (one review per user and book); a tenth private.
  const reviews: ReviewRow[] = []
  const stamp = SEED_TIME.toISOString()
  for (const book of books) {
    if (!book.available) continue
    const count = Math.floor(next() * 4)
    const owners = new Set<string>()
    while (owners.size < count) owners.add(pick(reviewers))
    let sum = 0
    for (const ownerId of owners) {
      const rating = 1 + Math.floor(next() * 5)
      sum += rating
      reviews.push({
        id: reviewId(reviews.length),
        bookId: book.id,
        rating,
        text: next() < 0.3 ? null : `${pick(words)} and ${pick(words)}, ${rating} of 5`,
        private: next() < 0.1,
        ownerId,
        createdAt: stamp,
        updatedAt: stamp,
        moderatorNote: next() < 0.05 ? 'checked' : null
      })
    }
    book.reviewCount = count
    // As the demo's recount does: 100 × sum is exact, so the average is rounded once.
    book.averageRating = count === 0 ? null : Math.round(sum * 100 / count) / 100
  }
  return { authors, books, reviews }
}

/**
 * Writes a data set into a store through the store itself (no hooks, no rules: the records are
 * already what the demo's hooks would have made them), authors, then books, then reviews; `batch`
 * writes at a time. Every record is stamped by the store's clock; callers fix that up if they must.
 */
export async function fillStore (store: Store, data: Dataset, batch = 1): Promise<void> {
  const [authors, books, reviews] = buildRegistry(demoResources(store))
  for (const [model, rows] of [[authors, data.authors], [books, data.books], [reviews, data.reviews]] as const) {
    for (let i = 0; i < rows.length; i += batch) await Promise.all(rows.slice(i, i + batch).map(async row => await store.create(model, row)))
  }
}
