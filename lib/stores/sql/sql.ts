// SQL fragments: a tagged template that keeps values apart from
// the text, so a value only ever reaches the database as a `$n` placeholder. Identifiers enter
// only through ident() (always quoted); fixed keywords and operators only through raw().

/** A piece of SQL: `strings` around `values`, so `strings.length === values.length + 1`. */
export class Sql {
  constructor (readonly strings: readonly string[], readonly values: readonly unknown[]) {}
}

/** What the drivers take: text with `$1…$n` and the values in order. */
export interface Query { readonly text: string, readonly values: readonly unknown[] }

/**
 * Builds a fragment; interpolated Sql fragments are spliced in, anything else becomes a value.
 * @example
 * sql`SELECT 1 FROM ${ident('books')} WHERE ${ident('title')} = ${title}`
 */
export function sql (strings: TemplateStringsArray, ...parts: readonly unknown[]): Sql {
  const texts = [strings[0]]
  const values: unknown[] = []
  parts.forEach((part, i) => {
    if (part instanceof Sql) {
      texts[texts.length - 1] += part.strings[0]
      part.values.forEach((value, j) => {
        values.push(value)
        texts.push(part.strings[j + 1])
      })
    } else {
      values.push(part)
      texts.push('')
    }
    texts[texts.length - 1] += strings[i + 1]
  })
  return new Sql(texts, values)
}

/** Fixed text from this code (keywords, operators from a fixed table), never from input. */
export function raw (text: string): Sql {
  return new Sql([text], [])
}

/** A quoted, optionally qualified identifier: `"schema"."table"`. */
export function ident (...names: readonly string[]): Sql {
  return raw(names.map(quoteIdent).join('.'))
}

export function quoteIdent (name: string): string {
  // PostgreSQL cannot store NUL in a name; any other character is safe inside double quotes.
  if (name.length === 0 || name.includes('\u0000')) throw new TypeError(`invalid SQL identifier ${JSON.stringify(name)}`)
  return `"${name.replaceAll('"', '""')}"`
}

export function join (parts: readonly Sql[], separator: string): Sql {
  if (parts.length === 0) return raw('')
  const glue = raw(separator)
  return parts.slice(1).reduce((all, part) => sql`${all}${glue}${part}`, parts[0])
}

/** A value a statement made once leaves open: the `index`th of the values each use gives. */
export class Slot {
  constructor (readonly index: number) {}
}

/** A statement's text made once, from a fragment whose open values are Slots, and how each use fills them. */
export interface Template {
  readonly text: string
  fill (slots: readonly unknown[]): unknown[]
}

export function template (fragment: Sql): Template {
  const { text, values } = toQuery(fragment)
  return { text, fill: slots => values.map(value => value instanceof Slot ? slots[value.index] : value) }
}

/** Numbers the placeholders. */
export function toQuery (fragment: Sql): Query {
  let text = fragment.strings[0]
  for (let i = 1; i < fragment.strings.length; i++) text += `$${i}${fragment.strings[i]}`
  return { text, values: fragment.values }
}
