import type { CodeExecutionAdapter, Language } from '../src/core'
import type { SessionLimits } from '../src/runtime'
import { ADAPTER_OPTION_SCHEMAS, type AdapterOptionsConfig } from './option-schemas'

export { ADAPTER_OPTION_SCHEMAS, type AdapterOptionsConfig }

/** Settings every adapter may use, from the top-level config. */
export interface CommonAdapterSettings {
  sessions?: SessionLimits
  /** false: start no worker or interpreter until the first run or `warmUp()` (a one-shot CLI command). */
  warmOnStart?: boolean
}

/** The adapter options that `common` adds: sessions, and a deferred start when asked for. */
function commonOptions(common: CommonAdapterSettings | undefined): { sessions?: SessionLimits; warmOnStart?: false } {
  return { sessions: common?.sessions, ...(common?.warmOnStart === false ? { warmOnStart: false } : {}) }
}

/**
 * Every adapter execgate knows, by name. `create` imports the adapter lazily, so an adapter that is not enabled
 * costs nothing at start-up (its backend library is never loaded). A test checks that every folder under
 * adapters/ is listed here and documented in docs/adapters/.
 */
export interface AdapterDefinition {
  name: string
  /** One line for `execgate adapters` and the docs. */
  description: string
  languages: readonly Language[]
  create(options: AdapterOptionsConfig, common?: CommonAdapterSettings): Promise<CodeExecutionAdapter>
}

export const ADAPTERS: Readonly<Record<string, AdapterDefinition>> = {
  placeholder: {
    name: 'placeholder',
    description: 'runs nothing; answers not_implemented and suggests describing the computation',
    languages: ['javascript', 'typescript', 'python', 'bash'],
    create: async () => new (await import('./placeholder')).PlaceholderAdapter(),
  },
  quickjs: {
    name: 'quickjs',
    description: 'QuickJS in WebAssembly, in-process: JavaScript and TypeScript',
    languages: ['javascript', 'typescript'],
    create: async (options, common) => new (await import('./quickjs')).QuickJsAdapter({ ...options.quickjs, ...commonOptions(common) }),
  },
  monty: {
    name: 'monty',
    description: 'monty (Python subset in Rust), in-process: Python at about 10 µs a run; sessions through its REPL',
    languages: ['python'],
    create: async (options, common) => new (await import('./monty')).MontyAdapter({ ...options.monty, ...commonOptions(common) }),
  },
  pyodide: {
    name: 'pyodide',
    description: 'CPython 3.14 in WebAssembly, in permission-restricted child processes: full Python',
    languages: ['python'],
    create: async (options, common) => new (await import('./pyodide')).PyodideAdapter({ ...options.pyodide, ...commonOptions(common) }),
  },
  shell: {
    name: 'shell',
    description: 'bash on just-bash (an interpreter with ~90 coreutils) in worker threads over an in-memory workspace: no processes',
    languages: ['bash'],
    create: async (options) => new (await import('./shell')).ShellAdapter(options.shell),
  },
  process: {
    name: 'process',
    description: "the OS's python3, node and bash under bubblewrap (namespaces, rlimits, own uid): full interpreters",
    languages: ['python', 'javascript', 'bash'],
    create: async (options) => new (await import('./process')).ProcessAdapter(options.process),
  },
  docker: {
    name: 'docker',
    description: 'a fresh container per run through the Docker Engine API (Docker or podman): Python and JavaScript',
    languages: ['python', 'javascript'],
    create: async (options) => new (await import('./docker')).DockerAdapter(options.docker),
  },
  bedrock: {
    name: 'bedrock',
    description: "AWS Bedrock AgentCore's Code Interpreter, remote: Python, JavaScript, TypeScript, with sessions",
    languages: ['python', 'javascript', 'typescript'],
    create: async (options) => new (await import('./bedrock')).BedrockAdapter(options.bedrock),
  },
  lambda: {
    name: 'lambda',
    description: "execgate's own function on AWS Lambda (deploy/lambda): JavaScript, TypeScript, Python",
    languages: ['javascript', 'typescript', 'python'],
    create: async (options) => new (await import('./lambda')).LambdaAdapter(options.lambda),
  },
}

export function adapterNames(): string[] {
  return Object.keys(ADAPTERS)
}
