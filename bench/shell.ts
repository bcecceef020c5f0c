import { createExecgate, type Execgate } from '../src'
import type { ExecutionRequest, WorkspaceFile } from '../src/core'
import { measureInterleaved, ratio, type BenchSection, type Measurement } from './harness'

/** A CSV of `bytes` bytes or a little more: dates, items, prices, as agents' data files look. */
export function csvOf(bytes: number): string {
  const lines: string[] = ['date,item,price']
  let size = lines[0]!.length + 1
  for (let i = 0; size < bytes; i++) {
    const date = `${2024 + (i % 3)}-${String(1 + (i % 12)).padStart(2, '0')}-${String(1 + (i % 28)).padStart(2, '0')}`
    const line = `${date},item${i % 97},${(i * 7919) % 10000}`
    lines.push(line)
    size += line.length + 1
  }
  return `${lines.join('\n')}\n`
}

const PIPELINE = 'cat data.csv | grep 2026 | cut -d, -f2 | sort | uniq -c | sort -rn | head -5'

/** From trivial to data-heavy: where the native shell wins, where bubblewrap's real coreutils do. */
export const SHELL_SCRIPTS: { name: string; code: string; dataBytes: number }[] = [
  { name: 'trivial: echo hi | wc -c', code: 'echo hi | wc -c', dataBytes: 0 },
  { name: 'small: grep -c over 10 KB', code: 'grep -c 2026 data.csv', dataBytes: 10_000 },
  { name: '7-stage pipeline over 40 KB', code: PIPELINE, dataBytes: 40_000 },
  { name: '7-stage pipeline over 150 KB', code: PIPELINE, dataBytes: 150_000 },
  { name: '7-stage pipeline over 440 KB', code: PIPELINE, dataBytes: 440_000 },
]

async function expectOk(execgate: Execgate, request: ExecutionRequest): Promise<string> {
  const result = await execgate.execute(request)
  if (result.status !== 'ok')
    throw new Error(`${request.adapter ?? 'routed'} answered ${result.status}: ${result.message ?? result.error?.message}`)
  return result.adapter
}

/** The native shell against bash under bubblewrap, and what routing picks, for each script. */
export async function run(): Promise<BenchSection> {
  const execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['shell', 'process'], adapter: 'auto' },
      readiness: { enabled: false },
      log: { level: 'silent' },
      security: { defaultPolicy: { filesystem: 'read_only' } },
    },
  })
  const measurements: Measurement[] = []
  const ratios: string[] = []
  const notes: string[] = []
  try {
    for (const script of SHELL_SCRIPTS) {
      const files: WorkspaceFile[] = script.dataBytes ? [{ path: 'data.csv', content: csvOf(script.dataBytes) }] : []
      const request = (adapter?: string): ExecutionRequest => ({
        language: 'bash',
        code: script.code,
        files,
        ...(adapter ? { adapter } : {}),
      })
      const routedTo = await expectOk(execgate, request())
      const iterations = script.dataBytes > 100_000 ? 40 : 150
      const [shell, processTier, routed] = await measureInterleaved(
        [
          { name: `shell · ${script.name}`, fn: () => expectOk(execgate, request('shell')) },
          { name: `process · ${script.name}`, fn: () => expectOk(execgate, request('process')) },
          { name: `routed (→ ${routedTo}) · ${script.name}`, fn: () => expectOk(execgate, request()) },
        ],
        { iterations, batch: 10, warmup: 5 },
      )
      measurements.push(shell!, processTier!, routed!)
      const faster = shell!.p50Ms <= processTier!.p50Ms ? shell! : processTier!
      ratios.push(ratio(`process/shell (${script.name})`, processTier!, shell!, script.dataBytes === 0 ? '≥ 10×' : undefined))
      ratios.push(ratio(`routed/faster tier (${script.name})`, routed!, faster, '≤ 1.2×'))
    }
    notes.push(
      'every request goes through ExecutionService (policy, static check, routing) with the file passed in `files`; filesystem read_only',
    )
    notes.push(
      "routing weighs the shell's estimate (startupMs + nsPerByteStage × input bytes × commands) against the process adapter's (BASH_COST)",
    )
  } finally {
    await execgate.dispose()
  }
  return {
    title: 'shell adapter: just-bash in a warm child process vs bash under bubblewrap, and routing between them',
    measurements,
    ratios,
    notes,
  }
}
