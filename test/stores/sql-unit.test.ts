// White-box tests of the SQL store's pure parts (the query compiled to SQL, failures mapped):
// values only as placeholders, identifiers only quoted, LIKE patterns escaped, which errors mean
// "unavailable", and the option and table-mapping checks that fail at start-up.
import t from 'tap'
import { Type } from '@sinclair/typebox'
import pg from 'pg'
import { buildRegistry } from '../../lib/registry/index.js'
import { ident, join, quoteIdent, raw, sql, toQuery } from '../../lib/stores/sql/sql.js'
import { escapeLike } from '../../lib/stores/sql/compile.js'
import { isUnavailable } from '../../lib/stores/sql/store.js'
import { resolveTable } from '../../lib/stores/sql/table.js'
import { pgliteStore, postgresStore } from '../../lib/stores/sql/index.js'

t.test('sql: interpolated values become numbered placeholders, fragments are spliced in', async t => {
  const title = "x'; DROP TABLE books; --"
  const inner = sql`${ident('t0', 'year')} > ${2000}`
  const query = toQuery(sql`SELECT 1 FROM ${ident('s', 'books')} WHERE ${ident('title')} = ${title} AND ${inner} AND ${raw('TRUE')} OR ${null} IS NULL`)
  t.same(query, {
    text: 'SELECT 1 FROM "s"."books" WHERE "title" = $1 AND "t0"."year" > $2 AND TRUE OR $3 IS NULL',
    values: [title, 2000, null]
  })
  t.same(toQuery(sql`${inner}`), { text: '"t0"."year" > $1', values: [2000] }, 'a fragment alone')
  t.same(toQuery(join([sql`a = ${1}`, sql`b = ${2}`, raw('c')], ' AND ')), { text: 'a = $1 AND b = $2 AND c', values: [1, 2] })
  t.same(toQuery(join([], ', ')), { text: '', values: [] })
})

t.test('identifiers are always quoted; quotes inside are doubled; NUL or empty is refused', async t => {
  t.equal(quoteIdent('authorId'), '"authorId"')
  t.equal(quoteIdent('we"ird; DROP'), '"we""ird; DROP"')
  t.equal(toQuery(ident('my schema', 'tab"le')).text, '"my schema"."tab""le"')
  t.throws(() => quoteIdent('a\u0000b'), TypeError)
  t.throws(() => quoteIdent(''), TypeError)
})

t.test('LIKE patterns escape %, _ and the escape character itself', async t => {
  t.equal(escapeLike('100%_\\x'), '100\\%\\_\\\\x')
  t.equal(escapeLike('plain'), 'plain')
})

