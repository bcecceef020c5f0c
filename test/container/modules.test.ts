import { ContainerModule } from 'inversify'
import {
  createExecgate,
  adapterToken,
  tokens,
  type ExecutionListener,
  type ExecutionRequest,
  type ExecutionResult,
  type Execgate,
} from '../../src'
import { QuickJsAdapter } from '../../adapters/quickjs'
import { buildServer } from '../../src/server/app'
import { createLogger } from '../../src/observability/logger'

/** A listener of the user's own: keeps what it heard. */
class RecordingListener implements ExecutionListener {
  readonly heard: { status: string; adapter: string; language: string; traceId?: string }[] = []
  onResult(result: ExecutionResult, request: ExecutionRequest): void {
    this.heard.push({ status: result.status, adapter: result.adapter, language: request.language, traceId: result.traceId })
  }
}

/** The user's own adapter class, bound in place of quickjs: the real QuickJS, counting its runs and marking results. */
class CountingQuickJs extends QuickJsAdapter {
  static runs = 0
  override async execute(...args: Parameters<QuickJsAdapter['execute']>): Promise<ExecutionResult> {
    CountingQuickJs.runs++
    const result = await super.execute(...args)
    return { ...result, message: `counted: ${result.message ?? ''}` }
  }
}

const overrides = { execution: { enabled: ['quickjs', 'monty'] }, readiness: { enabled: false }, log: { level: 'silent' as const } }

describe('listeners bound in the container', () => {
  const listener = new RecordingListener()
  let execgate: Execgate
  beforeAll(async () => {
    const userModule = new ContainerModule(({ bind }) => {
      bind<ExecutionListener>(tokens.ExecutionListener).toConstantValue(listener)
    })
    execgate = await createExecgate({ overrides, modules: [userModule] })
  }, 60_000)
  afterAll(() => execgate.dispose())

  it('hear every result: a real run, a refusal before running, and a run on another adapter', async () => {
    const ran = await execgate.execute({ language: 'javascript', code: '6 * 7', traceId: 'listener-js' })
    const refused = await execgate.execute({
      language: 'javascript',
      code: 'while (true) {}',
      policy: { wallTimeMs: 10 ** 9 },
      traceId: 'listener-loosen',
    })
    const python = await execgate.execute({ language: 'python', code: '1 + 1', traceId: 'listener-py' })
    expect([ran.value, refused.status, python.value]).toEqual([42, 'policy_violation', 2])
    expect(listener.heard).toEqual([
      { status: 'ok', adapter: 'quickjs', language: 'javascript', traceId: 'listener-js' },
      { status: 'policy_violation', adapter: 'execgate', language: 'javascript', traceId: 'listener-loosen' },
      { status: 'ok', adapter: 'monty', language: 'python', traceId: 'listener-py' },
    ])
  })

  it('bound after start-up hear later runs; one that throws does not stop the others', async () => {
    const late = new RecordingListener()
    execgate.container.bind<ExecutionListener>(tokens.ExecutionListener).toConstantValue({
      onResult: () => {
        throw new Error('listener bug')
      },
    })
    execgate.container.bind<ExecutionListener>(tokens.ExecutionListener).toConstantValue(late)
    const result = await execgate.execute({ language: 'javascript', code: '"late"' })
    expect(result.value).toBe('late')
    expect(late.heard.map((item) => item.status)).toEqual(['ok'])
    expect(listener.heard.at(-1)?.status).toBe('ok')
  })

  it('unbound after start-up hear no more runs; bound again, they hear the next (the listeners are kept between runs)', async () => {
    const transient = new RecordingListener()
    const binding = execgate.container.bind<ExecutionListener>(tokens.ExecutionListener).toConstantValue(transient).getIdentifier()
    await execgate.execute({ language: 'python', code: '1 + 1' })
    await execgate.execute({ language: 'python', code: '2 + 2' })
    await execgate.container.unbind(binding)
    await execgate.execute({ language: 'python', code: '3 + 3' })
    execgate.container.bind<ExecutionListener>(tokens.ExecutionListener).toConstantValue(transient)
    await execgate.execute({ language: 'python', code: '4 + 4' })
    expect(transient.heard.map((item) => item.status)).toEqual(['ok', 'ok', 'ok'])
    // The one bound at start-up heard all four.
    expect(listener.heard.slice(-4).map((item) => item.language)).toEqual(['python', 'python', 'python', 'python'])
  })

  it('include the log line of every execution (the ExecutionLog listener)', async () => {
    const lines: string[] = []
    const logger = createLogger('info', { write: (line: string) => lines.push(line) } as unknown as NodeJS.WritableStream)
    const logged = await createExecgate({ overrides, logger })
    try {
      await logged.execute({ language: 'javascript', code: '1 + 2', traceId: 'logged-run' })
      const finished = lines.map((line) => JSON.parse(line)).filter((line) => line.msg === 'execution finished')
      expect(finished).toEqual([
        expect.objectContaining({ traceId: 'logged-run', status: 'ok', adapter: 'quickjs', language: 'javascript' }),
      ])
      expect(lines.join('')).not.toContain('1 + 2')
    } finally {
      await logged.dispose()
    }
  }, 60_000)

  it("include the server's metrics, which count runs made outside HTTP too", async () => {
    const { app } = buildServer({ execgate, logger: createLogger('silent'), tenants: new Map(), bodyLimitBytes: 64 * 1024 })
    await app.listen({ host: '127.0.0.1', port: 0 })
    try {
      const address = app.server.address() as { port: number }
      const url = `http://127.0.0.1:${address.port}`
      const http = await fetch(`${url}/v1/executions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ language: 'javascript', code: '2 + 2' }),
      })
      expect(((await http.json()) as { value: unknown }).value).toBe(4)
      // A library call on the same execgate: no HTTP route saw it, the listener did.
      await execgate.execute({ language: 'python', code: '3 + 3' })
      const metrics = await (await fetch(`${url}/metrics`)).text()
      expect(metrics).toContain('execgate_executions_total{adapter="quickjs",language="javascript",status="ok"} 1')
      expect(metrics).toContain('execgate_executions_total{adapter="monty",language="python",status="ok"} 1')
    } finally {
      await app.close()
    }
    // Closed: the server's metrics no longer listen.
    expect(
      execgate.container.getAll<ExecutionListener>(tokens.ExecutionListener).some((bound) => bound.constructor.name === 'ServerMetrics'),
    ).toBe(false)
  }, 30_000)
})

describe('rebinding an adapter token', () => {
  it('runs requests on the user class, created by the container', async () => {
    const replaceQuickJs = new ContainerModule(({ rebindSync }) => {
      rebindSync(adapterToken('quickjs')).to(CountingQuickJs).inSingletonScope()
    })
    const execgate = await createExecgate({ overrides, modules: [replaceQuickJs] })
    try {
      expect(execgate.adapters().find((adapter) => adapter.name === 'quickjs')).toBeInstanceOf(CountingQuickJs)
      const result = await execgate.execute({ language: 'javascript', code: '[1, 2, 3].map((n) => n * 2)' })
      expect(result).toMatchObject({ status: 'ok', adapter: 'quickjs', value: [2, 4, 6], message: expect.stringMatching(/^counted: /) })
      expect(CountingQuickJs.runs).toBe(1)
    } finally {
      await execgate.dispose()
    }
  }, 60_000)
})
