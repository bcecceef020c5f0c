import convict from 'convict'

/**
 * Named convict formats. Each throws a message saying what is allowed; convict prefixes the key and appends the
 * value given, so a bad setting reads `security.defaultPolicy.memoryMb: must be a positive integer: value was -5`.
 * `coerce` turns environment strings (always text) into the right type.
 */

const NAME = /^[a-z][a-z0-9-]*$/

function splitList(value: unknown): unknown {
  if (typeof value !== 'string') return value
  const trimmed = value.trim()
  if (trimmed.startsWith('[')) return JSON.parse(trimmed)
  return trimmed === '' ? [] : trimmed.split(',').map((item) => item.trim())
}

function assertStringArray(value: unknown, what: string): asserts value is string[] {
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string' && item.length > 0)) {
    throw new Error(`must be a list of ${what} (a JSON array, or comma-separated in the environment)`)
  }
}

function integerFormat(name: string, minimum: number, text: string) {
  return {
    name,
    // Only numeric text becomes a number, so a bad value is reported as the user wrote it.
    coerce: (value: unknown) => (typeof value === 'string' && /^\s*-?\d+\s*$/.test(value) ? Number(value) : value),
    validate: (value: unknown) => {
      if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum) throw new Error(`must be ${text}`)
    },
  }
}

const definitions = [
  integerFormat('positive-int', 1, 'a positive integer'),
  integerFormat('non-negative-int', 0, 'an integer of 0 or more'),
  {
    name: 'adapter-name',
    validate: (value: unknown) => {
      if (typeof value !== 'string' || !NAME.test(value)) throw new Error('must be an adapter name (lower-case letters, digits, dashes) or "auto"')
    },
  },
  {
    name: 'optional-adapter-name',
    validate: (value: unknown) => {
      if (typeof value !== 'string' || (value !== '' && !NAME.test(value))) throw new Error('must be an adapter name, or empty for none')
    },
  },
  {
    name: 'adapter-name-list',
    coerce: splitList,
    validate: (value: unknown) => {
      assertStringArray(value, 'adapter names')
      const bad = value.find((item) => !NAME.test(item))
      if (bad !== undefined) throw new Error(`must be a list of adapter names; "${bad}" is not one`)
    },
  },
  {
    name: 'string-list',
    coerce: splitList,
    validate: (value: unknown) => assertStringArray(value, 'non-empty strings'),
  },
  {
    name: 'network',
    coerce: (value: unknown) => (value === 'none' ? value : splitList(value)),
    validate: (value: unknown) => {
      if (value === 'none') return
      assertStringArray(value, 'host names, or "none"')
    },
  },
] as const

let registered = false
/** Registers the formats once per process (convict's registry is global). */
export function registerFormats(): void {
  if (registered) return
  for (const definition of definitions) convict.addFormat(definition)
  registered = true
}

export const formats = {
  positiveInt: 'positive-int',
  nonNegativeInt: 'non-negative-int',
  adapterName: 'adapter-name',
  optionalAdapterName: 'optional-adapter-name',
  adapterNameList: 'adapter-name-list',
  stringList: 'string-list',
  network: 'network',
  /** A list drawn from a fixed set, e.g. policy limit names. */
  limitList(allowed: readonly string[]) {
    return (value: unknown) => {
      const list = splitList(value)
      if (!Array.isArray(list) || !list.every((item) => allowed.includes(item as string))) {
        throw new Error(`must be a list drawn from: ${allowed.join(', ')}`)
      }
    }
  },
} as const
