// The sample catalogue `npm start` writes into an empty store (demo/seed.ts; SEED=false turns it
// off), read back as the demo's clients read it: the default tokens, row rules and derived values.
// Two instances starting together on one empty store write it once: on memory, on PostgreSQL when
// DATABASE_URL is set (a schema of its own, dropped afterwards), and a store that refuses the
// writes stops start-up.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import type { Test } from 'tap'
import apiConventions, { memoryStore, postgresStore } from '../lib/index.js'
import type { Store } from '../lib/index.js'
import { demoSecurityOptions, startDemoApp } from '../demo/app.js'
import { loadConfig } from '../demo/config.js'
import { demoResources } from '../demo/schemas/index.js'
import { sampleCatalogue, seedWhenEmpty } from '../demo/seed.js'
import { runSchemas } from './stores/run-schemas.js'

const env = { STORE: 'memory', CURSOR_SECRET: 'a-test-secret-of-enough-length', RATE_LIMIT_MAX: '1000000' }
const as = (token: string) => ({ authorization: `Bearer ${token}` })
const titles = ['The Bone People', 'Things Fall Apart', 'Arrow of God', 'Invisible Cities', 'If on a Winter\'s Night a Traveller']

/** The demo's routes over `store`, as its clients reach them (the default tokens). */
async function demoOver (t: Test, store: Store): Promise<FastifyInstance> {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(apiConventions, { prefix: '/v1', resources: demoResources(store), cursorSecret: env.CURSOR_SECRET, ...demoSecurityOptions(loadConfig(env)) })
  return app
}

async function bookTitles (app: FastifyInstance): Promise<string[]> {
  const res = await app.inject({ url: '/v1/books?fields=title&sort=id&pageSize=100', headers: as('dev-token') })
  return res.json().data.books.map((book: { title: string }) => book.title)
}

t.test('npm start writes the sample catalogue into an empty store, and clients read it under the demo\'s rules', async t => {
  const { app, sample } = await startDemoApp(loadConfig(env))
  t.teardown(() => app.close())
  t.equal(sample, 'seeded')
  const books = await app.inject({ url: '/v1/books?fields=title,reviewCount,averageRating&sort=id&expand=author', headers: as('read-token') })
  t.same(books.json().data.books.map((book: Record<string, any>) => [book.title, book.author.name, book.reviewCount, book.averageRating]), [
    ['The Bone People', 'Keri Hulme', 2, 4.5],
    ['Things Fall Apart', 'Chinua Achebe', 1, 5],
    ['Arrow of God', 'Chinua Achebe', 0, null],
    // Its one review is private: counted, and seen only by its owner and admins.
    ['Invisible Cities', 'Italo Calvino', 1, 3],
    ['If on a Winter\'s Night a Traveller', 'Italo Calvino', 0, null]
  ])
  const nz = await app.inject({ url: '/v1/books?author.country=NZ&fields=title', headers: as('dev-token') })
  t.same(nz.json().data.books.map((book: { title: string }) => book.title), ['The Bone People'])
  const reviews = async (token: string) => (await app.inject({ url: '/v1/reviews?total=true&sort=id', headers: as(token) })).json()
  t.same((await reviews('alice-token')).data.reviews.map((r: Record<string, unknown>) => [r.ownerId, r.rating]), [['carol', 5], ['dave', 4], ['carol', 5]])
  t.equal((await reviews('admin-token')).meta.total, 4, 'an admin sees the private review too')
  // Reviewed by sample users only: a default token's user may review any sample book, and its own list starts empty.
  const mine = await app.inject({ url: '/v1/reviews?filter=ownerId%20eq%20%27alice%27&total=true', headers: as('alice-token') })
  t.equal(mine.json().meta.total, 0)
  const review = await app.inject({ method: 'POST', url: '/v1/reviews', headers: as('alice-token'), payload: { bookId: sampleCatalogue[3].id, rating: 4 } })
  t.equal(review.statusCode, 201)
  // An empty id in a path is a 404 that names the path, with the demo's credentials too.
  const empty = await app.inject({ url: '/v1/books/', headers: as('dev-token') })
  t.same({ status: empty.statusCode, detail: empty.json().detail }, { status: 404, detail: '/v1/books/ was not found.' })
})

t.test('SEED=false starts on the store as it is', async t => {
  const { app, sample } = await startDemoApp(loadConfig({ ...env, SEED: 'false' }))
  t.teardown(() => app.close())
  t.equal(sample, 'off')
  t.same(await bookTitles(app), [])
})

