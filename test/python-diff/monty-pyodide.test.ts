import { MontyAdapter } from '../../adapters/monty'
import { PyodideAdapter } from '../../adapters/pyodide'
import { createExecgate, type Execgate } from '../../src'
import type { ExecutionResult } from '../../src/core'
import { contractContext } from '../contract/adapter-contract'
import { loadPythonCorpus } from './corpus'
import { loadKnownDivergences } from './known-divergences'

/**
 * The differential suite: every program of test/python-diff/cases runs on monty and on pyodide (CPython) through
 * the real adapters, and must answer the same status, stdout, value and exception type — unless routing sends it
 * to a full Python before running (monty's canRun says no), or docs/adapters/monty.md lists it as a known
 * divergence. A listed case that no longer diverges fails too, so the list stays true.
 */
const corpus = loadPythonCorpus()
const known = loadKnownDivergences()

/** What a caller compares: monty answers `null` for a None value where pyodide leaves it out; both mean no value. */
function answer(result: ExecutionResult) {
  return {
    status: result.status,
    stdout: result.stdout,
    value: result.value ?? null,
    // monty qualifies some exception names (`json.JSONDecodeError`); CPython's type name is the last part.
    errorType: result.status === 'error' ? result.error?.type.split('.').pop() : undefined,
  }
}

describe('monty answers like CPython (pyodide) on the differential corpus', () => {
  const monty = new MontyAdapter()
  // One interpreter, the cases run one after another: pyodide's start (~4 s) is paid once, monty's runs are µs.
  const pyodide = new PyodideAdapter({ poolSize: 1 })
  const context = () => contractContext({ wallTimeMs: 20_000, memoryMb: 256, outputBytes: 64 * 1024 })
  const seen = { escalated: 0, same: 0, rerun: 0, differs: 0 }
  // The same two adapters behind the service, for the `rerun` cases: what a user is actually answered.
  let execgate: Execgate
  beforeAll(async () => {
    execgate = await createExecgate({
      adapters: [monty, pyodide],
      env: {
        EXECGATE_FABRIC_DATA_DIR: process.env.EXECGATE_FABRIC_DATA_DIR,
        EXECGATE_LOG_LEVEL: 'silent',
        EXECGATE_EXECUTION_ENABLED: 'monty,pyodide',
        EXECGATE_READINESS_ENABLED: 'false',
        EXECGATE_SECURITY_DEFAULT_POLICY_WALL_TIME_MS: '20000',
        EXECGATE_SECURITY_DEFAULT_POLICY_MEMORY_MB: '256',
        EXECGATE_SECURITY_DEFAULT_POLICY_ALLOWED_IMPORTS: 'math,json,re,datetime,sys,typing,asyncio',
      },
    })
  })

  afterAll(async () => {
    await execgate.dispose() // disposes both adapters
    // One line of figures for whoever reads the run: how much of the corpus each path covers.
    process.stdout.write(
      `python-diff: ${corpus.length} cases, ${seen.escalated} escalated by the scan, ` +
        `${seen.same} same, ${seen.rerun} rerun on pyodide, ${seen.differs} known to differ\n`,
    )
  })

  test('the corpus is large enough to mean something, and every listed divergence names a case in it', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(300)
    const ids = new Set(corpus.map((item) => item.id))
    expect([...known.keys()].filter((id) => !ids.has(id))).toEqual([])
  })

  test.each(corpus.map((item) => [item.id, item] as const))(
    '%s',
    async (id, item) => {
      const verdict = monty.canRun(item.code, 'python')
      const listed = known.get(id)
      if (!verdict.ok) {
        // Routing sends it to pyodide before running: the user gets CPython's answer, so nothing to list.
        expect({ id, listed: listed?.kind }).toEqual({ id, listed: undefined })
        seen.escalated++
        return
      }
      const fromMonty = answer(await monty.execute({ language: 'python', code: item.code }, context()))
      const fromCPython = answer(await pyodide.execute({ language: 'python', code: item.code }, context()))
      const same = JSON.stringify(fromMonty) === JSON.stringify(fromCPython)
      if (!listed) {
        expect({ id, ...fromMonty }).toEqual({ id, ...fromCPython })
        seen.same++
        return
      }
      // Listed: it must still differ (else take it off the list), and a `rerun` case must be one the service reruns.
      expect({ id, stillDiffers: !same }).toEqual({ id, stillDiffers: true })
      expect({ id, kind: listed.kind }).toEqual({ id, kind: fromMonty.status === 'error' ? 'rerun' : 'differs' })
      if (listed.kind === 'rerun') {
        // The service runs it again on pyodide: the user gets CPython's answer, and is told so.
        const served = await execgate.execute({ language: 'python', code: item.code })
        expect({ id, ...answer(served), rerunFrom: served.route?.rerunFrom }).toEqual({ id, ...fromCPython, rerunFrom: 'monty' })
      }
      seen[listed.kind]++
    },
    60_000,
  )
})
