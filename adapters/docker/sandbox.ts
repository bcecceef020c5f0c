import { randomBytes } from 'node:crypto'
import { PassThrough, type Duplex } from 'node:stream'
import { performance } from 'node:perf_hooks'
import type Docker from 'dockerode'
import {
  OutputCollector,
  ExecgateError,
  OutputCapture,
  createResult,
  valueBytes,
  type AdapterSandbox,
  type ExecutionContext,
  type ExecutionRequest,
  type ExecutionResult,
  type ExecutionStatus,
  type FileMount,
  type Language,
  type SandboxFileEntry,
  type SandboxOpenOptions,
} from '../../src/core'
import { RunController } from '../../src/runtime'
import { reportLimitBytes, runnerOutputLimits } from '../shared/python-outputs'
import { collectedOutputs } from '../shared/run-report'
import { classify } from './classify'
import type { DockerOptions } from './options'
import { SANDBOX_NODE_RUNNER, SANDBOX_PYTHON_RUNNER, sandboxCodeEnvironment } from './runners'
import { restoreContainer, snapshotContainer, type ArchiveSandbox } from './sandbox-archive'
import { runSandboxExec } from './sandbox-exec'
import { SandboxEgressFolder } from './sandbox-egress'
import { execUsers, sandboxLauncher } from './sandbox-launcher'
import { LINK_UPLOAD, SandboxUploadFolder, UPLOADS_MOUNT_POINT } from './sandbox-uploads'
import { engineMessage, startSandboxContainer } from './sandbox-container'
import type { EgressBridgeFiles } from '../shared/egress-bridge'

export { OWNER_LABEL, SANDBOX_LABEL, sweepSandboxContainers } from './sandbox-container'

const LANGUAGES: readonly Language[] = ['bash', 'python', 'javascript']
/** A shell command travels as one argument: the kernel's limit on one is 128 KiB. */
const COMMAND_LIMIT = 120 * 1024
/** Longest a file operation (itself an exec) may take. */
const FILE_OP_TIMEOUT_MS = 30_000
/** After a stop, how long the sandbox waits for the killed processes' pids to come free before the next call. */
const SETTLE_MS = 3000

/** A container kept for the sandbox's life; every exec and file operation is a `docker exec` into it. */
export class DockerSandbox implements AdapterSandbox {
  readonly languages = LANGUAGES
  private closing: Promise<void> | undefined

  private constructor(
    readonly id: string,
    private readonly container: Docker.Container,
    private readonly settings: DockerOptions,
    private readonly onClosed: (sandbox: DockerSandbox) => void,
    private readonly egressFolder: SandboxEgressFolder | undefined,
    private readonly uploads: SandboxUploadFolder,
  ) {}

  /**
   * Creates and starts the container: no network, read-only root, a size-capped tmpfs workspace owned by the
   * sandbox's user. Its upload folder is bound in read-only (sandbox-uploads.ts); when the sandbox's policy allows any
   * network, its egress folder too (sandbox-egress.ts).
   */
  static async open(
    docker: Docker,
    settings: DockerOptions,
    options: SandboxOpenOptions,
    onClosed: (sandbox: DockerSandbox) => void = () => undefined,
    egressFiles?: () => EgressBridgeFiles,
  ): Promise<DockerSandbox> {
    const { policy } = options
    const egressFolder = policy.network !== 'none' && egressFiles ? SandboxEgressFolder.create(egressFiles()) : undefined
    const uploads = SandboxUploadFolder.create()
    const container = await startSandboxContainer(
      docker,
      settings,
      options,
      [uploads.bind, ...(egressFolder ? [egressFolder.bind] : [])],
      () => {
        egressFolder?.remove()
        uploads.remove()
      },
    )
    return new DockerSandbox(options.id, container, settings, onClosed, egressFolder, uploads)
  }

