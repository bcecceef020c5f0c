/**
 * Each adapter's options, declared in its own adapters/<name>/options.ts (doc, format, default, env var), gathered
 * for src/config to compose under `adapters.<name>`. This file imports only options files, never adapter code, so
 * loading the config never loads a backend and the config layer never depends on an adapter (no import cycle).
 */
import { BEDROCK_OPTIONS_SCHEMA } from './bedrock/options'
import { DOCKER_OPTIONS_SCHEMA } from './docker/options'
import { LAMBDA_OPTIONS_SCHEMA } from './lambda/options'
import { MONTY_OPTIONS_SCHEMA } from './monty/options'
import { PROCESS_OPTIONS_SCHEMA } from './process/options'
import { PYODIDE_OPTIONS_SCHEMA } from './pyodide/options'
import { QUICKJS_OPTIONS_SCHEMA } from './quickjs/options'
import { SHELL_OPTIONS_SCHEMA } from './shell/options'
import type { OptionSchema } from './shared/option-schema'

export const ADAPTER_OPTION_SCHEMAS = {
  quickjs: QUICKJS_OPTIONS_SCHEMA,
  monty: MONTY_OPTIONS_SCHEMA,
  pyodide: PYODIDE_OPTIONS_SCHEMA,
  process: PROCESS_OPTIONS_SCHEMA,
  docker: DOCKER_OPTIONS_SCHEMA,
  bedrock: BEDROCK_OPTIONS_SCHEMA,
  lambda: LAMBDA_OPTIONS_SCHEMA,
  shell: SHELL_OPTIONS_SCHEMA,
}

type OptionsOf<Schema> = Schema extends OptionSchema<infer Options> ? Options : never

/** The `adapters` config section: each adapter's options, by name. */
export type AdapterOptionsConfig = { [Name in keyof typeof ADAPTER_OPTION_SCHEMAS]: OptionsOf<(typeof ADAPTER_OPTION_SCHEMAS)[Name]> }
