// Safe concurrent writes (spec "Errors" 4: 412; RFC 9110 §13.1.1): of N writers holding the same ETag
// exactly one succeeds and the rest get 412, because the store's compare-and-set on the version
// is one atomic step; the Store interface's compare-and-set is also tested directly.
import t from 'tap'
import type * as Tap from 'tap'
import pg from 'pg'
import { VERSION_MISMATCH, memoryStore, pgliteStore, postgresStore } from '../lib/index.js'
import type { Store } from '../lib/index.js'
import { openPglite } from './stores/pglite-db.js'
import type { StoredRecord } from '../lib/index.js'
import { buildRegistry } from '../lib/registry/index.js'
import { demoResources } from '../demo/schemas/index.js'
import { buildApp, json, seed } from './helpers/app.js'

const WRITERS = 120

t.test(`${WRITERS} simultaneous PATCHes with one If-Match: exactly one 200, the rest 412, the winner's write kept`, async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const url = `/v1/books/${books[0].id}`
  const responses = await Promise.all(Array.from({ length: WRITERS }, (_, i) =>
    app.inject({ method: 'PATCH', url, headers: { ...json, 'if-match': '"1"' }, payload: { title: `Writer ${i}`, year: i } })))
  const statuses = responses.map(r => r.statusCode)
  t.equal(statuses.filter(s => s === 200).length, 1)
  t.equal(statuses.filter(s => s === 412).length, WRITERS - 1)
  const winner = responses.find(r => r.statusCode === 200)?.json().data.book
  const final = await app.inject({ url })
  t.same({ etag: final.headers.etag, book: final.json().data.book }, { etag: '"2"', book: winner })
  t.equal(winner.title, `Writer ${winner.year}`)
})

// The same race on the SQL store: its compare-and-set is `UPDATE … WHERE version = $2`.
const sqlStores: Array<[string, (t: Tap.Test) => Promise<Store>]> = [
  ['PGlite', async t => {
    // The store leaves a db it was given open (whoever creates a store closes it): close it last.
    const db = await openPglite()
    t.teardown(() => db.close())
    return await pgliteStore({ db, schema: `apic_race_${process.pid}` })
  }]
]
const databaseUrl = process.env.DATABASE_URL
if (databaseUrl !== undefined) {
  sqlStores.push(['PostgreSQL', async t => {
    const schema = `apic_race_${process.pid}_${Date.now()}`
    // Drop only the schema this run created, after the store is closed (teardowns run last-in first-out).
    t.teardown(async () => {
      const client = new pg.Client({ connectionString: databaseUrl })
      await client.connect()
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      await client.end()
    })
    return await postgresStore({ connectionString: databaseUrl, schema })
  }])
}
for (const [engine, makeStore] of sqlStores) {
  t.test(`${WRITERS} simultaneous PATCHes with one If-Match on ${engine}: exactly one 200, the rest 412`, async t => {
    const store = await makeStore(t)
    t.teardown(() => store.close())
    const app = await buildApp(t, { store })
    const { books } = await seed(app)
    const url = `/v1/books/${books[0].id}`
    const responses = await Promise.all(Array.from({ length: WRITERS }, (_, i) =>
      app.inject({ method: 'PATCH', url, headers: { ...json, 'if-match': '"1"' }, payload: { title: `Writer ${i}`, year: i } })))
    t.same([responses.filter(r => r.statusCode === 200).length, responses.filter(r => r.statusCode === 412).length], [1, WRITERS - 1])
    const winner = responses.find(r => r.statusCode === 200)?.json().data.book
    t.same((await app.inject({ url })).json().data.book, winner)
  })
}

t.test(`${WRITERS} simultaneous PUTs with one If-Match: exactly one 200, the rest 412`, async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const url = `/v1/books/${books[0].id}`
  const responses = await Promise.all(Array.from({ length: WRITERS }, (_, i) =>
    app.inject({ method: 'PUT', url, headers: { ...json, 'if-match': '"1"' }, payload: { title: `Writer ${i}`, authorId: books[0].authorId, year: i } })))
  t.same([responses.filter(r => r.statusCode === 200).length, responses.filter(r => r.statusCode === 412).length], [1, WRITERS - 1])
  const winner = responses.find(r => r.statusCode === 200)?.json().data.book
  t.same((await app.inject({ url })).json().data.book, winner)
})

t.test(`${WRITERS} simultaneous DELETEs with one If-Match: exactly one 204, the rest 412`, async t => {
  const app = await buildApp(t)
  const { books } = await seed(app)
  const url = `/v1/books/${books[0].id}`
  const responses = await Promise.all(Array.from({ length: WRITERS }, () => app.inject({ method: 'DELETE', url, headers: { 'if-match': '"1"' } })))
  t.same([responses.filter(r => r.statusCode === 204).length, responses.filter(r => r.statusCode === 412).length], [1, WRITERS - 1])
  t.equal((await app.inject({ url })).statusCode, 404)
})

