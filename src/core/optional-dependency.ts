import { ExecgateError } from './errors'

/**
 * Backends a user may not want are optional peer dependencies (package.json `peerDependenciesMeta`): installing
 * execgate does not bring them, and they are imported only when the feature is enabled. Each answers with the exact
 * `npm install …` line when it is missing. test/package/optional-dependencies.test.ts keeps this table and
 * package.json in step.
 */
export const OPTIONAL_BACKENDS = {
  lambda: { feature: 'the lambda adapter', packages: ['@aws-sdk/client-lambda'] },
  bedrock: { feature: 'the bedrock adapter', packages: ['@aws-sdk/client-bedrock-agentcore'] },
  'bedrock-llm': {
    feature: "Bedrock's Converse API (agents' code generation)",
    packages: ['@aws-sdk/client-bedrock-runtime', '@smithy/node-http-handler'],
  },
  s3: { feature: 'S3 buckets (fabric.s3: ledger blobs, bucket workspaces)', packages: ['@aws-sdk/client-s3'] },
  redis: { feature: 'the redis fabric store (fabric.store or fabric.ledger.store = redis)', packages: ['ioredis', 'bullmq'] },
  docker: { feature: 'the docker adapter', packages: ['dockerode'] },
} as const satisfies Record<string, { feature: string; packages: readonly string[] }>

export type OptionalBackend = keyof typeof OPTIONAL_BACKENDS

/** The command that installs a backend's packages, e.g. `npm install @aws-sdk/client-lambda`. */
export function installCommand(backend: OptionalBackend): string {
  return `npm install ${OPTIONAL_BACKENDS[backend].packages.join(' ')}`
}

export function dependencyMissingError(backend: OptionalBackend, cause?: unknown): ExecgateError {
  const { feature, packages } = OPTIONAL_BACKENDS[backend]
  return new ExecgateError(
    'EXECGATE_DEPENDENCY_MISSING',
    { feature, packages: packages.join(', '), install: installCommand(backend) },
    cause === undefined ? {} : { cause },
  )
}

/**
 * True when `error` says that one of the backend's own packages cannot be found (CommonJS `MODULE_NOT_FOUND`, ESM
 * `ERR_MODULE_NOT_FOUND`). A package that is installed but fails to load for another reason (one of its own
 * dependencies missing, a syntax error) is not this, and its error is kept.
 */
function isBackendMissing(error: unknown, backend: OptionalBackend): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  if (code !== 'MODULE_NOT_FOUND' && code !== 'ERR_MODULE_NOT_FOUND') return false
  return (
    typeof message === 'string' &&
    OPTIONAL_BACKENDS[backend].packages.some((name) => message.includes(`'${name}'`) || message.includes(`"${name}"`))
  )
}

/** Runs `load` (a literal `import('…')`, so types follow the package) and turns "not installed" into EXECGATE_DEPENDENCY_MISSING. */
export async function importOptional<T>(backend: OptionalBackend, load: () => Promise<T>): Promise<T> {
  try {
    return await load()
  } catch (error) {
    throw isBackendMissing(error, backend) ? dependencyMissingError(backend, error) : error
  }
}

/** The synchronous form, for a store opened in a constructor: `requireOptional('redis', () => require('ioredis'))`. */
export function requireOptional<T>(backend: OptionalBackend, load: () => T): T {
  try {
    return load()
  } catch (error) {
    throw isBackendMissing(error, backend) ? dependencyMissingError(backend, error) : error
  }
}

/** Throws EXECGATE_DEPENDENCY_MISSING unless every package of the backend resolves (start-up checks; nothing is loaded). */
export function assertInstalled(backend: OptionalBackend, resolve: (name: string) => string = require.resolve): void {
  for (const name of OPTIONAL_BACKENDS[backend].packages) {
    try {
      resolve(name)
    } catch (error) {
      throw dependencyMissingError(backend, error)
    }
  }
}
