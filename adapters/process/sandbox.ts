import fs from 'node:fs'
import path from 'node:path'
import type { Language, SecurityPolicy } from '../../src/core'
import { FD, LAUNCHER, NODE_RUNNER, PYTHON_RUNNER, SANDBOX_PATHS } from './runners'

/** What the command line of one sandboxed run is built from. */
export interface SandboxPlan {
  bwrapPath: string
  prlimitPath: string
  interpreters: Readonly<Record<'python' | 'javascript' | 'bash', string>>
  workspaceMb: number
  maxOpenFiles: number
  /** True when the run has its own host uid, so RLIMIT_NPROC is a cap on this run alone. */
  dedicatedUid: boolean
}

export interface RunShape {
  language: 'python' | 'javascript' | 'bash'
  policy: SecurityPolicy
  /** `check` only compiles the code (validate). */
  mode: 'run' | 'check'
  withFiles: boolean
  collectFiles: boolean
}

/** The sandbox's own processes (bwrap outside, the launcher as pid 1), which the cap must not count against the code. */
export const SANDBOX_OWN_PROCESSES = 2

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

/** Optional host files that are not secrets and spare the loader and libc some work. */
const HOST_FILES = ['/etc/ld.so.cache', '/etc/localtime'].filter((file) => fs.existsSync(file))

function programArgv(plan: SandboxPlan, shape: RunShape): string[] {
  const check = shape.mode === 'check' ? ['check'] : []
  switch (shape.language) {
    case 'python':
      // -I: no user site, no PYTHON* variables, no script dir on sys.path; -u: output streams as it is written.
      return [plan.interpreters.python, '-I', '-B', '-u', '-c', PYTHON_RUNNER, ...(shape.mode === 'check' ? ['check'] : ['run', shape.policy.allowedImports.join(',')])]
    case 'javascript':
      return [plan.interpreters.javascript, `--max-old-space-size=${shape.policy.memoryMb}`, '-e', NODE_RUNNER, ...check]
    case 'bash':
      return shape.mode === 'check'
        ? [plan.interpreters.bash, '-n', SANDBOX_PATHS.code]
        : [plan.interpreters.bash, '--noprofile', '--norc', SANDBOX_PATHS.code]
  }
}

function rlimits(plan: SandboxPlan, policy: SecurityPolicy): string[] {
  const both = (name: string, value: number) => `--${name}=${value}:${value}`
  const cpuSeconds = Math.max(1, Math.ceil(policy.cpuTimeMs / 1000))
  const limits = [
    // RLIMIT_DATA, not RLIMIT_AS: node reserves gigabytes of address space it never touches and will not start
    // under an address-space cap, while private writable memory (heap, buffers) is what a bomb grows.
    both('data', policy.memoryMb * 2 ** 20),
    `--cpu=${cpuSeconds}:${cpuSeconds + 1}`,
    both('fsize', plan.workspaceMb * 2 ** 20),
    both('nofile', plan.maxOpenFiles),
    both('core', 0),
  ]
  if (plan.dedicatedUid) limits.push(both('nproc', policy.maxProcesses + SANDBOX_OWN_PROCESSES))
  return limits
}

/** The whole command: prlimit → bwrap (fresh namespaces, read-only binds, tmpfs workspace) → launcher → program. */
export function sandboxCommand(plan: SandboxPlan, shape: RunShape): { file: string; args: string[] } {
  const binds = readOnlyRoots(Object.values(plan.interpreters)).flatMap((root) => ['--ro-bind', root, root])
  const hostFiles = HOST_FILES.flatMap((file) => ['--ro-bind', file, file])
  const bwrap = [
    '--unshare-all', // user, pid, net, ipc, uts, cgroup: no network at all, not even loopback to the host
    // The launcher is pid 1 of the namespace: when it exits the kernel kills everything left in it, and bwrap
    // reaps it (without --as-pid-1 bwrap's own init is left a zombie for the host's pid 1 to reap).
    '--as-pid-1',
    '--die-with-parent',
    '--new-session',
    '--cap-drop', 'ALL',
    '--hostname', 'sandbox',
    '--clearenv',
    '--setenv', 'PATH', '/usr/bin:/bin',
    '--setenv', 'HOME', SANDBOX_PATHS.workspace,
    '--setenv', 'TMPDIR', '/tmp',
    '--setenv', 'LANG', 'C.UTF-8',
    ...(shape.collectFiles ? ['--setenv', 'EXECGATE_COLLECT', '1'] : []),
    ...binds,
    '--tmpfs', '/usr/local', // pyenv, nvm and friends live here: not the OS interpreter, and may hold secrets
    '--symlink', 'usr/bin', '/bin',
    '--symlink', 'usr/sbin', '/sbin',
    '--symlink', 'usr/lib', '/lib',
    '--symlink', 'usr/lib64', '/lib64',
    ...hostFiles,
    '--proc', '/proc',
    '--dev', '/dev',
    '--size', String(plan.workspaceMb * 2 ** 20), '--tmpfs', SANDBOX_PATHS.workspace,
    '--size', String(16 * 2 ** 20), '--tmpfs', '/tmp',
    '--ro-bind-data', String(FD.code), SANDBOX_PATHS.code,
    ...(shape.withFiles ? ['--ro-bind-data', String(FD.filesIn), SANDBOX_PATHS.filesIn] : []),
    '--chdir', SANDBOX_PATHS.workspace,
  ]
  return {
    file: plan.prlimitPath,
    args: [...rlimits(plan, shape.policy), '--', plan.bwrapPath, ...bwrap, '/bin/sh', '-c', LAUNCHER, 'launcher', ...programArgv(plan, shape)],
  }
}
