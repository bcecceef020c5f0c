import fs from 'node:fs'
import path from 'node:path'
import ts from 'typescript'

/**
 * The public API, chosen: every entry point of package.json's `exports` and exactly what it exports (values and
 * types), written out here and in docs/api.md ("The library's entry points"). A name added to or dropped from an entry
 * point fails this test until the list (and the doc) say so; an adapter folder without an entry point fails too.
 */

const ROOT = path.resolve(__dirname, '../..')
const packageJson = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  exports: Record<string, string | { types?: string }>
}

const CONTRACT = [
  'AdapterCapabilities',
  'AdapterRegistry',
  'AdapterSandbox',
  'Availability',
  'CodeExecutionAdapter',
  'EgressAccess',
  'EgressEndpoint',
  'EgressPlacement',
  'EgressRecord',
  'Enforcement',
  'EXECUTION_STATUSES',
  'ExecutionContext',
  'ExecutionErrorInfo',
  'ExecutionListener',
  'ExecutionListenerContext',
  'ExecutionRequest',
  'ExecutionResult',
  'ExecutionStatus',
  'FILESYSTEM_ACCESS',
  'FileMount',
  'FileReference',
  'FilesystemAccess',
  'HealthState',
  'HostCallRecord',
  'HostFunctions',
  'HostFunctionSpec',
  'Lane',
  'LANES',
  'Language',
  'LANGUAGES',
  'NetworkAccess',
  'Output',
  'OutputKind',
  'OutputOptions',
  'OutputStream',
  'POLICY_LIMITS',
  'PolicyLimit',
  'PolicyOverrides',
  'RequestFile',
  'ResourceUsage',
  'RunInfo',
  'RunNeeds',
  'RunProvenance',
  'SandboxFileEntry',
  'SandboxOpenOptions',
  'SecurityPolicy',
  'SyscallFilterSummary',
  'Tier',
  'TIER_NAMES',
  'ValidationIssue',
  'ValidationReport',
  'ValidationSeverity',
  'WorkspaceFile',
]

const FRAMEWORK_TOOL = ['CodeRunner', 'CodeToolAnswer', 'CodeToolInput', 'CodeToolOptions', 'executeCodeTool', 'SandboxLike']

