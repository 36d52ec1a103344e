// Date-time fields on LIST (spec "Sorting" 3–4, "Advanced filtering (`filter`)"): values in
// different offsets order by instant, in filters, in sorts and between two fields, on the memory
// store as on PostgreSQL (timestamptz).
import t, { type Test } from 'tap'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { defineResource, memoryStore, pgliteStore } from '../lib/index.js'
import type { Store } from '../lib/index.js'
import { buildApp, create } from './helpers/app.js'
import { get, walk } from './helpers/list-app.js'
import type { Item } from './helpers/list-app.js'
import { openPglite } from './stores/pglite-db.js'

// By `at`, as text the order is c, b, a; as instants a (08:00Z), c (08:30Z), b (09:00Z). By `until`,
// as text b, a; as instants a (08:15Z), b (08:30Z). As text b's `at` is before its `until`.
const events = [
  { name: 'a', at: '2024-01-01T10:00:00+02:00', until: '2024-01-01T10:15:00+02:00' },
  { name: 'b', at: '2024-01-01T09:00:00Z', until: '2024-01-01T09:30:00+01:00' },
  { name: 'c', at: '2024-01-01T08:30:00Z', until: null }
]

const schema = Type.Object({
  id: Type.Readonly(Type.String()),
  name: Type.String(),
  at: Type.String({ format: 'date-time' }),
  until: Type.Union([Type.String({ format: 'date-time' }), Type.Null()])
}, { additionalProperties: false })

async function fixture (t: Test, store: Store): Promise<FastifyInstance> {
  const resource = defineResource({ name: 'events', singular: 'event', store, schema })
  const app = await buildApp(t, { store, resources: () => [resource] })
  for (const event of events) await create(app, 'events', event)
  return app
}

async function names (t: Test, app: FastifyInstance, query: string): Promise<unknown[]> {
  const res = await get(app, `/v1/events?${query}`)
  t.equal(res.statusCode, 200, query)
  return (res.json().data.events as Item[]).map(event => event.name)
}

const stores: Array<[string, (t: Test) => Promise<Store>]> = [
  ['memory', async () => memoryStore()],
  ['PGlite', async t => {
    const db = await openPglite()
    t.teardown(() => db.close())
    return await pgliteStore({ db, schema: 'date_times' })
  }]
]

for (const [label, makeStore] of stores) {
  t.test(label, async t => {
    t.test('sort orders date-times by instant, as filters compare them', async t => {
      const app = await fixture(t, await makeStore(t))
      t.same(await names(t, app, 'sort=at'), ['a', 'c', 'b'])
      t.same(await names(t, app, 'sort=-at'), ['b', 'c', 'a'])
      t.same(await names(t, app, `filter=${encodeURIComponent('at lt 2024-01-01T08:15:00Z')}&sort=at`), ['a'], 'the earliest by filter is first by sort')
      t.same(await names(t, app, 'sort=until'), ['c', 'a', 'b'], 'null first, then by instant')
    })

    t.test('token pages over a date-time sort visit every item once, in instant order', async t => {
      const app = await fixture(t, await makeStore(t))
      const pages = await walk(app, '/v1/events?sort=at&pageSize=1', 'next')
      t.same(pages.flatMap(page => (page.data.events as Item[]).map(event => event.name)), ['a', 'c', 'b'])
      const back = await walk(app, '/v1/events?sort=-at&pageSize=2', 'next')
      t.same(back.flatMap(page => (page.data.events as Item[]).map(event => event.name)), ['b', 'c', 'a'])
    })

    t.test('two date-time fields compare as instants, not as text', async t => {
      const app = await fixture(t, await makeStore(t))
      t.same(await names(t, app, `filter=${encodeURIComponent('at lt until')}`), ['a'])
      t.same(await names(t, app, `filter=${encodeURIComponent('at gt until')}`), ['b'])
      t.same(await names(t, app, `filter=${encodeURIComponent('not (at ge until)')}`), ['a', 'c'], 'null is never ordered')
      t.same(await names(t, app, `filter=${encodeURIComponent('at eq 2024-01-01T08:00:00Z')}`), ['a'])
      t.same(await names(t, app, `at=${encodeURIComponent('2024-01-01T08:00:00Z')}`), ['a'], 'a simple filter too')
    })
  })
}