  async exec(request: ExecutionRequest, context: ExecutionContext): Promise<ExecutionResult> {
    const started = performance.now()
    if (this.closing) return createResult('unavailable', 'docker', { message: `[execgate] [docker] sandbox ${this.id} is closed` })
    const policy = context.policy
    const nonce = randomBytes(12).toString('hex')
    let argv: string[]
    let env: string[] = []
    if (request.language === 'bash') {
      if (Buffer.byteLength(request.code) > COMMAND_LIMIT)
        return createResult('invalid_request', 'docker', {
          message:
            `[execgate] [docker] a command is at most ${COMMAND_LIMIT / 1024} KiB; write a longer ` +
            `script into the workspace and run it (bash script.sh)`,
        })
      argv = ['/bin/bash', '--noprofile', '--norc', '-c', request.code]
    } else if (request.language === 'python' || request.language === 'javascript') {
      const code = sandboxCodeEnvironment(request.code)
      if (!Array.isArray(code)) return createResult('invalid_request', 'docker', { message: `[execgate] [docker] ${code.refused}` })
      env = code
      argv =
        request.language === 'python'
          ? [
              '/usr/bin/python3',
              '-I',
              '-B',
              '-u',
              '-c',
              SANDBOX_PYTHON_RUNNER,
              'run',
              policy.allowedImports.join(','),
              runnerOutputLimits(policy, request.outputs),
            ]
          : ['/usr/bin/node', `--max-old-space-size=${policy.memoryMb}`, '-e', SANDBOX_NODE_RUNNER]
    } else {
      return createResult('invalid_request', 'docker', {
        message: `[execgate] [docker] a sandbox runs ${LANGUAGES.join(', ')}, not ${request.language}`,
      })
    }
    const user = execUsers(this.settings.user)[policy.filesystem]
    const owner = user === this.settings.user
    // The pids cgroup caps the whole container. An exec as another user than the workspace's (read_only, none) also
    // gets RLIMIT_NPROC, so it cannot take the pids its own kill exec needs (the keeper's builtin kill cannot reach it).
    const limits = {
      dataKiB: policy.memoryMb * 1024,
      cpuSeconds: Math.max(1, Math.ceil(policy.cpuTimeMs / 1000)),
      fileBlocks512: this.settings.workspaceMb * 2048,
      ...(owner ? {} : { processes: policy.maxProcesses + 2 + (context.egress ? 1 : 0) }),
    }
    // The sandbox's network is the ceiling: an exec's policy may only tighten it, so a sandbox opened without network
    // has no folder and an exec with network cannot reach this line with one missing.
    const egress = context.egress && this.egressFolder ? await this.egressFolder.forExec(context.egress) : undefined
    if (context.egress && !egress)
      return createResult('policy_violation', 'docker', {
        message: `[execgate] [docker] sandbox ${this.id} was started without network; an exec cannot add it`,
      })
    const output = new OutputCapture(policy.outputBytes, context.onOutput)
    // Python's rich outputs arrive while the code runs (output records on stdout), each checked and passed on at once.
    const collector = new OutputCollector(policy, context.onRichOutput)
    const outcome = await runSandboxExec(
      this.container,
      {
        Cmd: ['/bin/sh', '-c', sandboxLauncher(limits, egress?.startLine), 'launcher', ...argv],
        Env: [
          `EXECGATE_NONCE=${nonce}`,
          ...(request.language === 'bash' ? ['EXECGATE_LAUNCHER_READY=1'] : []),
          ...env,
          ...(egress?.env ?? []),
        ],
        User: user,
        WorkingDir: policy.filesystem === 'none' ? '/tmp' : '/workspace',
        ...(request.stdin !== undefined ? { stdin: request.stdin } : {}),
      },
      {
        nonce,
        output,
        controller: new RunController(context),
        startupTimeoutMs: this.settings.startupTimeoutMs,
        launcherReady: request.language === 'bash',
        kill: () => this.killAll(user),
        reportLimitBytes: reportLimitBytes(policy),
        onOutputRecord: (raw) => void collector.add(raw),
      },
    )
    if (outcome.stoppedFor) await this.settle()
    const {
      status: classified,
      value,
      error,
      outputs,
      outputsOmitted,
    } = classify(outcome, policy.memoryMb, policy.wallTimeMs, policy.cpuTimeMs, output.finish().stderr, 'the exec')
    const captured = output.finish(valueBytes(value))
    const rich = collectedOutputs(collector, { status: classified, outputs, outputsOmitted }, 'docker')
    const final: ExecutionStatus = rich.status === 'ok' && captured.truncated ? 'output_limit' : rich.status
    return createResult(final, 'docker', {
      ...captured,
      value,
      error,
      ...(rich.message ? { message: rich.message } : {}),
      ...(rich.outputs ? { outputs: rich.outputs } : {}),
      usage: { wallMs: performance.now() - started, outputBytes: output.totalBytes },
    })
  }

