import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import type Docker from 'dockerode'
import {
  OutputCollector,
  OutputCapture,
  createResult,
  describeError,
  importOptional,
  isExecgateError,
  enforcementTable,
  valueBytes,
  type AdapterCapabilities,
  type Availability,
  type CodeExecutionAdapter,
  type ExecutionContext,
  type OutputOptions,
  type ExecutionRequest,
  type ExecutionResult,
  type ExecutionStatus,
  type Language,
  type SandboxOpenOptions,
  type ValidationReport,
  inlineFiles,
} from '../../src/core'
import { RunController } from '../../src/runtime'
import { withOptionDefaults } from '../shared/option-schema'
import { reportLimitBytes, runnerOutputLimits } from '../shared/python-outputs'
import { collectedOutputs } from '../shared/run-report'
import { DOCKER_OPTIONS_SCHEMA, type DockerAdapterOptions, type DockerOptions } from './options'
import { runContainer } from './container-run'
import { runLabels } from './run-labels'
import { sweepRunContainers } from './run-sweep'
import { classify } from './classify'
import { DockerSandbox, sweepSandboxContainers } from './sandbox'
import { DOCKER_NODE_RUNNER, DOCKER_PYTHON_RUNNER, PAYLOAD_LIMIT, payloadEnvironment } from './runners'
import { containerEgress } from './container-egress'
import { writeEgressBridgeFiles, type EgressBridgeFiles } from '../shared/egress-bridge'

export const NAME = 'docker'

export type { DockerAdapterOptions, DockerOptions } from './options'

type DockerLanguage = 'python' | 'javascript'
const LANGUAGES: readonly DockerLanguage[] = ['python', 'javascript']
const AVAILABILITY_TIMEOUT_MS = 3000

/** The socket: config, else DOCKER_HOST (unix://…), else Docker's default. */
export function resolveSocketPath(configured: string, env: NodeJS.ProcessEnv = process.env): string {
  if (configured) return configured
  const host = env.DOCKER_HOST
  if (host?.startsWith('unix://')) return host.slice('unix://'.length)
  return '/var/run/docker.sock'
}

/**
 * A fresh container per execution through the Docker Engine API (Docker, or podman's compatible service), tier 4:
 * no network, memory and swap equal, a pids limit, read-only root, a size-capped tmpfs workspace, every capability
 * dropped, no-new-privileges, an unprivileged user and explicit ulimits. Killed on the deadline, removed always.
 */
export class DockerAdapter implements CodeExecutionAdapter {
  readonly name = NAME
  readonly capabilities: AdapterCapabilities
  private readonly settings: DockerOptions
  private readonly injected?: Docker
  private client?: Docker
  private readonly running = new Set<Promise<unknown>>()
  private readonly sandboxes = new Set<DockerSandbox>()
  /** The egress bridge's forwarder and preload, written at the first run with network. */
  private egressFiles?: EgressBridgeFiles
  /** The sweep of dead processes' run containers, started at the first call to the engine. */
  private runSweep?: Promise<number>

  constructor(options: DockerAdapterOptions = {}) {
    this.settings = withOptionDefaults(DOCKER_OPTIONS_SCHEMA, options)
    this.injected = options.client
    this.capabilities = {
      languages: LANGUAGES,
      tier: 4,
      isolation:
        'a container per run: namespaces, cgroup memory and pids limits, read-only root, no ' +
        'network but the egress gateway, no capabilities',
      enforcement: enforcementTable({
        wallTime: 'hard',
        cpuTime: 'hard',
        memory: 'hard',
        output: 'hard',
        network: 'hard',
        filesystem: 'hard',
        processes: 'hard',
        imports: 'soft',
      }),
      sessions: false,
      hostFunctions: false,
      workspace: true,
      fileMounts: true,
      streaming: true,
      // Only through the egress gateway's proxy socket bound into a container without network (container-egress.ts).
      network: true,
      cancellable: true,
      sandboxes: true,
      packages: Object.freeze(
        this.settings.pythonPackages
          .split(',')
          .map((name) => name.trim())
          .filter(Boolean),
      ),
    }
  }

  /** dockerode is loaded on first use, so an adapter that is not enabled costs nothing. */
  private async docker(): Promise<Docker> {
    if (!this.injected && !this.client) {
      const { default: DockerClient } = await importOptional('docker', () => import('dockerode'))
      this.client = new DockerClient({ socketPath: resolveSocketPath(this.settings.socketPath) })
    }
    const client = (this.injected ?? this.client)!
    // At the adapter's start (its first call to the engine), behind it: a run does not wait for the sweep.
    this.runSweep ??= sweepRunContainers(client).catch(() => 0)
    return client
  }

  /**
   * Removes the run containers of execgate processes of this host that died mid-run (kill -9); started by the first
   * call to the engine, once per adapter. Resolves with how many it removed; an engine that does not answer removes none.
   */
  async sweepDeadRuns(): Promise<number> {
    try {
      await this.docker()
    } catch {
      return 0
    }
    return this.runSweep!
  }

