import fs from 'node:fs'
import { performance } from 'node:perf_hooks'
import type { ExecutionContext, ExecutionRequest, ExecutionResult, HostFunctions, Language, SecurityPolicy } from '../../src/core'
import { HostileHostFunctions } from './fixtures'
import type { HostileCase, HostileExpect } from './corpus'
import { HOSTILE_POLICY, casePolicy, staticRefusals } from './case-policy'
import { HostWatch, changedKeys, commandLine, descendantPids, newResources, resourceCounts, sleep, snapshotRealm } from './host-watch'
import { CANARY_FILE, ENV_CANARY, type HostileSuiteOptions, type HostileTarget } from './hostile-suite-options'

/**
 * One hostile case's run and its judgement (describeHostileCases in hostile-runner.ts makes the tests): the case's
 * code under its policy, through the service or on the adapter itself, then every `expect` key of the case checked,
 * with the follow-up runs (does the host still work, does another run see a trace) those keys ask for.
 */

/**
 * Follow-up runs (does the host still work? does the next run see a trace?) are not the case itself: they get
 * time enough for an adapter to replace what the case cost it (a killed interpreter warming again).
 */
const FOLLOW_UP_POLICY_WALL_MS = 30_000

const FOLLOW_UP_POLICY: SecurityPolicy = Object.freeze({
  ...HOSTILE_POLICY,
  wallTimeMs: FOLLOW_UP_POLICY_WALL_MS,
  cpuTimeMs: FOLLOW_UP_POLICY_WALL_MS,
})

export const TRIVIAL: Record<Language, string> = { javascript: '1 + 1', typescript: '1 + 1', python: '1 + 1', bash: 'echo $((1 + 1))' }
const ISOLATION_PROBE: Record<Language, { code: string; expect: string }> = {
  javascript: { code: 'console.log(JSON.stringify([1]))', expect: '[1]' },
  typescript: { code: 'console.log(JSON.stringify([1]))', expect: '[1]' },
  python: { code: 'import json\nprint(json.dumps([1]))', expect: '[1]' },
  // A shell that kept anything of the last run would show it here.
  bash: { code: 'echo "[${LEFT:-1}]"; cat /tmp/left 2>/dev/null; type -t f || true', expect: '[1]' },
}

function allText(result: ExecutionResult): string {
  return [result.stdout, result.stderr, JSON.stringify(result.value) ?? '', result.error?.message ?? '', result.message ?? ''].join('\n')
}

/**
 * Processes of the test run itself, never of the code: from sources (ts-jest) the ledger's writer thread loads its
 * TypeScript through esbuild, whose service process starts with the first run a ledger records and lives with it.
 */
const TEST_INFRASTRUCTURE = /\/esbuild --service=/

/** Sent through the service under `policy`, the case is refused by the static check: nothing runs. */
export async function expectRefusedBeforeRunning(
  hostileCase: HostileCase,
  policy: SecurityPolicy,
  options: HostileSuiteOptions,
  getTarget: () => HostileTarget,
): Promise<void> {
  const language = options.language
  expect(staticRefusals(hostileCase, language, policy).length).toBeGreaterThan(0)
  const result = await getTarget().execute({ language, code: hostileCase.code, adapter: options.adapter }, { basePolicy: policy })
  expect({ status: result.status, stdout: result.stdout, ran: result.usage?.wallMs ?? 0 }).toEqual({
    status: 'policy_violation',
    stdout: '',
    ran: 0,
  })
}

/**
 * One run of the case's code under its policy: through the service (the way every caller goes), or, for code the
 * service's static check refuses, on the adapter itself with the same policy, so the backend's own containment is
 * what the expectations check.
 */
function runner(
  path: 'service' | 'adapter',
  options: HostileSuiteOptions,
  target: HostileTarget,
  extra: { hostFunctions?: HostFunctions; onOutput: (stream: 'stdout' | 'stderr', chunk: string) => void },
) {
  return (request: ExecutionRequest, policy: SecurityPolicy): Promise<ExecutionResult> => {
    if (path === 'service') return target.execute(request, { basePolicy: policy, ...extra })
    const adapter = target.adapters().find((item) => item.name === options.adapter)
    if (!adapter) throw new Error(`the hostile target has no adapter ${options.adapter}`)
    const context: ExecutionContext = {
      traceId: `hostile-${Math.random().toString(36).slice(2)}`,
      policy,
      signal: new AbortController().signal,
      deadline: performance.now() + policy.wallTimeMs,
      ...extra,
    }
    return adapter.execute(request, context)
  }
}

