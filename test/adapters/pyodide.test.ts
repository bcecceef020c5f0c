import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { PyodideAdapter } from '../../adapters/pyodide'
import { describeAdapterContract, contractContext } from '../contract/adapter-contract'
import { CANARY_FILE, ENV_CANARY, describeHostileCases, loadHostileCases, ownExecgate } from '../hostile/hostile-runner'

// Warmed first: the contract's runs have the default 5 s limit, and a run that meets pyodide still warming waits only
// that long (test/execution/warm-up.test.ts covers that wait).
describeAdapterContract(
  'pyodide',
  async () => {
    const adapter = new PyodideAdapter()
    await adapter.warmUp()
    return adapter
  },
  { timeoutSlackMs: 2000, testTimeoutMs: 180_000 },
)

/** Cases that cannot apply here, whichever path (plain or session) runs them. */
const NOT_APPLICABLE: Record<string, string> = {}

describeHostileCases({
  adapter: 'pyodide',
  language: 'python',
  hostFunctions: true,
  ...ownExecgate('pyodide'),
  caseTimeoutMs: 90_000,
  poolProcess: /pyodide\/child\.js/,
  notApplicable: NOT_APPLICABLE,
})

// The same corpus through the session path: the pickled globals of the session restored before the code, captured after.
describeHostileCases({
  adapter: 'pyodide',
  language: 'python',
  hostFunctions: true,
  sessions: true,
  ...ownExecgate('pyodide'),
  caseTimeoutMs: 90_000,
  poolProcess: /pyodide\/child\.js/,
  notApplicable: NOT_APPLICABLE,
})

