import fs from 'node:fs'
import { performance } from 'node:perf_hooks'
import {
  OutputCapture,
  OutputCollector,
  createResult,
  describeError,
  valueBytes,
  type AdapterSandbox,
  type ExecutionContext,
  type ExecutionRequest,
  type ExecutionResult,
  type ExecutionStatus,
  type FileMount,
  type Language,
  type SandboxFileEntry,
} from '../../src/core'
import { RunController } from '../../src/runtime'
import { reportLimitBytes } from '../shared/python-outputs'
import { collectedOutputs } from '../shared/run-report'
import { classifyExit } from './classify'
import { releaseDirectory, type SandboxDirectory } from './sandbox-directories'
import { sandboxCommand, type RunShape, type SandboxPlan } from './sandbox'
import { spawnSandbox } from './spawn-sandbox'
import { stageSandboxUpload } from './sandbox-uploads'
import { sweep as killProcessesOf } from './uid-pool'
import { WorkspaceDirectory } from './workspace-directory'

const EMPTY = new Uint8Array(0)

type ProcessLanguage = 'python' | 'javascript' | 'bash'
const LANGUAGES: readonly ProcessLanguage[] = ['bash', 'python', 'javascript']

/**
 * A persistent sandbox on the process tier: a folder on the host (a tmpfs of its own as root) and, as root, a uid
 * of its own for the sandbox's life. Each exec is a fresh bubblewrap run, exactly as a one-shot run is (namespaces,
 * read-only /usr, the exec's rlimits, and no network but the egress gateway's socket when the exec's policy — the
 * sandbox's, or tighter — allows any), with that folder bound at /workspace instead of an empty tmpfs: the files stay,
 * the processes end with the exec (its pid namespace dies with its first process).
 */
export class ProcessSandbox implements AdapterSandbox {
  readonly languages: readonly Language[] = LANGUAGES
  private readonly files: WorkspaceDirectory
  /** Uploads bound read-only for the sandbox's life, by workspace path (their staged host files). */
  private readonly mounts = new Map<string, FileMount>()
  private closing: Promise<void> | undefined

  constructor(
    readonly id: string,
    private readonly plan: SandboxPlan,
    private readonly directory: SandboxDirectory,
    maxFileBytes: number,
    /** Prepares what a language's run needs once (the compiled Python runner). */
    private readonly prepare: (language: ProcessLanguage) => void,
    private readonly onClosed: () => void,
    /** The exec's way out through the egress gateway, when its policy allows any network (egress-bridge.ts). */
    private readonly egressFor: (context: ExecutionContext) => Promise<Pick<RunShape, 'egress'>>,
  ) {
    this.files = new WorkspaceDirectory(directory.workspace, directory.uid, maxFileBytes)
  }

  async exec(request: ExecutionRequest, context: ExecutionContext): Promise<ExecutionResult> {
    const started = performance.now()
    if (!(LANGUAGES as readonly string[]).includes(request.language)) {
      return createResult('invalid_request', 'process', {
        message: `[execgate] [process] a sandbox runs ${LANGUAGES.join(', ')}, not ${request.language}`,
      })
    }
    if (this.closing) return createResult('unavailable', 'process', { message: `[execgate] [process] sandbox ${this.id} is closed` })
    const language = request.language as ProcessLanguage
    const policy = context.policy
    const output = new OutputCapture(policy.outputBytes, context.onOutput)
    const outputs = new OutputCollector(policy, context.onRichOutput)
    const uid = this.directory.uid
    try {
      this.prepare(language)
      const command = sandboxCommand(
        { ...this.plan, dedicatedUid: uid !== undefined },
        {
          language,
          policy,
          mode: 'run',
          withFiles: false,
          collectFiles: false,
          persistentWorkspace: this.directory.workspace,
          ...(request.outputs ? { outputs: request.outputs } : {}),
          ...(await this.mountsForExec()),
          ...(await this.egressFor(context)),
        },
      )
      const run = await spawnSandbox({
        ...command,
        uid,
        code: request.code,
        ...(request.stdin !== undefined ? { stdin: request.stdin } : {}),
        collectFiles: false,
        controller: new RunController(context),
        output,
        reportLimitBytes: reportLimitBytes(policy),
        archiveLimitBytes: 0,
        onOutputRecord: (raw) => void outputs.add(raw),
      })
      // A kill may leave stragglers for a moment; the next exec (and the host's file operations) must find none.
      if (uid !== undefined && (run.stoppedFor || run.signal || run.spawnError)) await killProcessesOf(uid)
      const outcome = classifyExit(run, policy, output.finish().stderr)
      const returned = outcome.status === 'ok' || outcome.status === 'error' ? outcome.value : undefined
      const captured = output.finish(valueBytes(returned))
      const rich = collectedOutputs(outputs, outcome, 'process')
      const status: ExecutionStatus = rich.status === 'ok' && captured.truncated ? 'output_limit' : rich.status
      return createResult(status, 'process', {
        ...captured,
        value: returned,
        error: outcome.error,
        ...(rich.message ? { message: rich.message } : {}),
        ...(rich.outputs ? { outputs: rich.outputs } : {}),
        usage: { wallMs: performance.now() - started, outputBytes: output.totalBytes },
      })
    } catch (error) {
      return createResult('internal_error', 'process', {
        message: `[execgate] [process] ${describeError(error)}`,
        error: { type: 'InternalError', message: describeError(error) },
      })
    }
  }

  /**
   * The uploads each exec binds over their empty placeholder files (bubblewrap's --ro-bind, sandbox.ts): the
   * placeholder is made again when the code moved its folder away; a path the code made a link or a folder of drops
   * its upload (it is the sandbox's own workspace).
   */
  private async mountsForExec(): Promise<Pick<RunShape, 'mounts'>> {
    for (const [relative, mount] of this.mounts) {
      const kept =
        fs.existsSync(mount.hostPath) &&
        (await this.files.write(relative, EMPTY).then(
          () => true,
          () => false,
        ))
      if (!kept) this.mounts.delete(relative)
    }
    return this.mounts.size ? { mounts: [...this.mounts.values()] } : {}
  }

  /** Binds the upload read-only at `mount.path` from the next exec on: no copy, and no write reaches it. */
  async mountFile(mount: FileMount): Promise<void> {
    await this.files.write(mount.path, EMPTY)
    this.mounts.set(mount.path, stageSandboxUpload(this.directory.folder, mount, this.directory.uid !== undefined))
  }

  writeFile(path: string, content: Uint8Array): Promise<void> {
    // Bytes written at an upload's path replace the binding.
    this.mounts.delete(path)
    return this.files.write(path, content)
  }

  async readFile(path: string): Promise<Uint8Array | undefined> {
    const mount = this.mounts.get(path)
    if (mount && (await this.files.read(path)) !== undefined) return fs.promises.readFile(mount.hostPath)
    return this.files.read(path)
  }

  deleteFile(path: string): Promise<boolean> {
    this.mounts.delete(path)
    return this.files.delete(path)
  }

  async listFiles(): Promise<SandboxFileEntry[]> {
    return (await this.files.list()).map((entry) => {
      const mount = this.mounts.get(entry.path)
      return mount ? { path: entry.path, size: mount.bytes } : entry
    })
  }

  /** Ends any process of its uid, unmounts the workspace and deletes the folder: the uid is free for the next sandbox. */
  close(): Promise<void> {
    return (this.closing ??= releaseDirectory(this.directory).finally(this.onClosed))
  }
}
