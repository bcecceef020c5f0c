import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { loadConfig } from '../src/config/load'
import { policyFromConfig } from '../src/policy'

/** `execgate task …` and `execgate worker`, the real built CLI on a real SQLite store in a temp dir. */
const root = path.join(__dirname, '..')
const bin = path.join(root, 'bin', 'execgate.js')
let dataDir: string
let env: Record<string, string>

function execgate(args: string[]) {
  const child = spawnSync(process.execPath, [bin, ...args], { cwd: dataDir, encoding: 'utf8', env, timeout: 60_000 })
  return { code: child.status, stdout: child.stdout, stderr: child.stderr }
}

beforeAll(() => {
  if (!fs.existsSync(path.join(root, 'dist', 'src', 'cli', 'tasks.js')))
    throw new Error('dist/ is missing: run `npm run build` (npm test does)')
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-cli-tasks-'))
  env = {
    PATH: process.env.PATH ?? '',
    EXECGATE_FABRIC_DATA_DIR: path.join(dataDir, 'store'),
    EXECGATE_EXECUTION_ENABLED: 'quickjs,monty',
    EXECGATE_LOG_LEVEL: 'silent',
  }
  fs.writeFileSync(path.join(dataDir, 'answer.js'), 'console.log("thinking"); 6 * 7')
  fs.writeFileSync(path.join(dataDir, 'fails.py'), 'raise ValueError("no")')
})

afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }))

test('submit --wait runs the task here and prints it; exit 0 for COMPLETED, 1 otherwise', () => {
  const ok = execgate(['task', 'submit', 'answer.js', '--wait', '--json'])
  expect(ok.code).toBe(0)
  expect(JSON.parse(ok.stdout)).toMatchObject({ state: 'COMPLETED', result: { value: 42 } })
  const failed = execgate(['task', 'submit', 'fails.py', '--wait', '--retries', '2', '--backoff', 'linear'])
  expect(failed.code).toBe(1)
  expect(failed.stdout).toMatch(/FAILED .*ValueError/)
})

test('submit without --wait queues; list, get, cancel, and wait runs what is queued', () => {
  const queued = JSON.parse(execgate(['task', 'submit', 'answer.js', '--priority', '5', '--idempotency-key', 'k-1', '--json']).stdout)
  expect(queued).toMatchObject({ state: 'PENDING', priority: 5 })
  expect(JSON.parse(execgate(['task', 'submit', 'answer.js', '--idempotency-key', 'k-1', '--json']).stdout).id).toBe(queued.id)
  const doomed = JSON.parse(execgate(['task', 'submit', 'answer.js', '--after', queued.id, '--json']).stdout)
  const listed = JSON.parse(execgate(['task', 'list', '--state', 'PENDING', '--json']).stdout)
  expect(listed.tasks.map((task: { id: string }) => task.id)).toEqual([queued.id, doomed.id])
  expect(execgate(['task', 'cancel', doomed.id]).stdout).toMatch(new RegExp(`^${doomed.id}  TERMINATED .*cancelled by the caller`))
  const waited = execgate(['task', 'wait', queued.id])
  expect(waited.code).toBe(0)
  expect(waited.stdout).toMatch(/COMPLETED .* value: 42\nthinking\n$/)
  expect(execgate(['task', 'wait', doomed.id]).code).toBe(1)
})

test('bad input is exit 2 with the reason: an unknown dependency, an unknown task', () => {
  const unknown = execgate(['task', 'submit', 'answer.js', '--after', 'nope'])
  expect(unknown.code).toBe(2)
  expect(unknown.stderr).toMatch(/unknown dependency "nope"/)
  const missing = execgate(['task', 'get', 'nope'])
  expect(missing.code).toBe(2)
  expect(missing.stderr).toMatch(/no task "nope"/)
})

test('task resume takes other limits, and refuses limits looser than the policy: exit 2 naming it, the task stays SUSPENDED', () => {
  const base = policyFromConfig(loadConfig())
  // Nothing runs tasks between these commands (no --wait, no worker): the task is PENDING, then SUSPENDED, for sure.
  const queued = JSON.parse(execgate(['task', 'submit', 'answer.js', '--json']).stdout)
  expect(execgate(['task', 'suspend', queued.id]).stdout).toMatch(new RegExp(`^${queued.id}  SUSPENDED `))
  const loosened: Array<[string[], string]> = [
    [['--timeout-ms', String(base.wallTimeMs + 1)], 'wallTimeMs'],
    [['--memory-mb', String(base.memoryMb + 1)], 'memoryMb'],
    [['--policy', JSON.stringify({ hostCalls: { maxTotalMs: base.hostCalls.maxTotalMs + 1 } })], 'hostCalls.maxTotalMs'],
    [['--policy', JSON.stringify({ network: ['example.com'] })], 'network'],
  ]
  for (const [flags, limit] of loosened) {
    const refused = execgate(['task', 'resume', queued.id, ...flags])
    expect({ code: refused.code, stdout: refused.stdout }).toEqual({ code: 2, stdout: '' })
    expect(refused.stderr).toContain(
      `task ${queued.id} was not resumed and stays SUSPENDED: the request may only tighten the policy: ${limit}`,
    )
  }
  expect(execgate(['task', 'resume', queued.id, '--policy', '[1]']).stderr).toContain('--policy must be a JSON object')
  expect(JSON.parse(execgate(['task', 'get', queued.id, '--json']).stdout)).toMatchObject({ state: 'SUSPENDED', attempts: 0 })
  const resumed = JSON.parse(
    execgate(['task', 'resume', queued.id, '--timeout-ms', '2000', '--policy', '{"outputBytes":1024}', '--json']).stdout,
  )
  expect(resumed).toMatchObject({ state: 'PENDING', request: { timeoutMs: 2000, policy: { outputBytes: 1024 } } })
  const waited = execgate(['task', 'wait', queued.id])
  expect(waited.code).toBe(0)
  expect(waited.stdout).toMatch(/COMPLETED .* value: 42\nthinking\n$/)
})

test('execgate worker runs the tasks others queue, and stops on SIGTERM', async () => {
  const worker = spawn(process.execPath, [bin, 'worker'], { cwd: dataDir, env, stdio: ['ignore', 'ignore', 'pipe'] })
  try {
    await new Promise<void>((resolve, reject) => {
      worker.stderr.on('data', (chunk: Buffer) => chunk.toString().includes('running tasks') && resolve())
      worker.once('exit', (code) => reject(new Error(`the worker exited (${code})`)))
    })
    const queued = JSON.parse(execgate(['task', 'submit', 'answer.js', '--json']).stdout)
    let state = queued.state
    for (let i = 0; i < 300 && state !== 'COMPLETED'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      state = JSON.parse(execgate(['task', 'get', queued.id, '--json']).stdout).state
    }
    expect(state).toBe('COMPLETED')
    worker.kill('SIGTERM')
    expect(await new Promise((resolve) => worker.once('exit', resolve))).toBe(0)
  } finally {
    if (worker.exitCode === null) worker.kill('SIGKILL')
  }
}, 120_000)
