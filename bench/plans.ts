import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { Execgate, ExecutionRequest, PlanSpec } from '../src'
import { against, tagged, workingSubject, type Subject } from './against'
import { measureInterleaved, type BenchSection } from './harness'

export const compares = true

/**
 * Plans on the embedded default (SQLite store in a temp dir, quickjs): a 3-step plan where each step reads the one
 * before it (a chain, so nothing overlaps: the plan's time is its steps' runs plus what the plan and the tasks cost),
 * end to end (`plans.run` → `plans.wait`), against the same three runs executed directly one after another, each
 * with the input files its step gets. Measured interleaved, so the machine's noise falls on both alike.
 */

const PLAN: PlanSpec = {
  steps: [
    { id: 'extract', language: 'javascript', code: '[3, 1, 4, 1, 5, 9, 2, 6]' },
    {
      id: 'total',
      language: 'javascript',
      code: 'JSON.parse(await read_file("steps/extract/value.json")).reduce((a, b) => a + b, 0)',
      dependsOn: ['extract'],
    },
    {
      id: 'report',
      language: 'javascript',
      code: '`total: ${JSON.parse(await read_file("steps/total/value.json"))}`',
      dependsOn: ['total'],
    },
  ],
}

/** The three runs as the steps' tasks make them: the code, and the value before it as `steps/<id>/value.json`. */
const DIRECT: ExecutionRequest[] = [
  { language: 'javascript', code: PLAN.steps[0]!.code },
  { language: 'javascript', code: PLAN.steps[1]!.code, files: [{ path: 'steps/extract/value.json', content: '[3,1,4,1,5,9,2,6]' }] },
  { language: 'javascript', code: PLAN.steps[2]!.code, files: [{ path: 'steps/total/value.json', content: '31' }] },
]

export async function run(subjects: readonly Subject[] = [workingSubject()]): Promise<BenchSection> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-bench-plans-'))
  const gates: Execgate[] = []
  try {
    for (const subject of subjects) {
      const gate = await subject.lib.createExecgate({
        overrides: {
          execution: { enabled: ['quickjs'], adapter: 'quickjs' },
          readiness: { enabled: false },
          log: { level: 'silent' },
          fabric: { dataDir: path.join(dataDir, subject.tag) },
        },
      })
      await gate.plans.start()
      gates.push(gate)
    }
    const measured = await measureInterleaved(
      subjects.flatMap((subject, index) => [
        {
          name: tagged(subjects, subject, "the steps' own runs, one after another (3 × execute on quickjs)"),
          fn: async () => {
            for (const request of DIRECT) {
              const result = await gates[index]!.execute(request, { workspaceAccess: 'sandboxed' })
              if (result.status !== 'ok') throw new Error(`execute answered ${result.status}: ${result.message}`)
            }
          },
        },
        {
          name: tagged(subjects, subject, 'plan of 3 chained steps: run → wait (SQLite store)'),
          fn: async () => {
            const plan = await gates[index]!.plans.run(PLAN)
            const done = await gates[index]!.plans.wait(plan.id)
            if (done.state !== 'COMPLETED') throw new Error(`the plan ended ${done.state}: ${done.reason}`)
          },
        },
      ]),
      { iterations: Number(process.env.EXECGATE_BENCH_PLAN_ITERATIONS ?? 400), batch: 25, warmup: 20 },
    )
    const ratios = subjects.map((subject, index) => {
      const direct = measured[index * 2]!
      const planned = measured[index * 2 + 1]!
      return tagged(
        subjects,
        subject,
        `plan end to end minus the sum of its steps' own runs, p50 = ` +
          `${(planned.p50Ms - direct.p50Ms).toFixed(2)} ms (target ≤ 3 ms); p95 = ` +
          `${(planned.p95Ms - direct.p95Ms).toFixed(2)} ms`,
      )
    })
    if (subjects.length > 1) ratios.push(against('plan end to end', measured[measured.length - 1]!, measured[1]!))
    return {
      title: 'plans (embedded SQLite store, quickjs)',
      measurements: measured,
      ratios,
      notes: ["each plan: 1 plan record and 3 tasks written, 12 task transitions mirrored into the plan's log, 2 plan events"],
    }
  } finally {
    for (const gate of gates) await gate.dispose()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}