t.test('a store that holds records is left as it is', async t => {
  const store = memoryStore()
  t.equal(await seedWhenEmpty(store), 'seeded')
  const app = await demoOver(t, store)
  const author = await app.inject({ method: 'POST', url: '/v1/authors', headers: as('dev-token'), payload: { name: 'Janet Frame' } })
  t.equal(author.statusCode, 201)
  t.equal(await seedWhenEmpty(store), 'not empty')
  t.same(await bookTitles(app), titles)
  t.equal((await app.inject({ url: '/v1/authors?total=true', headers: as('dev-token') })).json().meta.total, 4)
})

t.test('two seedings at once on one store write the catalogue once', async t => {
  const store = memoryStore()
  const outcomes = await Promise.all([seedWhenEmpty(store), seedWhenEmpty(store)])
  t.equal(outcomes.filter(outcome => outcome === 'seeded').length, 1, outcomes.join(', '))
  t.same(await bookTitles(await demoOver(t, store)), titles)
})

t.test('an instance that found the store empty but meets the first record written meanwhile stops there: written elsewhere', async t => {
  const store = memoryStore()
  t.equal(await seedWhenEmpty(store), 'seeded')
  // Its look ran before the other instance's first write: the authors it reads are none.
  const late: Store = { ...store, list: async (model, query) => model.name === 'authors' ? { items: [], hasMore: false } : await store.list(model, query) }
  t.equal(await seedWhenEmpty(late), 'written elsewhere')
  t.same(await bookTitles(await demoOver(t, store)), titles, 'nothing written twice')
})

const connectionString = process.env.DATABASE_URL
t.test('two instances starting together on one empty PostgreSQL database write the catalogue once', { skip: connectionString === undefined && 'DATABASE_URL is not set' }, async t => {
  const { prefix } = runSchemas(t, connectionString)
  const stores = await Promise.all([1, 2].map(async () => await postgresStore({ connectionString, schema: `${prefix}_seed` })))
  t.teardown(async () => { for (const store of stores) await store.close() })
  const outcomes = await Promise.all(stores.map(seedWhenEmpty))
  t.equal(outcomes.filter(outcome => outcome === 'seeded').length, 1, outcomes.join(', '))
  t.same(await bookTitles(await demoOver(t, stores[0])), titles)
  t.equal((await (await demoOver(t, stores[1])).inject({ url: '/v1/reviews?total=true', headers: as('admin-token') })).json().meta.total, 4)
})

t.test('a store that fails while the catalogue is written fails the seeding, naming the request', async t => {
  const failing = (inner: Store, method: 'list' | 'create'): Store => ({ ...inner, [method]: async () => { throw new Error('the database went away') } })
  await t.rejects(seedWhenEmpty(failing(memoryStore(), 'list')), { message: /^Writing the sample catalogue failed: GET \/authors answered 500 / })
  await t.rejects(seedWhenEmpty(failing(memoryStore(), 'create')), { message: /^Writing the sample catalogue failed: POST \/authors answered 500 / })
})

t.test('on PGlite: a restart finds the catalogue and writes nothing; a store refusing the writes stops start-up', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'apic-seed-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const config = loadConfig({ ...env, STORE: 'pglite', DATA_DIR: dir })
  const first = await startDemoApp(config)
  t.equal(first.sample, 'seeded')
  await first.app.close()
  const second = await startDemoApp(config)
  t.equal(second.sample, 'not empty')
  t.same(await bookTitles(second.app), titles)
  await second.app.close()
  // Emptied, and refusing new authors: the catalogue cannot be written.
  const db = await PGlite.create({ dataDir: dir })
  await db.exec(`DELETE FROM reviews; DELETE FROM books; DELETE FROM authors;
    CREATE FUNCTION refuse () RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'read-only catalogue'; END $$;
    CREATE TRIGGER refuse BEFORE INSERT ON authors FOR EACH ROW EXECUTE FUNCTION refuse();`)
  await db.close()
  await t.rejects(startDemoApp(config), { message: /^Writing the sample catalogue failed: POST \/authors answered 500 / })
  // The store was closed: the data directory opens again.
  const again = await startDemoApp(loadConfig({ ...env, STORE: 'pglite', DATA_DIR: dir, SEED: 'false' }))
  t.same(await bookTitles(again.app), [])
  await again.app.close()
})
