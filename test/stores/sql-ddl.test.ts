// Tables from TypeBox schemas: what the store creates, how it upgrades without dropping, tables
// mapped onto ones users manage, and the referential errors mapped from whatever foreign keys those
// tables carry. On PGlite.
import t from 'tap'
import type { Test as Tap } from 'tap'
import { Type } from '@sinclair/typebox'
import type { TObject } from '@sinclair/typebox'
import { buildRegistry } from '../../lib/registry/index.js'
import type { RelationDefinition } from '../../lib/define.js'
import type { ResourceModel } from '../../lib/registry/model.js'
import { pgliteStore } from '../../lib/stores/sql/index.js'
import type { PgliteStoreOptions } from '../../lib/stores/sql/index.js'
import type { Store } from '../../lib/stores/store.js'
import { listQuery, suiteModels } from './conformance.js'
import { openPglite } from './pglite-db.js'

const db = await openPglite()
t.teardown(() => db.close())

async function rows (text: string, values: unknown[] = []) {
  return (await db.query<Record<string, unknown>>(text, values)).rows
}

async function open (t: Tap, options: PgliteStoreOptions): Promise<Store> {
  const store = await pgliteStore({ db, ...options })
  t.teardown(() => store.close())
  return store
}

interface Resource { name: string, schema: TObject, relations?: Record<string, RelationDefinition> }

function models (store: Store, resources: Resource[]): Record<string, ResourceModel> {
  const built = buildRegistry(resources.map(r => ({ singular: r.name.endsWith('s') ? r.name.slice(0, -1) : `${r.name}_item`, store, ...r })))
  return Object.fromEntries(built.map(model => [model.name, model]))
}

const Id = Type.Readonly(Type.String())

t.test('creates each table with typed columns, NOT NULL where required, keys and sort indexes', async t => {
  const store = await open(t, { schema: 'ddl_create' })
  const { books } = suiteModels(store)
  await store.list(books, listQuery(books))
  const columns = await rows(`SELECT table_name, column_name, data_type, is_nullable, collation_name FROM information_schema.columns
    WHERE table_schema = 'ddl_create' ORDER BY table_name, ordinal_position`)
  t.same(columns.map(c => `${String(c.table_name)}.${String(c.column_name)} ${String(c.data_type)}${c.is_nullable === 'NO' ? ' NOT NULL' : ''}${c.collation_name === null ? '' : ` COLLATE ${String(c.collation_name)}`}`), [
    'authors.id text NOT NULL COLLATE C',
    'authors.name text NOT NULL COLLATE C',
    'authors.born date',
    'authors.country text COLLATE C',
    'authors.version integer NOT NULL',
    'authors.modified_at timestamp with time zone NOT NULL',
    'books.id text NOT NULL COLLATE C',
    'books.title text NOT NULL COLLATE C',
    'books.authorId text NOT NULL COLLATE C',
    'books.editorId text COLLATE C',
    'books.year bigint',
    'books.rating double precision',
    'books.available boolean',
    'books.published timestamp with time zone',
    'books.meta jsonb',
    'books.note text COLLATE C',
    'books.version integer NOT NULL',
    'books.modified_at timestamp with time zone NOT NULL'
  ])
  const constraints = await rows(`SELECT conrelid::regclass::text AS on, conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
    WHERE connamespace = 'ddl_create'::regnamespace AND contype IN ('p', 'f') ORDER BY 1, 2`)
  t.same(constraints.map(c => `${String(c.on)} ${String(c.conname)} ${String(c.def)}`), [
    'ddl_create.authors authors_pkey PRIMARY KEY (id)',
    'ddl_create.books books_authorId_fkey FOREIGN KEY ("authorId") REFERENCES ddl_create.authors(id)',
    'ddl_create.books books_editorId_fkey FOREIGN KEY ("editorId") REFERENCES ddl_create.authors(id)',
    'ddl_create.books books_pkey PRIMARY KEY (id)'
  ])
  const indexes = await rows("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'ddl_create' AND indexname LIKE '%_sort' ORDER BY 1")
  t.same(indexes.map(i => String(i.indexname)), [
    'authors_born_sort', 'authors_country_sort', 'authors_name_sort',
    'books_authorId_sort', 'books_available_sort', 'books_editorId_sort', 'books_note_sort',
    'books_published_sort', 'books_rating_sort', 'books_title_sort', 'books_year_sort'
  ], 'every field but the id and JSON gets one')
  t.match(indexes.find(i => i.indexname === 'books_year_sort')?.indexdef, /\(year NULLS FIRST, id\)$/, 'NULLS FIRST where NULL can occur, as the order asks')
  t.match(indexes.find(i => i.indexname === 'books_title_sort')?.indexdef, /\(title, id\)$/)
})

