import { performance } from 'node:perf_hooks'
import {
  describeError,
  type CodeExecutionAdapter,
  type ExecutionContext,
  type ExecutionResult,
  type ExecutionStatus,
  type Language,
  type SecurityPolicy,
} from '../core'
import { DEFAULT_POLICY } from '../policy/default-policy'

/** One attack the monitor runs to see that a limit still holds. */
interface Canary {
  name: string
  limit: 'wallTime' | 'memory' | 'output' | 'processes'
  /** Only on adapters of these tiers (the fork bomb: OS sandboxes). */
  tiers?: readonly number[]
  code: Partial<Record<Language, string>>
  policy: Partial<SecurityPolicy>
  /** Statuses that show the limit held; `soft` enforcement also accepts `timeout` and `error`. */
  held: readonly ExecutionStatus[]
  /** A further check on the result; returns what went wrong, or undefined. */
  check?: (result: ExecutionResult) => string | undefined
}

const CANARIES: readonly Canary[] = [
  {
    name: 'infinite loop',
    limit: 'wallTime',
    code: { javascript: 'while (true) {}', typescript: 'while (true) {}', python: 'while True:\n    pass', bash: 'while :; do :; done' },
    policy: { wallTimeMs: 500, cpuTimeMs: 500 },
    held: ['timeout'],
  },
  {
    name: 'memory bomb',
    limit: 'memory',
    code: {
      javascript: 'const keep = []; while (true) keep.push(new Uint8Array(1 << 20))',
      typescript: 'const keep: Uint8Array[] = []; while (true) keep.push(new Uint8Array(1 << 20))',
      python: "keep = []\nwhile True:\n    keep.append('x' * 10_000_000)",
      bash: 'x=y; while :; do x="$x$x"; done',
    },
    // Generous time: a fresh backend touches its pages for the first time here, which costs seconds on some VMs.
    policy: { memoryMb: 24, wallTimeMs: 15_000, cpuTimeMs: 15_000 },
    held: ['memory_limit'],
  },
  {
    name: 'output flood',
    limit: 'output',
    code: {
      javascript: "while (true) console.log('x'.repeat(100))",
      typescript: "while (true) console.log('x'.repeat(100))",
      python: "while True:\n    print('x' * 100)",
      bash: 'yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
    },
    policy: { outputBytes: 4096, wallTimeMs: 5000 },
    held: ['output_limit'],
  },
  {
    name: 'fork bomb',
    limit: 'processes',
    tiers: [4],
    // Counts the forks that succeed: a cap that holds stops them at maxProcesses.
    code: {
      python:
        'import os, time\nn = 0\ntry:\n    while n < 200:\n        if os.fork() == ' +
        '0:\n            time.sleep(5)\n            os._exit(0)\n        n += 1\nexcept ' +
        'OSError:\n    pass\nprint(n)',
    },
    policy: { maxProcesses: 8, wallTimeMs: 3000, cpuTimeMs: 3000, allowedImports: ['os', 'time'] },
    held: ['ok'],
    check: (result) => (Number(result.stdout.trim()) > 8 ? `${result.stdout.trim()} processes started under a cap of 8` : undefined),
  },
]

export interface CanaryFailure {
  canary: string
  /** What happened instead of the limit holding. */
  detail: string
}

/**
 * Runs the attack set on one adapter, straight through `execute` (the static checks would stop some of them
 * before the limit they test). Returns the canaries whose limit did not hold; empty when all held. Limits the
 * adapter declares `none` are not tested: nothing claims they hold.
 */
export async function runCanaries(adapter: CodeExecutionAdapter): Promise<CanaryFailure[]> {
  const failures: CanaryFailure[] = []
  for (const canary of CANARIES) {
    if (canary.tiers && !canary.tiers.includes(adapter.capabilities.tier)) continue
    const enforcement = adapter.capabilities.enforcement[canary.limit]
    if (enforcement === 'none') continue
    const language = adapter.supportedLanguages().find((candidate) => canary.code[candidate] !== undefined)
    if (!language) continue
    const policy: SecurityPolicy = { ...DEFAULT_POLICY, ...canary.policy }
    const context: ExecutionContext = {
      traceId: `canary-${adapter.name}`,
      policy,
      signal: AbortSignal.timeout(policy.wallTimeMs + 10_000),
      deadline: performance.now() + policy.wallTimeMs,
    }
    let result: ExecutionResult
    try {
      result = await adapter.execute({ language, code: canary.code[language]! }, context)
    } catch (error) {
      failures.push({ canary: canary.name, detail: `execute threw: ${describeError(error)}` })
      continue
    }
    const held: readonly ExecutionStatus[] = enforcement === 'soft' ? [...canary.held, 'timeout', 'error'] : canary.held
    const problem = !held.includes(result.status) ? `expected ${held.join(' or ')}, got ${result.status}` : canary.check?.(result)
    if (problem) failures.push({ canary: canary.name, detail: problem })
  }
  return failures
}
