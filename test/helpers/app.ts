// Test harness (CONTRIBUTING.md "Tests"): a fresh Fastify app per test with the plugin under /v1,
// the demo's resources (demo/schemas/index.ts) on a new memory store, an injectable clock,
// deterministic seed data, and teardown. Built from the plugin directly, not demo/app.ts, so tests
// never depend on the demo's authentication.
import Fastify from 'fastify'
import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import type { TObject } from '@sinclair/typebox'
import apiConventions, { memoryStore } from '../../lib/index.js'
import type { ApiConventionsOptions, ResourceDefinition, Store } from '../../lib/index.js'
import { demoResources } from '../../demo/schemas/index.js'

/** What a test may change; everything else is the plugin's default. */
export interface AppOverrides extends Partial<Omit<ApiConventionsOptions, 'resources'>> {
  /** Fastify server options (bodyLimit, logger …). */
  readonly server?: FastifyServerOptions
  /** The store the resources share; default a fresh memory store on `clock`. */
  readonly store?: Store
  /** Resource definitions over the store; default the demo's authors and books. */
  readonly resources?: (store: Store) => ReadonlyArray<ResourceDefinition<TObject>>
  /** The clock the default memory store reads modification times from. */
  readonly clock?: TestClock
}

/** A clock tests move by hand, so Last-Modified is known without sleeping. */
export interface TestClock {
  readonly now: () => Date
  set (date: Date | string): void
  advance (milliseconds: number): void
}

export const START = new Date('2024-05-01T12:00:00.000Z')

export function testClock (start: Date = START): TestClock {
  let time = start.getTime()
  return {
    now: () => new Date(time),
    set (date) { time = new Date(date).getTime() },
    advance (milliseconds) { time += milliseconds }
  }
}

/** Minimal view of a tap test: only teardown is needed. */
interface TestLike { teardown (fn: () => unknown): void }

export async function buildApp (t: TestLike, overrides: AppOverrides = {}): Promise<FastifyInstance> {
  const { server, store: givenStore, resources, clock: givenClock, ...options } = overrides
  const clock = givenClock ?? testClock()
  const store = givenStore ?? memoryStore({ now: clock.now })
  // As the demo: a first registration on a busy machine may take longer than Fastify's 10 s.
  const app = Fastify({ logger: false, pluginTimeout: 60_000, ...server })
  t.teardown(() => app.close())
  await app.register(apiConventions, {
    prefix: '/v1',
    cursorSecret: 'a-test-secret-of-enough-length',
    ...options,
    resources: resources === undefined ? demoResources(store) : resources(store)
  })
  await app.ready()
  return app
}

export const json = { 'content-type': 'application/json' } as const

export const seedAuthors = [
  { name: 'Ursula K. Le Guin', born: '1929-10-21', country: 'US' },
  { name: 'Janet Frame', born: '1924-08-28', country: 'NZ' },
  { name: 'Stanisław Lem', born: null, country: 'PL' }
] as const

/** Books by author index into seedAuthors. */
export const seedBooks = [
  { author: 0, title: 'The Dispossessed', year: 1974, rating: 4.5 },
  { author: 0, title: 'The Left Hand of Darkness', year: 1969, rating: 4.6 },
  { author: 1, title: 'Owls Do Cry', year: 1957, rating: null },
  { author: 2, title: 'Solaris', year: 1961, rating: 4.2, available: false }
] as const

export interface Seeded {
  readonly authors: Array<Record<string, unknown> & { id: string }>
  readonly books: Array<Record<string, unknown> & { id: string }>
}

/** Creates the seed authors and books through the API, in order, and returns them as served. */
export async function seed (app: FastifyInstance): Promise<Seeded> {
  const authors = []
  for (const author of seedAuthors) authors.push(await create(app, 'authors', author))
  const books = []
  for (const { author, ...book } of seedBooks) books.push(await create(app, 'books', { ...book, authorId: authors[author].id }))
  return { authors, books }
}

/** POSTs one resource and returns it as the 201 body carries it; fails loudly otherwise. */
export async function create (app: FastifyInstance, resources: string, body: object): Promise<Record<string, unknown> & { id: string }> {
  const res = await app.inject({ method: 'POST', url: `/v1/${resources}`, headers: json, payload: body })
  if (res.statusCode !== 201) throw new Error(`seeding ${resources} failed: ${res.statusCode} ${res.body}`)
  const data = res.json().data
  // `singleResource: 'flat'` puts the resource itself in data; nested puts it under its singular.
  return ('id' in data ? data : Object.values(data)[0]) as Record<string, unknown> & { id: string }
}

/** Picks the named headers of a response into one object, for a single comparison. */
export function pick (headers: Record<string, unknown>, ...names: string[]): Record<string, unknown> {
  return Object.fromEntries(names.map(name => [name, headers[name]]))
}
