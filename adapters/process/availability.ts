import fs from 'node:fs'
import { performance } from 'node:perf_hooks'
import type { Availability, ExecutionContext, ExecutionResult, SecurityPolicy } from '../../src/core'
import type { SandboxPlan } from './sandbox'

/**
 * Says exactly what is missing: bwrap, dash, an interpreter, or user namespaces; then runs a probe (`echo ready`
 * through `probe`, then waits for `versions`, the interpreter versions the probe's run started learning).
 * `perRunUid`: runs get host uids of their own (as root); without them the process cap cannot hold, so degraded.
 */
export async function checkProcessAvailability(
  plan: SandboxPlan,
  options: {
    probe: (context: ExecutionContext) => Promise<ExecutionResult>
    versions: () => Promise<void> | undefined
    perRunUid: boolean
  },
): Promise<Availability> {
  const checkedAt = new Date().toISOString()
  const missing = [
    ['bubblewrap (Debian package bubblewrap)', plan.bwrapPath],
    ['dash (Debian package dash)', plan.shellPath],
    ['python3', plan.interpreters.python],
    ['node', plan.interpreters.javascript],
    ['bash', plan.interpreters.bash],
  ].filter(([, file]) => !isExecutable(file))
  if (missing.length > 0) {
    return {
      status: 'unavailable',
      reason: `not installed: ${missing.map(([what, file]) => `${what} at ${file}`).join(', ')}`,
      checkedAt,
    }
  }
  const started = performance.now()
  const probe = await options.probe(probeContext())
  await options.versions()
  if (probe.status !== 'ok' || !probe.stdout.includes('ready')) {
    const detail = `${probe.message ?? probe.status} ${probe.stderr}`.trim()
    const hint = /namespace|Operation not permitted|setting up uid map/i.test(detail)
      ? ' (user namespaces are disabled or restricted for this user: sysctl kernel.unprivileged_userns_clone=1)'
      : ''
    return { status: 'unavailable', reason: `the sandbox does not start: ${detail}${hint}`, checkedAt }
  }
  const latencyMs = performance.now() - started
  if (!options.perRunUid) {
    return {
      status: 'degraded',
      reason: 'execgate is not running as root, so sandboxes share its uid and the process cap (RLIMIT_NPROC) cannot be enforced per run',
      latencyMs,
      checkedAt,
    }
  }
  return { status: 'available', latencyMs, checkedAt }
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK)
    return true
  } catch {
    return false
  }
}

function probeContext(): ExecutionContext {
  const policy: SecurityPolicy = {
    wallTimeMs: 5000,
    cpuTimeMs: 5000,
    memoryMb: 64,
    outputBytes: 1024,
    network: 'none',
    filesystem: 'none',
    allowedImports: [],
    hostCalls: { maxCount: 0, maxTotalMs: 0 },
    maxProcesses: 4,
    maxOutputs: 0,
    outputsBytes: 0,
    required: [],
  }
  return { traceId: 'process-availability', policy, signal: new AbortController().signal, deadline: performance.now() + policy.wallTimeMs }
}
