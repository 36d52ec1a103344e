// `search=` in PostgreSQL (query/search.ts): full-text search with the 'simple' configuration
// (no stemming, no stop words) over the text query/search.ts defines: lower() under the store's
// case collation (JavaScript's case mapping where the server has one), then FOLD (Latin accents to
// their letter, punctuation to a space), so each token the parser finds is a word as the memory
// store finds it. Immutable, unlike unaccent(), which is not installed everywhere (PGlite), needs
// an immutable wrapper to be indexed, and folds differently from the memory store (æ to ae, ß to
// ss): migrate (ddl.ts) indexes the document of every searchable field with GIN, and a caller who
// may read them all searches that same expression, so the index serves it.
import { FOLD, rankedTerms } from '../../query/search.js'
import type { Search, SearchNode } from '../../query/search.js'
import { ident, join, raw, sql } from './sql.js'
import type { Sql } from './sql.js'
import type { Table } from './table.js'

/** A constant in the statement's text, not a placeholder: an index expression holds no parameter, and the query must spell it alike. */
function constant (text: string): Sql {
  return raw(`E'${text.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`)
}

/** A regular expression's bracket of the characters, as code points (`\u00e9`, four hex digits) and ranges of them. */
function bracket (chars: readonly string[]): string {
  const codes = chars.map(char => char.codePointAt(0) as number).sort((a, b) => a - b)
  const hex = (code: number) => `\\u${code.toString(16).padStart(4, '0')}`
  let text = ''
  for (let i = 0; i < codes.length;) {
    let last = i
    while (last + 1 < codes.length && codes[last + 1] === codes[last] + 1) last++
    text += last === i ? hex(codes[i]) : `${hex(codes[i])}-${hex(codes[last])}`
    i = last + 1
  }
  return `[${text}]`
}

// FOLD as one regexp_replace() per replacement (a space, nothing, each base letter): about twenty
// passes, each O(n) in the text (PostgreSQL compiles an expression once per session and matches a
// bracket by a table lookup per character). translate(), used before, looks each character up in
// the whole table, O(n × 431): 0.4 to 0.8 ms per 360-character title, on every write and in every
// index build (benchmarks/README.md, "Search"). No replacement is a character FOLD maps, so the
// passes do not interact: each character is replaced once, as by a table.
const byReplacement = new Map<string, string[]>()
for (const [char, replacement] of FOLD) byReplacement.set(replacement, [...(byReplacement.get(replacement) ?? []), char])
const passes: Array<[Sql, Sql]> = [...byReplacement].map(([replacement, chars]) => [constant(bracket(chars)), constant(replacement)])

/** The text, folded as FOLD maps each character. */
export function fold (text: Sql): Sql {
  return passes.reduce((folded, [pattern, replacement]) => sql`regexp_replace(${folded}, ${pattern}, ${replacement}, 'g')`, text)
}

/** The tsvector of a record's searched fields, one after the other (as query/search.ts documentOf joins them). */
export function documentVector (table: Table, fields: readonly string[], alias: string | null, caseCollation: string): Sql {
  const texts = fields.map(field => {
    const name = table.columns.get(field)?.name as string
    return sql`coalesce(${alias === null ? ident(name) : ident(alias, name)}, '')`
  })
  const text = texts.length === 1 ? texts[0] : join(texts, " || ' ' || ")
  return sql`to_tsvector('simple'::regconfig, ${fold(sql`lower((${text}) COLLATE ${ident(caseCollation)})`)})`
}

/** The expression as tsquery text; the words hold only letters and digits, so quoting them is safe. */
function queryText (node: SearchNode): string {
  switch (node.kind) {
    case 'term': return `(${node.words.map(word => `'${word}'`).join(' <-> ')})`
    case 'and': return `(${queryText(node.left)} & ${queryText(node.right)})`
    case 'or': return `(${queryText(node.left)} | ${queryText(node.right)})`
    case 'not': return `!${queryText(node.operand)}`
  }
}

const tsquery = (node: SearchNode) => sql`to_tsquery('simple'::regconfig, ${queryText(node)})`

/** The search as a condition on the main table. */
export function searchCondition (table: Table, search: Search, alias: string, caseCollation: string): Sql {
  return sql`${documentVector(table, search.fields, alias, caseCollation)} @@ ${tsquery(search.node)}`
}

/** The relevance (query/search.ts RELEVANCE): how many of the terms outside a NOT the record holds. */
export function relevance (table: Table, search: Search, alias: string, caseCollation: string): Sql {
  const terms = rankedTerms(search.node)
  // Cast: a bare 0 in ORDER BY would name a column by its position (an error: there is no column 0).
  if (terms.length === 0) return raw('0::integer')
  const vector = documentVector(table, search.fields, alias, caseCollation)
  return sql`(${join(terms.map(term => sql`(${vector} @@ ${tsquery(term)})::integer`), ' + ')})`
}
