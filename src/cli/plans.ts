import fs from 'node:fs'
import { Command, InvalidArgumentError, Option } from 'commander'
import { ExecgateError, describeError } from '../core'
import { PLAN_STATES, type PlanStreamItem, type PlanService, type PlanSpec, type PlanState, type PlanView } from '../fabric/plans'
import type { ResumeChanges } from '../fabric/tasks'
import { createExecgate } from '../index'
import { resumeChangesFrom, withResumeOptions } from './resume-options'

/**
 * `execgate plan …`: plans on the embedded store, from the command line. `run --wait` and `wait` drive the plan in
 * this process (its steps run here, a failed step goes to the reflector here), so no server is needed; the other
 * commands only read and write the store, and whichever process drives plans on it (`serve`) picks them up.
 */

export interface PlanCommandHelpers {
  out: NodeJS.WritableStream
  setExit(code: number): void
}

interface CommonFlags {
  config?: string
  json?: boolean
}

async function withPlans<T>(flags: CommonFlags, run: boolean, body: (plans: PlanService) => Promise<T>): Promise<T> {
  const execgate = await createExecgate({
    file: flags.config,
    overrides: { adapters: { pyodide: { warmOnStart: false } }, readiness: { enabled: false } },
    // A command that does not wait must not start runs it would abandon on exit: it only submits and reads.
    role: run ? 'library' : 'client',
  })
  try {
    return await body(execgate.plans)
  } finally {
    // The plans close first, then the steps' runs in flight finish.
    await execgate.dispose({ finishRuns: true })
  }
}

function readPlan(file: string): PlanSpec {
  let text: string
  try {
    text = fs.readFileSync(file === '-' ? 0 : file, 'utf8')
  } catch (error) {
    throw new ExecgateError('EXECGATE_CLI_USAGE', {
      detail: `cannot read "${file}": ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : describeError(error)}`,
    })
  }
  try {
    return JSON.parse(text) as PlanSpec
  } catch (error) {
    throw new ExecgateError('EXECGATE_CLI_USAGE', { detail: `"${file}" is not JSON: ${describeError(error)}` })
  }
}

function stepLines(plan: PlanView): string[] {
  const width = Math.max(...plan.steps.map((step) => step.id.length))
  return plan.steps.map((step) => {
    const stdout = step.result?.stdout?.trim()
    // A bash step's outcome is its output: shown when there is no value.
    const value =
      step.state !== 'COMPLETED'
        ? ''
        : step.result?.value !== undefined
          ? `  value: ${JSON.stringify(step.result.value)}`
          : stdout
            ? `  stdout: ${JSON.stringify(stdout.length > 200 ? `${stdout.slice(0, 200)}…` : stdout)}`
            : ''
    const why = step.state === 'FAILED' || step.state === 'TERMINATED' || step.state === 'SUSPENDED' ? `  ${step.reason}` : ''
    const kept = step.reusedFrom !== undefined ? `  (kept from version ${step.reusedFrom})` : ''
    return `  ${step.id.padEnd(width)}  ${step.state}${value}${why}${kept}`
  })
}

function print(out: NodeJS.WritableStream, flags: CommonFlags, plan: PlanView): void {
  if (flags.json) return void out.write(`${JSON.stringify(plan, null, 2)}\n`)
  out.write(
    `plan ${plan.id}  ${plan.state}  version ${plan.version}  revisions ${plan.revisions.length}/${plan.maxRevisions}  ${plan.reason}\n`,
  )
  for (const line of stepLines(plan)) out.write(`${line}\n`)
  for (const revision of plan.revisions)
    out.write(
      `  revision ${revision.attempt} (step ${revision.stepId}): ` +
        `${revision.accepted ? `version ${revision.version}: ` : 'refused: '}${revision.reason}\n`,
    )
}

/** One line per step, redrawn in place on a terminal as the plan's events arrive. */
function progressLine(event: PlanStreamItem): [string, string] | undefined {
  if (event.type === 'output') return undefined // a step's chart or table: the plan's result lists it
  if (event.type === 'step') return [event.stepId, `${event.to}${event.to === 'FAILED' ? `  ${event.reason}` : ''}`]
  if (event.type === 'revision')
    return ['(revision)', `${event.attempt} ${event.accepted ? `accepted: version ${event.version}` : `refused: ${event.reason}`}`]
  return ['(plan)', `${event.to}${event.type === 'plan' && event.to === 'REVISING' ? `  ${event.reason}` : ''}`]
}

