import {
  ExecgateError,
  errorResult,
  inlineFiles,
  toWorkspaceFile,
  workspaceFileBytes,
  type CodeExecutionAdapter,
  type ExecutionContext,
  type ExecutionRequest,
  type ExecutionResult,
  type SecurityPolicy,
  type WorkspaceFile,
} from '../core'
import type { LlmProvider } from '../core/llm'
import {
  MemoryWorkspace,
  ReadRecordingWorkspace,
  RunHostFunctions,
  STANDARD_HOST_FUNCTION_NAMES,
  normalizeWorkspacePath,
  standardHostFunctions,
  type HostFunctionDefinition,
  type Workspace,
  type WorkspaceLimits,
} from '../workspace'
import type { SessionWorkspaces } from './session-workspaces'

const RUN_ENDED = new Error('the run ended')

/** The host of a run with no host functions, no files and no workspace to keep: its result goes through as it is. */
const NO_HOST: RunHost = Object.freeze({
  context: Object.freeze({}),
  finish: (result: ExecutionResult) => result,
  close: () => undefined,
  reads: () => [],
})

export interface RunHostOptions {
  /** The run's workspace; otherwise the session's, otherwise a fresh in-memory one. */
  workspace?: Workspace
  /** The caller's own host functions, beside the standard ones. */
  functions?: readonly HostFunctionDefinition[]
  /** The model `ask_llm` asks. */
  llm?: LlmProvider
}

/** The workspace and host functions of one run, and how their effects land in its result. */
export interface RunHost {
  context: Pick<ExecutionContext, 'hostFunctions' | 'files'>
  /** Moves the submitted value, the action log and the files written into the result (a promise only when there are files). */
  finish(result: ExecutionResult): ExecutionResult | Promise<ExecutionResult>
  /** Ends calls still in flight. */
  close(): void
  /** Workspace files the run read that it had not written (its inputs beyond the request's files). */
  reads(): { path: string; content: Buffer }[]
}

/** Whether the code names a standard host function or one of `own` (code cannot call a function it never names). */
export function namesHostFunction(code: string, own: readonly HostFunctionDefinition[]): boolean {
  return STANDARD_HOST_FUNCTION_NAMES.some((name) => code.includes(name)) || own.some((definition) => code.includes(definition.name))
}

/**
 * Prepares a run's workspace: the request's files written into it (a bad path or size is the caller's
 * `invalid_request`), host functions for adapters that call them, and real files for adapters that read them.
 * Synchronous when there is no file to write or copy (most runs): a promise only when there is.
 */
export function prepareRunHost(
  adapter: CodeExecutionAdapter,
  request: ExecutionRequest,
  policy: SecurityPolicy,
  options: RunHostOptions & { hostFunctions?: ExecutionContext['hostFunctions'] },
  shared: { limits: WorkspaceLimits; sessions: SessionWorkspaces; definitions: readonly HostFunctionDefinition[] },
): RunHost | ExecutionResult | Promise<RunHost | ExecutionResult> {
  // Built only when the run needs it: most runs name no host function and bring no files.
  let workspaceInUse: ReadRecordingWorkspace | undefined
  const workspace = () =>
    (workspaceInUse ??= new ReadRecordingWorkspace(
      options.workspace ?? (request.sessionId ? shared.sessions.get(request.sessionId) : undefined) ?? new MemoryWorkspace(shared.limits),
    ))
  if (request.sessionId) workspace() // keeps the session's workspace alive (its idle time restarts)
  const inProcess = adapter.capabilities.hostFunctions
  // Backends without host functions get the workspace as real files: the stable layer's and the request's.
  const copiesFiles =
    !inProcess && adapter.capabilities.workspace && Boolean(options.workspace || request.sessionId || request.files?.length)
  if (!request.files?.length && !copiesFiles) return runHost(adapter, request, policy, options, shared, workspace, () => workspaceInUse)
  return (async () => {
    for (const [index, file] of inlineFiles(request.files).entries()) {
      try {
        await workspace().write(normalizeWorkspacePath(file.path), workspaceFileBytes(file))
      } catch (error) {
        const message = error instanceof Error ? error.message.replace(/^\[execgate\] /, '') : String(error)
        return errorResult(
          'invalid_request',
          'execgate',
          new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: `files[${index}].path: ${message}` }),
        )
      }
    }
    let files: WorkspaceFile[] | undefined
    if (copiesFiles) {
      files = []
      for (const entry of await workspace().list()) {
        const content = await workspace().read(entry.path)
        if (content) files.push(toWorkspaceFile(entry.path, content))
      }
    }
    return runHost(adapter, request, policy, options, shared, workspace, () => workspaceInUse, files)
  })()
}

