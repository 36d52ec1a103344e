// `search=` (OData 4.01 $search, URL conventions "System Query Option $search"): words, "quoted
// phrases", AND (also a space), OR, NOT and parentheses, matched by whole words against a
// resource's searchable text fields. The words of a text are defined here once, for every store:
// lower case (as JavaScript maps it), Latin accents folded (FOLD), split at anything that is not a
// letter or a decimal digit. The memory store matches with words(); the SQL store computes the same
// words in PostgreSQL (stores/sql/search.ts: lower(), FOLD as one regexp_replace() per replacement,
// then the 'simple' text-search configuration, which splits at what FOLD left as spaces and keeps
// the rest).

/** A searched term: one word, or a phrase (its words one after the other). */
export interface SearchTerm { readonly kind: 'term', readonly words: readonly string[] }

export type SearchNode =
  | SearchTerm
  | { readonly kind: 'and' | 'or', readonly left: SearchNode, readonly right: SearchNode }
  | { readonly kind: 'not', readonly operand: SearchNode }

/** What a store runs: the expression, and the fields it is matched against (those the caller may read). */
export interface Search {
  readonly node: SearchNode
  readonly fields: readonly string[]
}

/**
 * The relevance a search without `sort` orders by, as a sort key (descending, then the id
 * ascending): the number of distinct terms outside any NOT that the record's text holds. Stores
 * give it as StoredRecord.rank; a token's position holds it. Not a field name (those are identifiers).
 */
export const RELEVANCE = '@relevance'

/** A malformed search; `position` is the 0-based character offset of the problem. */
export class SearchSyntaxError extends Error {
  readonly position: number
  constructor (message: string, position: number) {
    super(`${message} at position ${position}`)
    this.name = 'SearchSyntaxError'
    this.position = position
  }
}

/**
 * The characters FOLD maps, and what to: Latin letters with diacritics to their base letter (both
 * cases: the SQL side folds after lower(), which may leave some upper-case ones under some
 * collations), combining diacritical marks to nothing, and punctuation and symbols to a space, so
 * that no store reads them as part of a word (PostgreSQL's parser would make `e-mail` three tokens
 * and `a.b@c.d` one). Built from Unicode's decompositions, so the table is the same wherever this
 * module runs. What a character folds to (a letter a–z, a space or nothing) is never folded itself:
 * the SQL store relies on it to apply the table one replacement at a time.
 */
function foldTable (): Map<string, string> {
  const fold = new Map<string, string>()
  for (let code = 0x21; code <= 0x7e; code++) {
    const char = String.fromCharCode(code)
    if (!/[A-Za-z0-9]/.test(char)) fold.set(char, ' ')
  }
  for (let code = 0xa0; code <= 0x24f; code++) {
    const char = String.fromCharCode(code)
    const base = char.normalize('NFD').replace(/\p{M}/gu, '')
    if (base !== char && /^[A-Za-z]$/.test(base)) fold.set(char, base.toLowerCase())
    else if (!/[\p{L}\p{Nd}]/u.test(char)) fold.set(char, ' ')
  }
  // Letters without a decomposition that readers take for a base letter with a mark.
  for (const [char, base] of [['ø', 'o'], ['Ø', 'o'], ['đ', 'd'], ['Đ', 'd'], ['ł', 'l'], ['Ł', 'l'], ['ħ', 'h'], ['Ħ', 'h'], ['ı', 'i']]) fold.set(char, base)
  // Combining diacritical marks: an accent written apart from its letter (e and U+0301) folds as
  // the precomposed letter does, and İ, which lower() turns into i and U+0307, folds to i.
  for (let code = 0x300; code <= 0x36f; code++) fold.set(String.fromCharCode(code), '')
  // General punctuation (dashes, quotation marks, ellipsis) and the ideographic space and stops.
  for (let code = 0x2000; code <= 0x206f; code++) fold.set(String.fromCharCode(code), ' ')
  for (const char of '\u3000\u3001\u3002') fold.set(char, ' ')
  return fold
}

export const FOLD: ReadonlyMap<string, string> = foldTable()

/** A text's words as every store finds them. */
export function words (text: string): string[] {
  let folded = ''
  for (const char of text.toLowerCase()) folded += FOLD.get(char) ?? char
  return folded.split(/[^\p{L}\p{Nd}]+/u).filter(word => word !== '')
}

/** Whether `document` (a text's words) holds the term's words one after the other. */
function holds (document: readonly string[], term: SearchTerm): boolean {
  const [first, ...rest] = term.words
  for (let at = document.indexOf(first); at !== -1; at = document.indexOf(first, at + 1)) {
    if (rest.every((word, i) => document[at + 1 + i] === word)) return true
  }
  return false
}

/** The record's document: the words of each searched field, one field after the other (as the SQL store joins them). */
export function documentOf (data: Readonly<Record<string, unknown>>, fields: readonly string[]): string[] {
  return words(fields.map(field => typeof data[field] === 'string' ? data[field] : '').join(' '))
}

