// Prefer (RFC 7240) on the writes that return the resource (spec "Operations": CREATE, REPLACE,
// MODIFY): `return=minimal` answers without the body, `return=representation` (the default) with
// it; on every write, `respond-async` asks for 202 and a status monitor (work/async-writes.ts).
// Other preferences, and values this server does not know, are ignored (RFC 7240 §2).

export type ReturnPreference = 'minimal' | 'representation'

// One preference (`token [= value] *(; parameter)`), with quoted strings kept whole so that a
// comma or semicolon inside one does not split it.
const preference = /(?:[^,"]|"(?:[^"\\]|\\.)*")+/g

/** The preferences of the request's Prefer headers, as lower-case names and their values. */
function * preferences (header: string | string[]): Generator<readonly [string, string]> {
  for (const text of [header].flat()) {
    for (const [item] of text.matchAll(preference)) {
      const [name, value = ''] = (item.split(';', 1)[0]).split('=', 2).map(part => part.trim())
      yield [name.toLowerCase(), value]
    }
  }
}

/** Whether the request's Prefer headers ask for `respond-async` (RFC 7240 §4.1). */
export function prefersAsync (header: string | string[] | undefined): boolean {
  if (header === undefined) return false
  for (const [name] of preferences(header)) if (name === 'respond-async') return true
  return false
}

/** The first `return` preference of the request's Prefer headers that this server knows, if any. */
export function returnPreference (header: string | string[] | undefined): ReturnPreference | undefined {
  if (header === undefined) return undefined
  for (const [name, value] of preferences(header)) {
    if (name !== 'return') continue
    const wanted = value.replace(/^"(.*)"$/, '$1').toLowerCase()
    if (wanted === 'minimal' || wanted === 'representation') return wanted
  }
  return undefined
}
