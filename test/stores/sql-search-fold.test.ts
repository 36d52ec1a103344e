// The words of a text are the same on every store (query/search.ts). The SQL store's fold
// (stores/sql/search.ts: one regexp_replace() per replacement) maps every code point as FOLD does in
// JavaScript, and PostgreSQL's words (lower(), the fold, the 'simple' parser) are the memory store's
// for every character FOLD maps, a sample of other code points, some texts, and random texts of
// those characters and ASCII letters and digits. On PGlite, and on PostgreSQL when DATABASE_URL is set.
import t from 'tap'
import type { Test as Tap } from 'tap'
import pg from 'pg'
import fc from 'fast-check'
import { Type } from '@sinclair/typebox'
import { buildRegistry } from '../../lib/registry/index.js'
import { FOLD, words } from '../../lib/query/search.js'
import { documentVector, fold } from '../../lib/stores/sql/search.js'
import { resolveTable } from '../../lib/stores/sql/table.js'
import { raw, sql, toQuery } from '../../lib/stores/sql/sql.js'
import { openPglite } from './pglite-db.js'

type Query = (text: string, values: unknown[]) => Promise<Array<Record<string, unknown>>>

const [notes] = buildRegistry([{ name: 'notes', singular: 'note', schema: Type.Object({ id: Type.Readonly(Type.String()), text: Type.String() }), searchable: ['text'] }])
const table = resolveTable(notes, 'public')

/** Code points beside FOLD's: letters and digits of other scripts, Latin letters FOLD keeps, the neighbours of its ranges, symbols, spaces, controls. */
const sample = [
  'ß', 'ẞ', 'æ', 'Æ', 'œ', 'þ', 'ð', 'ŋ', 'ĳ', 'ſ', 'ƒ', 'ǅ', 'ª', 'º', 'µ', 'ɐ', 'ʃ', 'ế', 'Ḁ', 'K', 'Å', 'Ω',
  'Α', 'ά', 'Σ', 'ς', 'Ώ', 'Ж', 'ж', 'й', 'Ё', 'ї', 'Ա', 'א', 'ب', 'क', 'ก', 'ა', '한', 'の', 'カ', '中', '語', 'Ａ', 'ｚ',
  '٣', '५', '๓', '０', '₀', '⁰', '½',
  '€', '→', '℃', '♥', '〃', '「', '😀', '𝐀', '𠀀',
  ' ', '\t', '\n', '\u0085', '\u2028', '\u3003', '\u2070', '\u024f', '\u0250', '\u009f'
]

/** As the store chooses its case collation (stores/sql/index.ts). */
async function caseCollation (query: Query): Promise<string> {
  const [{ name }] = await query(`SELECT COALESCE((SELECT collname FROM pg_collation WHERE collname IN ('pg_unicode_fast', 'und-x-icu')
    AND collencoding IN (-1, (SELECT encoding FROM pg_database WHERE datname = current_database())) ORDER BY collname = 'pg_unicode_fast' DESC LIMIT 1), 'default') AS name`, [])
  return String(name)
}

function foldSuite (t: Tap, query: Query): void {
  t.test('the SQL fold maps every code point as FOLD does', async t => {
    const chars: string[] = []
    for (let code = 1; code <= 0xffff; code++) if (code < 0xd800 || code > 0xdfff) chars.push(String.fromCharCode(code))
    chars.push('😀', '𝐀', '𠀀')
    const { text } = toQuery(fold(raw('x')))
    // After a letter: PGlite's decoder drops a leading U+FEFF from what it reads.
    const rows = await query(`SELECT ${text} AS folded FROM unnest($1::text[]) AS x`, [chars.map(char => `a${char}`)])
    const differ = chars.filter((char, i) => rows[i].folded !== `a${FOLD.get(char) ?? char}`)
    t.same(differ, [], 'no code point is folded otherwise')
    t.equal(rows.length, chars.length)
  })

  /** Texts whose words differ between the memory store and PostgreSQL, each with both. */
  const differing = async (texts: readonly string[]): Promise<string[]> => {
    const vector = documentVector(table, ['text'], 'x', await caseCollation(query))
    const { text, values } = toQuery(sql`SELECT (SELECT coalesce(array_agg(lexeme ORDER BY at), '{}') FROM unnest(${vector}) AS u, unnest(u.positions) AS at) AS words
      FROM unnest(${texts}::text[]) WITH ORDINALITY AS x(text, i) ORDER BY i`)
    const rows = await query(text, [...values])
    return texts.flatMap((text, i) => JSON.stringify(rows[i].words) === JSON.stringify(words(text)) ? [] : [`${JSON.stringify(text)}: ${JSON.stringify(words(text))} in memory, ${JSON.stringify(rows[i].words)} in SQL`])
  }

  t.test('PostgreSQL finds the words the memory store finds', async t => {
    const texts = [...FOLD.keys(), ...sample].flatMap(char => [`q${char}q`, `${char}Ab${char}`])
    texts.push('García Márquez', 'İSTANBUL İzmir', 'Ærøskøbing, Łódź', 'Straße', 'e-mail a.b@c.d 3.14', 'cafe\u0301s Cafe\u0301',
      '«Ça va?» — “oui”…', 'ΣΊΣΥΦΟΣ', 'Война и мир', '東京タワー 2024年', 'ǄEMAL Ǆemal')
    t.same(await differing(texts), [], `every character FOLD maps, and the sample, under collation ${await caseCollation(query)}`)
    t.same(words('İSTANBUL cafe\u0301s'), ['istanbul', 'cafes'], 'İ and an accent written apart fold to their letter')
    const alphabet = [...FOLD.keys(), ...sample, ...'abcXYZ019']
    const random = fc.sample(fc.array(fc.constantFrom(...alphabet), { maxLength: 24 }).map(chars => chars.join('')), { numRuns: 1000, seed: 30 })
    t.same(await differing(random), [], 'random texts of those characters')
  })
}

t.test('on PGlite', async t => {
  const db = await openPglite()
  t.teardown(() => db.close())
  foldSuite(t, async (text, values) => (await db.query<Record<string, unknown>>(text, values)).rows)
})

const connectionString = process.env.DATABASE_URL
t.test('on PostgreSQL', { skip: connectionString === undefined ? 'DATABASE_URL is not set (the PGlite run covers the same cases)' : false }, async t => {
  const pool = new pg.Pool({ connectionString })
  t.teardown(() => pool.end())
  foldSuite(t, async (text, values) => (await pool.query(text, values)).rows)
})
