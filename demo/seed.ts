// The sample catalogue `npm start` writes into an empty store (SEED=false turns it off), so that
// the first requests of the README and docs/demo.md return data: three authors, five books and
// four reviews. It is written as a client writes, through the plugin's routes, so every rule of the
// demo holds: reviews belong to their users and the books' reviewCount and averageRating are
// counted by the reviews' hooks.
import { randomBytes } from 'node:crypto'
import Fastify from 'fastify'
import apiConventions, { defineAuth } from '../lib/index.js'
import type { Store } from '../lib/index.js'
import type { DemoPrincipal } from './app.js'
import { demoResources } from './schemas/index.js'

interface SampleRecord {
  readonly resource: 'authors' | 'books' | 'reviews'
  /** Fixed (UUIDv7-shaped, dated 2024-01-01), so that the catalogue is written at most once; see seedWhenEmpty. */
  readonly id: string
  /** The user who writes it: a review's owner. */
  readonly user: string
  readonly body: Readonly<Record<string, unknown>>
}

const sampleId = (kind: 'a' | 'b' | 'c', n: number) => `018cc251-f400-7000-8000-00000000${kind}00${n}`
const [hulme, achebe, calvino] = [1, 2, 3].map(n => sampleId('a', n))
const [bonePeople, thingsFallApart, arrowOfGod, invisibleCities] = [1, 2, 3, 4, 5].map(n => sampleId('b', n))
const curator = 'sample-curator'

/** In the order written: authors before their books, books before their reviews. */
export const sampleCatalogue: readonly SampleRecord[] = [
  { resource: 'authors', id: hulme, user: curator, body: { name: 'Keri Hulme', born: '1947-03-09', country: 'NZ' } },
  { resource: 'authors', id: achebe, user: curator, body: { name: 'Chinua Achebe', born: '1930-11-16', country: 'NG' } },
  { resource: 'authors', id: calvino, user: curator, body: { name: 'Italo Calvino', born: '1923-10-15', country: 'IT' } },
  { resource: 'books', id: bonePeople, user: curator, body: { title: 'The Bone People', authorId: hulme, year: 1984, rating: 4.5 } },
  { resource: 'books', id: thingsFallApart, user: curator, body: { title: 'Things Fall Apart', authorId: achebe, year: 1958, rating: 4.8 } },
  { resource: 'books', id: arrowOfGod, user: curator, body: { title: 'Arrow of God', authorId: achebe, year: 1964, rating: 4.2 } },
  { resource: 'books', id: invisibleCities, user: curator, body: { title: 'Invisible Cities', authorId: calvino, year: 1972, rating: 4.6 } },
  { resource: 'books', id: sampleId('b', 5), user: curator, body: { title: 'If on a Winter\'s Night a Traveller', authorId: calvino, year: 1979, rating: null } },
  // Sample users, none of them a default token's: the reviews of alice, bob and the others start empty.
  { resource: 'reviews', id: sampleId('c', 1), user: 'carol', body: { bookId: bonePeople, rating: 5, text: 'Hard going at first, then unforgettable.' } },
  { resource: 'reviews', id: sampleId('c', 2), user: 'dave', body: { bookId: bonePeople, rating: 4, text: null } },
  { resource: 'reviews', id: sampleId('c', 3), user: 'carol', body: { bookId: thingsFallApart, rating: 5, text: 'Short, and it holds a whole world.' } },
  // Private: seen by dave and admins only, yet counted in the book's reviewCount.
  { resource: 'reviews', id: sampleId('c', 4), user: 'dave', body: { bookId: invisibleCities, rating: 3, text: 'Beautiful; I got lost.', private: true } }
]

/** How many records of each resource the catalogue holds, for the welcome. */
export const sampleCounts = Object.freeze(Object.fromEntries(['authors', 'books', 'reviews'].map(name => [name, sampleCatalogue.filter(r => r.resource === name).length])))

/**
 * `seeded`: the catalogue was written. `not empty`: the store holds authors (and so may hold
 * anything): nothing written. `written elsewhere`: another instance on the same database was
 * writing it at the same time, and wrote it.
 */
export type SeedOutcome = 'seeded' | 'not empty' | 'written elsewhere'

/**
 * Writes the sample catalogue when the store holds no author (without authors there are no books,
 * and without books no reviews). A private instance of the plugin on the demo's store, never
 * listening, writes it: no token of API_TOKENS is used or counted by the rate limit.
 */
const failed = (request: string, response: { statusCode: number, body: string }) =>
  new Error(`Writing the sample catalogue failed: ${request} answered ${response.statusCode} ${response.body}`)

export async function seedWhenEmpty (store: Store): Promise<SeedOutcome> {
  // The id of the record being created: each write asks for one id, and the writes run one at a time.
  let nextId = ''
  const resources = demoResources(store).map(definition => ({ ...definition, generateId: () => nextId }))
  const auth = defineAuth<DemoPrincipal>({ bearer: user => ({ id: `sample:${user}`, right: 'admin', user }) })
  const app = Fastify()
  try {
    // A key of its own: this app hands out no paging link that must outlive it (and so warns of none).
    await app.register(apiConventions, { resources, auth, idempotency: false, cursorSecret: randomBytes(32).toString('base64url') })
    const as = (user: string) => ({ authorization: `Bearer ${user}` })
    const authors = await app.inject({ url: '/authors?pageSize=1&fields=id', headers: as(curator) })
    if (authors.statusCode !== 200) throw failed('GET /authors', authors)
    if (authors.json().data.authors.length > 0) return 'not empty'
    for (const record of sampleCatalogue) {
      nextId = record.id
      const created = await app.inject({ method: 'POST', url: `/${record.resource}`, headers: as(record.user), payload: record.body })
      // Instances started together on one empty database all find it empty and write the same ids in
      // the same order: the first id each of the others writes already exists (409), and they stop there.
      if (created.statusCode === 409) return 'written elsewhere'
      if (created.statusCode !== 201) throw failed(`POST /${record.resource}`, created)
    }
    return 'seeded'
  } finally {
    await app.close()
  }
}
