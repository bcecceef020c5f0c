import { QuickJsAdapter } from '../../adapters/quickjs'
import { describeAdapterContract, contractContext } from '../contract/adapter-contract'
import { describeHostileCases, ownExecgate } from '../hostile/hostile-runner'
import { HostileHostFunctions } from '../hostile/fixtures'

describeAdapterContract('quickjs', () => new QuickJsAdapter())

describeHostileCases({
  adapter: 'quickjs',
  language: 'javascript',
  hostFunctions: true,
  ...ownExecgate('quickjs'),
  notApplicable: {},
})

// The same corpus through the session path: state restored before the code and captured (JSON, in the VM) after.
describeHostileCases({
  adapter: 'quickjs',
  language: 'javascript',
  hostFunctions: true,
  sessions: true,
  ...ownExecgate('quickjs'),
  notApplicable: {},
})

// The JavaScript corpus sent as TypeScript: transpiled first, then run as the same payloads.
describeHostileCases({
  adapter: 'quickjs',
  language: 'typescript',
  hostFunctions: true,
  ...ownExecgate('quickjs'),
  notApplicable: {},
})

describe('quickjs adapter', () => {
  const adapter = new QuickJsAdapter()
  afterAll(() => adapter.dispose())

  test('runs TypeScript by transpiling it first', async () => {
    const result = await adapter.execute(
      { language: 'typescript', code: 'interface P { n: number }\nconst p: P = { n: 20 }\np.n + 1' },
      contractContext(),
    )
    expect(result).toMatchObject({ status: 'ok', value: 21 })
  })

  test('settles top-level await and promises within the deadline', async () => {
    const result = await adapter.execute({ language: 'javascript', code: 'const v = await Promise.resolve(40)\nv + 2' }, contractContext())
    expect(result).toMatchObject({ status: 'ok', value: 42 })
  })

  test('captures console.warn and console.error on stderr', async () => {
    const result = await adapter.execute(
      { language: 'javascript', code: "console.warn('careful'); console.error('bad'); console.info('fine')" },
      contractContext(),
    )
    expect(result.stderr).toBe('careful\nbad\n')
    expect(result.stdout).toBe('fine\n')
  })

  test('has no process, require, timers or fetch inside', async () => {
    const result = await adapter.execute(
      { language: 'javascript', code: '[typeof process, typeof require, typeof setTimeout, typeof fetch, typeof WebAssembly].join(",")' },
      contractContext(),
    )
    expect(result.value).toBe('undefined,undefined,undefined,undefined,undefined')
  })

  test('deep recursion ends error and the next run works', async () => {
    const deep = await adapter.execute({ language: 'javascript', code: 'function f(n) { return f(n + 1) + 1 }\nf(0)' }, contractContext())
    expect(deep.status).toBe('error')
    expect(deep.error?.message).toMatch(/stack/i)
    const next = await adapter.execute({ language: 'javascript', code: '2 + 2' }, contractContext())
    expect(next).toMatchObject({ status: 'ok', value: 4 })
  })

  test('host functions are async globals whose results cross as JSON', async () => {
    const result = await adapter.execute(
      {
        language: 'javascript',
        code:
          "await write_file('a.txt', 'hi'); const v = await hostFn(); [await read_file('a.txt'), " +
          'v.a, Object.getPrototypeOf(v) === Object.prototype]',
      },
      contractContext({}, { hostFunctions: new HostileHostFunctions() }),
    )
    expect(result).toMatchObject({ status: 'ok', value: ['hi', 1, true] })
  })

  test('a refused host call rejects inside the sandbox with the reason', async () => {
    const result = await adapter.execute(
      { language: 'javascript', code: "try { await read_file('../etc/passwd') } catch (e) { e.message }" },
      contractContext({}, { hostFunctions: new HostileHostFunctions() }),
    )
    expect(result.status).toBe('ok')
    expect(result.value).toContain('workspace path "../etc/passwd" refused: ".." may not appear')
  })

  test('refuses a stack limit above 256 KiB', () => {
    expect(() => new QuickJsAdapter({ maxStackKiB: 1024 })).toThrow(/maxStackKiB/)
  })
})
