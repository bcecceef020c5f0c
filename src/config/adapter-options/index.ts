import { bedrockSchema, type BedrockOptionsConfig } from './bedrock'
import { dockerSchema, type DockerOptionsConfig } from './docker'
import { lambdaSchema, type LambdaOptionsConfig } from './lambda'
import { montySchema, type MontyOptionsConfig } from './monty'
import { processSchema, type ProcessOptionsConfig } from './process'
import { pyodideSchema, type PyodideOptionsConfig } from './pyodide'
import { quickjsSchema, type QuickJsOptionsConfig } from './quickjs'
import { shellSchema, type ShellOptionsConfig } from '../../../adapters/shell/options'

/**
 * Each adapter's options live in their own file here, one section per adapter under `adapters.<name>`.
 * The config layer sits below the adapters, so these describe options without importing adapter code.
 */
export interface AdapterOptionsConfig {
  quickjs: QuickJsOptionsConfig
  monty: MontyOptionsConfig
  pyodide: PyodideOptionsConfig
  process: ProcessOptionsConfig
  docker: DockerOptionsConfig
  bedrock: BedrockOptionsConfig
  lambda: LambdaOptionsConfig
  shell: ShellOptionsConfig
}

export const ADAPTER_OPTION_SCHEMAS = {
  quickjs: quickjsSchema,
  monty: montySchema,
  pyodide: pyodideSchema,
  process: processSchema,
  docker: dockerSchema,
  bedrock: bedrockSchema,
  lambda: lambdaSchema,
  shell: shellSchema,
}
