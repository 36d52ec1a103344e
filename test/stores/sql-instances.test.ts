// Several instances: two app instances on one database sharing the paging-token key. A token minted
// by one is accepted by the other, and concurrent If-Match writes through both let exactly one win.
// On PostgreSQL (two pools) when DATABASE_URL is set, and on one PGlite instance shared by two
// stores otherwise.
import t from 'tap'
import type { Test } from 'tap'
import pg from 'pg'
import type { FastifyInstance } from 'fastify'
import { buildApp, create, json } from '../helpers/app.js'
import { pgliteStore, postgresStore } from '../../lib/stores/sql/index.js'
import type { Store } from '../../lib/stores/store.js'
import { openPglite } from './pglite-db.js'

type Link = { rel: string, href: string }
const next = (body: { links: Link[] }) => body.links.find(link => link.rel === 'next')?.href

async function twoInstances (t: Test, makeStore: () => Promise<Store>) {
  const stores = [await makeStore(), await makeStore()]
  t.teardown(() => Promise.all(stores.map(store => store.close())))
  // buildApp gives every app the same cursorSecret, as CURSOR_SECRET does for the demo's instances.
  const [a, b] = await Promise.all(stores.map(store => buildApp(t, { store })))
  return [a, b] as const
}

function instanceTests (t: Test, makeStore: () => Promise<Store>) {
  t.test('both instances upgrade the empty database at once without tripping over each other', async t => {
    const [a, b] = await twoInstances(t, makeStore)
    const [first, second] = await Promise.all([a.inject({ url: '/v1/books' }), b.inject({ url: '/v1/authors' })])
    t.same([first.statusCode, second.statusCode], [200, 200])
  })

  t.test('a paging token minted by one instance is accepted by the other', async t => {
    const [a, b] = await twoInstances(t, makeStore)
    const names = ['Ada', 'Bea', 'Cid', 'Dov', 'Eve', 'Fay', 'Gus']
    for (const name of names) await create(a, 'authors', { name })
    const seen: string[] = []
    let url: string | undefined = '/v1/authors?sort=-name&pageSize=2'
    // Alternate instances on every page: each follows a token the other one made.
    for (let page = 0; url !== undefined && page < 10; page++) {
      const app: FastifyInstance = page % 2 === 0 ? a : b
      const res = await app.inject({ url })
      t.equal(res.statusCode, 200, url)
      const body = res.json()
      seen.push(...body.data.authors.map((author: { name: string }) => author.name))
      url = next(body)
    }
    t.same(seen, [...names].reverse(), 'every author once, in order, across both instances')
  })

  t.test('concurrent If-Match writes through both instances: exactly one wins', async t => {
    const [a, b] = await twoInstances(t, makeStore)
    const author = await create(a, 'authors', { name: 'Start' })
    const etag = (await b.inject({ url: `/v1/authors/${author.id}` })).headers.etag as string
    const writes = Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).inject({
      method: 'PUT', url: `/v1/authors/${author.id}`, headers: { ...json, 'if-match': etag }, payload: { name: `writer ${i}` }
    }))
    const statuses = (await Promise.all(writes)).map(res => res.statusCode)
    t.equal(statuses.filter(status => status === 200).length, 1, `one 200 among ${statuses.join(' ')}`)
    t.equal(statuses.filter(status => status === 412).length, 9, 'the others 412')
    const final = await a.inject({ url: `/v1/authors/${author.id}` })
    t.not(final.headers.etag, etag)
    t.match(final.json().data.author.name, /^writer \d$/)
  })
}

t.test('PGlite: two stores over one database', async t => {
  const db = await openPglite()
  t.teardown(() => db.close())
  let schema = 0
  let made = 0
  // Pairs of stores share one schema, as two instances share one database.
  instanceTests(t, async () => await pgliteStore({ db, schema: `instances_${made++ % 2 === 0 ? ++schema : schema}` }))
})

t.test('PostgreSQL: two pools on one database', { skip: process.env.DATABASE_URL === undefined ? 'needs DATABASE_URL' : false }, async t => {
  const connectionString = process.env.DATABASE_URL as string
  const prefix = `apic_test_instances_${process.pid}_${Date.now()}`
  const admin = new pg.Pool({ connectionString })
  t.teardown(async () => {
    const { rows } = await admin.query('SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)', [prefix])
    for (const { nspname } of rows) await admin.query(`DROP SCHEMA "${nspname as string}" CASCADE`)
    await admin.end()
  })
  let schema = 0
  let made = 0
  instanceTests(t, async () => await postgresStore({ connectionString, schema: `${prefix}_${made++ % 2 === 0 ? ++schema : schema}` }))
})
