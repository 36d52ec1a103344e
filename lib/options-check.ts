// Unknown keys in options, resource definitions and store options: refused where they are given,
// naming the full path and the key most likely meant. A misspelt key would otherwise be ignored
// and its default used in silence: `cors: { orgins }` would allow no origin at all.
import { OptionsInvalidError } from './errors.js'

/**
 * The keys an options type declares, checked against the type by the compiler: `satisfies`
 * refuses both a key the type lacks and a key of the type left out.
 * @example
 * const corsKeys = knownKeys({ origins: true, maxAge: true } satisfies Record<keyof CorsOptions, true>)
 */
export const knownKeys = (keys: Readonly<Record<string, true>>): readonly string[] => Object.freeze(Object.keys(keys))

/**
 * Throws for the first key of `given` not in `known`: `{path}.{key}`, and `did you mean "…"?` when a
 * known key differs only in case or by at most two edits. `fail` makes the error: by default
 * API_ERR_OPTIONS_INVALID.
 */
export function refuseUnknownKeys (given: object, known: readonly string[], path: string, fail: (message: string) => Error = message => new OptionsInvalidError(message)): void {
  for (const key of Object.keys(given)) {
    if (known.includes(key)) continue
    const full = path === '' ? key : `${path}.${key}`
    const meant = closestKey(key, known)
    throw fail(meant === undefined
      ? `${full} is not a known key; known: ${known.join(', ')}`
      : `${full} is not a known key; did you mean "${meant}"?`)
  }
}

/** The known key `key` was most likely meant to be: one differing only in case, else the nearest within two edits. */
export function closestKey (key: string, known: readonly string[]): string | undefined {
  const lower = key.toLowerCase()
  const sameLetters = known.find(name => name.toLowerCase() === lower)
  if (sameLetters !== undefined) return sameLetters
  let best: string | undefined
  let bestDistance = 3
  for (const name of known) {
    const distance = editDistance(key, name)
    if (distance < bestDistance) [best, bestDistance] = [name, distance]
  }
  return best
}

/** Levenshtein distance: insertions, deletions and substitutions. */
function editDistance (a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    previous = current
  }
  return previous[b.length]
}

/**
 * The options of a feature that `false` turns off: null then, else the object given (`{}` when
 * none), its keys checked. `shape` says what may be given, for the error.
 */
export function switchableOptions (value: unknown, known: readonly string[], path: string, shape: string): Record<string, unknown> | null {
  if (value === false) return null
  const given = (value ?? {}) as Record<string, unknown>
  if (typeof given !== 'object') throw new OptionsInvalidError(`${path} must be false or an object ${shape}, received ${JSON.stringify(value)}`)
  refuseUnknownKeys(given, known, path)
  return given
}

/** A whole number of at least 1, or `fallback` when not given. */
export function positiveIntegerOr (value: unknown, path: string, fallback: number): number {
  const given = value ?? fallback
  if (typeof given !== 'number' || !Number.isInteger(given) || given < 1) throw new OptionsInvalidError(`${path} must be a positive integer, received ${JSON.stringify(given)}`)
  return given
}