/** Entry point → every name it exports. */
const PUBLIC_API: Record<string, readonly string[]> = {
  '.': [
    ...CONTRACT,
    // the library
    'AdapterStatus',
    'createExecgate',
    'Execgate',
    'ExecgateOptions',
    'ExecgateStatus',
    // helpers an adapter of your own needs, and the errors
    'createResult',
    'ResultFields',
    'enforcementTable',
    'ERROR_CODES',
    'ErrorCode',
    'ExecgateError',
    'Fault',
    'isExecgateError',
    'EXECUTION_REQUEST_SCHEMA',
    // configuration and policy
    'DEFAULT_POLICY',
    'ExecgateConfig',
    'explainPolicy',
    'loadConfig',
    'LoadConfigOptions',
    'LoadedConfig',
    'PolicyExplanation',
    'resolvePolicy',
    // binding your own adapter, router or listener
    'adapterToken',
    'tokens',
    'AdapterAdmissionStatus',
    'AdmissionStatus',
    'ExecuteOptions',
    'ExecutionService',
    'HealthEvent',
    'Logger',
    'ReadinessMonitor',
    'RouteDecision',
    'RouteHints',
    'Router',
    'SwitchEvent',
    // workspaces and host functions
    'DirectoryLayer',
    'HostCall',
    'HostFunctionDefinition',
    'MemoryWorkspace',
    'OverlayWorkspace',
    'S3Layer',
    'S3Settings',
    'S3Workspace',
    'Workspace',
    'WorkspaceEntry',
    'WorkspaceLayer',
    'WorkspaceLimits',
    // what an Execgate's tasks, ledger, plans and sandboxes take and return
    'RetryPolicy',
    'Task',
    'TaskEvent',
    'TaskProvenance',
    'TaskService',
    'TaskStore',
    'TaskSpec',
    'TaskState',
    'TaskStreamItem',
    'TaskOutput',
    'ExportFormat',
    'LedgerCaller',
    'LedgerService',
    'Lineage',
    'OpenLineageRunEvent',
    'PlanVersionInput',
    'ProvDocument',
    'RetentionReport',
    'RunRecord',
    'VerifyReport',
    'PlanChanges',
    'PlanEvent',
    'PlanOutputEvent',
    'PlanStreamItem',
    'PlanRevision',
    'PlanService',
    'PlanStore',
    'PlanSpec',
    'PlanState',
    'PlanStepSpec',
    'PlanStepView',
    'PlanSummary',
    'PlanVersion',
    'PlanView',
    'Sandbox',
    'SandboxCaller',
    'SandboxExecOptions',
    'SandboxExecRequest',
    'SandboxInfo',
    'SandboxService',
    'SandboxStartOptions',
    // a language model, and the egress gateway
    'BedrockConverseOptions',
    'BedrockConverseProvider',
    'LlmMessage',
    'LlmProvider',
    'LlmRequest',
    'EgressGateway',
    'EgressGatewayOptions',
    'EgressResolver',
    'SecretDefinition',
    'systemResolver',
    'tableResolver',
  ],
  './agents': [
    'Backoff',
    'BedrockConverseOptions',
    'BedrockConverseProvider',
    'CodeExecutionHandler',
    'CodeGenerationError',
    'CodeGenerator',
    'CodeRunner',
    'ComputationRequest',
    'ComputationResponse',
    'extractCode',
    'GeneratedCode',
    'GenerateOptions',
    'HandlerOptions',
    'LlmMessage',
    'LlmProvider',
    'RetryOptions',
    'RetryStrategy',
  ],
  './server': [
    'buildServer',
    'createMcpServer',
    'RunningServer',
    'serve',
    'serveMcpStdio',
    'ServeOptions',
    'ServerOptions',
    'Tenant',
    'tenantsByKey',
  ],
  './client': [
    'CallOptions',
    'CLIENT_ROUTES',
    'ErrorCode',
    'EventStreamOptions',
    'ExecgateClient',
    'ExecgateClientError',
    'ExecgateClientOptions',
    'ExecutionEvent',
    'ExecutionRequest',
    'ExecutionResult',
    'ExecutionStatus',
    'ExportOptions',
    'isExecgateClientError',
    'Language',
    'LedgerPublicKey',
    'Lineage',
    'LineageLimits',
    'ListOptions',
    'OpenLineageRunEvent',
    'PlanEvent',
    'PlanOutputEvent',
    'PlanStreamItem',
    'PlanSpec',
    'PlanState',
    'PlanSummary',
    'PlanView',
    'ProvDocument',
    'readSse',
    'ReceiptEnvelope',
    'RemoteBytes',
    'RemoteExecOptions',
    'RemoteExecuteOptions',
    'RemoteFiles',
    'RemoteLedger',
    'RemotePlans',
    'RemoteSandbox',
    'RemoteSandboxes',
    'RemoteTasks',
    'RemoteUploads',
    'ResumeChanges',
    'RetryOptions',
    'RouteName',
    'RunProvenanceRecord',
    'SandboxExecRequest',
    'SandboxFile',
    'SandboxFileEntry',
    'SandboxInfo',
    'SandboxSnapshot',
    'SandboxStartOptions',
    'SavedArtifact',
    'SseMessage',
    'Task',
    'TaskEvent',
    'TaskSpec',
    'TaskState',
    'TaskStreamEvent',
    'TransportOptions',
    'UploadedFile',
    'UploadOptions',
    'UploadResult',
    'UploadSource',
    'ValidationReport',
    'VerifyReport',
    'WorkspaceFile',
  ],
  // The framework tools: one factory each, over an Execgate or an ExecgateClient.
  './ai-sdk': FRAMEWORK_TOOL,
  './langchain': FRAMEWORK_TOOL,
  './openai-agents': FRAMEWORK_TOOL,
  './mastra': FRAMEWORK_TOOL,
  './adapters/bedrock': ['BedrockAdapter', 'BedrockAdapterOptions', 'BedrockOptions', 'NAME'],
  './adapters/docker': ['DockerAdapter', 'DockerAdapterOptions', 'DockerOptions', 'NAME', 'resolveSocketPath'],
  './adapters/lambda': ['LambdaAdapter', 'LambdaAdapterOptions', 'LambdaOptions', 'MAX_PAYLOAD_BYTES', 'NAME'],
  './adapters/monty': ['createMontyAdapter', 'MONTY_MODULES', 'MontyAdapter', 'MontyAdapterOptions', 'MontyOptions', 'NAME'],
  './adapters/placeholder': ['createPlaceholderAdapter', 'NAME', 'PlaceholderAdapter', 'PlaceholderAdapterOptions'],
  './adapters/process': ['BASH_COST', 'createProcessAdapter', 'NAME', 'ProcessAdapter', 'ProcessAdapterOptions', 'ProcessOptions'],
  './adapters/pyodide': ['createPyodideAdapter', 'NAME', 'PyodideAdapter', 'PyodideAdapterOptions', 'PyodideOptions'],
  './adapters/quickjs': ['createQuickJsAdapter', 'MAX_SAFE_STACK_KIB', 'NAME', 'QuickJsAdapter', 'QuickJsAdapterOptions', 'QuickJsOptions'],
  './adapters/shell': ['createShellAdapter', 'MIN_HEAP_MB', 'NAME', 'ShellAdapter', 'ShellAdapterOptions'],
}

