// The plugin's caches (parsed filters and list queries, shared paging tokens, the memory store's
// sorted indexes) hold at most a fixed number of entries, so that what clients send cannot grow
// memory without bound.

/**
 * Sets `key` in `map`, which holds at most `limit` entries: a new key past the limit makes the
 * oldest entry leave (Map order is insertion order). Returns `value`.
 */
export function keepBounded<K, V> (map: Map<K, V>, limit: number, key: K, value: V): V {
  if (!map.has(key) && map.size >= limit) map.delete(map.keys().next().value as K)
  map.set(key, value)
  return value
}
