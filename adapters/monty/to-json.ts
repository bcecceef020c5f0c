/**
 * Monty hands back Python values as JavaScript values with Python's shapes: dicts as `Map`, sets as `Set`, big
 * integers as `bigint`. Results must be plain JSON, so convert them (and refuse cycles rather than loop).
 */
export function toJsonValue(value: unknown, seen = new Set<unknown>()): unknown {
  if (value === null || value === undefined) return value ?? null
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value
    case 'number':
      return Number.isFinite(value) ? value : String(value)
    case 'bigint':
      return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString()
    case 'object':
      break
    default:
      return String(value)
  }
  if (seen.has(value)) return '[circular]'
  seen.add(value)
  try {
    // Tagged, not instanceof: the binding builds values in Node's own realm, which may not be the caller's.
    const tag = Object.prototype.toString.call(value)
    if (tag === '[object Map]') {
      const out: Record<string, unknown> = {}
      for (const [key, item] of value as Map<unknown, unknown>) {
        // `__proto__` as a plain key would set the prototype of `out`; define it as data instead.
        Object.defineProperty(out, String(key), { value: toJsonValue(item, seen), enumerable: true, writable: true, configurable: true })
      }
      return out
    }
    if (tag === '[object Set]' || Array.isArray(value)) return [...(value as Iterable<unknown>)].map((item) => toJsonValue(item, seen))
    const out: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value)) {
      Object.defineProperty(out, key, { value: toJsonValue(item, seen), enumerable: true, writable: true, configurable: true })
    }
    return out
  } finally {
    seen.delete(value)
  }
}
