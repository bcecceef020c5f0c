import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/** `execgate plan …`, the real built CLI on a real SQLite store in a temp dir (no reflector configured). */
const root = path.join(__dirname, '..')
const bin = path.join(root, 'bin', 'execgate.js')
let dir: string
let env: Record<string, string>

function execgate(args: string[]) {
  const child = spawnSync(process.execPath, [bin, ...args], { cwd: dir, encoding: 'utf8', env, timeout: 60_000 })
  return { code: child.status, stdout: child.stdout, stderr: child.stderr }
}

const plan = (steps: unknown[]) => JSON.stringify({ goal: 'a test', steps })

beforeAll(() => {
  if (!fs.existsSync(path.join(root, 'dist', 'src', 'cli', 'plans.js')))
    throw new Error('dist/ is missing: run `npm run build` (npm test does)')
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-cli-plans-'))
  env = {
    PATH: process.env.PATH ?? '',
    EXECGATE_FABRIC_DATA_DIR: path.join(dir, 'store'),
    EXECGATE_EXECUTION_ENABLED: 'quickjs,monty,shell',
    EXECGATE_LOG_LEVEL: 'silent',
  }
  fs.writeFileSync(
    path.join(dir, 'plan.json'),
    plan([
      { id: 'orders', language: 'python', code: '[120.5, 80.0, 42.25, 310.0]' },
      {
        id: 'average',
        language: 'javascript',
        dependsOn: ['orders'],
        code: 'const o = JSON.parse(await read_file("steps/orders/value.json")); o.reduce((a, b) => a + b, 0) / o.length',
      },
      { id: 'report', language: 'bash', dependsOn: ['average'], code: 'echo "average $(cat steps/average/value.json)"' },
    ]),
  )
  fs.writeFileSync(path.join(dir, 'fails.json'), plan([{ id: 'one', language: 'javascript', code: 'throw new Error("nope")' }]))
  fs.writeFileSync(path.join(dir, 'cycle.json'), plan([{ id: 'a', language: 'javascript', code: '1', dependsOn: ['a'] }]))
})

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

test('run --wait drives the plan here and prints each step; exit 0 for COMPLETED, 1 otherwise', () => {
  const ok = execgate(['plan', 'run', 'plan.json', '--wait'])
  expect(ok.code).toBe(0)
  expect(ok.stdout).toMatch(/^plan \S+ {2}COMPLETED {2}version 1 {2}revisions 0\/3 {2}every step completed \(version 1\)\n/)
  expect(ok.stdout).toContain(
    '  orders   COMPLETED  value: [120.5,80,42.25,310]\n  average  COMPLETED  value: 138.1875\n ' +
      ' report   COMPLETED  stdout: "average 138.1875"\n',
  )
  const failed = execgate(['plan', 'run', 'fails.json', '--wait', '--json'])
  expect(failed.code).toBe(1)
  expect(JSON.parse(failed.stdout)).toMatchObject({
    state: 'FAILED',
    failedStep: 'one',
    reason: expect.stringMatching(/^step one failed: error: Error: nope .*no reflector is configured/),
  })
})

test('run without --wait stores the plan; get, list and wait follow it; a bad plan is exit 2 with the reason', () => {
  const queued = JSON.parse(execgate(['plan', 'run', 'plan.json', '--json']).stdout)
  expect(queued).toMatchObject({ state: 'RUNNING', steps: [{ state: 'PENDING' }, { state: 'PENDING' }, { state: 'PENDING' }] })
  expect(execgate(['plan', 'get', queued.id]).stdout).toMatch(new RegExp(`^plan ${queued.id}  RUNNING`))
  expect(
    JSON.parse(execgate(['plan', 'list', '--state', 'RUNNING', '--json']).stdout).plans.map((item: { id: string }) => item.id),
  ).toEqual([queued.id])
  const waited = execgate(['plan', 'wait', queued.id])
  expect(waited.code).toBe(0)
  expect(waited.stdout).toMatch(/COMPLETED/)
  const cycle = execgate(['plan', 'run', 'cycle.json'])
  expect(cycle.code).toBe(2)
  expect(cycle.stderr).toContain('dependency cycle: a -> a')
  const missing = execgate(['plan', 'get', 'no-such-plan'])
  expect(missing.code).toBe(2)
  expect(missing.stderr).toContain('no plan "no-such-plan"')
})

test(
  'plan suspend holds a stored plan, a second suspend is exit 2 naming the state, a looser ' +
    'resume is exit 2, resume lets wait complete it',
  () => {
    const queued = JSON.parse(execgate(['plan', 'run', 'plan.json', '--json']).stdout)
    const suspended = execgate(['plan', 'suspend', queued.id])
    expect(suspended.code).toBe(0)
    expect(suspended.stdout).toMatch(
      new RegExp(
        `^plan ${queued.id}  SUSPENDED  version 1  revisions 0/3  suspended by the caller\n  ` +
          `orders   SUSPENDED  plan ${queued.id} suspended\n`,
      ),
    )
    const again = execgate(['plan', 'suspend', queued.id])
    expect([again.code, again.stderr.trim()]).toEqual([
      2,
      `[execgate] plan ${queued.id} is SUSPENDED and cannot be suspended (only RUNNING plans can)`,
    ])
    const loosened = execgate(['plan', 'resume', queued.id, '--memory-mb', '100000'])
    expect([loosened.code, loosened.stderr.trim()]).toEqual([
      2,
      `[execgate] plan ${queued.id} was not resumed and stays SUSPENDED: step "orders": the ` +
        `request may only tighten the policy: memoryMb 100000 is above the allowed 128`,
    ])
    expect(execgate(['plan', 'resume', queued.id, '--memory-mb', '64']).stdout).toMatch(
      new RegExp(`^plan ${queued.id}  RUNNING  version 1  revisions 0/3  resumed by the caller with memoryMb changed\n`),
    )
    const waited = execgate(['plan', 'wait', queued.id])
    expect([waited.code, waited.stdout]).toEqual([0, expect.stringContaining('report   COMPLETED  stdout: "average 138.1875"')])
  },
)
