import { Command, InvalidArgumentError, Option } from 'commander'
import { ExecgateError, LANGUAGES, type Language } from '../core'
import { TASK_STATES, type ResumeChanges, type Task, type TaskService, type TaskSpec, type TaskState } from '../fabric/tasks'
import { createExecgate, type Execgate } from '../index'
import { resumeChangesFrom, withResumeOptions } from './resume-options'

/**
 * `execgate task …` and `execgate worker`: durable tasks on the store `fabric.store` names, from the command line.
 * Commands that wait (`submit --wait`, `wait`) run tasks in this process too, so the embedded store needs no server;
 * the others only read and write the store, and whichever process runs tasks on it (`serve`, `worker`) picks them up.
 */

export interface TaskCommandHelpers {
  out: NodeJS.WritableStream
  setExit(code: number): void
  readSource(file: string | undefined, lang: Language | undefined): { code: string; language: Language }
}

interface CommonFlags {
  config?: string
  json?: boolean
}

interface SubmitFlags extends CommonFlags {
  lang?: Language
  priority?: number
  after: string[]
  deadline?: string
  retries?: number
  backoff?: 'exponential' | 'linear'
  idempotencyKey?: string
  wait?: boolean
}

const integer =
  (flag: string, minimum: number) =>
  (value: string): number => {
    const parsed = Number(value)
    if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(parsed) || parsed < minimum)
      throw new InvalidArgumentError(`${flag} must be a whole number of at least ${minimum}, got "${value}"`)
    return parsed
  }

async function withTasks<T>(flags: CommonFlags, run: boolean, body: (tasks: TaskService, execgate: Execgate) => Promise<T>): Promise<T> {
  const execgate = await createExecgate({
    file: flags.config,
    overrides: { adapters: { pyodide: { warmOnStart: false } }, readiness: { enabled: false } },
    // A command that does not wait must not start runs it would abandon on exit: it only submits and reads.
    role: run ? 'library' : 'client',
  })
  try {
    return await body(execgate.tasks, execgate)
  } finally {
    // Runs in flight finish first: a task this process started is never left for a restart to find half done.
    await execgate.dispose({ finishRuns: true })
  }
}

function line(task: Task): string {
  const value = task.state === 'COMPLETED' ? ` value: ${JSON.stringify(task.result?.value ?? null)}` : ''
  return `${task.id}  ${task.state}  priority ${task.priority}  attempts ${task.attempts}  ${task.reason}${value}\n`
}

function print(out: NodeJS.WritableStream, flags: CommonFlags, task: Task): void {
  out.write(flags.json ? `${JSON.stringify(task, null, 2)}\n` : line(task))
  if (!flags.json && task.state === 'COMPLETED' && task.result?.stdout) out.write(task.result.stdout)
}

/** Waits for the task, with a live progress line on a terminal; the exit code is 0 only for COMPLETED. */
async function waitFor(tasks: TaskService, id: string): Promise<Task> {
  const progress = process.stderr.isTTY
  const started = Date.now()
  let state: TaskState | undefined
  const draw = () => process.stderr.write(`\r\x1b[K${id} ${state ?? '…'} ${((Date.now() - started) / 1000).toFixed(1)} s`)
  const stop = progress ? tasks.scheduler.onTransition((event) => event.taskId === id && ((state = event.to), draw())) : () => undefined
  const timer = progress ? setInterval(draw, 200) : undefined
  try {
    return await tasks.wait(id)
  } finally {
    clearInterval(timer)
    stop()
    if (progress) process.stderr.write('\r\x1b[K')
  }
}

