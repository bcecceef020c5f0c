import fs from 'node:fs'
import path from 'node:path'
import { createExecgate, type Execgate } from '../../src'
import { DEFAULT_POLICY } from '../../src/policy'
import type { ExecutionResult, SecurityPolicy } from '../../src/core'
import type { HostileCase } from '../hostile/corpus'
import { descendantPids } from '../hostile/hostile-runner'
import type { ProcessAdapter } from '../../adapters/process'

/**
 * The warm data interpreter's hostile corpus (test/hostile/data-cases.json): every case imports the data stack, so it
 * runs in a child of the zygote, under a policy that lets it try (os, threading, signal, socket allowed) and a memory
 * limit above what the zygote already holds. After each case, a probe run must see no trace of it.
 */
const CASES = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'hostile', 'data-cases.json'), 'utf8')) as HostileCase[]

const POLICY: SecurityPolicy = Object.freeze({
  ...DEFAULT_POLICY,
  wallTimeMs: 3000,
  cpuTimeMs: 3000,
  memoryMb: 512,
  outputBytes: 64 * 1024,
  filesystem: 'read_only',
  allowedImports: ['pandas', 'numpy', 'os', 'sys', 'threading', 'time', 'signal', 'socket'],
}) as SecurityPolicy

const ENV_CANARY = 'HOSTILE_ENV_CANARY_VALUE'
const SANDBOX_UIDS = new Set(Array.from({ length: 16 }, (_, index) => 61000 + index))

/** A run that finds everything as a fresh run would: pandas and numpy unpatched, no threads, an empty /tmp. */
const PROBE = [
  'import pandas as pd, numpy as np, threading, os, sys',
  "[str(pd.DataFrame({'a': [1, 2]}).sum().tolist()), float(np.mean([1, 3])), 'LEFT_BY_RUN' in vars(sys.modules['pandas']),",
  ' pd.options.display.max_rows, threading.active_count(), sorted(os.listdir("/tmp")), sorted(os.listdir("/proc"))]',
].join('\n')
const PROBE_VALUE = ['[3]', 2, false, 60, 1, [], []]

function allText(result: ExecutionResult): string {
  return [result.stdout, result.stderr, JSON.stringify(result.value) ?? '', result.error?.message ?? '', result.message ?? ''].join('\n')
}

/**
 * This test's processes running as a sandbox uid (the warm children run as them when execgate is root): descendants
 * only, since other suites on the machine use the same uids. The spare the warm interpreter made for the next run
 * (C and G waiting for code, as a uid of their own) is not a leftover of the last one.
 */
