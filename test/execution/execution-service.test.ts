import { createResult, enforcementTable, type CodeExecutionAdapter, type ExecutionContext, type ExecutionResult } from '../../src/core'
import { createExecgate, type Execgate } from '../../src'
import { QuickJsAdapter } from '../../adapters/quickjs'

/** A real adapter whose behaviour the test chooses: it throws, hangs, or floods. */
class ScriptedAdapter implements CodeExecutionAdapter {
  readonly name = 'scripted'
  readonly capabilities = {
    languages: ['javascript'] as const,
    tier: 1 as const,
    isolation: 'none (test double for the service’s own logic)',
    enforcement: enforcementTable({}),
    sessions: false,
    hostFunctions: false,
    workspace: false,
    streaming: false,
    network: false,
    cancellable: true,
  }
  constructor(private readonly behaviour: (code: string, context: ExecutionContext) => Promise<ExecutionResult>) {}
  execute(request: { code: string }, context: ExecutionContext) {
    return this.behaviour(request.code, context)
  }
  async validate() {
    return { valid: true, language: 'javascript' as const, validator: this.name, issues: [], implemented: true }
  }
  supportedLanguages() {
    return this.capabilities.languages
  }
  async checkAvailability() {
    return { status: 'available' as const, checkedAt: new Date().toISOString() }
  }
  async dispose() {}
}

/** The same, answering through `executeNow`: on the spot (a plain result), or later (a promise), as `now` returns. */
class ScriptedNowAdapter extends ScriptedAdapter {
  constructor(private readonly now: (code: string, context: ExecutionContext) => ExecutionResult | Promise<ExecutionResult>) {
    super(async () => {
      throw new Error('execute must not be called: the service calls executeNow when the adapter has it')
    })
  }
  executeNow(request: { code: string }, context: ExecutionContext) {
    return this.now(request.code, context)
  }
}

async function withService(adapter: CodeExecutionAdapter, body: (execgate: Execgate) => Promise<void>, graceMs = 200) {
  const execgate = await createExecgate({
    env: {
      EXECGATE_FABRIC_DATA_DIR: process.env.EXECGATE_FABRIC_DATA_DIR,
      EXECGATE_LOG_LEVEL: 'silent',
      EXECGATE_EXECUTION_GRACE_MS: String(graceMs),
    },
    adapters: [adapter],
  })
  try {
    await body(execgate)
  } finally {
    await execgate.dispose()
  }
}