/** Waits for the plan, with live per-step progress on a terminal; exit code 0 only for COMPLETED. */
async function waitFor(plans: PlanService, id: string): Promise<PlanView> {
  if (!process.stderr.isTTY) return plans.wait(id)
  const started = Date.now()
  const rows = new Map<string, string>()
  let drawn = 0
  const draw = () => {
    const lines = [
      `plan ${id}  ${((Date.now() - started) / 1000).toFixed(1)} s`,
      ...[...rows].map(([name, state]) => `  ${name.padEnd(12)} ${state}`),
    ]
    process.stderr.write(
      `${drawn ? `\x1b[${drawn}A` : ''}${lines.map((line) => `\r\x1b[K${line.slice(0, (process.stderr.columns || 120) - 1)}\n`).join('')}`,
    )
    drawn = lines.length
  }
  const timer = setInterval(draw, 200)
  const follow = (async () => {
    for await (const event of plans.events(id)) {
      const row = progressLine(event)
      if (row) (rows.set(...row), draw())
    }
  })()
  try {
    return await plans.wait(id)
  } finally {
    await follow.catch(() => undefined)
    clearInterval(timer)
    draw()
  }
}

const integer =
  (flag: string) =>
  (value: string): number => {
    const parsed = Number(value)
    if (!/^\d+$/.test(value.trim()) || parsed < 1 || parsed > 500)
      throw new InvalidArgumentError(`${flag} must be a whole number from 1 to 500, got "${value}"`)
    return parsed
  }

export function registerPlanCommands(program: Command, helpers: PlanCommandHelpers): void {
  const { out, setExit } = helpers
  const configOption = () => new Option('--config <file>', 'extra JSON config file applied after config/default.json')
  const plan = program.command('plan').description('plans: DAGs of code steps, revised by the reflector when a step fails (docs/plans.md)')

  plan
    .command('run')
    .description('submit a plan (a JSON file: {goal, steps: [{id, language, code, dependsOn}]})')
    .argument('<file>', 'the plan as JSON; - reads standard input')
    .option('--wait', 'drive it here until it ends, with live progress on a terminal; exit 0 only if it COMPLETED')
    .option('--json', 'print the plan as JSON')
    .addOption(configOption())
    .action(async (file: string, flags: CommonFlags & { wait?: boolean }) => {
      const spec = readPlan(file)
      await withPlans(flags, !!flags.wait, async (plans) => {
        const submitted = await plans.run(spec)
        const shown = flags.wait ? await waitFor(plans, submitted.id) : submitted
        print(out, flags, shown)
        setExit(!flags.wait || shown.state === 'COMPLETED' ? 0 : 1)
      })
    })

  const byId = (name: string, description: string, run: boolean, act: (plans: PlanService, id: string) => Promise<PlanView | undefined>) =>
    plan
      .command(name)
      .description(description)
      .argument('<id>', 'the plan id')
      .option('--json', 'print the plan as JSON')
      .addOption(configOption())
      .action(async (id: string, flags: CommonFlags) => {
        await withPlans(flags, run, async (plans) => {
          const found = await act(plans, id)
          if (!found) throw new ExecgateError('EXECGATE_NOT_FOUND', { detail: `no plan "${id}"` })
          print(out, flags, found)
          setExit(name === 'wait' && found.state !== 'COMPLETED' ? 1 : 0)
        })
      })
  byId('get', 'show a plan: its steps and their states, its versions and revisions', false, (plans, id) => plans.get(id))
  byId('wait', 'drive plans here until this one ends; exit 0 only if it COMPLETED', true, (plans, id) => waitFor(plans, id))
  byId('cancel', 'terminate a plan and its running steps', false, (plans, id) => plans.cancel(id))
  byId('suspend', 'suspend a running plan: no step starts, running steps are suspended', false, (plans, id) => plans.suspend(id))
  withResumeOptions(
    plan
      .command('resume')
      .description(
        'resume a suspended plan: its suspended steps run again, optionally with other limits (never looser than its policy allows)',
      )
      .argument('<id>', 'the plan id'),
  )
    .option('--json', 'print the plan as JSON')
    .addOption(configOption())
    .action(async (id: string, flags: CommonFlags & ResumeChanges) => {
      await withPlans(flags, false, async (plans) => {
        print(out, flags, await plans.resume(id, resumeChangesFrom(flags)))
        setExit(0)
      })
    })

  plan
    .command('list')
    .description('list plans, oldest first')
    .addOption(new Option('--state <state>', 'only plans in this state').choices([...PLAN_STATES]))
    .option('--limit <n>', 'at most this many (default 50)', integer('--limit'))
    .option('--json', 'print the page as JSON')
    .addOption(configOption())
    .action(async (flags: CommonFlags & { state?: PlanState; limit?: number }) => {
      await withPlans(flags, false, async (plans) => {
        const page = await plans.list({ ...(flags.state ? { state: flags.state } : {}), ...(flags.limit ? { limit: flags.limit } : {}) })
        if (flags.json) return void out.write(`${JSON.stringify(page, null, 2)}\n`)
        for (const item of page.plans)
          out.write(`${item.id}  ${item.state}  version ${item.version}  ${item.steps} steps  ${item.reason}\n`)
      })
    })
}