function sandboxProcesses(spareUid: number | undefined): number[] {
  const pids: number[] = []
  for (const entry of descendantPids().map(String)) {
    try {
      const uid = Number(/^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${entry}/status`, 'utf8'))?.[1])
      if (SANDBOX_UIDS.has(uid) && uid !== spareUid) pids.push(Number(entry))
    } catch {
      // gone meanwhile
    }
  }
  return pids
}

describe('hostile corpus on the warm data interpreter (process tier)', () => {
  let execgate: Execgate
  const run = (code: string, policy: SecurityPolicy = POLICY) =>
    execgate.execute({ language: 'python', code, adapter: 'process' }, { basePolicy: policy })

  beforeAll(async () => {
    process.env.HOSTILE_ENV_CANARY = ENV_CANARY
    execgate = await createExecgate({
      overrides: { execution: { enabled: ['process'] }, readiness: { enabled: false }, log: { level: 'silent' } },
    })
    const first = await run("import pandas\n'warm'", { ...POLICY, wallTimeMs: 60_000, cpuTimeMs: 60_000 })
    expect(first).toMatchObject({ status: 'ok', value: 'warm' })
  }, 120_000)
  afterAll(() => execgate.dispose(), 30_000)
  const spareUid = () => (execgate.adapters().find((adapter) => adapter.name === 'process') as ProcessAdapter).warmSpareUid()

  test('a data run takes the warm path: its /proc is empty, where a cold sandbox has its own', async () => {
    const warm = await run("import pandas, os\nos.listdir('/proc')")
    expect(warm).toMatchObject({ status: 'ok', value: [] })
    const cold = await run("import os\nlen(os.listdir('/proc')) > 0")
    expect(cold).toMatchObject({ status: 'ok', value: true })
  })

  for (const hostile of CASES) {
    test(`${hostile.id} (${hostile.category})`, async () => {
      let result = await run(hostile.code)
      // A memory bomb that writes its blocks can meet the clock before the memory limit on a loaded machine: its
      // expected limit must still be the one that stops it, given time to spare (as test/hostile's runner does).
      if (hostile.category === 'memory-bomb' && result.status === 'timeout')
        result = await run(hostile.code, { ...POLICY, wallTimeMs: 20_000, cpuTimeMs: 20_000 })
      const context =
        `case ${hostile.id} → ${result.status}: ${result.message ?? ''}\nstdout: ` +
        `${result.stdout.slice(0, 300)}\nstderr: ${result.stderr.slice(-300)}`
      const { expect: expectations } = hostile
      if (expectations.status) expect({ status: result.status, context }).toEqual({ status: expectations.status, context })
      if (expectations.statusIn) expect({ ok: expectations.statusIn.includes(result.status), context }).toEqual({ ok: true, context })
      const text = allText(result)
      for (const needle of expectations.contains ?? [])
        expect({ needle, found: text.includes(needle), context }).toEqual({ needle, found: true, context })
      for (const needle of expectations.notContains ?? [])
        expect({ needle, found: text.includes(needle), context }).toEqual({ needle, found: false, context })
      expect(text.includes(ENV_CANARY)).toBe(false)
      if (expectations.noLeftoverProcesses) {
        let left = sandboxProcesses(spareUid())
        for (let waited = 0; left.length > 0 && waited < 3000; waited += 100) {
          await new Promise((resolve) => setTimeout(resolve, 100))
          left = sandboxProcesses(spareUid())
        }
        expect(left).toEqual([])
      }
      if (expectations.nextRunOk) expect(await run('import pandas\n1 + 1')).toMatchObject({ status: 'ok', value: 2 })
      if (expectations.crossRunIsolation) {
        const probe = await run(PROBE)
        expect({ status: probe.status, value: probe.value, stdout: probe.stdout }).toEqual({ status: 'ok', value: PROBE_VALUE, stdout: '' })
      }
    }, 60_000)
  }

  test('concurrent runs cannot reach each other: no shared loopback, abstract socket or signal', async () => {
    const listener = run(
      [
        'import pandas, socket, time',
        'tcp = socket.socket(); tcp.bind(("127.0.0.1", 47011)); tcp.listen()',
        'unix = socket.socket(socket.AF_UNIX); unix.bind("\\0execgate-warm-probe"); unix.listen()',
        'time.sleep(1.5)',
        "'survived'",
      ].join('\n'),
    )
    await new Promise((resolve) => setTimeout(resolve, 400))
    const prober = await run(
      [
        'import pandas, socket, os, signal',
        'found = []',
        'for family, address in [(socket.AF_INET, ("127.0.0.1", 47011)), (socket.AF_UNIX, "\\0execgate-warm-probe")]:',
        '    s = socket.socket(family)',
        '    try:',
        '        s.connect(address); found.append("CONNECTED")',
        '    except OSError as error:',
        '        found.append(type(error).__name__)',
        'for pid in range(2, 400):',
        '    try:',
        '        os.kill(pid, signal.SIGKILL); found.append("KILLED %d" % pid)',
        '    except OSError:',
        '        pass',
        'found',
      ].join('\n'),
    )
    expect(prober.status).toBe('ok')
    expect(JSON.stringify(prober.value)).not.toMatch(/CONNECTED|KILLED/)
    expect(await listener).toMatchObject({ status: 'ok', value: 'survived' })
  }, 60_000)
})
