// The benchmark data set: authors and books generated from a fixed seed, so the
// plugin's server and the hand-written baseline hold exactly the same records with the same ids.

export type AuthorRow = { id: string, name: string, born: string | null, country: string | null }
export type BookRow = { id: string, title: string, authorId: string, year: number | null, rating: number | null, available: boolean }

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

const words = ['silent', 'river', 'glass', 'winter', 'garden', 'shadow', 'paper', 'iron', 'golden', 'night',
  'harbour', 'stone', 'letters', 'orchard', 'empire', 'small', 'wild', 'last', 'hidden', 'summer']
const countries = ['NZ', 'AU', 'GB', 'US', 'FR', 'DE', 'JP', 'IT', 'ES', 'CA']

export interface Dataset { authors: AuthorRow[], books: BookRow[] }

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
      available: next() < 0.8
    })
  }
  return { authors, books }
}
