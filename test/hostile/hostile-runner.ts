import fs from 'node:fs'
import { createExecgate, type Execgate } from '../../src'
import { HostileHostFunctions } from './fixtures'
import { EXTRA_CORPUS_FILE, EXTRA_CORPUS_LABEL, hostileCorpora } from './corpus'
import { HOSTILE_POLICY, casePolicy, corpusLanguage, staticRefusals } from './case-policy'
import { descendantPids, sleep } from './host-watch'
import { TRIVIAL, expectRefusedBeforeRunning, runCase } from './hostile-case-run'
import { CANARY_FILE, ENV_CANARY, type HostileSuiteOptions, type HostileTarget } from './hostile-suite-options'

export { HOSTILE_POLICY, casePolicy } from './case-policy'
export { descendantPids } from './host-watch'

export { hostileCorpora, loadHostileCases, type HostileCase, type HostileExpect } from './corpus'
export { CANARY_FILE, ENV_CANARY, type HostileSuiteOptions, type HostileTarget } from './hostile-suite-options'

/**
 * Runs the project's hostile corpus (test/hostile/cases.json, described in this folder's README) against one
 * adapter through ExecutionService, checking every `expect` key. Cases that cannot apply to an adapter are listed
 * by id with the reason, and the runner fails if such a list names a case that does not exist, so no case is
 * skipped silently. An extra corpus beside the repository (README) runs too when present.
 */

/**
 * A suite's own execgate with only `adapter` enabled, the readiness monitor off (its polls would start timers and
 * probes mid-case) and logs silent; `overrides` gives more config, such as the adapter's options.
 */
export function ownExecgate(
  adapter: string,
  overrides: () => Record<string, unknown> = () => ({}),
): Pick<HostileSuiteOptions, 'target' | 'dispose'> {
  let execgate: Execgate | undefined
  return {
    // `overrides` is read when the suite starts: a fake service's endpoint is known only then.
    target: async () => {
      execgate = await createExecgate({
        overrides: { execution: { enabled: [adapter] }, readiness: { enabled: false }, log: { level: 'silent' }, ...overrides() },
      })
      // Warm whatever its tier (pyodide warms behind the first tier, and a run that meets it still warming waits only
      // its own time limit): the cases test the adapter's limits, not its start-up.
      await execgate.ready([adapter])
      return execgate
    },
    dispose: async () => execgate?.dispose(),
  }
}

export function describeHostileCases(options: HostileSuiteOptions): void {
  const corpora = hostileCorpora(corpusLanguage(options.language))
  const notApplicable = options.notApplicable ?? {}
  process.env.HOSTILE_ENV_CANARY = ENV_CANARY

  describe(`hostile corpus (${options.language}) on ${options.adapter}${options.sessions ? ', in sessions' : ''}`, () => {
    let target: HostileTarget
    let baselinePids: Set<number>
    beforeAll(async () => {
      target = await options.target()
      // Warm the adapter so pools and workers it keeps are part of the baseline, not "leftovers". Pools that take
      // longer to warm than the corpus's 1 s limit answer timeout until they are ready.
      const warmUntil = Date.now() + 120_000
      for (;;) {
        // With the cases' host functions, so the path the cases take (a worker, for some adapters) is the warm one.
        const hostFunctions = options.hostFunctions ? new HostileHostFunctions() : undefined
        const warm = await target.execute(
          { language: options.language, code: TRIVIAL[options.language], adapter: options.adapter },
          { basePolicy: HOSTILE_POLICY, hostFunctions },
        )
        if (warm.status === 'ok' || Date.now() > warmUntil) break
        await sleep(250)
      }
      baselinePids = new Set(descendantPids())
    }, 180_000)
    // Disposing removes every container or process the cases left to the adapter: minutes on a loaded machine.
    afterAll(async () => {
      await options.dispose?.()
    }, 180_000)

    test('every not-applicable and adjusted entry names a real case', () => {
      const ids = new Set(corpora.flatMap((corpus) => corpus.cases.map((item) => item.id)))
      expect([...Object.keys(notApplicable), ...Object.keys(options.adjusted ?? {})].filter((id) => !ids.has(id))).toEqual([])
    })

    afterAll(async () => {
      // One payload writes the canary from a delayed daemon: look again some seconds after the last case.
      await sleep(3000)
      expect(fs.existsSync(CANARY_FILE)).toBe(false)
    }, 10_000)

    // The repository stands alone: without the optional extra corpus the project's own corpus is the whole run, and
    // this says so in the results (a passing test that checks it, not a skip).
    if (!corpora.some((corpus) => corpus.label === EXTRA_CORPUS_LABEL))
      test(`runs the project corpus alone (no extra corpus at ${EXTRA_CORPUS_FILE})`, () => {
        expect(corpora.length).toBe(1)
        expect(corpora[0]!.cases.length).toBeGreaterThan(0)
      })

    for (const corpus of corpora) {
      describe(corpus.label, () => {
        for (const hostileCase of corpus.cases) {
          const reason = notApplicable[hostileCase.id]
          if (reason) {
            test(`${hostileCase.id}: does not apply to ${options.adapter} — ${reason}`, () => {
              expect(reason.length).toBeGreaterThan(10)
            })
            continue
          }
          const policy = casePolicy(hostileCase)
          const refusals = staticRefusals(hostileCase, options.language, policy)
          // Without what its `policy` adds, the case is refused before it runs: that refusal is a case of its own.
          if (hostileCase.policy) {
            test(`${hostileCase.id} (${hostileCase.category}), without its policy's additions: refused before running`, async () => {
              await expectRefusedBeforeRunning(hostileCase, HOSTILE_POLICY, options, () => target)
            })
          }
          if (refusals.length) {
            test(`${hostileCase.id} (${hostileCase.category}), through the service: refused before running`, async () => {
              await expectRefusedBeforeRunning(hostileCase, policy, options, () => target)
            })
          }
          // A case the static check refuses still meets the backend: it is sent to the adapter itself.
          const path = refusals.length ? 'on the adapter itself, past the static check' : 'through the service'
          const adjusted = options.adjusted?.[hostileCase.id] ? ` (adjusted here: ${options.adjusted[hostileCase.id]!.reason})` : ''
          test(
            `${hostileCase.id} (${hostileCase.category}) holds ${path}${adjusted}`,
            async () => {
              await runCase(
                hostileCase,
                options,
                () => target,
                () => baselinePids,
                refusals.length ? 'adapter' : 'service',
              )
            },
            options.caseTimeoutMs ?? 30_000,
          )
        }
      })
    }
  })
}