export async function runCase(
  hostileCase: HostileCase,
  options: HostileSuiteOptions,
  getTarget: () => HostileTarget,
  baseline: () => Set<number>,
  path: 'service' | 'adapter',
): Promise<void> {
  const target = getTarget()
  const language = options.language
  const policy = casePolicy(hostileCase)
  const processesBefore = new Set([...baseline(), ...descendantPids()])
  const adjustment = options.adjusted?.[hostileCase.id]
  const expectations: HostileExpect = { ...hostileCase.expect, ...adjustment?.expect }
  // On the adapter itself, past the static check, the backend's own guard refusing the import is containment too:
  // the service would have answered policy_violation.
  const statuses = (list: string[]) => (path === 'adapter' ? [...list, 'policy_violation'] : list)
  fs.rmSync(CANARY_FILE, { force: true })
  const hostObj = { name: 'host object' }
  const realmBefore = snapshotRealm(hostObj)
  const resourcesBefore = resourceCounts()
  const watch = new HostWatch()
  const lateOutput: string[] = []
  const hostFunctions: HostFunctions | undefined = options.hostFunctions ? new HostileHostFunctions() : undefined
  const session = options.sessions ? { sessionId: `hostile-${hostileCase.id}` } : {}
  const otherSession = options.sessions ? { sessionId: `hostile-other-${hostileCase.id}` } : {}
  watch.start()
  const started = performance.now()
  const send = runner(path, options, target, { hostFunctions, onOutput: (_stream, chunk) => lateOutput.push(chunk) })
  const run = (runPolicy: SecurityPolicy) => send({ language, code: hostileCase.code, adapter: options.adapter, ...session }, runPolicy)
  let result = await run(policy)
  let judged = started
  // A payload that grows slowly (a memory bomb one element at a time, a string doubling or brace expansion on a
  // machine at load 20+, a deep recursion in a loaded pyodide) can meet the 1 s clock before the limit that stops it.
  // That limit must still be the one that stops it: run it again with time to spare, and judge that run.
  const expected = expectations.statusIn ?? (expectations.status ? [expectations.status] : undefined)
  if (result.status === 'timeout' && expected && !expected.includes('timeout')) {
    judged = performance.now()
    result = await run({ ...policy, wallTimeMs: 10_000, cpuTimeMs: 10_000 })
  }
  const wallMs = performance.now() - judged
  // `maxWallMs` proves a run is stopped rather than left to hang (every such payload runs for minutes or forever
  // unstopped); a loaded machine gets 10x the case's time limit (container starts took 3.7 s at load 45), as every
  // clock in the tests does.
  const maxWallMs = expectations.maxWallMs && Math.max(expectations.maxWallMs, 10 * policy.wallTimeMs)
  const outputDuringRun = lateOutput.length
  const context =
    `case ${hostileCase.id} → status ${result.status}, ${Math.round(wallMs)} ms, message: ` +
    `${result.message ?? ''}\nstdout: ${result.stdout.slice(0, 300)}\nstderr: ` +
    `${result.stderr.slice(0, 300)}`

  try {
    if (expectations.status)
      expect({ ok: statuses([expectations.status]).includes(result.status), status: result.status, context }).toEqual({
        ok: true,
        status: result.status,
        context,
      })
    // The status beside `ok`, so a failure's diff shows it (the context's first line may be folded away).
    if (expectations.statusIn)
      expect({ ok: statuses(expectations.statusIn).includes(result.status), status: result.status, context }).toEqual({
        ok: true,
        status: result.status,
        context,
      })
    const text = allText(result)
    for (const needle of expectations.contains ?? [])
      expect({ contains: text.includes(needle), needle, context }).toEqual({ contains: true, needle, context })
    for (const needle of expectations.notContains ?? [])
      expect({ contains: text.includes(needle), needle, context }).toEqual({ contains: false, needle, context })
    expect(text.includes(ENV_CANARY)).toBe(false)
    if (expectations.maxOutputBytes) {
      const outputBytes = Buffer.byteLength(text)
      expect({ outputBytes: outputBytes <= expectations.maxOutputBytes, context }).toEqual({ outputBytes: true, context })
    }
    if (maxWallMs) expect({ wallMs: Math.round(wallMs) <= maxWallMs, context }).toEqual({ wallMs: true, context })
    if (expectations.hostFileAbsent) expect(fs.existsSync(expectations.hostFileAbsent)).toBe(false)
    if (expectations.hostUnchanged) {
      const merged = Object.assign({}, result.value as object, JSON.parse(JSON.stringify(result.value ?? null)) ?? {})
      expect(merged).toBeDefined()
      expect(({} as Record<string, unknown>).polluted).toBeUndefined()
      expect(changedKeys(realmBefore, snapshotRealm(hostObj))).toEqual([])
    }
    if (expectations.noUnhandledRejectionInHost) {
      await sleep(500)
      expect(watch.rejections).toEqual([])
    }
    if (expectations.noLateOutput) {
      const marker = expectations.noLateOutput
      const writes: string[] = []
      const originals = { out: process.stdout.write, err: process.stderr.write }
      const capture = (original: typeof process.stdout.write) =>
        function (this: NodeJS.WriteStream, chunk: unknown, ...rest: unknown[]) {
          writes.push(String(chunk))
          return (original as (...args: unknown[]) => boolean).call(this, chunk, ...rest)
        } as typeof process.stdout.write
      process.stdout.write = capture(originals.out)
      process.stderr.write = capture(originals.err)
      try {
        await sleep(3000)
      } finally {
        process.stdout.write = originals.out
        process.stderr.write = originals.err
      }
      expect(writes.some((chunk) => chunk.includes(marker))).toBe(false)
      expect(lateOutput.slice(outputDuringRun).some((chunk) => chunk.includes(marker))).toBe(false)
      expect(allText(result).includes(marker)).toBe(false)
    }
    if (expectations.noLeftoverHandles) {
      // Handles may close a moment after the result (an HTTP client's deferred socket timers last up to 3 s, longer
      // on a busy machine); five seconds later nothing of the run may remain. A leak stays, so it is still caught.
      let grown = newResources(resourcesBefore)
      for (let waited = 0; grown.length && waited < 5000; waited += 250) {
        await sleep(250)
        grown = newResources(resourcesBefore)
      }
      expect({ grown, context }).toEqual({ grown: [], context })
    }
    if (expectations.noLeftoverProcesses) {
      await sleep(1000)
      // Named by command line, so a failure says what was left (a zombie's is empty).
      const leftovers = descendantPids()
        .filter(
          (pid) =>
            !processesBefore.has(pid) &&
            !(options.poolProcess && options.poolProcess.test(commandLine(pid))) &&
            !TEST_INFRASTRUCTURE.test(commandLine(pid)),
        )
        .map((pid) => `${pid} ${commandLine(pid) || '(no command line: exiting or a zombie)'}`)
      expect({ leftovers, context }).toEqual({ leftovers: [], context })
    }
    if (expectations.hostDoesNotFollowWorkspaceSymlinks) {
      for (const file of result.files ?? []) expect(file.content).not.toContain('root:x:0:0')
    }
    if (expectations.crossRunIsolation) {
      const probe = ISOLATION_PROBE[language]
      const next = await target.execute(
        { language, code: probe.code, adapter: options.adapter, ...otherSession },
        { basePolicy: FOLLOW_UP_POLICY },
      )
      expect({ status: next.status, stdout: next.stdout.trim() }).toEqual({ status: 'ok', stdout: probe.expect })
    }
    if (expectations.hostSurvives || expectations.nextRunOk) {
      const next = await target.execute(
        { language, code: TRIVIAL[language], adapter: options.adapter, ...session },
        { basePolicy: FOLLOW_UP_POLICY },
      )
      // A shell has no value: its trivial run prints 2.
      const value = hostileCase.language === 'bash' ? Number(next.stdout.trim()) : next.value
      expect({ status: next.status, value, message: next.message }).toEqual({ status: 'ok', value: 2, message: undefined })
    }
    expect({ uncaught: watch.uncaught, rejections: watch.rejections }).toEqual({ uncaught: [], rejections: [] })
  } finally {
    watch.stop()
    fs.rmSync(CANARY_FILE, { force: true })
    if (options.sessions) for (const id of [session.sessionId!, otherSession.sessionId!]) await target.closeSession?.(id)
  }
}