t.test('an upgrade adds missing columns, foreign keys and indexes, and never drops data', async t => {
  const v1 = await open(t, { schema: 'ddl_upgrade' })
  const { items: items1 } = models(v1, [{
    name: 'items',
    schema: Type.Object({ id: Id, title: Type.String(), legacy: Type.Optional(Type.String()) }, { additionalProperties: false })
  }])
  await v1.create(items1, { id: 'i1', title: 'old', legacy: 'kept' })

  const v2 = await open(t, { schema: 'ddl_upgrade' })
  const { items, owners } = models(v2, [{
    name: 'items',
    schema: Type.Object({
      id: Id,
      title: Type.String(),
      code: Type.String({ default: 'none' }),
      year: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
      tags: Type.Optional(Type.Union([Type.Array(Type.String()), Type.Null()])),
      ownerId: Type.Optional(Type.Union([Type.String(), Type.Null()]))
    }, { additionalProperties: false }),
    relations: { owner: { kind: 'one', resource: 'owners', field: 'ownerId' } }
  }, {
    name: 'owners',
    schema: Type.Object({ id: Id, name: Type.String() }, { additionalProperties: false })
  }])
  const [old] = (await v2.list(items, listQuery(items))).items
  t.same(old.data, { id: 'i1', title: 'old', code: 'none', year: null, tags: null, ownerId: null }, 'old rows read with the new fields empty, or their default where required')
  t.equal(old.version, 1)
  const columns = await rows("SELECT column_name, is_nullable FROM information_schema.columns WHERE table_schema = 'ddl_upgrade' AND table_name = 'items' ORDER BY ordinal_position")
  t.same(columns.map(c => `${String(c.column_name)}${c.is_nullable === 'NO' ? ' NOT NULL' : ''}`),
    ['id NOT NULL', 'title NOT NULL', 'legacy', 'version NOT NULL', 'modified_at NOT NULL', 'code NOT NULL', 'year', 'tags', 'ownerId'],
    'legacy stays; the added required column is NOT NULL once the rows already there have its default')
  t.same(await rows('SELECT legacy FROM ddl_upgrade.items'), [{ legacy: 'kept' }], 'no data is dropped')
  await v2.create(owners, { id: 'o1', name: 'Olga' })
  await v2.create(items, { id: 'i2', title: 'new', code: 'C', year: 2024, tags: ['a'], ownerId: 'o1' })
  await t.rejects(v2.create(items, { id: 'i3', title: 'bad', code: 'C', year: null, tags: null, ownerId: 'ghost' }), { statusCode: 422, code: 'API_ERR_UNPROCESSABLE', invalidParams: [{ name: 'ownerId' }] },
    'a relation on an added column gets its foreign key')
  t.same((await rows("SELECT indexname FROM pg_indexes WHERE schemaname = 'ddl_upgrade' AND tablename = 'items' AND indexname LIKE '%_sort' ORDER BY 1")).map(r => r.indexname),
    ['items_code_sort', 'items_legacy_sort', 'items_ownerId_sort', 'items_title_sort', 'items_year_sort'])
})

t.test('a table without the bookkeeping columns gets them; its rows start at version 1', async t => {
  await rows('CREATE SCHEMA ddl_bookkeeping')
  await rows('CREATE TABLE ddl_bookkeeping.people (id text PRIMARY KEY, name text NOT NULL)')
  await rows("INSERT INTO ddl_bookkeeping.people VALUES ('p1', 'Pat')")
  const store = await open(t, { schema: 'ddl_bookkeeping' })
  const { people } = models(store, [{ name: 'people', schema: Type.Object({ id: Id, name: Type.String() }, { additionalProperties: false }) }])
  const record = await store.get(people, 'p1')
  t.same(record?.data, { id: 'p1', name: 'Pat' })
  t.equal(record?.version, 1)
  t.ok(record?.modifiedAt instanceof Date)
})

