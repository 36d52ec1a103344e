// Row rules on every store (docs/rules.md): a caller's LIST, for any filter, sort and page size,
// walked page by page, equals the unrestricted LIST filtered by the caller's rule, on memory,
// PGlite and PostgreSQL (when DATABASE_URL is set); 50 parallel writes keep a derived count exact;
// and on PostgreSQL a ruled LIST is one statement whose plan reads an index.
import t from 'tap'
import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import { memoryStore, pgliteStore, postgresStore } from '../lib/index.js'
import type { Store } from '../lib/index.js'
import { openPglite } from './stores/pglite-db.js'
import { runSchemas } from './stores/run-schemas.js'
import { as, asJson, build } from './helpers/rules-app.js'

interface Post { readonly id: string, readonly title: string, readonly private: boolean, readonly ownerId: string }

const connectionString = process.env.DATABASE_URL
const schemas = connectionString === undefined ? undefined : runSchemas(t, connectionString)
let schemaCount = 0

const stores: Array<[string, () => Promise<Store>]> = [
  ['memory', async () => memoryStore()],
  ['PGlite', async () => await pgliteStore({ db: await openPglite() })]
]
if (connectionString !== undefined && schemas !== undefined) {
  stores.push(['PostgreSQL', async () => await postgresStore({ connectionString, schema: `${schemas.prefix}_${++schemaCount}` })])
}

/** Every page of a LIST, following `next` links. */
async function walk (app: FastifyInstance, url: string, who: 'bob' | 'root'): Promise<Post[]> {
  const items: Post[] = []
  let next: string | undefined = url
  while (next !== undefined) {
    const res: Awaited<ReturnType<FastifyInstance['inject']>> = await app.inject({ url: next, headers: as(who) })
    if (res.statusCode !== 200) throw new Error(`${next}: ${res.statusCode} ${res.body}`)
    items.push(...res.json().data.posts)
    next = res.json().links.find((link: { rel: string }) => link.rel === 'next')?.href
  }
  return items
}

const visibleToBob = (post: Post) => !post.private || post.ownerId === 'bob'

const filters = fc.constantFrom(
  undefined, 'private eq true', 'private eq false', "ownerId eq 'ann'", "ownerId ne 'bob'", "contains(title, '1')",
  "startswith(title, 'p') and private eq true", "ownerId eq 'ann' or title gt 'p 5'", "not (ownerId eq 'bob')", "topic/name eq 'General'"
)
const sorts = fc.constantFrom(undefined, 'title', '-title', 'private,-title', '-createdAt', 'ownerId,title')

for (const [name, makeStore] of stores) {
  t.test(`${name}: a caller's LIST is the unrestricted LIST filtered by its rule`, async t => {
    const store = await makeStore()
    t.teardown(() => store.close())
    const { app, post } = await build(t, store)
    for (let i = 0; i < 24; i++) await post(i % 3 === 0 ? 'bob' : 'ann', { title: `p ${i}`, private: i % 4 < 2 })
    await fc.assert(fc.asyncProperty(filters, sorts, fc.integer({ min: 1, max: 9 }), async (filter, sort, pageSize) => {
      const query = new URLSearchParams({ ...(filter === undefined ? {} : { filter }), ...(sort === undefined ? {} : { sort }) }).toString()
      const everything = await walk(app, `/v1/posts?${query}&pageSize=100`, 'root')
      const seen = await walk(app, `/v1/posts?${query}&pageSize=${pageSize}`, 'bob')
      t.same(seen.map(p => p.id), everything.filter(visibleToBob).map(p => p.id))
      const counted = await app.inject({ url: `/v1/posts?${query}&total=true`, headers: as('bob') })
      t.equal(counted.json().meta.total, everything.filter(visibleToBob).length)
    }), { numRuns: 25 })
  })

  t.test(`${name}: 50 parallel creates keep the derived count exact`, async t => {
    const store = await makeStore()
    t.teardown(() => store.close())
    const { app, topic } = await build(t, store)
    const created = await Promise.all(Array.from({ length: 50 }, (_, i) =>
      app.inject({ method: 'POST', url: '/v1/posts', headers: asJson(i % 2 === 0 ? 'ann' : 'bob'), payload: { topicId: topic.id, title: `parallel ${i}` } })))
    t.same([...new Set(created.map(res => res.statusCode))], [201])
    t.equal((await app.inject({ url: `/v1/topics/${topic.id}`, headers: as('root') })).json().data.topic.postCount, 53)
  })
}

t.test('PostgreSQL: a ruled LIST is one statement, and its plan reads an index', { skip: connectionString === undefined && 'DATABASE_URL is not set' }, async t => {
  const pool = new pg.Pool({ connectionString })
  const statements: Array<{ text: string, values: unknown[] }> = []
  let recording = false
  // Every statement the store sends, as the server receives it.
  pool.on('connect', client => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown
    ;(client as unknown as { query: (...args: unknown[]) => unknown }).query = (config: unknown, ...rest: unknown[]) => {
      if (recording && typeof config === 'object' && config !== null && 'text' in config) statements.push({ text: String((config as { text: string }).text), values: [...((config as { values?: unknown[] }).values ?? [])] })
      return query(config, ...rest)
    }
  })
  const schema = `${schemas?.prefix as string}_plan`
  const store = await postgresStore({ pool, schema })
  t.teardown(async () => { await store.close(); await pool.end() })
  const { app, topic } = await build(t, store)
  // Enough rows that reading the table through is dearer than an index.
  await pool.query(`INSERT INTO "${schema}".posts (id, "topicId", title, private, "ownerId", "createdAt", "updatedAt", version, modified_at)
    SELECT 'gen-' || lpad(i::text, 6, '0'), $1, 'generated ' || i, i % 3 = 0, CASE WHEN i % 2 = 0 THEN 'ann' ELSE 'bob' END, now(), now(), 1, now()
    FROM generate_series(1, 20000) AS i`, [topic.id]).catch(async (error: Error) => {
    const { rows } = await pool.query('SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2', [schema, 'posts'])
    throw new Error(`${error.message}; columns: ${rows.map(row => String(row.column_name)).join(', ')}`)
  })
  await pool.query(`ANALYZE "${schema}".posts`)
  recording = true
  const res = await app.inject({ url: '/v1/posts?pageSize=20', headers: as('bob') })
  recording = false
  t.equal(res.statusCode, 200)
  t.equal(res.json().data.posts.length, 20)
  t.equal(statements.length, 1, 'one statement')
  const [{ text, values }] = statements
  t.match(text, /"ownerId"/, 'the rule is in the statement')
  const plan = (await pool.query(`EXPLAIN (FORMAT JSON) ${text}`, values)).rows[0]['QUERY PLAN'] as unknown
  const nodes = JSON.stringify(plan)
  t.match(nodes, /"Node Type":"Index (Only )?Scan"/, 'an index scan')
  t.notMatch(nodes, /"Node Type":"Seq Scan"/, 'no sequential scan')
})
