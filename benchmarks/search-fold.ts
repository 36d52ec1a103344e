// What `search=`'s fold costs each write on PostgreSQL and PGlite (issue 30): the words of a
// 360-character title computed the way the index expression computes them, per field, and 40,000
// such titles inserted into a table with the GIN index on them. Before: translate() with the fold's
// table (the expression of the previous version, rebuilt here from FOLD); after: the expression
// migrate indexes now (stores/sql/search.ts documentVector, one regexp_replace() per replacement);
// unfolded: lower() and to_tsvector() alone, the floor.
// Not part of `npm run bench`. Usage, after `npx tsc -p benchmarks/tsconfig.json`:
// [DATABASE_URL=…] node dist/benchmarks/search-fold.js [rows]  (PostgreSQL only with DATABASE_URL)
import { randomBytes } from 'node:crypto'
import { pathToFileURL } from 'node:url'
import pg from 'pg'
import { PGlite } from '@electric-sql/pglite'
import { Type } from '@sinclair/typebox'
import { buildRegistry } from '../lib/registry/index.js'
import { FOLD } from '../lib/query/search.js'
import { documentVector } from '../lib/stores/sql/search.js'
import { resolveTable } from '../lib/stores/sql/table.js'
import { toQuery } from '../lib/stores/sql/sql.js'

type Run = (text: string) => Promise<Array<Record<string, unknown>>>

const [books] = buildRegistry([{ name: 'books', singular: 'book', schema: Type.Object({ id: Type.Readonly(Type.String()), title: Type.String() }), searchable: ['title'] }])

const literal = (text: string) => `E'${text.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`

/** The index expressions over column "title", under the store's case collation; `unfolded`, the floor: words without any fold. */
function expressions (collation: string): Record<'before' | 'after' | 'unfolded', string> {
  const kept = [...FOLD].filter(([, replacement]) => replacement !== '')
  const from = kept.map(([char]) => char).join('')
  const to = kept.map(([, replacement]) => replacement).join('')
  return {
    before: `to_tsvector('simple'::regconfig, translate(lower((coalesce("title", '')) COLLATE "${collation}"), ${literal(from)}, ${literal(to)}))`,
    after: toQuery(documentVector(resolveTable(books, 'public'), ['title'], null, collation)).text,
    unfolded: `to_tsvector('simple'::regconfig, lower((coalesce("title", '')) COLLATE "${collation}"))`
  }
}

/** 360-character titles, numbered: of ASCII words, or of Spanish ones with accents. */
const titles: Record<string, string> = {
  ascii: "left('Title ' || i || ' ' || repeat('Winter Garden of Light and Salt, ', 12), 360)",
  accented: "left('Título ' || i || ' ' || repeat('García Márquez: cien años de soledad, ', 12), 360)"
}

async function ms (work: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint()
  await work()
  return Number(process.hrtime.bigint() - start) / 1e6
}

async function measure (engine: string, run: Run, rows: number, table: string): Promise<void> {
  const [{ collation }] = await run(`SELECT COALESCE((SELECT collname FROM pg_collation WHERE collname IN ('pg_unicode_fast', 'und-x-icu')
    AND collencoding IN (-1, (SELECT encoding FROM pg_database WHERE datname = current_database())) ORDER BY collname = 'pg_unicode_fast' DESC LIMIT 1), 'default') AS collation`)
  const expression = expressions(String(collation))
  for (const [kind, title] of Object.entries(titles)) {
    // Per field: the words of 2,000 titles, less reading the titles alone; the best of three.
    const fields = 2000
    const over = (what: string) => `SELECT sum(length(${what})) FROM (SELECT ${title} AS "title" FROM generate_series(1, ${fields}) AS i) AS t`
    const best = async (what: string) => {
      const times: number[] = []
      for (let i = 0; i < 3; i++) times.push(await ms(async () => await run(over(what))))
      return Math.min(...times)
    }
    const base = await best('"title"')
    for (const version of ['before', 'after', 'unfolded'] as const) {
      const field = (await best(expression[version]) - base) * 1000 / fields
      // The insert: a table with the GIN index, `rows` titles in one statement.
      await run(`DROP TABLE IF EXISTS ${table}; CREATE TABLE ${table} (id text COLLATE "C" PRIMARY KEY, title text COLLATE "C" NOT NULL)`)
      await run(`CREATE INDEX ON ${table} USING gin (${expression[version]})`)
      const insert = await ms(async () => await run(`INSERT INTO ${table} SELECT 'b' || i, ${title} FROM generate_series(1, ${rows}) AS i`))
      await run(`DROP TABLE ${table}`)
      process.stdout.write(`search-fold  ${engine.padEnd(10)}  ${kind.padEnd(8)}  ${version.padEnd(8)}  ${field.toFixed(1).padStart(7)} µs per field  ${(insert / 1000).toFixed(2).padStart(7)} s to insert ${rows} rows\n`)
    }
  }
}

async function main () {
  const rows = Number(process.argv[2] ?? 40_000)
  const connectionString = process.env.DATABASE_URL
  if (connectionString !== undefined) {
    const pool = new pg.Pool({ connectionString, max: 1 })
    const schema = `api_conventions_search_fold_${randomBytes(4).toString('hex')}`
    try {
      await pool.query(`CREATE SCHEMA "${schema}"`)
      const run: Run = async text => {
        const result = await pool.query(text) as unknown as pg.QueryResult | pg.QueryResult[]
        return (Array.isArray(result) ? result.at(-1) as pg.QueryResult : result).rows
      }
      await measure('PostgreSQL', run, rows, `"${schema}".books`)
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      await pool.end()
    }
  }
  const db = await PGlite.create()
  try {
    await measure('PGlite', async text => (await db.exec(text)).at(-1)?.rows as Array<Record<string, unknown>>, rows, 'books')
  } finally {
    await db.close()
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main()