  supportedLanguages(): readonly Language[] {
    return LANGUAGES
  }

  async execute(request: ExecutionRequest, context: ExecutionContext): Promise<ExecutionResult> {
    const started = performance.now()
    if (!(LANGUAGES as readonly string[]).includes(request.language)) {
      return createResult('invalid_request', NAME, {
        message: `[execgate] [docker] the docker adapter runs ${LANGUAGES.join(', ')}, not ${request.language}`,
      })
    }
    const payload = payloadEnvironment(request.code, context.files ?? inlineFiles(request.files) ?? [])
    if (!payload) {
      return createResult('invalid_request', NAME, {
        message:
          `[execgate] [docker] code and files together are over ${PAYLOAD_LIMIT / 1024} KiB once ` +
          `encoded; the docker adapter passes them through the environment`,
      })
    }
    const task = this.run(request.language as DockerLanguage, payload, context, started, request.outputs)
    this.running.add(task)
    try {
      return await task
    } catch (error) {
      // dockerode is an optional peer dependency: without it the adapter is `unavailable`, saying what to install.
      if (isExecgateError(error, 'EXECGATE_DEPENDENCY_MISSING'))
        return createResult('unavailable', NAME, { message: error.message, error: { type: error.code, message: error.message } })
      return createResult('internal_error', NAME, { message: `[execgate] [docker] ${describeError(error)}` })
    } finally {
      this.running.delete(task)
    }
  }

  private async run(
    language: DockerLanguage,
    payload: string[],
    context: ExecutionContext,
    started: number,
    outputOptions?: OutputOptions,
  ): Promise<ExecutionResult> {
    const policy = context.policy
    const nonce = randomBytes(12).toString('hex')
    const memory = policy.memoryMb * 2 ** 20
    const cpuSeconds = Math.max(1, Math.ceil(policy.cpuTimeMs / 1000))
    const argv =
      language === 'python'
        ? [
            '/usr/bin/python3',
            '-I',
            '-B',
            '-u',
            '-c',
            DOCKER_PYTHON_RUNNER,
            'run',
            policy.allowedImports.join(','),
            runnerOutputLimits(policy, outputOptions),
          ]
        : ['/usr/bin/node', `--max-old-space-size=${policy.memoryMb}`, '-e', DOCKER_NODE_RUNNER]
    const egress = context.egress
      ? containerEgress((this.egressFiles ??= writeEgressBridgeFiles()), await context.egress.endpoint(), language)
      : undefined
    const spec: Docker.ContainerCreateOptions = {
      Image: language === 'python' ? this.settings.pythonImage : this.settings.nodeImage,
      // As in the process adapter, RLIMIT_DATA too: the cgroup counts only touched pages, so a huge untouched
      // ArrayBuffer or wasm memory would pass it. Set by a shell inside, since runc's own start-up needs more.
      // A run with network starts the egress forwarder first, as the process tier's launcher does.
      Cmd: ['/bin/sh', '-c', `ulimit -d ${policy.memoryMb * 1024} || exit 126; ${egress?.startLine ?? ''}\nexec "$@"`, 'launcher', ...argv],
      Entrypoint: [],
      Env: [
        'PATH=/usr/bin:/bin',
        'HOME=/workspace',
        'LANG=C.UTF-8',
        'MPLBACKEND=Agg',
        'MPLCONFIGDIR=/tmp/matplotlib',
        `EXECGATE_NONCE=${nonce}`,
        ...payload,
        ...(egress?.env ?? []),
      ],
      User: this.settings.user,
      WorkingDir: '/workspace',
      NetworkDisabled: true,
      Tty: false,
      AttachStdout: true,
      AttachStderr: true,
      Labels: runLabels(context.traceId),
      HostConfig: {
        NetworkMode: 'none',
        Memory: memory,
        MemorySwap: memory, // equal: no swap, so the limit is the limit
        // The code's processes, plus node's own threads.
        PidsLimit: policy.maxProcesses + (language === 'javascript' ? 16 : 4) + (egress ? 1 : 0),
        ReadonlyRootfs: true,
        ...(egress ? { Binds: egress.binds } : {}),
        Tmpfs: { '/workspace': `rw,size=${this.settings.workspaceMb}m,mode=1777`, '/tmp': 'rw,size=16m,mode=1777' },
        // Uploads bound read-only from the upload store over the workspace's tmpfs: a 100 MB CSV never passes
        // through the environment (the payload's limit) or a copy.
        ...(context.mounts?.length
          ? {
              Mounts: context.mounts.map((mount) => ({
                Type: 'bind' as const,
                Source: mount.hostPath,
                Target: `/workspace/${mount.path}`,
                ReadOnly: true,
              })),
            }
          : {}),
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        // Explicit, and no higher than an engine's own hard limits (podman refuses to raise them).
        Ulimits: [
          { Name: 'nofile', Soft: 256, Hard: 256 },
          { Name: 'nproc', Soft: 4096, Hard: 4096 },
          { Name: 'cpu', Soft: cpuSeconds, Hard: cpuSeconds + 1 },
          { Name: 'fsize', Soft: this.settings.workspaceMb * 2 ** 20, Hard: this.settings.workspaceMb * 2 ** 20 },
          { Name: 'core', Soft: 0, Hard: 0 },
        ],
        AutoRemove: false,
      },
    }
    const output = new OutputCapture(policy.outputBytes, context.onOutput)
    // Python's rich outputs arrive while the code runs (output records on stdout), each checked and passed on at once.
    const collector = new OutputCollector(policy, context.onRichOutput)
    const outcome = await runContainer(await this.docker(), spec, {
      nonce,
      reportLimitBytes: reportLimitBytes(policy),
      onOutputRecord: (raw) => void collector.add(raw),
      startupTimeoutMs: this.settings.startupTimeoutMs,
      output,
      // The code's time starts when the runner reaches it (create, start and the interpreter's start cost 0.3–0.6 s,
      // more on a busy engine).
      controller: new RunController(context),
      removingInBackground: (removal) => {
        this.running.add(removal)
        void removal.finally(() => this.running.delete(removal))
      },
    })
    const {
      status: classified,
      value,
      error,
      outputs,
      outputsOmitted,
    } = classify(outcome, policy.memoryMb, policy.wallTimeMs, policy.cpuTimeMs, output.finish().stderr)
    const captured = output.finish(valueBytes(value))
    const rich = collectedOutputs(collector, { status: classified, outputs, outputsOmitted }, 'docker')
    const final: ExecutionStatus = rich.status === 'ok' && captured.truncated ? 'output_limit' : rich.status
    return createResult(final, NAME, {
      ...captured,
      value,
      error,
      ...(rich.message ? { message: rich.message } : {}),
      ...(rich.outputs ? { outputs: rich.outputs } : {}),
      usage: { wallMs: performance.now() - started, outputBytes: output.totalBytes },
    })
  }

