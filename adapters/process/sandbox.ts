import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { FileMount, OutputOptions, SecurityPolicy } from '../../src/core'
import { egressBridgeArgs, type EgressBridgeFiles } from './egress-bridge'
import { FD, NODE_RUNNER, PYTHON_RUNNER, SANDBOX_PATHS, launcherScript, type LauncherLimits } from './runners'
import { runnerOutputLimits } from '../shared/python-outputs'

/** What the command line of one sandboxed run is built from. */
export interface SandboxPlan {
  bwrapPath: string
  /** dash, the launcher: its `ulimit` sets the rlimits. */
  shellPath: string
  /** The Python runner compiled once to a .pyc readable by the sandbox, if that worked; else it runs from `-c`. */
  pythonRunnerPyc?: string
  interpreters: Readonly<Record<'python' | 'javascript' | 'bash', string>>
  workspaceMb: number
  maxOpenFiles: number
  /** True when the run has its own host uid, so RLIMIT_NPROC is a cap on this run alone. */
  dedicatedUid: boolean
  /** The seccomp filter (classic BPF, adapters/shared/seccomp-filter.ts) bwrap installs; absent on an unknown architecture. */
  seccompFilter?: Buffer
}

export interface RunShape {
  language: 'python' | 'javascript' | 'bash'
  policy: SecurityPolicy
  /** `check` only compiles the code (validate). */
  mode: 'run' | 'check'
  withFiles: boolean
  collectFiles: boolean
  /**
   * A persistent sandbox's workspace folder on the host, bound at /workspace (read-only under a `read_only` policy,
   * not at all under `none`); without one the workspace is a fresh tmpfs.
   */
  persistentWorkspace?: string
  /** Runs in a child of the warm data interpreter (adapters/process/warm-python.ts) instead of a fresh bwrap. */
  warm?: boolean
  /** The egress gateway's proxy socket for this run and the bridge's files: the run's only way out (egress-bridge.ts). */
  egress?: { socketPath: string; files: EgressBridgeFiles; caBundlePath?: string }
  /** Uploaded files bound read-only into the workspace from the upload store (never copied, never collected back). */
  mounts?: readonly FileMount[]
  /** The request's rich-output options (the charts' image format). */
  outputs?: OutputOptions
}

const RUNNER_PYC = '/run/execgate/runner.pyc'

/** How deep bash functions may call each other in the sandbox (FUNCNEST). */
export const BASH_FUNCTION_NESTING = 2000

/**
 * Compiles the Python runner once with the configured interpreter (same version, same magic number) into a fresh
 * private directory the sandbox uids can read: loading bytecode saves ~0.8 ms a run over compiling `-c` source.
 * Undefined when that fails; runs then pass the source.
 */
export function compilePythonRunner(python: string): string | undefined {
  try {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-runner-'))
    fs.chmodSync(directory, 0o755)
    const source = path.join(directory, 'runner.py')
    const compiled = path.join(directory, 'runner.pyc')
    fs.writeFileSync(source, PYTHON_RUNNER, { mode: 0o644 })
    const child = spawnSync(
      python,
      ['-I', '-c', 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)', source, compiled],
      { timeout: 10_000 },
    )
    if (child.status !== 0 || !fs.existsSync(compiled)) return undefined
    fs.chmodSync(compiled, 0o644)
    return compiled
  } catch {
    return undefined
  }
}

/**
 * Whether the program replaces the launcher as pid 1: nothing to collect afterwards, and a runner that handles
 * SIGXCPU itself (bash does not).
 */
function runsDirect(shape: RunShape): boolean {
  return !shape.collectFiles && shape.language !== 'bash'
}

/** Directories the interpreters need, bound read-only; nothing else of the host is visible. */
function readOnlyRoots(interpreters: readonly string[]): string[] {
  const roots = new Set(['/usr'])
  for (const interpreter of interpreters) {
    let real = interpreter
    try {
      real = fs.realpathSync(interpreter)
    } catch {
      // reported by checkAvailability; the run then fails with the interpreter's absence
    }
    // /opt/node/bin/node → /opt/node: an interpreter installed outside /usr brings its own prefix.
    if (!real.startsWith('/usr/')) roots.add(path.dirname(path.dirname(real)))
  }
  return [...roots]
}

/**
 * Optional host files that are not secrets: the loader's cache, Debian's alternatives (numpy finds libblas.so.3
 * through /etc/alternatives) matplotlib's configuration (Debian keeps matplotlibrc in /etc) and fontconfig's.
 */
const HOST_FILES = ['/etc/ld.so.cache', '/etc/alternatives', '/etc/matplotlibrc', '/etc/fonts'].filter((file) => fs.existsSync(file))

function programArgv(plan: SandboxPlan, shape: RunShape): string[] {
  const check = shape.mode === 'check' ? ['check'] : []
  switch (shape.language) {
    case 'python':
      // -I: no user site, no PYTHON* variables, no script dir on sys.path; -u: output streams as it is written.
      return [
        plan.interpreters.python,
        '-I',
        '-B',
        '-u',
        ...(plan.pythonRunnerPyc ? [RUNNER_PYC] : ['-c', PYTHON_RUNNER]),
        ...(shape.mode === 'check'
          ? ['check']
          : ['run', shape.policy.allowedImports.join(','), runnerOutputLimits(shape.policy, shape.outputs)]),
      ]
    case 'javascript':
      return [plan.interpreters.javascript, `--max-old-space-size=${shape.policy.memoryMb}`, '-e', NODE_RUNNER, ...check]
    case 'bash':
      return shape.mode === 'check'
        ? [plan.interpreters.bash, '-n', SANDBOX_PATHS.code]
        : [plan.interpreters.bash, '--noprofile', '--norc', SANDBOX_PATHS.code]
  }
}

