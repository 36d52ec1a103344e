// Schema upgrades over data already stored (upgrades add missing columns and never drop data;
// fields map to existing columns; a bad table fails at boot, precisely): a table that cannot serve
// the new schema stops start-up naming table and column and changes nothing; a required field with
// a default fills the rows already there, which then read, sort and page; a modification time
// written by someone else reads back as a Date holds it; the search index an earlier version made
// is made again on the expression search runs now. On PGlite, and on PostgreSQL when DATABASE_URL
// is set.
import t from 'tap'
import type { Test as Tap } from 'tap'
import pg from 'pg'
import { Type } from '@sinclair/typebox'
import type { TObject } from '@sinclair/typebox'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { buildApp, create } from '../helpers/app.js'
import { defineResource } from '../../lib/define.js'
import { buildRegistry } from '../../lib/registry/index.js'
import type { ResourceModel } from '../../lib/registry/model.js'
import { pgliteStore, postgresStore } from '../../lib/stores/sql/index.js'
import type { SqlStoreOptions } from '../../lib/stores/sql/index.js'
import { keysTableDefinition } from '../../lib/stores/sql/ddl.js'
import { resolveTable } from '../../lib/stores/sql/table.js'
import { compileList } from '../../lib/stores/sql/compile.js'
import { toQuery } from '../../lib/stores/sql/sql.js'
import { parseSearch } from '../../lib/query/search.js'
import type { Store } from '../../lib/stores/store.js'
import { listQuery } from './conformance.js'
import { openPglite } from './pglite-db.js'
import { runSchemas } from './run-schemas.js'

interface Engine {
  /** A store on a schema of this engine, closed when the test ends. */
  open (t: Tap, options: SqlStoreOptions & { readonly schema: string }): Promise<Store>
  /** Runs SQL as the test's administrator; rows as objects. */
  rows (text: string): Promise<Array<Record<string, unknown>>>
  /** The name of a fresh schema for `base`. */
  schema (base: string): string
  /** The plan of a query, without sequential scans or plain index scans (a few rows would need no index, and the primary key's would do). */
  plan (text: string, values: readonly unknown[]): Promise<string>
}

const Id = Type.Readonly(Type.String())

function definition (store: Store, schema: TObject, first = 1) {
  let next = first
  return defineResource({ name: 'things', singular: 'thing', schema, store, generateId: () => `t${next++}` })
}

function thingsModel (store: Store, schema: TObject): ResourceModel {
  return buildRegistry([definition(store, schema)])[0]
}

async function appOver (t: Tap, store: Store, schema: TObject, first: number): Promise<FastifyInstance> {
  return await buildApp(t, { store, resources: () => [definition(store, schema, first)] })
}

/** Follows `next` links from `url`; the ids of every page, or the status that stopped the walk. */
async function walk (app: FastifyInstance, url: string): Promise<unknown[]> {
  const ids: unknown[] = []
  for (let next: string | undefined = url; next !== undefined;) {
    const res: LightMyRequestResponse = await app.inject({ url: next })
    if (res.statusCode !== 200) return [...ids, res.statusCode]
    const body: { data: { things: Array<{ id: string }> }, links: Array<{ rel: string, href: string }> } = res.json()
    ids.push(...body.data.things.map(thing => thing.id))
    next = body.links.find(link => link.rel === 'next')?.href
  }
  return ids
}

const V1 = Type.Object({ id: Id, name: Type.String(), n: Type.Optional(Type.Integer()) }, { additionalProperties: false })

/** Version 1 of `things` with five rows, t1…t5, written through the API. */
async function version1 (t: Tap, engine: Engine, schema: string): Promise<void> {
  const store = await engine.open(t, { schema })
  const app = await appOver(t, store, V1, 1)
  for (let i = 1; i <= 5; i++) await create(app, 'things', { name: `old ${i}`, n: i })
  await app.close()
}