/** The source file an entry point's declarations are built from: ./dist/src/index.d.ts → src/index.ts. */
function sourceOf(entry: string): string {
  const target = packageJson.exports[entry]
  const types = typeof target === 'string' ? target : target?.types
  if (!types) throw new Error(`package.json exports["${entry}"] has no types`)
  return path.join(ROOT, types.replace(/^\.\/dist\//, '').replace(/\.d\.ts$/, '.ts'))
}

const entries = Object.keys(packageJson.exports).filter((entry) => entry !== './package.json')
const program = ts.createProgram(entries.map(sourceOf), {
  module: ts.ModuleKind.CommonJS,
  target: ts.ScriptTarget.ES2022,
  strict: true,
  esModuleInterop: true,
  skipLibCheck: true,
  experimentalDecorators: true,
  resolveJsonModule: true,
  noEmit: true,
})
const checker = program.getTypeChecker()

function exportedNames(entry: string): string[] {
  const source = program.getSourceFile(sourceOf(entry))
  const symbol = source && checker.getSymbolAtLocation(source)
  if (!symbol) throw new Error(`${entry}: ${sourceOf(entry)} is not a module`)
  return checker
    .getExportsOfModule(symbol)
    .map((item) => item.name)
    .sort()
}

const sorted = (names: readonly string[]) => [...names].sort()

describe('the public API', () => {
  test('every entry point of package.json has its list here (add one to PUBLIC_API and docs/api.md)', () => {
    expect(sorted(entries)).toEqual(sorted(Object.keys(PUBLIC_API)))
  })

  test.each(Object.keys(PUBLIC_API))('%s exports exactly its chosen names', (entry) => {
    expect(exportedNames(entry)).toEqual(sorted(PUBLIC_API[entry]!))
  })

  test('every adapter folder has an entry point', () => {
    const folders = fs
      .readdirSync(path.join(ROOT, 'adapters'), { withFileTypes: true })
      .filter((item) => item.isDirectory() && item.name !== 'shared')
      .map((item) => item.name)
    expect(folders.length).toBeGreaterThan(5)
    expect(folders.filter((name) => !(`./adapters/${name}` in packageJson.exports))).toEqual([])
  })

  test('the machinery stays out of the library entry', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the entry point's run-time names, as a user's require sees them
    const library = Object.keys(require(sourceOf('.')) as object)
    expect(library).toEqual(expect.arrayContaining(['createExecgate', 'ExecgateError', 'loadConfig', 'tokens', 'adapterToken']))
    const internals = [
      'createContainer',
      'WorkerPool',
      'Pool',
      'SessionStore',
      'LruCache',
      'OutputCapture',
      'RunHostFunctions',
      'S3Objects',
      'staticValidationReport',
      'checkJavaScript',
      'describeError',
      'ReadRecordingWorkspace',
    ]
    expect(library.filter((name) => internals.includes(name))).toEqual([])
  })

  test('docs/api.md lists every entry point', () => {
    const doc = fs.readFileSync(path.join(ROOT, 'docs/api.md'), 'utf8')
    expect(entries.filter((entry) => !doc.includes(`\`${path.posix.join('execgate', entry)}\``))).toEqual([])
  })
})