t.test('resources map onto tables and columns someone else manages', async t => {
  await rows('CREATE SCHEMA ddl_mapped')
  await rows(`CREATE TABLE ddl_mapped.writers (writer_id text PRIMARY KEY, full_name text NOT NULL,
    rev integer NOT NULL DEFAULT 1, changed timestamptz NOT NULL DEFAULT now())`)
  await rows(`CREATE TABLE ddl_mapped.works (work_id text PRIMARY KEY, work_title text NOT NULL UNIQUE,
    writer text NOT NULL CONSTRAINT works_by_writer REFERENCES ddl_mapped.writers (writer_id),
    rev integer NOT NULL DEFAULT 1, changed timestamptz NOT NULL DEFAULT now())`)
  const store = await open(t, {
    schema: 'ddl_mapped',
    migrate: false,
    tables: {
      authors: { table: 'writers', columns: { id: 'writer_id', name: 'full_name' }, versionColumn: 'rev', modifiedAtColumn: 'changed' },
      books: { table: 'works', columns: { id: 'work_id', title: 'work_title', authorId: 'writer' }, versionColumn: 'rev', modifiedAtColumn: 'changed' }
    }
  })
  const { authors, books } = models(store, [{
    name: 'authors',
    schema: Type.Object({ id: Id, name: Type.String() }, { additionalProperties: false }),
    relations: { books: { kind: 'many', resource: 'books', field: 'authorId' } }
  }, {
    name: 'books',
    schema: Type.Object({ id: Id, title: Type.String(), authorId: Type.String() }, { additionalProperties: false }),
    relations: { author: { kind: 'one', resource: 'authors', field: 'authorId' } }
  }])
  await store.create(authors, { id: 'w1', name: 'Wanda' })
  await store.create(authors, { id: 'w2', name: 'Will' })
  await store.create(books, { id: 'k1', title: 'Kites', authorId: 'w1' })
  await store.create(books, { id: 'k2', title: 'Bees', authorId: 'w2' })
  t.same(await rows('SELECT work_id, work_title, writer, rev FROM ddl_mapped.works ORDER BY work_id'), [
    { work_id: 'k1', work_title: 'Kites', writer: 'w1', rev: 1 },
    { work_id: 'k2', work_title: 'Bees', writer: 'w2', rev: 1 }
  ])
  const page = await store.list(books, listQuery(books, { filter: "author/name eq 'Wanda' or startswith(title, 'B')", sort: '-title', total: true }))
  t.same(page.items.map(r => r.data), [{ id: 'k1', title: 'Kites', authorId: 'w1' }, { id: 'k2', title: 'Bees', authorId: 'w2' }])
  t.same((await store.list(authors, listQuery(authors, { filter: "books/title eq 'Bees'" }))).items.map(r => r.data.id), ['w2'])
  t.equal((await store.update(books, 'k2', { id: 'k2', title: 'Bees!', authorId: 'w2' }, { ifVersion: 1 }) as { version: number }).version, 2)
  await t.rejects(store.create(books, { id: 'k3', title: 'Ghost', authorId: 'nobody' }), { statusCode: 422, code: 'API_ERR_UNPROCESSABLE', invalidParams: [{ name: 'authorId' }] },
    'their own foreign key, under their own name, still answers 422 naming the field')
  await t.rejects(store.remove(authors, 'w1'), { statusCode: 409, message: /still has books/ })
  await t.rejects(store.create(books, { id: 'k4', title: 'Kites', authorId: 'w2' }), { statusCode: 409, code: 'API_ERR_CONFLICT', message: /with this value already exists/ },
    'their unique constraint answers 409')
  await t.rejects(store.create(books, { id: 'k1', title: 'Other', authorId: 'w2' }), { statusCode: 409, message: /with this id already exists/ })
  t.equal((await rows("SELECT count(*)::int AS n FROM pg_indexes WHERE schemaname = 'ddl_mapped'"))[0].n, 3, 'migrate: false creates no index')
})