function upgradeSuite (t: Tap, engine: Engine): void {
  t.test('a required field without a default, added to a table with rows, stops start-up naming table and column; nothing changes', async t => {
    const schema = engine.schema('upgrade_required')
    await version1(t, engine, schema)
    const store = await engine.open(t, { schema })
    const model = thingsModel(store, Type.Object({ id: Id, name: Type.String(), n: Type.Optional(Type.Integer()), code: Type.String() }, { additionalProperties: false }))
    const message = `SQL store: 5 existing rows of table "${schema}"."things" have no value in column "code", but field code of things is required; ` +
      'give the field a default in its schema (the upgrade fills those rows with it), make it optional, or fill the column first'
    await t.rejects(store.prepare?.([model]) as Promise<void>, { name: 'TypeError', message })
    await t.rejects(store.list(model, listQuery(model)), { name: 'TypeError', message }, 'and so does first use, where nothing called prepare')
    t.same((await engine.rows(`SELECT column_name FROM information_schema.columns WHERE table_schema = '${schema}' AND table_name = 'things' ORDER BY ordinal_position`)).map(row => row.column_name),
      ['id', 'name', 'n', 'version', 'modified_at'], 'the upgrade rolled back whole')
  })

  t.test('the app does not start when a table cannot serve its schema', async t => {
    const schema = engine.schema('upgrade_boot')
    await version1(t, engine, schema)
    const store = await engine.open(t, { schema })
    const V2 = Type.Object({ id: Id, name: Type.String(), n: Type.Optional(Type.Integer()), code: Type.String() }, { additionalProperties: false })
    await t.rejects(appOver(t, store, V2, 6), { name: 'TypeError', message: /5 existing rows of table ".*"\."things" have no value in column "code"/ })
  })

  t.test('a required field with a default fills the rows already there in the upgrade; every row reads, sorts and pages', async t => {
    const schema = engine.schema('upgrade_default')
    await version1(t, engine, schema)
    const store = await engine.open(t, { schema })
    const V2 = Type.Object({ id: Id, name: Type.String(), n: Type.Optional(Type.Integer()), code: Type.String({ default: 'zz-old' }) }, { additionalProperties: false })
    await store.prepare?.([thingsModel(store, V2)])
    t.same(await engine.rows(`SELECT is_nullable FROM information_schema.columns WHERE table_schema = '${schema}' AND table_name = 'things' AND column_name = 'code'`),
      [{ is_nullable: 'NO' }], 'NOT NULL once every row has a value')
    const app = await appOver(t, store, V2, 6)
    for (const code of ['c2', 'c1', 'c0']) await create(app, 'things', { name: 'new', code })
    const old = await app.inject({ url: '/v1/things/t1' })
    t.equal(old.statusCode, 200)
    t.same(old.json().data.thing, { id: 't1', name: 'old 1', n: 1, code: 'zz-old' })
    const list = await app.inject({ url: '/v1/things?pageSize=100' })
    t.equal(list.statusCode, 200)
    t.same(list.json().data.things.map((thing: { code: string }) => thing.code), ['zz-old', 'zz-old', 'zz-old', 'zz-old', 'zz-old', 'c2', 'c1', 'c0'])
    t.same(await walk(app, '/v1/things?sort=code&pageSize=2&fields=id'), ['t8', 't7', 't6', 't1', 't2', 't3', 't4', 't5'], 'token pages visit every row, old ones included')
    t.same(await walk(app, '/v1/things?sort=-code&pageSize=2&fields=id'), ['t5', 't4', 't3', 't2', 't1', 't6', 't7', 't8'], 'ties on the id descending, as the sort')
  })

  t.test('a field whose column has another type stops start-up naming both; the data stays as it was', async t => {
    const schema = engine.schema('upgrade_retype')
    await version1(t, engine, schema)
    const store = await engine.open(t, { schema })
    const model = thingsModel(store, Type.Object({ id: Id, name: Type.String(), n: Type.Optional(Type.String()) }, { additionalProperties: false }))
    await t.rejects(store.prepare?.([model]) as Promise<void>, {
      name: 'TypeError',
      message: `SQL store: column "n" of table "${schema}"."things" is bigint, which cannot hold field n (string); it needs text or character varying. ` +
        'The store never converts a column: convert it yourself or map the field to another column (option tables.things.columns)'
    })
    t.same((await engine.rows(`SELECT n::text AS n FROM "${schema}".things ORDER BY id`)).map(row => row.n), ['1', '2', '3', '4', '5'])
  })

  t.test('tables someone else manages: a column type that would convert values, or a missing column, stops start-up', async t => {
    const schema = engine.schema('upgrade_managed')
    await engine.rows(`CREATE SCHEMA "${schema}"`)
    await engine.rows(`CREATE TABLE "${schema}".events (id varchar(20) PRIMARY KEY, at timestamp NOT NULL, score real, version integer NOT NULL DEFAULT 1, changed timestamptz NOT NULL DEFAULT now())`)
    const events = (fields: Record<string, TObject['properties'][string]>) => buildRegistry([{
      name: 'events', singular: 'event', schema: Type.Object({ id: Id, ...fields }, { additionalProperties: false })
    }])[0]
    const options = { schema, migrate: false, tables: { events: { modifiedAtColumn: 'changed' } } }
    const cases: ReadonlyArray<readonly [Record<string, TObject['properties'][string]>, RegExp]> = [
      [{ at: Type.String({ format: 'date-time' }) }, /column "at" of table ".*"\."events" is timestamp without time zone, which cannot hold field at \(datetime\); it needs timestamp with time zone/],
      [{ score: Type.Number() }, /column "score" of table ".*"\."events" is real, which cannot hold field score \(number\); it needs double precision/],
      [{ missing: Type.Optional(Type.String()) }, /table ".*"\."events" has no column "missing" for field missing, and option migrate is false/]
    ]
    for (const [fields, message] of cases) {
      const store = await engine.open(t, options)
      await t.rejects(store.prepare?.([events(fields)]) as Promise<void>, { name: 'TypeError', message })
    }
    const store = await engine.open(t, { schema, migrate: false })
    await t.rejects(store.prepare?.([events({})]) as Promise<void>, { name: 'TypeError', message: /table ".*"\."events" has no column "modified_at" for the store's bookkeeping, and option migrate is false/ })
    await engine.rows(`ALTER TABLE "${schema}".events RENAME COLUMN changed TO modified_at; ALTER TABLE "${schema}".events ALTER COLUMN modified_at TYPE timestamp`)
    await t.rejects(store.prepare?.([events({})]) as Promise<void>, { name: 'TypeError', message: /column "modified_at" of table ".*"\."events" is timestamp without time zone, which cannot hold the store's bookkeeping/ })
  })

  t.test('a column narrower than its field refuses what does not fit with a 422, never truncating', async t => {
    const schema = engine.schema('upgrade_narrow')
    await engine.rows(`CREATE SCHEMA "${schema}"`)
    await engine.rows(`CREATE TABLE "${schema}".things (id varchar(8) PRIMARY KEY, name varchar(3) NOT NULL, n smallint, version integer NOT NULL DEFAULT 1, modified_at timestamptz NOT NULL DEFAULT now())`)
    await engine.rows(keysTableDefinition(schema))
    const store = await engine.open(t, { schema, migrate: false })
    const model = thingsModel(store, V1)
    await store.prepare?.([model])
    t.same((await store.create(model, { id: 'k1', name: 'abc', n: 32767 })).data, { id: 'k1', name: 'abc', n: 32767 })
    const refused = { statusCode: 422, code: 'API_ERR_UNPROCESSABLE', message: 'A value of this thing is outside what the database can store.' }
    await t.rejects(store.create(model, { id: 'k2', name: 'abcd' }), refused, 'a longer string')
    await t.rejects(store.create(model, { id: 'k3', name: 'a', n: 32768 }), refused, 'a larger integer')
    await t.rejects(store.update(model, 'k1', { id: 'k1', name: 'abc', n: -32769 }), refused)
    t.same(await engine.rows(`SELECT id, name, n FROM "${schema}".things`), [{ id: 'k1', name: 'abc', n: 32767 }])
  })

  t.test('a nullable column someone else manages for a required field: its NULLs stop start-up; NULLs written later still page, first', async t => {
    const schema = engine.schema('upgrade_nullable')
    await engine.rows(`CREATE SCHEMA "${schema}"`)
    await engine.rows(`CREATE TABLE "${schema}".people (id text PRIMARY KEY, name text, version integer NOT NULL DEFAULT 1, modified_at timestamptz NOT NULL DEFAULT now())`)
    await engine.rows(`INSERT INTO "${schema}".people (id, name) VALUES ('p1', 'Ann'), ('p2', NULL)`)
    await engine.rows(keysTableDefinition(schema))
    const people = () => buildRegistry([{
      name: 'people', singular: 'person', schema: Type.Object({ id: Id, name: Type.String({ default: 'nobody' }) }, { additionalProperties: false })
    }])[0]
    const checking = await engine.open(t, { schema, migrate: false })
    await t.rejects(checking.prepare?.([people()]) as Promise<void>, { name: 'TypeError', message: new RegExp(`^SQL store: 1 existing rows of table "${schema}"\\."people" have no value in column "name", but field name of people is required`) },
      'migrate: false fills nothing, even with a default')
    await engine.rows(`UPDATE "${schema}".people SET name = 'Bo' WHERE id = 'p2'`)
    const store = await engine.open(t, { schema, migrate: false })
    const model = people()
    await store.prepare?.([model])
    await engine.rows(`INSERT INTO "${schema}".people (id, name) VALUES ('p3', NULL)`)
    const pages: unknown[][] = []
    let page = await store.list(model, listQuery(model, { sort: 'name', limit: 1 }))
    pages.push(page.items.map(record => record.data.id))
    while (page.hasMore) {
      const last = page.items[0].data
      page = await store.list(model, listQuery(model, { sort: 'name', limit: 1, window: { kind: 'after', values: [last.name ?? null, last.id] } }))
      pages.push(page.items.map(record => record.data.id))
    }
    t.same(pages, [['p3'], ['p1'], ['p2']], 'the NULL sorts first and no row is skipped')

    const filling = await engine.open(t, { schema })
    await filling.prepare?.([people()])
    t.same(await engine.rows(`SELECT id, name FROM "${schema}".people ORDER BY id`), [{ id: 'p1', name: 'Ann' }, { id: 'p2', name: 'Bo' }, { id: 'p3', name: 'nobody' }],
      'with migrate on, the default fills the NULLs')
    t.same(await engine.rows(`SELECT is_nullable FROM information_schema.columns WHERE table_schema = '${schema}' AND table_name = 'people' AND column_name = 'name'`),
      [{ is_nullable: 'YES' }], 'and the column stays as its owner made it')
  })

  t.test('a required field added to an empty table is NOT NULL at once', async t => {
    const schema = engine.schema('upgrade_empty')
    const v1 = await engine.open(t, { schema })
    await v1.prepare?.([thingsModel(v1, V1)])
    const v2 = await engine.open(t, { schema })
    const model = thingsModel(v2, Type.Object({ id: Id, name: Type.String(), code: Type.String() }, { additionalProperties: false }))
    await v2.prepare?.([model])
    await v2.create(model, { id: 'e1', name: 'E', code: 'c' })
    t.same((await v2.get(model, 'e1'))?.data, { id: 'e1', name: 'E', code: 'c' })
    t.same(await engine.rows(`SELECT is_nullable FROM information_schema.columns WHERE table_schema = '${schema}' AND table_name = 'things' AND column_name = 'code'`), [{ is_nullable: 'NO' }])
  })

  // The store reads its bookkeeping time as epoch milliseconds (table.ts modifiedAtMillis).
  t.test('the search index: made with the table, kept while search runs its expression, made again over one an earlier version made; search reads it', async t => {
    const schema = engine.schema('upgrade_search')
    const index = `${schema}.things_search`
    const prepared = async () => {
      const store = await engine.open(t, { schema })
      const [model] = buildRegistry([defineResource({ name: 'things', singular: 'thing', schema: V1, store, searchable: ['name'] })])
      await store.prepare?.([model])
      return { store, model }
    }
    const indexNow = async () => (await engine.rows(`SELECT c.oid::text AS oid, pg_get_indexdef(c.oid) AS definition, obj_description(c.oid, 'pg_class') AS mark
      FROM pg_class c WHERE c.oid = to_regclass('${index}')`))[0]
    const { store, model } = await prepared()
    await store.create(model, { id: 'g1', name: 'Gabriel García Márquez' })
    await store.create(model, { id: 'g2', name: 'Umberto Eco' })
    const made = await indexNow()
    t.match(made, { definition: /USING gin \(to_tsvector\('simple'::regconfig, regexp_replace\(/, mark: /^fastify-api-conventions search [0-9a-f]{16}$/ })
    await prepared()
    t.same(await indexNow(), made, 'the next start keeps it')

    // As the version that folded with translate() left it: another expression, no comment.
    await engine.rows(`DROP INDEX "${schema}".things_search; CREATE INDEX things_search ON "${schema}".things USING gin (to_tsvector('simple'::regconfig, translate(lower(name), 'á', 'a')))`)
    t.match(await indexNow(), { definition: /translate\(/, mark: null })
    await prepared()
    const remade = await indexNow()
    t.same({ definition: remade.definition, mark: remade.mark }, { definition: made.definition, mark: made.mark }, 'the next start makes it again over the expression search runs')
    t.not(remade.oid, made.oid)

    const [{ collation }] = await engine.rows(`SELECT COALESCE((SELECT collname FROM pg_collation WHERE collname IN ('pg_unicode_fast', 'und-x-icu')
      AND collencoding IN (-1, (SELECT encoding FROM pg_database WHERE datname = current_database())) ORDER BY collname = 'pg_unicode_fast' DESC LIMIT 1), 'default') AS collation`)
    const table = resolveTable(model, schema)
    const { text, values } = toQuery(compileList(table, { ...listQuery(model), search: { node: parseSearch('garcia'), fields: ['name'] } }, { tableOf: () => table, caseCollation: String(collation) }).page)
    const plan = await engine.plan(text, values)
    t.match(plan, /Bitmap Index Scan on things_search/, 'the search reads the index')
    t.same((await store.list(model, { ...listQuery(model), search: { node: parseSearch('garcia'), fields: ['name'] } })).items.map(record => record.data.id), ['g1'])
  })

  t.test('a modification time someone else wrote in microseconds reads back truncated to the millisecond, before 1970 too', async t => {
    const schema = engine.schema('upgrade_micros')
    const store = await engine.open(t, { schema })
    const model = thingsModel(store, V1)
    await store.prepare?.([model])
    for (const id of ['m1', 'm2']) await store.create(model, { id, name: 'M' })
    await engine.rows(`UPDATE "${schema}".things SET modified_at = CASE id WHEN 'm1' THEN '2024-05-01 12:00:00.999999+00'::timestamptz ELSE '1969-12-31 23:59:59.5005+00'::timestamptz END`)
    const expected = ['2024-05-01T12:00:00.999Z', '1969-12-31T23:59:59.500Z']
    t.same([(await store.get(model, 'm1'))?.modifiedAt.toISOString(), (await store.get(model, 'm2'))?.modifiedAt.toISOString()], expected, 'RETRIEVE')
    t.same((await store.list(model, listQuery(model))).items.map(record => record.modifiedAt.toISOString()), expected, 'LIST')
  })
}

const db = await openPglite()
t.teardown(() => db.close())
t.test('on PGlite', async t => {
  upgradeSuite(t, {
    async open (t, options) {
      const store = await pgliteStore({ db, ...options })
      t.teardown(() => store.close())
      return store
    },
    rows: async text => (await db.exec(text)).at(-1)?.rows as Array<Record<string, unknown>>,
    schema: base => base,
    plan: async (text, values) => await db.transaction(async tx => {
      await tx.exec('SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off')
      return (await tx.query<Record<string, string>>(`EXPLAIN ${text}`, [...values])).rows.map(row => row['QUERY PLAN']).join('\n')
    })
  })
})

const connectionString = process.env.DATABASE_URL
t.test('on PostgreSQL', { skip: connectionString === undefined ? 'DATABASE_URL is not set (the PGlite run covers the same cases)' : false }, async t => {
  const { prefix, admin } = runSchemas(t, connectionString)
  upgradeSuite(t, {
    async open (t, options) {
      const store = await postgresStore({ connectionString, ...options })
      t.teardown(() => store.close())
      return store
    },
    rows: async text => {
      const result = await admin.query(text) as unknown as pg.QueryResult | pg.QueryResult[]
      return (Array.isArray(result) ? result.at(-1) as pg.QueryResult : result).rows
    },
    schema: base => `${prefix}_${base}`,
    async plan (text, values) {
      const client = await admin.connect()
      try {
        await client.query('BEGIN')
        await client.query('SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off')
        return (await client.query(`EXPLAIN ${text}`, [...values])).rows.map(row => row['QUERY PLAN']).join('\n')
      } finally {
        await client.query('ROLLBACK')
        client.release()
      }
    }
  })
})