  /**
   * Ends every process of `user` in the container (pid 1 excepted): the keeper's builtin kill for the workspace's user,
   * an exec of `kill` for any. */
  private async killAll(user: string): Promise<void> {
    await Promise.all([
      user === this.settings.user ? this.container.kill({ signal: 'SIGUSR1' }).catch(() => undefined) : undefined,
      this.run(['/bin/sh', '-c', 'kill -9 -1'], { user, timeoutMs: 5000 }).catch(() => undefined),
    ])
  }

  /**
   * After a kill, until a trivial exec starts again: the killed processes' pids come free only once the keeper has
   * reaped them, and an exec the engine cannot start in the meantime would fail as the next call's fault.
   */
  private async settle(): Promise<void> {
    const until = performance.now() + SETTLE_MS
    while (performance.now() < until) {
      const probe = await this.run(['/bin/true'], { timeoutMs: 2000 }).catch(() => undefined)
      if (probe?.exitCode === 0) return
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }

  /** Binds the upload read-only at `mount.path` (sandbox-uploads.ts): a link into the upload folder, no copy. */
  async mountFile(mount: FileMount): Promise<void> {
    const done = await this.run(['/bin/sh', '-c', LINK_UPLOAD, 'link', mount.path, this.uploads.stage(mount)])
    if (done.exitCode !== 0)
      throw new ExecgateError('EXECGATE_WORKSPACE_PATH', { path: mount.path, reason: lastLine(done.stderr, done.exitCode) })
  }

  async writeFile(path: string, content: Uint8Array): Promise<void> {
    // Bytes written at an upload's path replace its link (writing through it would meet the read-only mount).
    const unlink = `case "$(readlink -- "$1")" in ${UPLOADS_MOUNT_POINT}/*) rm -f -- "$1";; esac`
    const script = `umask 027; mkdir -p -- "$(dirname -- "$1")" && { ${unlink}; cat > "$1"; }`
    const done = await this.run(['/bin/sh', '-c', script, 'write', path], { stdin: content })
    if (done.exitCode === 0) return
    if (/No space left|File too large/i.test(done.stderr))
      throw new ExecgateError('EXECGATE_WORKSPACE_LIMIT', {
        detail: `${path}: the sandbox's workspace is full (adapters.docker.workspaceMb)`,
      })
    throw new ExecgateError('EXECGATE_WORKSPACE_PATH', { path, reason: lastLine(done.stderr, done.exitCode) })
  }

  async readFile(path: string): Promise<Uint8Array | undefined> {
    const done = await this.run(['/bin/sh', '-c', '[ -f "$1" ] || exit 3; exec cat -- "$1"', 'read', path])
    if (done.exitCode === 3) return undefined
    if (done.exitCode !== 0) throw new ExecgateError('EXECGATE_WORKSPACE_PATH', { path, reason: lastLine(done.stderr, done.exitCode) })
    return done.stdout
  }

  async deleteFile(path: string): Promise<boolean> {
    const done = await this.run(['/bin/sh', '-c', '[ -f "$1" ] || [ -L "$1" ] || exit 3; exec rm -f -- "$1"', 'delete', path])
    if (done.exitCode === 3) return false
    if (done.exitCode !== 0) throw new ExecgateError('EXECGATE_WORKSPACE_PATH', { path, reason: lastLine(done.stderr, done.exitCode) })
    return true
  }

  /** Regular files, and the links to uploads with the upload's size (other links are not listed). */
  async listFiles(): Promise<SandboxFileEntry[]> {
    const done = await this.run(['/usr/bin/find', '/workspace', '(', '-type', 'f', '-o', '-type', 'l', ')', '-printf', '%y%s %P\\0%l\\0'])
    if (done.exitCode !== 0)
      throw new ExecgateError('EXECGATE_BACKEND_FAILED', {
        name: 'docker',
        detail: `listing the sandbox's files failed: ${done.stderr.trim()}`,
      })
    const fields = done.stdout.toString('utf8').split('\0')
    const entries: SandboxFileEntry[] = []
    for (let at = 0; at + 1 < fields.length; at += 2) {
      const entry = fields[at]!
      const space = entry.indexOf(' ')
      const size = entry[0] === 'l' ? this.uploads.bytesAt(fields[at + 1]!) : Number(entry.slice(1, space))
      if (size !== undefined) entries.push({ path: entry.slice(space + 1), size })
    }
    return entries.sort((a, b) => a.path.localeCompare(b.path))
  }

  /** The container's changed filesystem (its writable mounts) in one exec of tar (sandbox-archive.ts). */
  snapshotArchive(maxBytes: number): Promise<{ archive: Uint8Array; skipped: string[] }> {
    if (this.closing)
      return Promise.reject(new ExecgateError('EXECGATE_ADAPTER_UNAVAILABLE', { name: 'docker', detail: `sandbox ${this.id} is closed` }))
    return snapshotContainer(this.archiveView(), maxBytes)
  }

  /** Unpacks a container archive, checked, in one `PUT /archive` (sandbox-archive.ts). */
  restoreArchive(archive: Uint8Array, maxBytes: number): Promise<void> {
    return restoreContainer(this.archiveView(), archive, maxBytes)
  }

  private archiveView(): ArchiveSandbox {
    return { id: this.id, container: this.container, user: this.settings.user, uploads: this.uploads }
  }

  /** A plain exec (file operations, kills) as the workspace's owner unless told, with its output as bytes. */
  private async run(
    cmd: string[],
    options: { user?: string; stdin?: Uint8Array; timeoutMs?: number } = {},
  ): Promise<{ exitCode: number | null; stdout: Buffer; stderr: string }> {
    if (this.closing) throw new ExecgateError('EXECGATE_ADAPTER_UNAVAILABLE', { name: 'docker', detail: `sandbox ${this.id} is closed` })
    const timeoutMs = options.timeoutMs ?? FILE_OP_TIMEOUT_MS
    try {
      const exec = await this.container.exec({
        Cmd: cmd,
        User: options.user ?? this.settings.user,
        WorkingDir: '/workspace',
        AttachStdout: true,
        AttachStderr: true,
        AttachStdin: options.stdin !== undefined,
        Tty: false,
      })
      const stream = (await exec.start({ hijack: true, stdin: options.stdin !== undefined })) as unknown as Duplex
      const out: Buffer[] = []
      const err: Buffer[] = []
      const stdout = new PassThrough().on('data', (chunk: Buffer) => out.push(chunk))
      const stderr = new PassThrough().on('data', (chunk: Buffer) => err.push(chunk))
      this.container.modem.demuxStream(stream, stdout, stderr)
      if (options.stdin !== undefined) stream.end(Buffer.from(options.stdin))
      let timer: NodeJS.Timeout | undefined
      await Promise.race([
        new Promise((resolve) => (stream.on('end', resolve), stream.on('close', resolve), stream.on('error', resolve))),
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs))),
      ]).finally(() => clearTimeout(timer))
      stream.destroy()
      const inspected = await exec.inspect()
      return { exitCode: inspected.ExitCode ?? null, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString('utf8') }
    } catch (error) {
      throw new ExecgateError(
        'EXECGATE_BACKEND_FAILED',
        { name: 'docker', detail: `an exec into sandbox ${this.id} failed: ${engineMessage(error)}` },
        { cause: error, source: 'docker' },
      )
    }
  }

  /** Removes the container (its tmpfs workspace goes with it). */
  close(): Promise<void> {
    return (this.closing ??= this.container
      .remove({ force: true })
      .finally(() => {
        this.egressFolder?.remove()
        this.uploads.remove()
        this.onClosed(this)
      })
      .then(
        () => undefined,
        (error: unknown) => {
          // Already gone is done; anything else is left for the next start's sweep to find by its label.
          if (!/no such container|404/i.test(engineMessage(error)))
            throw new ExecgateError('EXECGATE_BACKEND_FAILED', {
              name: 'docker',
              detail: `sandbox ${this.id}'s container was not removed: ${engineMessage(error)}`,
            })
        },
      ))
  }
}

function lastLine(stderr: string, exitCode: number | null): string {
  return stderr.trim().split('\n').pop() || `exit code ${exitCode}`
}
