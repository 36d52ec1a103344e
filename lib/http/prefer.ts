// Prefer (RFC 7240) on the writes that return the resource (spec "Operations": CREATE, REPLACE,
// MODIFY): `return=minimal` answers without the body, `return=representation` (the default) with
// it. Other preferences, and values this server does not know, are ignored (RFC 7240 §2).

export type ReturnPreference = 'minimal' | 'representation'

// One preference (`token [= value] *(; parameter)`), with quoted strings kept whole so that a
// comma or semicolon inside one does not split it.
const preference = /(?:[^,"]|"(?:[^"\\]|\\.)*")+/g

/** The first `return` preference of the request's Prefer headers that this server knows, if any. */
export function returnPreference (header: string | string[] | undefined): ReturnPreference | undefined {
  if (header === undefined) return undefined
  for (const text of [header].flat()) {
    for (const [item] of text.matchAll(preference)) {
      const [name, value = ''] = (item.split(';', 1)[0]).split('=', 2).map(part => part.trim())
      if (name.toLowerCase() !== 'return') continue
      const wanted = value.replace(/^"(.*)"$/, '$1').toLowerCase()
      if (wanted === 'minimal' || wanted === 'representation') return wanted
    }
  }
  return undefined
}
