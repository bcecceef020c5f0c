import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { Task, TaskEvent } from '../../src/fabric/tasks'

/**
 * kill -9 of a real `execgate serve` (the built CLI, a child process on loopback, the embedded SQLite store) with
 * tasks and a plan in flight, then a restart on the same data directory: every accepted task and every plan step
 * completes exactly once, the plan finishes, and the ledger lost no run older than its documented flush window.
 */

const BIN = path.join(__dirname, '..', '..', 'bin', 'execgate.js')
const TASKS = 60

/**
 * The ledger's documented loss on a kill (docs/ledger.md: "A process killed outright loses what it heard in its last
 * N ms"), read from the doc so the test follows it when the window changes. The bound checked is ten times that, as
 * any clock in a test on a shared machine: a flush timer fires late under load.
 */
function documentedFlushWindowMs(): number {
  const doc = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'ledger.md'), 'utf8').replace(/\s+/g, ' ')
  const match = /killed outright loses what it heard in its last (\d+) ms/.exec(doc)
  if (!match)
    throw new Error(
      'docs/ledger.md no longer states how much a killed process loses ("killed outright loses what it heard in its last N ms")',
    )
  return Number(match[1])
}

function startServe(dataDir: string): Promise<{ child: ChildProcess; url: string }> {
  const env = {
    ...process.env,
    EXECGATE_LOG_LEVEL: 'silent',
    EXECGATE_READINESS_ENABLED: 'false',
    EXECGATE_EXECUTION_ENABLED: 'quickjs',
    EXECGATE_FABRIC_DATA_DIR: dataDir,
    EXECGATE_FABRIC_CONCURRENCY: '2',
  }
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0'], { env, stdio: ['ignore', 'ignore', 'pipe'] })
  return new Promise((resolve, reject) => {
    let text = ''
    const timer = setTimeout(() => reject(new Error(`execgate serve did not start: ${text}`)), 60_000)
    child.stderr!.on('data', (data: Buffer) => {
      text += data.toString()
      const match = /serving on (http:\/\/\S+)/.exec(text)
      if (match) (clearTimeout(timer), resolve({ child, url: match[1]! }))
    })
    child.once('exit', (code) => (clearTimeout(timer), reject(new Error(`execgate serve exited ${code}: ${text}`))))
  })
}

let baseUrl = ''
async function api<T>(method: string, url: string, body?: unknown): Promise<{ status: number; json: T }> {
  const response = await fetch(`${baseUrl}${url}`, {
    method,
    headers: body ? { 'content-type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  })
  const text = await response.text()
  return { status: response.status, json: (text ? JSON.parse(text) : undefined) as T }
}

async function taskEvents(id: string): Promise<TaskEvent[]> {
  const text = await (await fetch(`${baseUrl}/v1/tasks/${id}/events`)).text()
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice(6)) as TaskEvent | { chunk: string })
    .filter((item): item is TaskEvent => 'to' in item)
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value).slice(0, 300)}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const busy = (ms: number, value: string) => `const t = Date.now(); while (Date.now() - t < ${ms}) {}; ${value}`
const ENDED = ['COMPLETED', 'FAILED', 'TERMINATED']

