import { performance } from 'node:perf_hooks'
import { POLICY_LIMITS, type CodeExecutionAdapter, type Language } from '../../src/core'
import { loosenings } from '../policy/loosenings'
import { DEFAULT_POLICY } from '../../src/policy'
import { HostileHostFunctions } from '../hostile/fixtures'
import { SNIPPETS } from './snippets'
import { UNHURRIED, contractContext, runChecked, serviceFor } from './contract-runs'

export { contractContext, runChecked, serviceFor } from './contract-runs'

/**
 * The one conformance suite (keyv's test-suite idea): every adapter's test file calls it. Options switch groups
 * off by capability, never by adapter name; the capabilities an adapter declares are checked against what it does.
 */
export interface AdapterContractOptions {
  /** Languages to exercise. @default every language the adapter declares that has snippets */
  languages?: readonly Language[]
  /** The wall-time limit used for the timeout case; backends that start slowly need more. @default 1000 */
  timeoutMs?: number
  /** Extra time allowed past the limit before the result must be back. @default 1500 */
  timeoutSlackMs?: number
  /** Memory limit for the memory case, in MiB. @default 64 */
  memoryMb?: number
  /** Per-test Jest timeout. @default 60000 */
  testTimeoutMs?: number
  /**
   * Why interpreter state between session calls cannot be checked here (a remote service whose local stand-in
   * keeps none); the adapter's own test must then check its session handling.
   */
  sessionStateUncheckable?: string
}

/** Sets state in one call of a session and reads it back in the next. */
const SESSION: Partial<Record<Language, [string, string]>> = {
  javascript: ['const kept = 40', 'kept + 2'],
  typescript: ['const kept: number = 40', 'kept + 2'],
  python: ['kept = 40', 'kept + 2'],
}

/** How each language calls the fixture host function `hostFn()` and shows `a` of its result. */
const HOST_CALL: Partial<Record<Language, string>> = {
  javascript: 'const v = await hostFn(); v.a + 41',
  typescript: 'const v: { a: number } = await hostFn(); v.a + 41',
  python: 'hostFn()["a"] + 41',
}

