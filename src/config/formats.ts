import convict from 'convict'
import cron from 'node-cron'
import { POLICY_OVERRIDES_SCHEMA } from '../core/request-schema'
import { LANGUAGES, POLICY_LIMITS } from '../core/types'
import { lazyValidator } from '../runtime/lazy-validator'

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

function integerFormat(name: string, minimum: number, text: string, maximum = Infinity) {
  return {
    name,
    // Only numeric text becomes a number, so a bad value is reported as the user wrote it.
    coerce: (value: unknown) => (typeof value === 'string' && /^\s*-?\d+\s*$/.test(value) ? Number(value) : value),
    validate: (value: unknown) => {
      if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum || value > maximum) throw new Error(`must be ${text}`)
    },
  }
}

const definitions = [
  integerFormat('positive-int', 1, 'a positive integer'),
  {
    name: 'share',
    coerce: (value: unknown) => (typeof value === 'string' && /^\s*\d*\.?\d+\s*$/.test(value) ? Number(value) : value),
    validate: (value: unknown) => {
      if (typeof value !== 'number' || !(value >= 0 && value <= 1)) throw new Error('must be a number from 0 to 1')
    },
  },
  integerFormat('non-negative-int', 0, 'an integer of 0 or more'),
  integerFormat('nice', 0, 'an integer from 0 to 10 (a Linux nice value)', 10),
  {
    name: 'adapter-name',
    validate: (value: unknown) => {
      if (typeof value !== 'string' || !NAME.test(value))
        throw new Error('must be an adapter name (lower-case letters, digits, dashes) or "auto"')
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
    name: 'tier-order',
    coerce: (value: unknown) => {
      const list = splitList(value)
      return Array.isArray(list) ? list.map((item) => (typeof item === 'string' && /^\d+$/.test(item) ? Number(item) : item)) : list
    },
    validate: (value: unknown) => {
      const tiers = [0, 1, 2, 3, 4]
      if (!Array.isArray(value) || !value.every((item) => tiers.includes(item as number)) || new Set(value).size !== value.length) {
        throw new Error(
          'must list tiers 0-4 (1 in-process, 2 remote service, 3 WebAssembly module, 4 OS sandbox, 0 placeholder), each once',
        )
      }
    },
  },
  {
    name: 'cron-schedule',
    validate: (value: unknown) => {
      if (typeof value !== 'string' || !cron.validate(value))
        throw new Error('must be a node-cron schedule, e.g. "*/30 * * * * *" (every 30 s)')
    },
  },
  {
    name: 'policy-limit-list',
    coerce: splitList,
    validate: (value: unknown) => {
      if (!Array.isArray(value) || !value.every((item) => (POLICY_LIMITS as readonly unknown[]).includes(item))) {
        throw new Error(`must be a list drawn from: ${POLICY_LIMITS.join(', ')}`)
      }
    },
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

function assertPlainObject(value: unknown, what: string): asserts value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`must be a JSON object of ${what}`)
}

const validatePolicyOverrides = lazyValidator(POLICY_OVERRIDES_SCHEMA)

/**
 * `security.profiles`: profile name → policy fields. Convict treats object-valued keys as leaves only with
 * `format: Object`, so these are checked after convict's own validation (see load.ts), with the same messages.
 */
export function checkPolicyProfiles(value: unknown): void {
  assertPlainObject(value, 'profile name → policy fields')
  for (const [name, profile] of Object.entries(value)) {
    if (!validatePolicyOverrides(profile)) {
      const error = validatePolicyOverrides.errors?.[0]
      const extra = error?.keyword === 'additionalProperties' ? [String(error.params.additionalProperty)] : []
      const field = [name, ...(error?.instancePath.split('/').filter(Boolean) ?? []), ...extra].join('.')
      throw new Error(`profile ${field}: ${extra.length ? 'is not a policy field' : (error?.message ?? 'is invalid')}`)
    }
  }
}

/** `security.languageProfiles`: language → profile name. */
export function checkLanguageProfiles(value: unknown): void {
  assertPlainObject(value, 'language → profile name')
  for (const [language, profile] of Object.entries(value)) {
    if (!(LANGUAGES as readonly string[]).includes(language))
      throw new Error(`has "${language}", which is not a language (${LANGUAGES.join(', ')})`)
    if (typeof profile !== 'string' || !profile) throw new Error(`${language} must name a profile`)
  }
}

let registered = false
/** Registers the formats once per process (convict's registry is global). */
export function registerFormats(): void {
  if (registered) return
  for (const definition of definitions) convict.addFormat(definition)
  registered = true
}

export const formats = {
  tierOrder: 'tier-order',
  cronSchedule: 'cron-schedule',
  positiveInt: 'positive-int',
  /** A fraction from 0 to 1. */
  share: 'share',
  nonNegativeInt: 'non-negative-int',
  /** A Linux nice value a thread lowers its priority by: 0 to 10 (fabric.ledger.writerNice says why not more). */
  nice: 'nice',
  adapterName: 'adapter-name',
  optionalAdapterName: 'optional-adapter-name',
  adapterNameList: 'adapter-name-list',
  stringList: 'string-list',
  network: 'network',
  /** Policy limit names, e.g. `required`. */
  limitList: 'policy-limit-list',
} as const