t.test('with migrate: false nothing is created: a missing table is an error naming it, not a 503', async t => {
  const store = await open(t, { schema: 'ddl_nothing', migrate: false })
  const { books } = suiteModels(store)
  await t.rejects(store.list(books, listQuery(books)), { name: 'TypeError', message: /^SQL store: table "ddl_nothing"\."(authors|books)" of resource (authors|books) does not exist, and option migrate is false$/ })
  t.same(await rows("SELECT 1 FROM pg_namespace WHERE nspname = 'ddl_nothing'"), [])
})

t.test('referential errors when a relation is declared on one side only', async t => {
  const parentSchema = Type.Object({ id: Id, name: Type.String() }, { additionalProperties: false })
  const kidSchema = Type.Object({ id: Id, parentId: Type.String() }, { additionalProperties: false })
  t.test('only the parent declares it: a missing parent is still 422', async t => {
    const store = await open(t, { schema: 'ddl_one_sided_many' })
    const { parents, kids } = models(store, [
      { name: 'parents', schema: parentSchema, relations: { kids: { kind: 'many', resource: 'kids', field: 'parentId' } } },
      { name: 'kids', schema: kidSchema }
    ])
    await store.create(parents, { id: 'p', name: 'P' })
    await store.create(kids, { id: 'k', parentId: 'p' })
    await t.rejects(store.create(kids, { id: 'x', parentId: 'ghost' }), { statusCode: 422, message: /refers to a record that does not exist/ })
    await t.rejects(store.remove(parents, 'p'), { statusCode: 409, message: /still has kids/ })
  })
  t.test('only the child declares it: deleting a referenced parent is still 409', async t => {
    const store = await open(t, { schema: 'ddl_one_sided_one' })
    const { parents, kids } = models(store, [
      { name: 'kids', schema: kidSchema, relations: { parent: { kind: 'one', resource: 'parents', field: 'parentId' } } },
      { name: 'parents', schema: parentSchema }
    ])
    await store.create(parents, { id: 'p', name: 'P' })
    await store.create(kids, { id: 'k', parentId: 'p' })
    await t.rejects(store.remove(parents, 'p'), { statusCode: 409, message: /still referred to by other records/ })
  })
})

t.test('names beyond 63 bytes are shortened with a hash, so indexes never collide', async t => {
  const name = `r${'e'.repeat(70)}`
  const store = await open(t, { schema: 'ddl_long' })
  const { [name]: model } = models(store, [{
    name,
    schema: Type.Object({ id: Id, [`a${'x'.repeat(40)}1`]: Type.String(), [`a${'x'.repeat(40)}2`]: Type.String() }, { additionalProperties: false })
  }])
  const record = { id: '1', [`a${'x'.repeat(40)}1`]: 'one', [`a${'x'.repeat(40)}2`]: 'two' }
  await store.create(model, record)
  t.same((await store.get(model, '1'))?.data, record)
  const indexes = await rows("SELECT indexname FROM pg_indexes WHERE schemaname = 'ddl_long' AND indexname <> $1", [`${name.slice(0, 58)}_pkey`])
  t.equal(indexes.length, 2)
  for (const { indexname } of indexes) t.match(indexname, /_[0-9a-f]{8}$/)
})

t.test('a failing upgrade rolls back whole and is tried again by the next request', async t => {
  await rows('CREATE SCHEMA ddl_retry')
  // A view where the books table should be: adding columns to it fails halfway through the upgrade.
  await rows("CREATE VIEW ddl_retry.books AS SELECT 'x'::text AS id WHERE false")
  const store = await open(t, { schema: 'ddl_retry' })
  const { authors, books } = suiteModels(store)
  await t.rejects(store.list(authors, listQuery(authors)), { code: '42809' })
  t.same(await rows("SELECT tablename FROM pg_tables WHERE schemaname = 'ddl_retry'"), [], 'the authors table made before the failure is rolled back')
  await rows('DROP VIEW ddl_retry.books')
  await store.create(authors, { id: 'a', name: 'A' })
  t.same((await store.list(books, listQuery(books))).items, [], 'the next request upgrades and succeeds')
})