  /** Syntax through the policy's parsers happens in the service; here, only whether the language is ours. */
  async validate(_code: string, language: Language): Promise<ValidationReport> {
    const supported = (LANGUAGES as readonly string[]).includes(language)
    return {
      valid: supported,
      language,
      validator: NAME,
      issues: supported
        ? [
            {
              severity: 'warning',
              code: 'not_implemented',
              message: 'the docker adapter compiles code only by running it; the policy checks still apply',
            },
          ]
        : [{ severity: 'error', code: 'unsupported', message: `the docker adapter runs ${LANGUAGES.join(', ')}, not ${language}` }],
      implemented: false,
    }
  }

  /** The engine answers a ping, and the configured images exist; each failure says which. */
  async checkAvailability(): Promise<Availability> {
    const checkedAt = new Date().toISOString()
    const started = performance.now()
    const socket = this.injected ? 'the injected client' : `unix://${resolveSocketPath(this.settings.socketPath)}`
    const withTimeout = <T>(work: Promise<T>) =>
      Promise.race([
        work,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error(`no answer within ${AVAILABILITY_TIMEOUT_MS} ms`)), AVAILABILITY_TIMEOUT_MS).unref(),
        ),
      ])
    try {
      const docker = await this.docker()
      await withTimeout(docker.ping())
      for (const image of new Set([this.settings.pythonImage, this.settings.nodeImage])) {
        try {
          await withTimeout(docker.getImage(image).inspect())
        } catch {
          return {
            status: 'unavailable',
            reason:
              `image ${image} not found in the engine at ${socket}; build it with ` +
              `scripts/setup/podman.sh or set adapters.docker.*Image`,
            checkedAt,
          }
        }
      }
      return { status: 'available', latencyMs: performance.now() - started, checkedAt }
    } catch (error) {
      if (isExecgateError(error, 'EXECGATE_DEPENDENCY_MISSING')) return { status: 'unavailable', reason: error.message, checkedAt }
      return { status: 'unavailable', reason: `no Docker Engine API at ${socket}: ${describeError(error)}`, checkedAt }
    }
  }

  /** A container kept for the sandbox's life; each exec is a `docker exec` into it (adapters/docker/sandbox.ts). */
  async openSandbox(options: SandboxOpenOptions): Promise<DockerSandbox> {
    const sandbox = await DockerSandbox.open(
      await this.docker(),
      this.settings,
      options,
      (closed) => this.sandboxes.delete(closed),
      () => (this.egressFiles ??= writeEgressBridgeFiles()),
    )
    this.sandboxes.add(sandbox)
    return sandbox
  }

  /** Removes sandbox containers (by label) whose owning execgate process is gone; an engine that does not answer removes nothing. */
  async sweepSandboxes(): Promise<number> {
    try {
      return await sweepSandboxContainers(await this.docker())
    } catch {
      return 0
    }
  }

  async dispose(): Promise<void> {
    await Promise.allSettled([this.runSweep, ...this.running, ...[...this.sandboxes].map((sandbox) => sandbox.close())])
  }
}