t.test('simultaneous PATCHes without If-Match all succeed, each merged into the version before it', async t => {
  const app = await buildApp(t)
  const { authors } = await seed(app)
  const url = `/v1/authors/${authors[0].id}`
  // Two groups write two fields: were a write merged into a stale version, the other group's value would go back.
  const patches = Array.from({ length: 20 }, (_, i) => i % 2 === 0 ? { name: `Name ${i}` } : { country: i < 10 ? 'NZ' : 'GB' })
  const responses = await Promise.all(patches.map(payload => app.inject({ method: 'PATCH', url, headers: json, payload })))
  t.same(responses.map(r => r.statusCode), patches.map(() => 200))
  const writes = responses
    .map((r, i) => ({ version: Number(JSON.parse(r.headers.etag as string)), author: r.json().data.author, patch: patches[i] }))
    .sort((a, b) => a.version - b.version)
  t.same(writes.map(w => w.version), patches.map((_, i) => i + 2))
  let previous: Record<string, unknown> = authors[0]
  for (const { version, author, patch } of writes) {
    t.same(author, { ...previous, ...patch }, `version ${version} is version ${version - 1} with its patch`)
    previous = author
  }
  const final = await app.inject({ url })
  t.same({ status: final.statusCode, etag: final.headers.etag, author: final.json().data.author }, { status: 200, etag: '"21"', author: writes[writes.length - 1].author })
})

t.test('PATCH without If-Match re-reads and re-merges when another write lands between its read and write', async t => {
  const inner = memoryStore()
  let interfere = 0
  // Before the first compare-and-set of each request, another writer bumps the version.
  const store = {
    ...inner,
    async update (...args: Parameters<typeof inner.update>) {
      const [model, id] = args
      if (model.name === 'authors' && interfere > 0) {
        interfere--
        const current = await inner.get(model, id) as StoredRecord
        await inner.update(model, id, { ...current.data, born: '2000-01-01' })
      }
      return await inner.update(...args)
    }
  }
  const app = await buildApp(t, { store })
  const { authors } = await seed(app)
  interfere = 1
  const res = await app.inject({ method: 'PATCH', url: `/v1/authors/${authors[0].id}`, headers: json, payload: { country: 'GB' } })
  t.equal(res.statusCode, 200)
  // Both writes survive: the interfering one (born) and the patch merged onto it (country).
  t.same(res.json().data.author, { ...authors[0], born: '2000-01-01', country: 'GB' })
  t.equal(res.headers.etag, '"3"')
})

t.test('PATCH and PUT without If-Match give up with 409 when every attempt is overtaken', async t => {
  const inner = memoryStore()
  let interfere = 0
  const store = {
    ...inner,
    async update (...args: Parameters<typeof inner.update>) {
      const [model, id] = args
      if (interfere > 0) {
        interfere--
        const current = await inner.get(model, id) as StoredRecord
        await inner.update(model, id, current.data)
      }
      return await inner.update(...args)
    }
  }
  const app = await buildApp(t, { store })
  const { authors } = await seed(app)
  interfere = 100
  const res = await app.inject({ method: 'PATCH', url: `/v1/authors/${authors[0].id}`, headers: json, payload: { country: 'GB' } })
  t.same({ status: res.statusCode, detail: res.json().detail }, { status: 409, detail: 'The resource is being changed by others too often to apply this patch; retry.' })
  t.not((await app.inject({ url: `/v1/authors/${authors[0].id}` })).json().data.author.country, 'GB')
  interfere = 100
  const put = await app.inject({ method: 'PUT', url: `/v1/authors/${authors[0].id}`, headers: json, payload: { name: 'Someone Else' } })
  t.same({ status: put.statusCode, detail: put.json().detail }, { status: 409, detail: 'The resource is being changed by others too often to apply this replacement; retry.' })
  t.not((await app.inject({ url: `/v1/authors/${authors[0].id}` })).json().data.author.name, 'Someone Else')
})

t.test('PATCH with If-Match answers 412 when another write lands after the check', async t => {
  const inner = memoryStore()
  let interfere = false
  const store = {
    ...inner,
    async update (...args: Parameters<typeof inner.update>) {
      const [model, id] = args
      if (interfere) {
        interfere = false
        const current = await inner.get(model, id) as StoredRecord
        await inner.update(model, id, current.data)
      }
      return await inner.update(...args)
    }
  }
  const app = await buildApp(t, { store })
  const { authors } = await seed(app)
  interfere = true
  const res = await app.inject({ method: 'PATCH', url: `/v1/authors/${authors[0].id}`, headers: { ...json, 'if-match': '"1"' }, payload: { country: 'GB' } })
  t.same({ status: res.statusCode, detail: res.json().detail }, { status: 412, detail: 'The resource changed since the version named in the request; fetch it again and retry.' })
})