t.test('unavailable means the connection failed, not the statement', async t => {
  const unavailable = [
    { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:5432' },
    { code: 'ECONNRESET' },
    { code: '57P01', message: 'terminating connection due to administrator command' },
    { code: '57014', message: 'canceling statement due to statement timeout' },
    { code: '08006' },
    { code: '53300', message: 'too many connections' },
    { code: '40001' },
    { code: '40P01' },
    { message: 'Connection terminated unexpectedly' },
    { message: 'timeout exceeded when trying to connect' },
    { message: 'PGlite is closed' }
  ]
  for (const error of unavailable) t.ok(isUnavailable(error), JSON.stringify(error))
  const failed = [
    { code: '23505', message: 'duplicate key value violates unique constraint' },
    { code: '42P01', message: 'relation "books" does not exist (connection fine)' },
    { code: '22021' },
    new TypeError('x is not a function'),
    null,
    'text'
  ]
  for (const error of failed) t.notOk(isUnavailable(error), JSON.stringify(error))
})

t.test('table mapping: unknown fields and reused columns are refused with the option path', async t => {
  const [model] = buildRegistry([{
    name: 'books',
    singular: 'book',
    schema: Type.Object({ id: Type.Readonly(Type.String()), version: Type.Integer(), title: Type.String() }, { additionalProperties: false })
  }])
  t.throws(() => resolveTable(model, 'public'), { name: 'TypeError', message: /column 'version' of table books would hold two things/ })
  t.throws(() => resolveTable(model, 'public', { columns: { titel: 'x' } }), { message: /tables\.books\.columns names 'titel'/ })
  t.throws(() => resolveTable(model, 'public', { versionColumn: 'rev', columns: { title: 'rev' } }), { message: /column 'rev'/ })
  const table = resolveTable(model, 'app', { table: 'my_books', versionColumn: 'rev', modifiedAtColumn: 'changed', columns: { title: 'book_title' } })
  t.match(table, { schema: 'app', name: 'my_books', version: 'rev', modifiedAt: 'changed' })
  t.equal(table.columns.get('title')?.name, 'book_title')
  t.equal(toQuery(table.ref).text, '"app"."my_books"')
})

/** What a factory rejects with: the detail after the prefix, or a pattern of the message. */
const invalid = (detail: string | RegExp) => ({ code: 'API_ERR_OPTIONS_INVALID', message: typeof detail === 'string' ? `Invalid api-conventions options: ${detail}` : detail })

t.test('factory options are checked before anything connects', async t => {
  for (const [schema, received] of [['', '""'], ['a\u0000b', '"a\\u0000b"'], [5, '5']] as const) {
    await t.rejects(pgliteStore({ schema: schema as string, dataDir: '/nonexistent' }), invalid(`pgliteStore.schema must be a non-empty name, received ${received}`))
  }
  for (const [retryAfterSeconds, received] of [[-1, '-1'], [1.5, '1.5'], ['2', '"2"']] as const) {
    await t.rejects(postgresStore({ retryAfterSeconds: retryAfterSeconds as number }), invalid(`postgresStore.retryAfterSeconds must be a non-negative integer, received ${received}`))
  }
  for (const queryTimeoutMillis of [0, -5, 1.5, '10000', Infinity]) {
    await t.rejects(postgresStore({ queryTimeoutMillis: queryTimeoutMillis as number }),
      invalid(`postgresStore.queryTimeoutMillis must be a positive integer, received ${typeof queryTimeoutMillis === 'string' ? `"${queryTimeoutMillis}"` : String(queryTimeoutMillis)}`))
  }
  const pool = new pg.Pool()
  t.teardown(() => pool.end())
  await t.rejects(postgresStore({ pool, connectionString: 'postgres://x@127.0.0.1/y' }), invalid('postgresStore: give either pool, or connectionString and poolOptions, not both'))
  await t.rejects(postgresStore({ pool, poolOptions: {} }), invalid(/either pool/))
  await t.rejects(pgliteStore({ db: {} as never, dataDir: '/tmp/x' }), invalid('pgliteStore: give either db (a PGlite instance) or dataDir, one of them'))
  await t.rejects(pgliteStore({}), invalid(/either db \(a PGlite instance\) or dataDir/))
})

t.test('the address of the database is checked before anything connects, naming the option', async t => {
  // An unset environment variable: without the check, node-postgres would fall back to its PG*
  // defaults and fail on connecting, naming a user or a host the application never gave.
  await t.rejects(postgresStore({ connectionString: undefined }),
    invalid('postgresStore.connectionString must be a PostgreSQL URL (postgres://user@host/database), received undefined; leave it out to use the PG* environment variables'))
  for (const [connectionString, received] of [['', '""'], [' ', '" "'], [5432, '5432'], [null, 'null'], [{ host: 'db' }, 'a value of type object']] as const) {
    await t.rejects(postgresStore({ connectionString: connectionString as string }), invalid(`postgresStore.connectionString must be a PostgreSQL URL (postgres://user@host/database), received ${received}`))
  }
  await t.rejects(postgresStore({ pool: undefined, connectionString: '', queryTimeoutMillis: 1000 }), invalid(/connectionString must be a PostgreSQL URL/))
  await t.rejects(postgresStore({ connectionString: 'postgres://x@127.0.0.1:1/y', readConnectionString: '' }), invalid('postgresStore.readConnectionString must be a PostgreSQL URL (postgres://user@host/database), received ""'))
  for (const [name, value, received] of [['pool', 42, '42'], ['pool', null, 'null'], ['pool', {}, 'a value of type object'], ['readPool', () => {}, 'a value of type function']] as const) {
    await t.rejects(postgresStore({ [name]: value } as never), invalid(`postgresStore.${name} must be a node-postgres Pool, received ${received}`))
  }
  await t.rejects(pgliteStore({ db: './data' as never }), invalid('pgliteStore.db must be a PGlite instance (await PGlite.create()), received "./data"'))
  await t.rejects(pgliteStore({ db: { query () {} } as never }), invalid('pgliteStore.db must be a PGlite instance (await PGlite.create()), received a value of type object'))
  await t.rejects(pgliteStore({ db: null as never }), invalid(/pgliteStore\.db must be a PGlite instance .*, received null$/))
  for (const [dataDir, received] of [['', '""'], [7, '7']] as const) {
    await t.rejects(pgliteStore({ dataDir: dataDir as string }), invalid(`pgliteStore.dataDir must be a directory path, received ${received}`))
  }
  for (const [poolOptions, received] of [['max=4', '"max=4"'], [null, 'null'], [[], 'a value of type object']] as const) {
    await t.rejects(postgresStore({ connectionString: 'postgres://x@127.0.0.1:1/y', poolOptions: poolOptions as object }), invalid(`postgresStore.poolOptions must be an object of node-postgres pool settings, received ${received}`))
  }
  await t.rejects(pgliteStore({ dataDir: '/nonexistent', migrate: 'no' as never }), invalid('pgliteStore.migrate must be true or false, received "no"'))
  // Left out, the address is node-postgres's PG* defaults; an undefined readConnectionString is no replica.
  await t.rejects(postgresStore({ queryTimeoutMillis: 1000, readConnectionString: undefined, poolOptions: { host: '127.0.0.1', port: 1 } }), { code: 'ECONNREFUSED' })
})

t.test('unknown factory options are refused before anything connects, naming the key meant', async t => {
  const cases: ReadonlyArray<readonly [Promise<unknown>, string]> = [
    [postgresStore({ conectionString: 'postgres://x@127.0.0.1/y' } as never), 'postgresStore.conectionString is not a known key; did you mean "connectionString"?'],
    [postgresStore({ dataDir: '/tmp/x' } as never), 'postgresStore.dataDir is not a known key; known: schema, tables, migrate, retryAfterSeconds, pool, connectionString, poolOptions, queryTimeoutMillis, pooler, readPool, readConnectionString, maxReplicaLagMillis, replicaCheckMillis, redis'],
    [pgliteStore({ dataDIR: '/nonexistent' } as never), 'pgliteStore.dataDIR is not a known key; did you mean "dataDir"?'],
    [pgliteStore({ dataDir: '/nonexistent', tables: { books: { colums: {} } } } as never), 'pgliteStore.tables.books.colums is not a known key; did you mean "columns"?'],
    [postgresStore({ tables: { books: null } } as never), 'postgresStore.tables.books must be an object { table?, columns?, versionColumn?, modifiedAtColumn? }, received null'],
    [postgresStore({ tables: { books: 'my_books' } } as never), 'postgresStore.tables.books must be an object { table?, columns?, versionColumn?, modifiedAtColumn? }, received "my_books"']
  ]
  for (const [store, detail] of cases) {
    await t.rejects(store, { code: 'API_ERR_OPTIONS_INVALID', message: `Invalid api-conventions options: ${detail}` }, detail)
  }
})