export function registerTaskCommands(program: Command, helpers: TaskCommandHelpers): void {
  const { out, setExit } = helpers
  const configOption = () => new Option('--config <file>', 'extra JSON config file applied after config/default.json')
  const task = program.command('task').description('durable tasks: submit, follow and control them (docs/tasks.md)')

  task
    .command('submit')
    .description('queue a file as a durable task')
    .argument('<file>', 'file to run; - reads standard input (needs --lang)')
    .addOption(new Option('--lang <language>', 'language of the code (default: from the file extension)').choices([...LANGUAGES]))
    .option('--priority <n>', 'higher runs first (default 0)', integer('--priority', -1_000_000))
    .option(
      '--after <id>',
      'start only after this task completed (repeatable)',
      (value: string, previous: string[]) => [...previous, value],
      [],
    )
    .option('--deadline <iso>', 'start-by time, ISO 8601; not started by then, the task ends TERMINATED')
    .option('--retries <n>', 'attempts in all, the first included', integer('--retries', 1))
    .addOption(new Option('--backoff <kind>', 'delay growth between attempts').choices(['exponential', 'linear']))
    .option('--idempotency-key <key>', 'submitting again with this key returns the first task')
    .option('--wait', 'run it here and wait until it ends; exit 0 only if it COMPLETED')
    .option('--json', 'print the task as JSON')
    .addOption(configOption())
    .action(async (file: string, flags: SubmitFlags) => {
      const { code, language } = helpers.readSource(file, flags.lang)
      const spec: TaskSpec = {
        request: { language, code },
        ...(flags.priority !== undefined ? { priority: flags.priority } : {}),
        ...(flags.after.length ? { dependencies: flags.after } : {}),
        ...(flags.deadline ? { deadline: flags.deadline } : {}),
        ...(flags.retries || flags.backoff
          ? {
              retryPolicy: {
                ...(flags.retries ? { maxAttempts: flags.retries } : {}),
                ...(flags.backoff ? { backoff: flags.backoff } : {}),
              },
            }
          : {}),
        ...(flags.idempotencyKey ? { idempotencyKey: flags.idempotencyKey } : {}),
      }
      await withTasks(flags, !!flags.wait, async (tasks) => {
        const submitted = await tasks.submit(spec)
        const shown = flags.wait ? await waitFor(tasks, submitted.id) : submitted
        print(out, flags, shown)
        setExit(!flags.wait || shown.state === 'COMPLETED' ? 0 : 1)
      })
    })

  const byId = (name: string, description: string, run: boolean, act: (tasks: TaskService, id: string) => Promise<Task | undefined>) =>
    task
      .command(name)
      .description(description)
      .argument('<id>', 'the task id')
      .option('--json', 'print the task as JSON')
      .addOption(configOption())
      .action(async (id: string, flags: CommonFlags) => {
        await withTasks(flags, run, async (tasks) => {
          const found = await act(tasks, id)
          if (!found) throw new ExecgateError('EXECGATE_NOT_FOUND', { detail: `no task "${id}"` })
          print(out, flags, found)
          setExit(name === 'wait' && found.state !== 'COMPLETED' ? 1 : 0)
        })
      })
  byId('get', 'show a task: state, last reason, result', false, (tasks, id) => tasks.get(id))
  byId('wait', 'run tasks here until this one ends; exit 0 only if it COMPLETED', true, (tasks, id) => waitFor(tasks, id))
  byId('cancel', 'terminate a task (a running one is stopped)', false, (tasks, id) => tasks.cancel(id))
  byId('suspend', 'suspend a pending or running task', false, (tasks, id) => tasks.suspend(id))

  withResumeOptions(
    task
      .command('resume')
      .description('queue a suspended task again, optionally with other limits (never looser than its policy allows)')
      .argument('<id>', 'the task id'),
  )
    .option('--json', 'print the task as JSON')
    .addOption(configOption())
    .action(async (id: string, flags: CommonFlags & ResumeChanges) => {
      await withTasks(flags, false, async (tasks) => {
        print(out, flags, await tasks.resume(id, resumeChangesFrom(flags)))
        setExit(0)
      })
    })

  task
    .command('list')
    .description('list tasks, oldest first')
    .addOption(new Option('--state <state>', 'only tasks in this state').choices([...TASK_STATES]))
    .option('--intent <id>', 'only tasks of this intent id')
    .option('--limit <n>', 'at most this many (default 50)', integer('--limit', 1))
    .option('--json', 'print the page as JSON')
    .addOption(configOption())
    .action(async (flags: CommonFlags & { state?: TaskState; intent?: string; limit?: number }) => {
      await withTasks(flags, false, async (tasks) => {
        const page = await tasks.list({
          ...(flags.state ? { state: flags.state } : {}),
          ...(flags.intent ? { intentId: flags.intent } : {}),
          ...(flags.limit ? { limit: flags.limit } : {}),
        })
        if (flags.json) out.write(`${JSON.stringify(page, null, 2)}\n`)
        else for (const item of page.tasks) out.write(line(item))
      })
    })

  program
    .command('worker')
    .description('run queued tasks from the shared store until SIGTERM')
    .addOption(configOption())
    .action(async (flags: CommonFlags) => {
      await withTasks(flags, true, async (tasks) => {
        await tasks.start()
        process.stderr.write(`[execgate] worker ${process.pid} running tasks\n`)
        // The scheduler's timer does not hold the process open (a library must not); the worker must.
        const keepAlive = setInterval(() => undefined, 60_000)
        await new Promise<void>((resolve) => ['SIGTERM', 'SIGINT'].forEach((signal) => process.once(signal, () => resolve())))
        clearInterval(keepAlive)
      })
    })
}