describe('pyodide adapter: the process boundary, without the static check', () => {
  const adapter = new PyodideAdapter({ poolSize: 2 })
  beforeAll(() => adapter.warm(), 120_000)
  afterAll(() => adapter.dispose())

  test('escape and exhaustion payloads hold without the static check', async () => {
    process.env.HOSTILE_ENV_CANARY = ENV_CANARY
    const payloads = loadHostileCases('python').filter((item) => item.backends.includes('pyodide') || item.category === 'escape')
    expect(payloads.length).toBeGreaterThan(10)
    for (const payload of payloads) {
      fs.rmSync(CANARY_FILE, { force: true })
      const result = await adapter.execute({ language: 'python', code: payload.code }, contractContext({ wallTimeMs: 3000, memoryMb: 256 }))
      const text = [result.stdout, result.stderr, JSON.stringify(result.value) ?? '', result.error?.message ?? ''].join('\n')
      expect({
        id: payload.id,
        leaked: ['uid=', ENV_CANARY, 'root:x:0:0', 'CONNECTED', 'ESCAPED'].filter((needle) => text.includes(needle)),
      }).toEqual({ id: payload.id, leaked: [] })
      expect({ id: payload.id, canary: fs.existsSync(CANARY_FILE) }).toEqual({ id: payload.id, canary: false })
    }
  }, 300_000)

  test('JavaScript reached through the bridge finds an empty environment, no require and no host files', async () => {
    const code = [
      'from js import Object, process',
      "print('env', len(Object.keys(process.env)))",
      "f = Object.constructor('try { return typeof require } catch (e) { return e.message }')",
      "print('require', f())",
      'g = Object.constructor(\'try { process.binding("fs"); return "binding" } catch (e) { return "refused" }\')',
      "print('binding', g())",
    ].join('\n')
    // Generous: the payloads before this one had processes killed, and waiting for a warm one counts here.
    const result = await adapter.execute({ language: 'python', code }, contractContext({ wallTimeMs: 30_000 }))
    expect(result.stdout).toBe('env 0\nrequire undefined\nbinding refused\n')
  }, 60_000)

  test('a sleep and a swallowed KeyboardInterrupt end timeout', async () => {
    for (const code of [
      'import time\ntime.sleep(3600)',
      'while True:\n    try:\n        while True: pass\n    except BaseException:\n        pass',
    ]) {
      const result = await adapter.execute({ language: 'python', code }, contractContext({ wallTimeMs: 500 }))
      expect(result.status).toBe('timeout')
    }
  }, 120_000)

  test('every run has fresh globals; nothing of one run is visible in the next', async () => {
    await adapter.execute({ language: 'python', code: 'secret = 41' }, contractContext({ wallTimeMs: 30_000 }))
    const next = await adapter.execute({ language: 'python', code: 'secret + 1' }, contractContext({ wallTimeMs: 30_000 }))
    expect(next).toMatchObject({ status: 'error', error: { type: 'NameError' } })
  }, 60_000)

  test('timers a run leaves behind never fire: not in the idle process, not in the next run', async () => {
    const single = new PyodideAdapter({ poolSize: 1 })
    try {
      const context = contractContext({ wallTimeMs: 30_000 })
      const code = [
        'import js',
        'from pyodide.ffi import create_once_callable, create_proxy',
        "js.setTimeout(create_once_callable(lambda: print('LEFTOVER')), 50)",
        'js.setTimeout(create_once_callable(lambda: 1 / 0), 60)',
        "js.setInterval(create_proxy(lambda: print('TICK')), 20)",
        // A finalizer the post-run check's collection runs (a cycle), scheduling a timer that would change a module.
        'class D:',
        "    def __del__(s): js.setTimeout(create_once_callable(lambda: setattr(__import__('json'), 'dumps', len)), 0)",
        'd = D()',
        'd.me = d',
        'del d',
        'js.process.pid',
      ].join('\n')
      const first = await single.execute({ language: 'python', code }, context)
      expect(first.status).toBe('ok')
      await new Promise((resolve) => setTimeout(resolve, 300))
      const next = await single.execute({ language: 'python', code: 'import js, json\n[js.process.pid, json.dumps([1])]' }, context)
      // The same process answers (it did not die of the throwing timer), nothing the first run scheduled printed, and
      // json is as it was.
      expect({ status: next.status, value: next.value, stdout: next.stdout }).toEqual({
        status: 'ok',
        value: [first.value, '[1]'],
        stdout: '',
      })
    } finally {
      await single.dispose()
    }
  }, 120_000)

  test('a run that poisons a module gets its process replaced', async () => {
    await adapter.execute(
      { language: 'python', code: "import json\njson.dumps = lambda *a, **k: 'POISONED'" },
      contractContext({ wallTimeMs: 30_000 }),
    )
    for (let i = 0; i < 3; i++) {
      const probe = await adapter.execute(
        { language: 'python', code: 'import json\njson.dumps([1])' },
        contractContext({ wallTimeMs: 30_000 }),
      )
      expect(probe).toMatchObject({ status: 'ok', value: '[1]' })
    }
  }, 120_000)

  test('the post-run check replaces the process after each kind of change it watches, and only then', async () => {
    const single = new PyodideAdapter({ poolSize: 1 })
    try {
      // A context each run: its deadline starts with it, and each replacement here loads CPython again (seconds).
      const context = () => contractContext({ wallTimeMs: 30_000 })
      const pid = async () => (await single.execute({ language: 'python', code: 'import js\njs.process.pid' }, context())).value
      const changes = [
        "import json\njson.dumps = lambda *a, **k: 'POISONED'",
        'import json\njson.extra = 1',
        'import json\ndel json.JSONDecodeError',
        'import builtins\nbuiltins.len = lambda value: 0',
        "import sys, types\nsys.modules['json'] = types.ModuleType('json')",
        'import sys\nsys.maxsize = 1',
        // Replacements that claim to equal anything: an equality check passes them, an identity check does not.
        ['import json', 'class L:', '    def __eq__(s, o): return True', '    __hash__ = object.__hash__', 'json.dumps = L()'].join('\n'),
        ['import builtins', 'class L:', '    def __eq__(s, o): return True', '    __hash__ = object.__hash__', 'builtins.len = L()'].join(
          '\n',
        ),
        // A key that claims to equal the name it replaced, and would run code at the next run's lookups.
        [
          'import json',
          'class K(str):',
          '    def __eq__(s, o): return True',
          '    __hash__ = str.__hash__',
          'last = list(json.__dict__)[-1]',
          'value = json.__dict__.pop(last)',
          'json.__dict__[K(last)] = value',
        ].join('\n'),
        // Finalizers that would change a module later, in the next run: a cycle only a collection frees, and an
        // object held by a module the run imported first (dropped after the run).
        ['class D:', '    def __del__(s):', '        import json', '        json.dumps = len', 'd = D()', 'd.me = d', 'del d'].join('\n'),
        [
          'import fractions',
          'class D:',
          '    def __del__(s):',
          '        import json',
          '        json.dumps = len',
          'fractions.held = D()',
        ].join('\n'),
      ]
      let before = await pid()
      for (const code of changes) {
        // (The first answers `error`: the run's own answer goes through the json.dumps it replaced.)
        await single.execute({ language: 'python', code }, context())
        const after = await pid()
        expect({ code, replaced: after !== before }).toEqual({ code, replaced: true })
        before = after
      }
      // A run that changes nothing of the kind keeps its process; what the interpreter noted of its error does not
      // reach the next run, nor does its source.
      await single.execute({ language: 'python', code: "x = {'a': 1}\nraise ValueError('SECRET')" }, context())
      const next = await single.execute(
        {
          language: 'python',
          code: "import sys, linecache\n[getattr(sys, 'last_value', None), linecache.getlines('main.py')[0], __import__('js').process.pid]",
        },
        context(),
      )
      expect(next).toMatchObject({ status: 'ok', value: [null, 'import sys, linecache\n', before] })
      // Changes the Python comparison accepts (an equal string that is another object; a name added and deleted, which
      // leaves the table's memory changed) keep the process; the memory comparison, taken again after each, still
      // sees the next real change.
      for (const code of ["import os\nos.name = (os.name + '.')[:-1]", 'import builtins\nbuiltins.zzz = 1\ndel builtins.zzz']) {
        await single.execute({ language: 'python', code }, context())
        expect({ code, pid: await pid() }).toEqual({ code, pid: before })
      }
      await single.execute({ language: 'python', code: 'import json\njson.extra = 1' }, context())
      expect(await pid()).not.toBe(before)
    } finally {
      await single.dispose()
    }
  }, 180_000)

  test('code with and without top-level await answers the same way', async () => {
    const context = contractContext({ wallTimeMs: 30_000 })
    const cases: [string, unknown][] = [
      ['x = 3\nx * 2', 6],
      ['1 + 1;', undefined],
      ['  a = 1\n  a + 1', 2],
      ['import asyncio\nawait asyncio.sleep(0)\n42', 42],
      ['import asyncio\nawait asyncio.sleep(0, result=7)', 7],
      ['from __future__ import annotations\ndef f(x: Undefined): pass\nf.__annotations__', { x: 'Undefined' }],
    ]
    for (const [code, value] of cases) {
      const result = await adapter.execute({ language: 'python', code }, context)
      expect({ code, status: result.status, value: result.value }).toEqual({ code, status: 'ok', value })
    }
    const failed = await adapter.execute({ language: 'python', code: 'x = 1\ndef f():\n    return 1 / 0\nf()' }, context)
    expect(failed).toMatchObject({ status: 'error', error: { type: 'ZeroDivisionError', line: 3 } })
  }, 60_000)

  test('runs full Python: classes, generators, match, the standard library', async () => {
    const code = [
      'from collections import Counter',
      'from dataclasses import dataclass',
      '@dataclass',
      'class Item:',
      '    name: str',
      '    price: float',
      'def cheap(items):',
      '    yield from (i for i in items if i.price < 5)',
      'items = [Item("tea", 3.5), Item("cake", 6.0), Item("tea", 3.5)]',
      'match len(items):',
      '    case 3: size = "three"',
      '    case _: size = "other"',
      '[size, Counter(i.name for i in cheap(items)).most_common(1)]',
    ].join('\n')
    const result = await adapter.execute({ language: 'python', code }, contractContext({ wallTimeMs: 30_000 }))
    expect(result).toMatchObject({ status: 'ok', value: ['three', [['tea', 2]]] })
  }, 60_000)

  test('1,000 executions leave the host process RSS within 100 MB of where it started after warm-up', () => {
    const script = path.join(__dirname, 'pyodide-rss.js')
    const dist = path.join(__dirname, '..', '..', 'dist', 'adapters', 'pyodide', 'index.js')
    expect(fs.existsSync(dist)).toBe(true)
    const child = spawnSync(process.execPath, [script, dist], { encoding: 'utf8', timeout: 240_000 })
    expect(child.status).toBe(0)
    const { before, after, failures } = JSON.parse(child.stdout)
    expect(failures).toBe(0)
    expect(after - before).toBeLessThan(100 * 1024 * 1024)
  }, 300_000)
})