export function matches (node: SearchNode, document: readonly string[]): boolean {
  switch (node.kind) {
    case 'term': return holds(document, node)
    case 'and': return matches(node.left, document) && matches(node.right, document)
    case 'or': return matches(node.left, document) || matches(node.right, document)
    case 'not': return !matches(node.operand, document)
  }
}

/** The distinct terms outside any NOT: what relevance counts. */
export function rankedTerms (node: SearchNode): SearchTerm[] {
  const found = new Map<string, SearchTerm>()
  const visit = (at: SearchNode, negated: boolean): void => {
    if (at.kind === 'term') {
      if (!negated) found.set(at.words.join(' '), at)
    } else if (at.kind === 'not') {
      visit(at.operand, !negated)
    } else {
      visit(at.left, negated)
      visit(at.right, negated)
    }
  }
  visit(node, false)
  return [...found.values()]
}

export function relevance (terms: readonly SearchTerm[], document: readonly string[]): number {
  return terms.filter(term => holds(document, term)).length
}

interface Token { readonly kind: '(' | ')' | 'AND' | 'OR' | 'NOT' | 'word' | 'phrase' | 'end', readonly text: string, readonly position: number }

function tokenize (text: string): Token[] {
  const tokens: Token[] = []
  let at = 0
  while (at < text.length) {
    const char = text[at]
    if (/\s/.test(char)) {
      at++
    } else if (char === '(' || char === ')') {
      tokens.push({ kind: char, text: char, position: at++ })
    } else if (char === '"') {
      // A phrase: up to the next unescaped quotation mark; \" and \\ stand for " and \.
      const start = at++
      let phrase = ''
      while (at < text.length && text[at] !== '"') {
        if (text[at] === '\\') {
          if (text[at + 1] !== '"' && text[at + 1] !== '\\') throw new SearchSyntaxError('expected \\" or \\\\ after a backslash in a phrase', at)
          phrase += text[at + 1]
          at += 2
        } else {
          phrase += text[at++]
        }
      }
      if (at >= text.length) throw new SearchSyntaxError('unterminated phrase: expected a closing quotation mark for the one', start)
      at++
      tokens.push({ kind: 'phrase', text: phrase, position: start })
    } else {
      const start = at
      while (at < text.length && !/[\s()"]/.test(text[at])) at++
      const word = text.slice(start, at)
      const kind = word === 'AND' || word === 'OR' || word === 'NOT' ? word : 'word'
      tokens.push({ kind, text: word, position: start })
    }
  }
  tokens.push({ kind: 'end', text: '', position: text.length })
  return tokens
}

/** As filter's limits (filter/parser.ts): they bound the work of one request and the parser's stack. */
const maxLength = 2000
const maxDepth = 32

/**
 * `search=` as a tree. NOT binds tightest, then AND (also two terms side by side), then OR;
 * AND, OR and NOT are keywords in upper case only (OData's), any other case is a word.
 */
export function parseSearch (text: string): SearchNode {
  if (text.length > maxLength) throw new SearchSyntaxError(`search is longer than ${maxLength} characters`, maxLength)
  const tokens = tokenize(text)
  // Parentheses and NOT nest; AND and OR chains are read in loops and do not count.
  let depth = 0
  const enter = <T>(read: () => T, at: Token): T => {
    if (++depth > maxDepth) throw new SearchSyntaxError(`search nests deeper than ${maxDepth} levels`, at.position)
    const node = read()
    depth--
    return node
  }
  let next = 0
  const peek = () => tokens[next]
  const describe = (token: Token) => token.kind === 'end' ? 'the end' : `'${token.text}'`
  const expected = (what: string): never => {
    const token = peek()
    throw new SearchSyntaxError(`expected ${what}, found ${describe(token)}`, token.position)
  }
  const startsTerm = (token: Token) => token.kind === 'word' || token.kind === 'phrase' || token.kind === '(' || token.kind === 'NOT'
  const or = (): SearchNode => {
    let left = and()
    while (peek().kind === 'OR') {
      next++
      left = { kind: 'or', left, right: and() }
    }
    return left
  }
  const and = (): SearchNode => {
    let left = unary()
    for (;;) {
      if (peek().kind === 'AND') next++
      else if (!startsTerm(peek())) return left
      left = { kind: 'and', left, right: unary() }
    }
  }
  const unary = (): SearchNode => {
    const token = peek()
    if (token.kind === 'NOT') {
      next++
      return { kind: 'not', operand: enter(unary, token) }
    }
    return primary()
  }
  const primary = (): SearchNode => {
    const token = peek()
    if (token.kind === '(') {
      next++
      const inner = enter(or, token)
      if (peek().kind !== ')') expected("')' or a term")
      next++
      return inner
    }
    if (token.kind !== 'word' && token.kind !== 'phrase') return expected('a word, a "phrase" or (')
    next++
    const found = words(token.text)
    if (found.length === 0) throw new SearchSyntaxError(`${token.kind === 'word' ? `'${token.text}'` : 'the phrase'} holds no letter or digit to search for`, token.position)
    return { kind: 'term', words: found }
  }
  if (peek().kind === 'end') return expected('a word, a "phrase" or (')
  const node = or()
  if (peek().kind !== 'end') expected('AND, OR, a term or the end')
  return node
}