export function describeAdapterContract(
  name: string,
  createAdapter: () => CodeExecutionAdapter | Promise<CodeExecutionAdapter>,
  options: AdapterContractOptions = {},
): void {
  const timeoutMs = options.timeoutMs ?? 1000
  const slack = options.timeoutSlackMs ?? 1500
  const memoryMb = options.memoryMb ?? 64

  describe(`adapter contract: ${name}`, () => {
    let adapter: CodeExecutionAdapter
    beforeAll(async () => {
      adapter = await createAdapter()
    }, options.testTimeoutMs ?? 120_000)
    afterAll(async () => {
      await adapter?.dispose()
    }, 60_000)

    test('declares a name, capabilities and languages that agree', () => {
      expect(adapter.name).toBe(name)
      expect(adapter.supportedLanguages().length).toBeGreaterThan(0)
      expect([...adapter.supportedLanguages()].sort()).toEqual([...adapter.capabilities.languages].sort())
      for (const limit of POLICY_LIMITS) expect(['hard', 'soft', 'none']).toContain(adapter.capabilities.enforcement[limit])
    })

    test(
      'checkAvailability answers with a state and a time',
      async () => {
        const availability = await adapter.checkAvailability()
        expect(availability.status).toBe('available')
        expect(Number.isNaN(Date.parse(availability.checkedAt))).toBe(false)
      },
      options.testTimeoutMs ?? 60_000,
    )

    const languages = () => (options.languages ?? adapter.supportedLanguages()).filter((language) => SNIPPETS[language])

    // Languages are only known once the adapter exists, so each case loops over them inside the test.
    const eachLanguage = (title: string, body: (language: Language) => Promise<void>) =>
      test(
        title,
        async () => {
          const list = languages()
          expect(list.length).toBeGreaterThan(0)
          for (const language of list) {
            if (adapter.capabilities.tier === 0) {
              // Tier 0 runs nothing: every case must answer not_implemented with the fallback action.
              const result = await runChecked(adapter, { language, code: SNIPPETS[language]!.ok }, contractContext())
              expect(result.status).toBe('not_implemented')
              expect(result.fallbackAction).toBe('describe_computation_only')
            } else {
              await body(language)
            }
          }
        },
        options.testTimeoutMs ?? 60_000,
      )

    eachLanguage('runs a program and returns its output and value (ok)', async (language) => {
      const snippet = SNIPPETS[language]!
      // Not a test of the time limit: a first run on a loaded machine (bedrock's session and process start, at load
      // ~45 in a whole-suite run) passed the default 5 s; UNHURRIED still ends a run that hangs.
      const result = await runChecked(adapter, { language, code: snippet.ok }, contractContext(UNHURRIED))
      expect(result.status).toBe('ok')
      expect(result.stdout).toContain('hello')
      if (snippet.okValue === 'value') expect(result.value).toBe(42)
      else expect(result.stdout).toContain('42')
      expect(result.error).toBeUndefined()
    })

    eachLanguage('reports the code raising as error, with the message', async (language) => {
      const result = await runChecked(adapter, { language, code: SNIPPETS[language]!.error }, contractContext())
      expect(result.status).toBe('error')
      expect(`${result.error?.message ?? ''} ${result.stderr}`).toContain('boom')
    })

    eachLanguage('reports a syntax error as error', async (language) => {
      const result = await runChecked(adapter, { language, code: SNIPPETS[language]!.syntaxError }, contractContext())
      expect(result.status).toBe('error')
    })

    eachLanguage('stops an infinite loop at the wall-time limit (timeout)', async (language) => {
      const started = performance.now()
      const result = await runChecked(adapter, { language, code: SNIPPETS[language]!.infinite }, contractContext({ wallTimeMs: timeoutMs }))
      const elapsed = performance.now() - started
      expect(result.status).toBe('timeout')
      // Stopped, not hung: an outer bound of ten times the limit (plus the adapter's start-up slack); how close to the
      // limit each adapter stops is a bench row (npm run bench), not a clock in a test on a shared machine.
      expect(elapsed).toBeLessThan(10 * timeoutMs + slack)
    })

    eachLanguage('stops a memory bomb (memory_limit, when memory is enforced hard)', async (language) => {
      const result = await runChecked(
        adapter,
        { language, code: SNIPPETS[language]!.memoryBomb },
        contractContext({ memoryMb, wallTimeMs: 10_000 }),
      )
      if (adapter.capabilities.enforcement.memory === 'hard') expect(result.status).toBe('memory_limit')
      else expect(['memory_limit', 'timeout', 'error']).toContain(result.status)
    })

    eachLanguage('cuts an output flood at the cap, keeping head and tail (output_limit)', async (language) => {
      const outputBytes = 16 * 1024
      const result = await runChecked(
        adapter,
        { language, code: SNIPPETS[language]!.outputFlood },
        contractContext({ ...UNHURRIED, outputBytes }),
      )
      expect(result.status).toBe('output_limit')
      expect(result.truncated).toBe(true)
      expect(Buffer.byteLength(result.stdout)).toBeLessThan(outputBytes + 200)
      expect(result.stdoutBytes).toBeGreaterThan(outputBytes)
    })

    eachLanguage('truncates one large write with a marker between head and tail', async (language) => {
      const outputBytes = 8 * 1024
      const result = await runChecked(adapter, { language, code: SNIPPETS[language]!.bigOutput }, contractContext({ outputBytes }))
      expect(result.status).toBe('output_limit')
      expect(result.stdout).toMatch(/^y+\n?…\[execgate: \d+ bytes omitted\]…\n?y+/)
      expect(result.stdoutBytes).toBeGreaterThanOrEqual(200 * 1024)
    })

    eachLanguage('a run after a failure works (the adapter recovers)', async (language) => {
      await runChecked(adapter, { language, code: SNIPPETS[language]!.memoryBomb }, contractContext({ memoryMb, wallTimeMs: 5000 }))
      const result = await runChecked(adapter, { language, code: SNIPPETS[language]!.ok }, contractContext())
      expect(result.status).toBe('ok')
    })

    eachLanguage('answers cancelled when the caller aborts (or, if not cancellable, stops at its own limit)', async (language) => {
      const controller = new AbortController()
      const timer = setTimeout(() => controller.abort(), 200)
      const wallTimeMs = adapter.capabilities.cancellable ? 10_000 : timeoutMs
      const result = await runChecked(
        adapter,
        { language, code: SNIPPETS[language]!.infinite },
        contractContext({ wallTimeMs }, { signal: controller.signal }),
      )
      clearTimeout(timer)
      expect(result.status).toBe(adapter.capabilities.cancellable ? 'cancelled' : 'timeout')
    })

    test('never rejects, even on a language it does not run', async () => {
      const foreign = (['bash', 'python', 'javascript'] as const).find((language) => !adapter.supportedLanguages().includes(language))
      if (!foreign) return expect(adapter.supportedLanguages().length).toBeGreaterThan(2) // it runs them all
      const result = await adapter.execute({ language: foreign, code: '1' }, contractContext())
      expect(['invalid_request', 'error', 'not_implemented']).toContain(result.status)
    })

    eachLanguage('validate returns a report for good and bad code', async (language) => {
      const good = await adapter.validate(SNIPPETS[language]!.ok, language)
      if (adapter.capabilities.tier === 0) expect(good.implemented).toBe(false)
      expect(good.language).toBe(language)
      expect(Array.isArray(good.issues)).toBe(true)
      if (good.implemented) {
        expect(good.valid).toBe(true)
        const bad = await adapter.validate(SNIPPETS[language]!.syntaxError, language)
        expect(bad.valid).toBe(false)
        expect(bad.issues.some((item) => item.severity === 'error')).toBe(true)
      }
    })

    eachLanguage('policy: loosening and forbidden imports are refused before the adapter runs anything', async (language) => {
      const service = serviceFor(adapter)
      // Every way of loosening (test/policy/loosenings.ts), each refused naming its limit, before anything runs.
      for (const item of loosenings(DEFAULT_POLICY)) {
        const loosened = await service.execute({ language, code: SNIPPETS[language]!.ok, ...item.request })
        expect({ label: item.label, status: loosened.status, names: loosened.message?.includes(item.limit) }).toEqual({
          label: item.label,
          status: 'policy_violation',
          names: true,
        })
      }
      // Tighter by a hair on time: a remote emulator's run took over 4 s on a loaded machine, and what is checked here is
      // that a tightening is accepted, not how fast the backend is.
      const tightened = await service.execute({
        language,
        code: SNIPPETS[language]!.ok,
        timeoutMs: DEFAULT_POLICY.wallTimeMs - 1,
        memoryMb: 100,
      })
      expect({ status: tightened.status, message: tightened.message }).toEqual({ status: 'ok', message: undefined })
    })

    // Each capability is checked both ways: offered, it works; declared absent, the adapter or the core answers the
    // documented refusal (never a test that returns early and asserts nothing).
    eachLanguage(
      'capabilities are truthful: streaming delivers output while running; without it, output only in the result',
      async (language) => {
        const chunks: string[] = []
        const result = await runChecked(
          adapter,
          { language, code: SNIPPETS[language]!.ok },
          contractContext({}, { onOutput: (_stream, chunk) => chunks.push(chunk) }),
        )
        expect(result.status).toBe('ok')
        expect(result.stdout).toContain('hello')
        if (adapter.capabilities.streaming) expect(chunks.join('')).toContain('hello')
        // Declared absent: nothing is streamed piece by piece; onOutput hears nothing, or the whole output in one piece
        // once the code ended (the shell hands on just-bash's output as it gets it back).
        else expect(chunks.length === 0 ? [] : [chunks.join('')]).toEqual(chunks.length === 0 ? [] : [result.stdout + result.stderr])
      },
    )

    eachLanguage(
      "capabilities are truthful: host functions can be called; without them, a call is the code's error and never reaches the host",
      async (language) => {
        const host = new HostileHostFunctions()
        const code = HOST_CALL[language]
        if (adapter.capabilities.hostFunctions) {
          // A language the adapter offers host functions in needs a snippet here, or the capability goes unchecked.
          expect({ language, snippet: typeof code }).toEqual({ language, snippet: 'string' })
          const result = await runChecked(adapter, { language, code: code! }, contractContext({}, { hostFunctions: host }))
          expect({ status: result.status, value: result.value }).toEqual({ status: 'ok', value: 42 })
          expect(host.records.map((record) => record.name)).toEqual(['hostFn'])
        } else {
          // Declared absent: the function is not there for the code, so calling it fails as the code's own error. A
          // generous limit: the outcome does not depend on time, and a remote stand-in's cold start on a loaded machine
          // must not turn it into a timeout.
          const result = await runChecked(
            adapter,
            { language, code: code ?? 'hostFn' },
            contractContext({ wallTimeMs: 30_000 }, { hostFunctions: host }),
          )
          expect(result.status).toBe('error')
          expect(host.records).toEqual([])
        }
      },
    )

    eachLanguage(
      'capabilities are truthful: a session keeps state, which no other session sees; without sessions, routing refuses one',
      async (language) => {
        const [set, get] = SESSION[language] ?? []
        if (!adapter.capabilities.sessions) {
          // Declared absent: routing never sends a session to this adapter; with no other adapter, the request is refused
          // naming the feature, and nothing runs.
          const service = serviceFor(adapter, DEFAULT_POLICY, 'auto')
          const refused = await service.execute({ language, code: SNIPPETS[language]!.ok, sessionId: `contract-${language}` })
          expect({ status: refused.status, stdout: refused.stdout }).toEqual({ status: 'unavailable', stdout: '' })
          expect(refused.message).toContain(`no enabled adapter runs ${language} with sessions`)
          return
        }
        expect({ language, snippets: !!set && !!get }).toEqual({ language, snippets: true })
        const sessionId = `contract-${language}`
        expect((await runChecked(adapter, { language, code: set!, sessionId }, contractContext())).status).toBe('ok')
        if (options.sessionStateUncheckable) {
          // The stand-in keeps no interpreter state; the adapter's own test checks its sessions. The call is still accepted.
          expect(options.sessionStateUncheckable.length).toBeGreaterThan(0)
          await adapter.closeSession?.(sessionId)
          return
        }
        expect(await runChecked(adapter, { language, code: get!, sessionId }, contractContext())).toMatchObject({ status: 'ok', value: 42 })
        const other = await runChecked(adapter, { language, code: get!, sessionId: `${sessionId}-other` }, contractContext())
        expect(other.status).toBe('error')
        expect(await adapter.closeSession!(sessionId)).toBe(true)
        await adapter.closeSession!(`${sessionId}-other`)
      },
    )

    test(
      'capabilities are truthful: a sandbox keeps its files between execs, and closing it ends it',
      async () => {
        if (!adapter.capabilities.sandboxes) return expect(adapter.openSandbox).toBeUndefined()
        const policy = { ...DEFAULT_POLICY, filesystem: 'sandboxed' as const }
        const sandbox = await adapter.openSandbox!({
          id: `contract-${name}-${Date.now()}`,
          policy,
          limits: { maxFileBytes: 2 ** 20, maxTotalBytes: 8 * 2 ** 20, maxFiles: 100 },
        })
        try {
          expect(sandbox.languages.length).toBeGreaterThan(0)
          if (sandbox.languages.includes('bash')) {
            expect((await sandbox.exec({ language: 'bash', code: 'echo 42 > kept.txt; cd /' }, contractContext(policy))).status).toBe('ok')
            expect(await sandbox.exec({ language: 'bash', code: 'pwd; cat kept.txt' }, contractContext(policy))).toMatchObject({
              status: 'ok',
              stdout: '/workspace\n42\n',
            })
          }
          await sandbox.writeFile('in/data.txt', Buffer.from('x'))
          expect(Buffer.from((await sandbox.readFile('in/data.txt'))!).toString()).toBe('x')
          expect((await sandbox.listFiles()).map((entry) => entry.path)).toContain('in/data.txt')
          expect(await sandbox.deleteFile('in/data.txt')).toBe(true)
          expect(await sandbox.readFile('in/data.txt')).toBeUndefined()
        } finally {
          await sandbox.close()
        }
        await expect(sandbox.close()).resolves.toBeUndefined()
        const after = await sandbox.exec({ language: sandbox.languages[0]!, code: 'true' }, contractContext(policy))
        expect(after.status).not.toBe('ok')
      },
      options.testTimeoutMs ?? 60_000,
    )

    test(
      'dispose can be called twice',
      async () => {
        const fresh = await createAdapter()
        await fresh.dispose()
        await expect(fresh.dispose()).resolves.toBeUndefined()
      },
      options.testTimeoutMs ?? 60_000,
    )
  })
}
