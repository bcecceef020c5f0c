import fs from 'node:fs'
import path from 'node:path'
import convict from 'convict'
import { ExecgateError, describeError } from '../core'
import { checkLanguageProfiles, checkPolicyProfiles, registerFormats } from './formats'
import { checkAdmissionTenants, checkAgentTypes } from './admission-formats'
import { assertStoreBackendsInstalled } from './optional-backends'
import { CONFIG_SCHEMA, withEnvironmentNames, type ExecgateConfig } from './schema'

export interface LoadConfigOptions {
  /** An extra config file (the CLI's `--config`), applied after config/default.json and config/<NODE_ENV>.json. */
  file?: string
  /** Folder holding default.json and <NODE_ENV>.json. @default the package's config/ folder */
  configDir?: string
  /** Environment to read `EXECGATE_*` and `NODE_ENV` from. @default process.env */
  env?: NodeJS.ProcessEnv
  /** Values applied last (programmatic use, CLI flags, tests). */
  overrides?: DeepPartial<ExecgateConfig>
}

export type DeepPartial<T> = { [K in keyof T]?: T[K] extends unknown[] ? T[K] : T[K] extends object ? DeepPartial<T[K]> : T[K] }
export type Config = DeepReadonly<ExecgateConfig>
export type DeepReadonly<T> = { readonly [K in keyof T]: T[K] extends object ? DeepReadonly<T[K]> : T[K] }

const PACKAGE_CONFIG_DIR = path.resolve(__dirname, '..', '..', '..', 'config')
const SOURCE_CONFIG_DIR = path.resolve(__dirname, '..', '..', 'config')

function defaultConfigDir(): string {
  // Compiled code lives in dist/src/config; sources (ts-jest) in src/config.
  return fs.existsSync(path.join(SOURCE_CONFIG_DIR, 'default.json')) ? SOURCE_CONFIG_DIR : PACKAGE_CONFIG_DIR
}

function readJsonFile(file: string): unknown {
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (error) {
    throw new ExecgateError('EXECGATE_CONFIG_FILE', { file, detail: describeError(error) }, { cause: error })
  }
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new ExecgateError('EXECGATE_CONFIG_FILE', { file, detail: `not valid JSON (${describeError(error)})` })
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const child of Object.values(value)) deepFreeze(child)
  }
  return value
}

/**
 * Reads, merges and validates the configuration once, and returns it deep-frozen. An unknown key or a bad value
 * throws `EXECGATE_CONFIG_INVALID` naming the key, the value given and what is allowed.
 */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  registerFormats()
  const env = options.env ?? process.env
  const schema = convict(withEnvironmentNames(CONFIG_SCHEMA) as convict.Schema<ExecgateConfig>, { env, args: [] })
  const configDir = options.configDir ?? defaultConfigDir()
  const files = [path.join(configDir, 'default.json')]
  if (env.NODE_ENV) files.push(path.join(configDir, `${env.NODE_ENV}.json`))
  try {
    for (const file of files) if (fs.existsSync(file)) schema.load(readJsonFile(file) as object)
    if (options.file) schema.load(readJsonFile(path.resolve(options.file)) as object)
    if (options.overrides) schema.load(options.overrides as object)
    schema.validate({ allowed: 'strict' })
    const { profiles, languageProfiles } = schema.get('security') as ExecgateConfig['security']
    const { tenants, agentTypes } = schema.get('admission') as ExecgateConfig['admission']
    const objectKeys = [
      ['security.profiles', checkPolicyProfiles, profiles],
      ['security.languageProfiles', checkLanguageProfiles, languageProfiles],
      ['admission.tenants', checkAdmissionTenants, tenants],
      ['admission.agentTypes', checkAgentTypes, agentTypes],
    ] as const
    for (const [key, check, value] of objectKeys) {
      try {
        check(value)
      } catch (error) {
        throw new ExecgateError('EXECGATE_CONFIG_INVALID', {
          detail: `${key}: ${(error as Error).message}: value was ${JSON.stringify(value)}`,
        })
      }
    }
    for (const [language, profile] of Object.entries(languageProfiles)) {
      if (!profiles[profile]) {
        throw new ExecgateError('EXECGATE_CONFIG_INVALID', {
          detail:
            `security.languageProfiles.${language}: no profile named "${profile}" in ` +
            `security.profiles (${Object.keys(profiles).join(', ') || 'none defined'})`,
        })
      }
    }
  } catch (error) {
    if (error instanceof ExecgateError) throw error
    // convict reports every bad key at once, one per line: keep them all.
    const detail = describeError(error).split('\n').filter(Boolean).join('; ')
    throw new ExecgateError('EXECGATE_CONFIG_INVALID', { detail }, { cause: error })
  }
  const config = schema.getProperties() as ExecgateConfig
  assertStoreBackendsInstalled(config)
  return deepFreeze(config)
}