test(`kill -9 of execgate serve with ${TASKS} tasks and a plan in flight; after restart each completes exactly once`, async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-serve-crash-'))
  let serve = await startServe(dataDir)
  baseUrl = serve.url
  try {
    // The tasks, then a plan of four chained steps ahead of them (priority 1), all accepted before the kill. Submitted
    // at once and the plan last: submitted one by one with the plan first, at load ~45 the plan ended while the tasks
    // were still being sent, and there was never a moment with both in flight to kill at.
    const accepted: Task[] = await Promise.all(
      Array.from({ length: TASKS }, async (_, index) => {
        const submitted = await api<Task>('POST', '/v1/tasks', {
          request: { language: 'javascript', code: busy(40, String(index)) },
          idempotencyKey: `serve-crash-${index}`,
          retryPolicy: { maxAttempts: 3 },
        })
        expect(submitted.status).toBe(201)
        return submitted.json
      }),
    )
    const plan = await api<{ id: string }>('POST', '/v1/plans', {
      goal: 'count to four',
      priority: 1,
      steps: [
        { id: 'one', language: 'javascript', code: busy(600, '1') },
        { id: 'two', language: 'javascript', code: busy(600, '2'), dependsOn: ['one'] },
        { id: 'three', language: 'javascript', code: busy(600, '3'), dependsOn: ['two'] },
        { id: 'four', language: 'javascript', code: busy(600, '4'), dependsOn: ['three'] },
      ],
    })
    expect(plan.status).toBe(201)
    // Kill part-way: some tasks done, some running, the plan past its first step but not finished.
    const atKill = await until(
      async () => ({
        tasks: (await api<{ tasks: Task[] }>('GET', '/v1/tasks?limit=500')).json.tasks,
        plan: (await api<{ state: string; steps: Array<{ id: string; state: string }> }>('GET', `/v1/plans/${plan.json.id}`)).json,
      }),
      ({ tasks, plan: current }) =>
        tasks.filter((task) => task.state === 'COMPLETED').length >= 5 &&
        current.steps.some((step) => step.state === 'COMPLETED') &&
        current.state === 'RUNNING',
      'tasks and the plan part-way',
    )
    expect(atKill.tasks.filter((task) => !ENDED.includes(task.state)).length).toBeGreaterThan(0)
    const killedAt = Date.now()
    serve.child.kill('SIGKILL')
    await new Promise((resolve) => serve.child.once('exit', resolve))
    const completedBeforeKill = atKill.tasks.filter((task) => task.state === 'COMPLETED')

    serve = await startServe(dataDir)
    baseUrl = serve.url
    // Every accepted task completes, once.
    for (const task of accepted) {
      const done = await until(
        async () => (await api<Task>('GET', `/v1/tasks/${task.id}`)).json,
        (current) => ENDED.includes(current.state),
        `task ${task.id}`,
      )
      expect({ id: task.id, state: done.state, value: done.result?.value }).toEqual({
        id: task.id,
        state: 'COMPLETED',
        value: accepted.indexOf(task),
      })
      const events = await taskEvents(task.id)
      expect({ id: task.id, completions: events.filter((event) => event.to === 'COMPLETED').length }).toEqual({
        id: task.id,
        completions: 1,
      })
    }
    // A client that did not hear back resubmits with the same keys: nothing new is created.
    const again = await api<Task>('POST', '/v1/tasks', {
      request: { language: 'javascript', code: busy(40, '0') },
      idempotencyKey: 'serve-crash-0',
    })
    expect(again.json.id).toBe(accepted[0]!.id)
    // The plan finishes; each step's task completed exactly once, and a step done before the kill was not run again.
    const finished = await until(
      async () =>
        (
          await api<{
            state: string
            versions: Array<{ steps: Array<{ id: string; taskId: string }> }>
            steps: Array<{ id: string; state: string; result?: { value: unknown } }>
          }>('GET', `/v1/plans/${plan.json.id}`)
        ).json,
      (current) => ENDED.includes(current.state),
      'the plan',
    )
    expect({ state: finished.state, values: finished.steps.map((step) => step.result?.value) }).toEqual({
      state: 'COMPLETED',
      values: [1, 2, 3, 4],
    })
    for (const step of finished.versions.at(-1)!.steps) {
      const events = await taskEvents(step.taskId)
      expect({ step: step.id, completions: events.filter((event) => event.to === 'COMPLETED').length }).toEqual({
        step: step.id,
        completions: 1,
      })
    }
    const doneBeforeKill = atKill.plan.steps.filter((step) => step.state === 'COMPLETED').map((step) => step.id)
    for (const id of doneBeforeKill) {
      const taskId = finished.versions.at(-1)!.steps.find((step) => step.id === id)!.taskId
      expect({ step: id, starts: (await taskEvents(taskId)).filter((event) => event.to === 'SPAWNING').length }).toEqual({
        step: id,
        starts: 1,
      })
    }
    // The ledger: a run whose task had completed before the kill is recorded, unless it ended within the flush window.
    const windowMs = documentedFlushWindowMs()
    const lost: Array<{ id: string; beforeKillMs: number }> = []
    for (const task of completedBeforeKill) {
      const record = await api<unknown>('GET', `/v1/runs/${encodeURIComponent(String(task.result!.runId))}/record`)
      if (record.status === 200) continue
      expect(record.status).toBe(404)
      const completedAt = Date.parse((await taskEvents(task.id)).find((event) => event.to === 'COMPLETED')!.at)
      lost.push({ id: task.id, beforeKillMs: killedAt - completedAt })
    }
    expect(lost.filter((entry) => entry.beforeKillMs > 10 * windowMs)).toEqual([])
    // And the restarted server records its own runs (a task not yet completed at the kill ran after the restart).
    const ranAfter = accepted.filter((task) => !completedBeforeKill.some((done) => done.id === task.id)).at(-1)!
    const lastTask = (await api<Task>('GET', `/v1/tasks/${ranAfter.id}`)).json
    expect((await api<unknown>('GET', `/v1/runs/${encodeURIComponent(String(lastTask.result!.runId))}/record`)).status).toBe(200)
    process.stdout.write(
      `serve crash: ${completedBeforeKill.length} tasks completed before the kill, ` +
        `${lost.length} of their runs missing from the ledger (window ${windowMs} ms); plan steps ` +
        `done before the kill: ${doneBeforeKill.join(', ')}\n`,
    )
  } finally {
    if (serve.child.exitCode === null) serve.child.kill('SIGKILL')
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}, 300_000)