t.test('DELETE with If-Match answers 412 when the resource vanishes after the check', async t => {
  const inner = memoryStore()
  const store = {
    ...inner,
    async remove (...args: Parameters<typeof inner.remove>) {
      await inner.remove(args[0], args[1])
      return await inner.remove(...args)
    }
  }
  const app = await buildApp(t, { store })
  const { books } = await seed(app)
  const res = await app.inject({ method: 'DELETE', url: `/v1/books/${books[0].id}`, headers: { 'if-match': '"1"' } })
  t.equal(res.statusCode, 412)
})

t.test('DELETE without preconditions answers 404 when the resource vanishes before the write', async t => {
  const inner = memoryStore()
  const store = {
    ...inner,
    async remove (...args: Parameters<typeof inner.remove>) {
      await inner.remove(args[0], args[1])
      return await inner.remove(...args)
    }
  }
  const app = await buildApp(t, { store })
  const { books } = await seed(app)
  const res = await app.inject({ method: 'DELETE', url: `/v1/books/${books[0].id}` })
  t.equal(res.statusCode, 404)
})

/** A memory store with one author in it, and the models to address it. */
async function storeWithAuthor () {
  const store = memoryStore({ now: () => new Date('2024-05-01T12:00:00Z') })
  const [authors, books] = buildRegistry(demoResources(store))
  const created = await store.create(authors, { id: 'a1', name: 'Ann', born: null, country: null })
  return { store, authors, books, created }
}

t.test('store update with a stale ifVersion returns VERSION_MISMATCH and changes nothing', async t => {
  const { store, authors, created } = await storeWithAuthor()
  t.equal(created.version, 1)
  t.equal(await store.update(authors, 'a1', { id: 'a1', name: 'Bob' }, { ifVersion: 2 }), VERSION_MISMATCH)
  t.same(await store.get(authors, 'a1'), created)
})

t.test('store update with the current ifVersion writes and increments the version', async t => {
  const { store, authors } = await storeWithAuthor()
  const written = await store.update(authors, 'a1', { id: 'a1', name: 'Bob', born: null, country: null }, { ifVersion: 1 }) as StoredRecord
  t.same({ version: written.version, data: written.data }, { version: 2, data: { id: 'a1', name: 'Bob', born: null, country: null } })
  t.equal(await store.update(authors, 'a1', { id: 'a1', name: 'Cy' }, { ifVersion: 1 }), VERSION_MISMATCH)
})

t.test('store update without ifVersion always writes; on a missing id it returns null', async t => {
  const { store, authors } = await storeWithAuthor()
  t.equal((await store.update(authors, 'a1', { id: 'a1', name: 'Bob' }) as StoredRecord).version, 2)
  t.equal(await store.update(authors, 'nobody', { id: 'nobody', name: 'X' }, { ifVersion: 1 }), null)
})

t.test('store remove with a stale ifVersion returns VERSION_MISMATCH and keeps the record', async t => {
  const { store, authors, created } = await storeWithAuthor()
  t.equal(await store.remove(authors, 'a1', { ifVersion: 7 }), VERSION_MISMATCH)
  t.same(await store.get(authors, 'a1'), created)
  t.equal(await store.remove(authors, 'a1', { ifVersion: 1 }), true)
  t.equal(await store.get(authors, 'a1'), null)
  t.equal(await store.remove(authors, 'a1', { ifVersion: 1 }), false)
})

t.test(`${WRITERS} simultaneous store updates with one ifVersion: exactly one writes`, async t => {
  const { store, authors } = await storeWithAuthor()
  const results = await Promise.all(Array.from({ length: WRITERS }, (_, i) =>
    store.update(authors, 'a1', { id: 'a1', name: `Writer ${i}` }, { ifVersion: 1 })))
  const written = results.filter(r => r !== VERSION_MISMATCH) as StoredRecord[]
  t.equal(written.length, 1)
  t.same(await store.get(authors, 'a1'), written[0])
})

t.test('store create refuses an id that exists with 409', async t => {
  const { store, authors } = await storeWithAuthor()
  await t.rejects(store.create(authors, { id: 'a1', name: 'Dup' }), { code: 'API_ERR_CONFLICT', statusCode: 409 })
})

t.test('store close empties the store', async t => {
  const { store, authors } = await storeWithAuthor()
  await store.close()
  t.equal(await store.get(authors, 'a1'), null)
})
