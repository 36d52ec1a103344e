// Tokenizer for `filter=` (spec "Advanced filtering (`filter`)", OData 4.01 $filter subset) and for
// `apply=`, whose filter(…) steps are filter's tokens among its own: literals, property paths,
// `$` names and punctuation, each with its character offset so errors can point at it.
import type { Literal } from './ast.js'
import { isDate, isDateTime } from '../../values/iso-date.js'

/** Malformed filter text; `position` is the 0-based character offset of the problem. */
export class FilterSyntaxError extends Error {
  readonly position: number
  /** The message without the position it may end with: apply= says where in its text a filter's problem is. */
  readonly reason: string

  constructor (reason: string, position: number, message = reason) {
    super(message)
    this.name = 'FilterSyntaxError'
    this.position = position
    this.reason = reason
  }
}

/** An error whose message ends with the position, as clients see it in the 400 response. */
export function syntaxError (reason: string, position: number): FilterSyntaxError {
  return new FilterSyntaxError(reason, position, `${reason} at position ${position}`)
}

/** `/` outside a path separates apply='s transformations; in a filter it is out of place. */
export type Punct = '(' | ')' | ',' | ':' | '/'

export type Token =
  | { readonly kind: 'punct', readonly text: Punct, readonly position: number }
  /** An identifier or a path (`author/name`, `author.name`); keywords are names too, and `$count`, `$it`. */
  | { readonly kind: 'name', readonly text: string, readonly path: readonly string[], readonly position: number }
  | { readonly kind: 'literal', readonly text: string, readonly literal: Literal, readonly position: number }
  | { readonly kind: 'end', readonly text: '', readonly position: number }

// Sticky patterns, tried at the current offset. A bare GUID (OData's guidValue, 8-4-4-4-12 hex
// digits) is the text of the id it spells, as ids are strings; it is tried first, since it may
// begin like a number (018cc251-…) or a name (deadbeef-…): such text read otherwise is a syntax
// error (a value followed by a signed number), and a date's groups are 4-2-2.
const GUID = /[\dA-Fa-f]{8}-[\dA-Fa-f]{4}-[\dA-Fa-f]{4}-[\dA-Fa-f]{4}-[\dA-Fa-f]{12}/y
// DATE_LIKE is deliberately loose after the `T` so that a malformed date-time is reported as one
// token rather than as stray characters.
const DATE_LIKE = /\d{4}-\d{2}-\d{2}(?:T[\d:.+\-Z]*)?/y
// OData's decimalValue: a sign, `+` too (sent as %2B: a bare `+` in a query string is a space).
const NUMBER = /[-+]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y
const NAME = /[A-Za-z_]\w*(?:[/.][A-Za-z_]\w*)*/y
const WORD_CHAR = /\w/
// `$count`, `$it`, `$root`: OData's `$` names, left to the parser, which knows where one belongs;
// `@alias`, refused here by name.
const SPECIAL = /[$@]\w*/y

function matchAt (pattern: RegExp, text: string, position: number): string | undefined {
  pattern.lastIndex = position
  return pattern.exec(text)?.[0]
}

const KEYWORD_LITERALS: ReadonlyMap<string, Literal> = new Map<string, Literal>([
  ['true', { kind: 'literal', type: 'boolean', value: true }],
  ['false', { kind: 'literal', type: 'boolean', value: false }],
  ['null', { kind: 'literal', type: 'null', value: null }]
])

/** Splits the text into tokens, ending with an `end` token at `text.length`. */
export function tokenize (text: string): Token[] {
  const tokens: Token[] = []
  let i = 0
  while (i < text.length) {
    const c = text[i]
    if (c === ' ' || c === '\t') {
      i++
    } else if (c === '(' || c === ')' || c === ',' || c === ':' || c === '/') {
      tokens.push({ kind: 'punct', text: c, position: i })
      i++
    } else if (c === "'") {
      const end = readString(text, i)
      const value = text.slice(i + 1, end - 1).replaceAll("''", "'")
      tokens.push({ kind: 'literal', text: text.slice(i, end), literal: { kind: 'literal', type: 'string', value }, position: i })
      i = end
    } else {
      const token = readWord(text, i)
      tokens.push(token)
      i += token.text.length
    }
  }
  tokens.push({ kind: 'end', text: '', position: text.length })
  return tokens
}

/** The offset just past the closing quote of the string starting at `start`. */
function readString (text: string, start: number): number {
  let i = start + 1
  for (;;) {
    const close = text.indexOf("'", i)
    if (close === -1) throw syntaxError('unterminated string starting', start)
    if (text[close + 1] !== "'") return close + 1
    i = close + 2
  }
}

function readWord (text: string, start: number): Token {
  const guid = matchAt(GUID, text, start)
  if (guid !== undefined) {
    checkDelimited(text, start + guid.length)
    return { kind: 'literal', text: guid, literal: { kind: 'literal', type: 'string', value: guid }, position: start }
  }
  const date = matchAt(DATE_LIKE, text, start)
  if (date !== undefined) {
    const hasTime = date.length > 10
    if (!(hasTime ? isDateTime(date) : isDate(date))) {
      throw syntaxError(`invalid ${hasTime ? 'date-time' : 'date'} '${date}'`, start)
    }
    checkDelimited(text, start + date.length)
    const literal: Literal = { kind: 'literal', type: hasTime ? 'datetime' : 'date', value: date }
    return { kind: 'literal', text: date, literal, position: start }
  }
  const number = matchAt(NUMBER, text, start)
  if (number !== undefined) {
    const value = Number(number)
    if (!Number.isFinite(value)) throw syntaxError(`number ${number} is out of range`, start)
    checkDelimited(text, start + number.length)
    return { kind: 'literal', text: number, literal: { kind: 'literal', type: 'number', value }, position: start }
  }
  const name = matchAt(NAME, text, start)
  if (name !== undefined) {
    // OData 4.01 keywords are case-insensitive: `TRUE`, `Null`.
    const literal = KEYWORD_LITERALS.get(name.toLowerCase())
    return literal === undefined
      ? { kind: 'name', text: name, path: name.split(/[/.]/), position: start }
      : { kind: 'literal', text: name, literal, position: start }
  }
  const special = matchAt(SPECIAL, text, start)
  if (special !== undefined && special.length > 1) {
    if (special.startsWith('@')) throw syntaxError(`parameter aliases ('${special}') are not supported`, start)
    return { kind: 'name', text: special, path: [special], position: start }
  }
  // Spread splits by code point, so a character outside the BMP is quoted whole.
  throw syntaxError(`unexpected character '${[...text.slice(start, start + 2)][0]}'`, start)
}

// `2023-01-01x` or `12abc` is a typo, not a value followed by a name.
function checkDelimited (text: string, position: number): void {
  if (WORD_CHAR.test(text.charAt(position))) {
    throw syntaxError(`unexpected character '${text[position]}'`, position)
  }
}

export function isPunct (token: Token, text: Punct): boolean {
  return token.kind === 'punct' && token.text === text
}

/** A token as messages quote it; the end as the end of `what` (filter, apply). */
export function describe (token: Token, what: string): string {
  if (token.kind === 'end') return `end of ${what}`
  // A string literal shows its own quotes.
  return token.kind === 'literal' && token.literal.type === 'string' ? token.text : `'${token.text}'`
}