describe('ExecutionService', () => {
  let execgate: Execgate
  beforeAll(async () => {
    execgate = await createExecgate({
      env: { EXECGATE_FABRIC_DATA_DIR: process.env.EXECGATE_FABRIC_DATA_DIR, EXECGATE_LOG_LEVEL: 'silent' },
      adapters: [new QuickJsAdapter()],
    })
  })
  afterAll(() => execgate.dispose())

  test.each([
    [null, 'the request must be an object'],
    ['print(1)', 'the request must be an object'],
    [{ code: '1' }, 'language is required'],
    [{ language: 'cobol', code: '1' }, 'language must be one of: javascript, typescript, python, bash'],
    [{ language: 'javascript', code: '' }, 'code must not be empty'],
    [{ language: 'javascript', code: 1 }, 'code must be string'],
    [{ language: 'javascript', code: '1', timeoutMs: -1 }, 'timeoutMs must be >= 1'],
    [{ language: 'javascript', code: '1', files: [{ path: 'a' }] }, 'files[0].content is required'],
    [{ language: 'javascript', code: '1', policy: { network: 5 } }, 'policy.network must be "none" or a list of host names'],
    [{ language: 'javascript', code: '1', colour: 'red' }, 'colour is not a known field'],
  ])('a bad request %j gets invalid_request naming the field', async (request, message) => {
    const result = await execgate.execute(request as never)
    expect(result.status).toBe('invalid_request')
    expect(result.message).toContain(message)
    expect(result.traceId).toBeTruthy()
    expect(result.durationMs).toBeGreaterThanOrEqual(0)
  })

  test('every result carries adapter, traceId and durationMs; a given traceId is kept', async () => {
    const result = await execgate.execute({ language: 'javascript', code: '6 * 7', traceId: 'trace-123' })
    expect(result).toMatchObject({ status: 'ok', value: 42, adapter: 'quickjs', traceId: 'trace-123' })
    expect(result.durationMs).toBeGreaterThan(0)
  })

  test('loosening the policy is a policy_violation naming the limit', async () => {
    const result = await execgate.execute({ language: 'javascript', code: '1', memoryMb: 100_000 })
    expect(result.status).toBe('policy_violation')
    expect(result.message).toMatch(/memoryMb 100000 is above the allowed 128/)
  })

  test('a forbidden import is refused before running, with line and column', async () => {
    const result = await execgate.execute({ language: 'javascript', code: "\nconst fs = require('fs')" })
    expect(result.status).toBe('policy_violation')
    expect(result.error).toMatchObject({ line: 2, column: 12 })
  })

  test('an adapter that throws gives internal_error with the cause', async () => {
    await withService(
      new ScriptedAdapter(async () => {
        throw new Error('backend exploded')
      }),
      async (service) => {
        const result = await service.execute({ language: 'javascript', code: '1' })
        expect(result.status).toBe('internal_error')
        expect(result.message).toContain('backend exploded')
        expect(result.adapter).toBe('scripted')
      },
    )
  })

  test('an adapter that ignores its deadline is answered for with timeout after the grace period', async () => {
    await withService(new ScriptedAdapter(() => new Promise(() => undefined)), async (service) => {
      const started = Date.now()
      const result = await service.execute({ language: 'javascript', code: '1', timeoutMs: 100 })
      expect(result.status).toBe('timeout')
      // Answered for, not hung: ten times the limit plus the 200 ms grace is the outer bound.
      expect(Date.now() - started).toBeLessThan(10 * (100 + 200))
    })
  })

  test('the answer for an adapter that does not stop keeps what it streamed, to the caller and in the result', async () => {
    const streamThenHang = (text: string) => (_code: string, context: ExecutionContext) => {
      context.onOutput?.('stdout', text)
      return new Promise<ExecutionResult>(() => undefined)
    }
    await withService(new ScriptedAdapter(streamThenHang('partial\n')), async (service) => {
      const chunks: string[] = []
      const result = await service.execute(
        { language: 'javascript', code: '1', timeoutMs: 100 },
        { onOutput: (_stream, chunk) => chunks.push(chunk) },
      )
      expect(result).toMatchObject({ status: 'timeout', stdout: 'partial\n', truncated: false, error: { type: 'TimeoutError' } })
      expect(chunks).toEqual(['partial\n'])
    })
    // Past the cap before the deadline: the cap broke first (as the adapters count it), head and tail kept.
    await withService(new ScriptedAdapter(streamThenHang('a'.repeat(100_000) + 'END')), async (service) => {
      const result = await service.execute({ language: 'javascript', code: '1', timeoutMs: 100 })
      expect(result).toMatchObject({ status: 'output_limit', truncated: true, stdoutBytes: 100_003, error: { type: 'OutputLimit' } })
      expect(result.message).toContain('passed the 65536-byte output limit and the adapter did not stop within 200 ms')
      expect(result.stdout.endsWith('END')).toBe(true)
    })
    // A cancel the adapter does not answer in time keeps the output too.
    await withService(new ScriptedAdapter(streamThenHang('before the cancel\n')), async (service) => {
      const controller = new AbortController()
      setTimeout(() => controller.abort(), 50)
      const result = await service.execute({ language: 'javascript', code: '1' }, { signal: controller.signal })
      expect(result).toMatchObject({ status: 'cancelled', stdout: 'before the cancel\n' })
    })
  })

  test('an answer given on the spot (executeNow) gets the whole service: the cap, run ids, a throw, the backstop', async () => {
    await withService(
      new ScriptedNowAdapter(() => createResult('ok', 'scripted', { stdout: 'a'.repeat(100_000) + 'END' })),
      async (service) => {
        const result = await service.execute({ language: 'javascript', code: '1' })
        expect(result).toMatchObject({ status: 'output_limit', truncated: true, stdoutBytes: 100_003, adapter: 'scripted' })
        expect(result.stdout.endsWith('END')).toBe(true)
        expect(result.runId).toBeTruthy()
        expect(result.admission?.lane).toBeTruthy()
      },
    )
    await withService(
      new ScriptedNowAdapter(() => {
        throw new Error('exploded on the spot')
      }),
      async (service) => {
        const result = await service.execute({ language: 'javascript', code: '1' })
        expect(result).toMatchObject({ status: 'internal_error', adapter: 'scripted' })
        expect(result.message).toContain('exploded on the spot')
      },
    )
    // Not on the spot after all, and never: the shared backstop answers for it.
    await withService(new ScriptedNowAdapter(() => new Promise<ExecutionResult>(() => undefined)), async (service) => {
      const started = Date.now()
      const result = await service.execute({ language: 'javascript', code: '1', timeoutMs: 100 })
      expect(result).toMatchObject({ status: 'timeout', error: { type: 'TimeoutError' } })
      expect(Date.now() - started).toBeLessThan(10 * (100 + 200))
    })
  })

  test('backstops of runs in flight together each answer at their own deadline, the shortest first', async () => {
    await withService(new ScriptedAdapter(() => new Promise<ExecutionResult>(() => undefined)), async (service) => {
      const order: number[] = []
      // Interactive: batch runs of an in-process tier beyond the core count would wait in admission instead.
      const run = (timeoutMs: number) =>
        service.execute({ language: 'javascript', code: '1', timeoutMs, lane: 'interactive' }).then((result) => {
          order.push(timeoutMs)
          return result
        })
      // The long one first: the shared timer is set for it, then again for each shorter one.
      const results = await Promise.all([run(900), run(300), run(100)])
      expect(results.map((result) => result.status)).toEqual(['timeout', 'timeout', 'timeout'])
      for (const result of results) expect(result.message).toContain('the adapter did not stop within 200 ms')
      expect(order).toEqual([100, 300, 900])
    })
  })

  test('output an adapter returns whole is cut to the cap, head and tail kept, status output_limit', async () => {
    const big = 'a'.repeat(100_000) + 'END'
    await withService(new ScriptedAdapter(async () => createResult('ok', 'scripted', { stdout: big })), async (service) => {
      const result = await service.execute({ language: 'javascript', code: '1' })
      expect(result.status).toBe('output_limit')
      expect(result.truncated).toBe(true)
      expect(result.stdoutBytes).toBe(100_003)
      expect(result.stdout.endsWith('END')).toBe(true)
      expect(result.stdout).toMatch(/bytes omitted/)
    })
  })

  test('a value larger than the cap is dropped with output_limit', async () => {
    await withService(new ScriptedAdapter(async () => createResult('ok', 'scripted', { value: 'v'.repeat(70_000) })), async (service) => {
      const result = await service.execute({ language: 'javascript', code: '1' })
      expect(result.status).toBe('output_limit')
      expect(result.value).toBeUndefined()
    })
  })

  test('a caller’s abort cancels the run', async () => {
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 100)
    const result = await execgate.execute({ language: 'javascript', code: 'while (true) {}' }, { signal: controller.signal })
    expect(result.status).toBe('cancelled')
  })

  test("the run's signal is the context's own property: it aborts on the caller's cancel, also read from a copy", async () => {
    const seen: { own: boolean; enumerable: boolean; abortedBefore: boolean; copyAborted?: boolean }[] = []
    await withService(
      new ScriptedAdapter(
        (_code, context) =>
          new Promise((resolve) => {
            const descriptor = Object.getOwnPropertyDescriptor(context, 'signal')
            // What a wrapper that copies the context (as the shell and the workers do) hands on.
            const copy = { ...context, deadline: context.deadline }
            seen.push({ own: descriptor !== undefined, enumerable: descriptor?.enumerable === true, abortedBefore: copy.signal.aborted })
            copy.signal.addEventListener('abort', () => {
              seen[0]!.copyAborted = context.signal.aborted && copy.signal.aborted
              resolve(createResult('cancelled', 'scripted', { message: 'stopped on the signal' }))
            })
          }),
      ),
      async (service) => {
        const controller = new AbortController()
        setTimeout(() => controller.abort(), 50)
        const result = await service.execute({ language: 'javascript', code: '1' }, { signal: controller.signal })
        expect(result).toMatchObject({ status: 'cancelled', message: 'stopped on the signal' })
      },
    )
    expect(seen).toEqual([{ own: true, enumerable: true, abortedBefore: false, copyAborted: true }])
  })

  test('streams output to onOutput as it is produced', async () => {
    const chunks: string[] = []
    const result = await execgate.execute(
      { language: 'javascript', code: "console.log('a'); console.log('b')" },
      { onOutput: (_s, chunk) => chunks.push(chunk) },
    )
    expect(result.stdout).toBe('a\nb\n')
    expect(chunks.join('')).toBe('a\nb\n')
  })

  test('validate combines the policy’s checks with the adapter’s', async () => {
    const report = await execgate.validate("import os from 'os'", 'javascript')
    expect(report.valid).toBe(false)
    expect(report.issues[0]).toMatchObject({ code: 'import_not_allowed', line: 1 })
  })

  test('languages lists what enabled adapters run', () => {
    expect([...execgate.languages()].sort()).toEqual(['javascript', 'typescript'])
  })
})