function rlimits(plan: SandboxPlan, shape: RunShape): LauncherLimits {
  const policy = shape.policy
  return {
    // RLIMIT_DATA, not RLIMIT_AS: node reserves gigabytes of address space it never touches and will not start
    // under an address-space cap, while private writable memory (heap, buffers) is what a bomb grows.
    dataKiB: policy.memoryMb * 1024,
    cpuSeconds: Math.max(1, Math.ceil(policy.cpuTimeMs / 1000)),
    fileBlocks512: plan.workspaceMb * 2048,
    openFiles: plan.maxOpenFiles,
    // Counted inside the user namespace: the program itself, and the launcher while it waits; not bwrap outside.
    // (and the egress forwarder, when the run has network)
    processes: plan.dedicatedUid ? policy.maxProcesses + (runsDirect(shape) ? 1 : 2) + (shape.egress ? 1 : 0) : undefined,
  }
}

function workspaceMount(plan: SandboxPlan, shape: RunShape): string[] {
  const kept = shape.persistentWorkspace
  if (kept && shape.policy.filesystem === 'sandboxed') return ['--bind', kept, SANDBOX_PATHS.workspace]
  if (kept && shape.policy.filesystem === 'read_only') return ['--ro-bind', kept, SANDBOX_PATHS.workspace]
  return ['--size', String(plan.workspaceMb * 2 ** 20), '--tmpfs', SANDBOX_PATHS.workspace]
}

/** The whole command: bwrap (fresh namespaces, read-only binds, tmpfs workspace) → launcher → program. */
export function sandboxCommand(plan: SandboxPlan, shape: RunShape): { file: string; args: string[]; seccompFilter?: Buffer } {
  const binds = readOnlyRoots(Object.values(plan.interpreters)).flatMap((root) => ['--ro-bind', root, root])
  const hostFiles = HOST_FILES.flatMap((file) => ['--ro-bind', file, file])
  const bwrap = [
    '--unshare-all', // user, pid, net, ipc, uts, cgroup: no network at all, not even loopback to the host
    // The launcher is pid 1 of the namespace: when it exits the kernel kills everything left in it, and bwrap
    // reaps it (without --as-pid-1 bwrap's own init is left a zombie for the host's pid 1 to reap).
    '--as-pid-1',
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    '--hostname',
    'sandbox',
    '--clearenv',
    '--setenv',
    'PATH',
    '/usr/bin:/bin',
    '--setenv',
    'HOME',
    SANDBOX_PATHS.workspace,
    '--setenv',
    'TMPDIR',
    '/tmp',
    '--setenv',
    'LANG',
    'C.UTF-8',
    // The data Python: charts render off-screen, and matplotlib's caches go to the run's own /tmp.
    '--setenv',
    'MPLBACKEND',
    'Agg',
    '--setenv',
    'MPLCONFIGDIR',
    '/tmp/matplotlib',
    // bash has no recursion limit of its own: `f() { f; }; f` grows until it segfaults, seconds later. FUNCNEST
    // ends it at once with an error (classify.ts names it); code that unsets it still only crashes its own sandbox.
    ...(shape.language === 'bash' ? ['--setenv', 'FUNCNEST', String(BASH_FUNCTION_NESTING)] : []),
    ...(shape.collectFiles ? ['--setenv', 'EXECGATE_COLLECT', '1'] : []),
    ...(runsDirect(shape) ? ['--setenv', 'EXECGATE_EXEC', '1'] : []),
    ...binds,
    '--tmpfs',
    '/usr/local', // pyenv, nvm and friends live here: not the OS interpreter, and may hold secrets
    '--symlink',
    'usr/bin',
    '/bin',
    '--symlink',
    'usr/sbin',
    '/sbin',
    '--symlink',
    'usr/lib',
    '/lib',
    '--symlink',
    'usr/lib64',
    '/lib64',
    ...hostFiles,
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    ...workspaceMount(plan, shape),
    ...(shape.mounts ?? []).flatMap((mount) => ['--ro-bind', mount.hostPath, `${SANDBOX_PATHS.workspace}/${mount.path}`]),
    ...(shape.collectFiles && shape.mounts?.length
      ? ['--setenv', 'EXECGATE_MOUNTED', shape.mounts.map((mount) => `./${mount.path}`).join('\n')]
      : []),
    '--size',
    String(16 * 2 ** 20),
    '--tmpfs',
    '/tmp',
    '--ro-bind-data',
    String(FD.code),
    SANDBOX_PATHS.code,
    ...(plan.pythonRunnerPyc && shape.language === 'python' ? ['--ro-bind', plan.pythonRunnerPyc, RUNNER_PYC] : []),
    ...(shape.withFiles ? ['--ro-bind-data', String(FD.filesIn), SANDBOX_PATHS.filesIn] : []),
    ...(shape.egress
      ? egressBridgeArgs(shape.egress.files, shape.egress.socketPath, plan.interpreters.python, shape.language, shape.egress.caBundlePath)
      : []),
    '--chdir',
    SANDBOX_PATHS.workspace,
    // Installed by bwrap after it has made the namespaces (which need unshare and mount), before the launcher runs.
    ...(plan.seccompFilter ? ['--seccomp', String(FD.seccomp)] : []),
  ]
  return {
    file: plan.bwrapPath,
    args: [...bwrap, plan.shellPath, '-c', launcherScript(rlimits(plan, shape)), 'launcher', ...programArgv(plan, shape)],
    ...(plan.seccompFilter ? { seccompFilter: plan.seccompFilter } : {}),
  }
}