/** The run's host once its files are in place: host functions when the adapter calls them, and how the run's effects land. */
function runHost(
  adapter: CodeExecutionAdapter,
  request: ExecutionRequest,
  policy: SecurityPolicy,
  options: RunHostOptions & { hostFunctions?: ExecutionContext['hostFunctions'] },
  shared: { definitions: readonly HostFunctionDefinition[] },
  workspace: () => ReadRecordingWorkspace,
  workspaceInUse: () => ReadRecordingWorkspace | undefined,
  files?: WorkspaceFile[],
): RunHost {
  const inProcess = adapter.capabilities.hostFunctions
  const own = options.functions?.length ? [...shared.definitions, ...options.functions] : shared.definitions
  const implicit = adapter.capabilities.implicitHostFunctions ?? []
  const offersImplicit = implicit.length > 0 && own.some((definition) => implicit.includes(definition.name))
  const run =
    inProcess && !options.hostFunctions && (offersImplicit || namesHostFunction(request.code, own)) ? new AbortController() : undefined
  const host = run
    ? new RunHostFunctions([...own, ...standardHostFunctions({ llm: options.llm })], {
        policy,
        workspace: workspace(),
        signal: run.signal,
      }).forCode(request.code, implicit)
    : undefined
  // Files a sandbox wrote come back into the caller's workspace (a session sees them next time).
  const keepsFiles = Boolean(options.workspace || request.sessionId)
  // No host functions, no files, no workspace kept (most runs): nothing of the run's own to hold.
  if (!host && !files && !keepsFiles && !options.hostFunctions) return NO_HOST
  return {
    context: { hostFunctions: options.hostFunctions ?? (host?.list().length ? host : undefined), ...(files ? { files } : {}) },
    finish(result) {
      if (host?.submitted && (result.status === 'ok' || result.status === 'output_limit'))
        result.value = host.submitted.value as ExecutionResult['value']
      if (host?.records.length) result.hostCalls = host.records
      // Nothing written either way (most runs): the result as it is, without a turn of the event loop.
      if (!host?.written.size && !(result.files?.length && keepsFiles)) return result
      return landFiles(result, host, workspace)
    },
    // A reason of our own: without one, abort() builds a DOMException with a stack on every run.
    close: () => run?.abort(RUN_ENDED),
    reads: () => workspaceInUse()?.reads() ?? [],
  }
}

/** The files the run wrote into the result (through host functions), or a sandbox's files into the caller's workspace. */
async function landFiles(
  result: ExecutionResult,
  host: { written: ReadonlySet<string> } | undefined,
  workspace: () => ReadRecordingWorkspace,
): Promise<ExecutionResult> {
  if (host?.written.size) {
    const written: WorkspaceFile[] = []
    for (const path of host.written) {
      const content = await workspace().read(path)
      if (content) written.push(toWorkspaceFile(path, content))
    }
    result.files = written
  } else {
    for (const file of result.files ?? [])
      await workspace()
        .write(normalizeWorkspacePath(file.path), workspaceFileBytes(file))
        .catch(() => undefined)
  }
  return result
}
