import { MontyAdapter } from '../../adapters/monty'
import { describeAdapterContract, contractContext } from '../contract/adapter-contract'
import { describeHostileCases, ownExecgate } from '../hostile/hostile-runner'
import { HostileHostFunctions } from '../hostile/fixtures'

describeAdapterContract('monty', () => new MontyAdapter())

/** Cases that cannot apply here, whichever path (plain or session) runs them. */
const NOT_APPLICABLE: Record<string, string> = {
  'py-cpu-sleep':
    'monty has no time module: with `time` allowed, the import ends in error (No module named ' +
    '\'time\') before anything sleeps; see "modules monty lacks end in error"',
  'py-cpu-ignore-signals':
    'monty has no signal module: with `signal` allowed, the import ends in error before the ' +
    'loop; its loop limit is the contract timeout case',
  'py-time-event-wait':
    'monty has no threads: with `threading` allowed, the import ends in error before anything ' +
    'waits; see "modules monty lacks end in error"',
}

describeHostileCases({
  adapter: 'monty',
  language: 'python',
  hostFunctions: true,
  ...ownExecgate('monty'),
  notApplicable: NOT_APPLICABLE,
})

// The same corpus through monty's session path: its REPL in a child process (no host functions there).
describeHostileCases({
  adapter: 'monty',
  language: 'python',
  hostFunctions: false,
  sessions: true,
  ...ownExecgate('monty'),
  poolProcess: /monty\/repl-child\.js/,
  notApplicable: {
    ...NOT_APPLICABLE,
    'py-fs-readfile-traversal':
      'in a session monty cannot call host functions: pinned to monty, code naming read_file is ' +
      'refused before it runs (invalid_request, not in the case statusIn); unpinned it is routed ' +
      'to pyodide, whose hostile suite runs this case with host functions',
  },
})

describe('monty adapter', () => {
  const adapter = new MontyAdapter()

  test('print never reaches the host stdout; it is captured', async () => {
    const writes: string[] = []
    const original = process.stdout.write
    process.stdout.write = ((chunk: string) => (writes.push(String(chunk)), true)) as typeof process.stdout.write
    try {
      const result = await adapter.execute({ language: 'python', code: "print('captured-marker')" }, contractContext())
      expect(result.stdout).toBe('captured-marker\n')
    } finally {
      process.stdout.write = original
    }
    expect(writes.join('')).not.toContain('captured-marker')
  })

  test('Python values come back as JSON: dicts, tuples, sets, big integers', async () => {
    const result = await adapter.execute(
      { language: 'python', code: "{'a': (1, 2), 'b': {3}, 'c': 2 ** 80, 'd': None}" },
      contractContext(),
    )
    expect(result.value).toEqual({ a: [1, 2], b: [3], c: '1208925819614629174706176', d: null })
  })

  test('a dict key __proto__ stays data and pollutes nothing', async () => {
    const result = await adapter.execute({ language: 'python', code: "{'__proto__': {'polluted': 'yes'}}" }, contractContext())
    // The key is the object's own data, not its prototype (which is a plain Object.prototype of some realm).
    expect(Object.getOwnPropertyDescriptor(result.value, '__proto__')?.value).toEqual({ polluted: 'yes' })
    expect(Object.getPrototypeOf(Object.getPrototypeOf(result.value))).toBeNull()
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  test('unsupported syntax says "not supported by monty"', async () => {
    const result = await adapter.execute({ language: 'python', code: 'class A:\n    pass' }, contractContext())
    expect(result.status).toBe('error')
    expect(result.error?.message).toMatch(/^not supported by monty: class definitions/)
    expect(adapter.canRun('class A:\n    pass')).toMatchObject({ ok: false })
    expect(adapter.canRun('x = 1\nx + 1')).toEqual({ ok: true })
  })

  test('runtime errors carry the line', async () => {
    const result = await adapter.execute({ language: 'python', code: 'x = 1\ny = x / 0' }, contractContext())
    expect(result).toMatchObject({ status: 'error', error: { type: 'ZeroDivisionError', line: 2 } })
    // The inline path names no script (monty's default); its tracebacks must read as the workers' ('main.py').
    expect(result.error?.stack).toContain('File "main.py", line 2')
  })

  test('deep recursion is a RecursionError, and the next run works', async () => {
    const deep = await adapter.execute({ language: 'python', code: 'def f(n):\n    return f(n + 1)\nf(0)' }, contractContext())
    expect(deep).toMatchObject({ status: 'error', error: { type: 'RecursionError' } })
    expect((await adapter.execute({ language: 'python', code: '2 + 2' }, contractContext())).value).toBe(4)
  })

  test('host functions are called through the start/resume loop and counted', async () => {
    const result = await adapter.execute(
      { language: 'python', code: "write_file('a.txt', 'hi')\nv = hostFn()\n[read_file('a.txt'), v['a']]" },
      contractContext({}, { hostFunctions: new HostileHostFunctions() }),
    )
    expect(result).toMatchObject({ status: 'ok', value: ['hi', 1], usage: { hostCalls: 3 } })
  })

  test('a refused host call raises inside Python, where the code can catch it', async () => {
    const result = await adapter.execute(
      { language: 'python', code: "try:\n    read_file('../etc/passwd')\nexcept Exception as e:\n    r = str(e)\nr" },
      contractContext({}, { hostFunctions: new HostileHostFunctions() }),
    )
    expect(result.status).toBe('ok')
    expect(result.value).toContain('workspace path "../etc/passwd" refused: ".." may not appear')
  })

  test('modules monty lacks end in error, never a hang (time, signal, threading allowed by the policy)', async () => {
    for (const code of ['import time\ntime.sleep(3600)', 'import threading\nthreading.Event().wait()', 'import signal']) {
      const result = await adapter.execute(
        { language: 'python', code },
        contractContext({ allowedImports: ['time', 'threading', 'signal'], wallTimeMs: 1000 }),
      )
      expect({ code, status: result.status, type: result.error?.type }).toEqual({ code, status: 'error', type: 'ModuleNotFoundError' })
    }
  })

  test('the bigint payload with sys allowed ends within its statuses', async () => {
    const code = 'import sys\ntry:\n    sys.set_int_max_str_digits(0)\nexcept Exception:\n    pass\nprint(len(str(10 ** 2_000_000)))'
    const result = await adapter.execute({ language: 'python', code }, contractContext({ allowedImports: ['sys'], wallTimeMs: 1000 }))
    expect(['timeout', 'error', 'ok']).toContain(result.status)
  })

  test('a run longer than the inline budget finishes on a worker, its output not repeated', async () => {
    const code = "print('once')\ns = 0\nfor i in range(2_000_000):\n    s += i\ns"
    const result = await adapter.execute({ language: 'python', code }, contractContext())
    expect(result).toMatchObject({ status: 'ok', value: 1999999000000, stdout: 'once\n' })
  })

  test('validate reports syntax errors and unsupported constructs', async () => {
    expect((await adapter.validate('x = 1', 'python')).valid).toBe(true)
    expect((await adapter.validate('def (:', 'python')).issues[0]).toMatchObject({ code: 'syntax' })
    expect((await adapter.validate('def g():\n    yield 1', 'python')).issues[0]).toMatchObject({ code: 'unsupported' })
  })
})
