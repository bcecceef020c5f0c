import { performance } from 'node:perf_hooks'
import { OutputCapture, type ExecutionContext, type Language, type SecurityPolicy, type ValidationReport } from '../../src/core'
import { LANGUAGES, type ProcessLanguage } from './capabilities'
import { classifyExit } from './classify'
import type { SpawnedRun } from './spawn-sandbox'

/** Runs the interpreter's own check of the code (`bash -n`, `compile`, `new vm.Script`) in a sandbox. */
export type CheckRun = (
  language: ProcessLanguage,
  policy: SecurityPolicy,
  context: ExecutionContext,
  output: OutputCapture,
) => Promise<SpawnedRun>

/** Compiles the code with the real interpreter, in the same sandbox as a run, and reports what it said. */
export async function validateCode(code: string, language: Language, name: string, check: CheckRun): Promise<ValidationReport> {
  const report = (issues: ValidationReport['issues']): ValidationReport => ({
    valid: !issues.some((item) => item.severity === 'error'),
    language,
    validator: name,
    issues,
    implemented: true,
  })
  if (!(LANGUAGES as readonly string[]).includes(language))
    return report([
      { severity: 'error', code: 'unsupported', message: `the process adapter runs ${LANGUAGES.join(', ')}, not ${language}` },
    ])
  const policy: SecurityPolicy = {
    wallTimeMs: 5000,
    cpuTimeMs: 5000,
    memoryMb: 256,
    outputBytes: 64 * 1024,
    network: 'none',
    filesystem: 'none',
    allowedImports: [],
    hostCalls: { maxCount: 0, maxTotalMs: 0 },
    maxProcesses: 32,
    maxOutputs: 0,
    outputsBytes: 0,
    required: [],
  }
  const context: ExecutionContext = {
    traceId: 'process-validate',
    policy,
    signal: new AbortController().signal,
    deadline: performance.now() + policy.wallTimeMs,
  }
  const output = new OutputCapture(policy.outputBytes)
  const run = await check(language as ProcessLanguage, policy, context, output)
  const stderr = output.finish().stderr.trim()
  const outcome = classifyExit(run, policy, stderr)
  if (outcome.status === 'ok') return report([])
  if (outcome.status !== 'error')
    return {
      ...report([{ severity: 'warning', code: 'validator_unavailable', message: outcome.error?.message ?? outcome.status }]),
      implemented: false,
    }
  return report([
    {
      severity: 'error',
      code: 'syntax',
      message: outcome.error?.message || stderr.split('\n').pop() || 'does not compile',
      line: outcome.error?.line,
      column: outcome.error?.column,
    },
  ])
}
