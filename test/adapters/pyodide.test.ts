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

/** The pids of the adapter's pool processes: which process served a run, without a run that asks through the bridge. */
function processIds(adapter: PyodideAdapter): (number | undefined)[] {
  const { pool } = adapter as unknown as { pool: { all: Set<{ processPid?: number; dead: boolean }> } }
  return [...pool.all].filter((member) => !member.dead).map((member) => member.processPid)
}

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

  test("the memory restore uses the kernel's write reports where built, and no addon loads after it", async () => {
    const addon = path.resolve(__dirname, '..', '..', 'dist', 'adapters', 'pyodide', 'write-watch.node')
    const { pool } = adapter as unknown as { pool: { all: Set<{ readyNote?: string; dead: boolean; ready: Promise<void> }> } }
    const members = [...pool.all].filter((member) => !member.dead)
    await Promise.all(members.map((member) => member.ready))
    // Built by `npm run build` on Linux; this kernel (≥ 6.7) reports writes.
    const expected =
      process.platform === 'linux' && fs.existsSync(addon)
        ? 'memory restore: write-watch'
        : expect.stringMatching(/^memory restore: compare/)
    expect(members.length).toBeGreaterThan(0)
    for (const member of members) expect(member.readyNote).toEqual(expected)
    const code = [
      'from js import Object',
      `f = Object.constructor('try { process.dlopen({ exports: {} }, "${addon}"); return "loaded" } catch (e) { return e.message }')`,
      'print(f())',
    ].join('\n')
    const result = await adapter.execute({ language: 'python', code }, contractContext({ wallTimeMs: 30_000 }))
    expect(result.stdout).toBe('native addons are not available in the sandbox\n')
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

  test('a run that reaches JavaScript gets its process replaced; nothing it scheduled fires anywhere', async () => {
    const single = new PyodideAdapter({ poolSize: 1 })
    try {
      const context = () => contractContext({ wallTimeMs: 30_000 })
      await single.execute({ language: 'python', code: '1' }, context())
      const before = processIds(single)
      const code = [
        'import js',
        'from pyodide.ffi import create_once_callable, create_proxy',
        "js.setTimeout(create_once_callable(lambda: print('LEFTOVER')), 50)",
        'js.setTimeout(create_once_callable(lambda: 1 / 0), 60)',
        "js.setInterval(create_proxy(lambda: print('TICK')), 20)",
        'js.process.pid',
      ].join('\n')
      const first = await single.execute({ language: 'python', code }, context())
      expect(first.status).toBe('ok')
      await new Promise((resolve) => setTimeout(resolve, 300))
      const next = await single.execute({ language: 'python', code: 'import json\njson.dumps([1])' }, context())
      expect({ status: next.status, value: next.value, stdout: next.stdout }).toEqual({ status: 'ok', value: '[1]', stdout: '' })
      expect(processIds(single)).not.toEqual(before)
    } finally {
      await single.dispose()
    }
  }, 120_000)

  test('what a run changes inside the interpreter is put back for the next run, in the same process', async () => {
    const single = new PyodideAdapter({ poolSize: 1 })
    try {
      // A context each run: its deadline starts with it.
      const context = () => contractContext({ wallTimeMs: 30_000 })
      const run = (code: string) => single.execute({ language: 'python', code }, context())
      await run('1')
      const pids = processIds(single)
      // Each change, then a run that would see it: it must answer as a never-used interpreter does.
      const cases: [string, string, unknown][] = [
        ["import json\njson.dumps = lambda *a, **k: 'POISONED'", 'import json\njson.dumps([1])', '[1]'],
        ['import builtins\nbuiltins.len = lambda value: 0', 'len([1, 2])', 2],
        ["import sys, types\nsys.modules['json'] = types.ModuleType('json')", 'import json\njson.dumps(2)', '2'],
        // A function's code and defaults replaced in place: the dicts that name it are unchanged.
        [
          "import base64\ndef grab(s, altchars=None, *, padded=True):\n    return b'STOLEN'\nbase64.b64encode.__code__ = grab.__code__",
          "import base64\nbase64.b64encode(b'VICTIM').decode()",
          'VklDVElN',
        ],
        // An import hook that would read the next run's frames.
        [
          'import sys\nclass Finder:\n    def find_spec(self, *a):\n        print("HOOKED")\nsys.meta_path.insert(0, Finder())',
          'import sys, statistics\n[type(f).__name__ for f in sys.meta_path].count("Finder")',
          0,
        ],
        // The random generator's state and re's cache.
        ['import random\nrandom.seed(42)', 'import random\nrandom.random() == 0.6394267984578837', false],
        ["import re\nre.compile('VICTIM-[0-9]+')\n1", "import re\nany('VICTIM' in str(key) for key in re._cache)", false],
        // A finalizer that would change a module after the run (a cycle only a collection frees).
        [
          'class D:\n    def __del__(s):\n        import json\n        json.dumps = len\nd = D()\nd.me = d\ndel d',
          'import json\njson.dumps(3)',
          '3',
        ],
        // What the interpreter noted of an error, and the source for tracebacks.
        [
          "raise ValueError('SECRET')",
          "import sys, linecache\n[getattr(sys, 'last_value', None), any('SEC' + 'RET' in line for line in linecache.getlines('main.py'))]",
          [null, false],
        ],
      ]
      for (const [change, probe, expected] of cases) {
        await run(change)
        const result = await run(probe)
        expect({ change, status: result.status, value: result.value, stdout: result.stdout }).toEqual({
          change,
          status: 'ok',
          value: expected,
          stdout: '',
        })
      }
      // None of it cost a process.
      expect(processIds(single)).toEqual(pids)
    } finally {
      await single.dispose()
    }
  }, 180_000)

  test("what a run leaves half-written on its output or the host channel stays that run's", async () => {
    const single = new PyodideAdapter({ poolSize: 1 })
    try {
      const context = () => contractContext({ wallTimeMs: 30_000, maxOutputs: 10, outputsBytes: 100_000 })
      const run = (code: string) => single.execute({ language: 'python', code }, context())
      await run('1')
      const pids = processIds(single)
      // Half a UTF-8 character on stdout, and half a host-call line on the channel (the first file the child opened).
      const first = await run("import os\nos.write(1, b'abc\\xe2')\nos.write(3, b'Hwrite_file\\t[\"stolen.txt\", \"')\n1")
      expect(first).toMatchObject({ status: 'ok', stdout: 'abc\ufffd' })
      const next = await run("print('\u00e9')\ndisplay({'n': 1})\n2")
      expect({ status: next.status, stdout: next.stdout, outputs: next.outputs }).toEqual({
        status: 'ok',
        stdout: '\u00e9\n',
        outputs: [{ kind: 'json', mimeType: 'application/json', data: { n: 1 }, bytes: 7 }],
      })
      expect(processIds(single)).toEqual(pids)
    } finally {
      await single.dispose()
    }
  }, 120_000)

  test('a run that leaves WebAssembly (the bridge, a file written, ctypes calls, memory grown) gets its process replaced', async () => {
    const single = new PyodideAdapter({ poolSize: 1 })
    try {
      const context = () => contractContext({ wallTimeMs: 30_000 })
      const run = (code: string) => single.execute({ language: 'python', code }, context())
      await run('1')
      const leaving = [
        // A listener on this process's messages would read the next run's code.
        'from pyodide.code import run_js\nrun_js("process.on(\'message\', (m) => globalThis.stash = m); 1")',
        "open('/tmp/left', 'w').write('SECRET')",
        // A file opened to read, made writable through fcntl: the stdlib's own zip.
        [
          'import os, fcntl, sys',
          "fd = os.open([p for p in sys.path if p.endswith('.zip')][0], os.O_RDONLY)",
          'fcntl.fcntl(fd, fcntl.F_SETFL, os.O_RDWR)',
          "os.write(fd, b'XX')",
        ].join('\n'),
        // ctypes (its import reaches JavaScript), here writing 8 over the interpreter's shared 7.
        'import ctypes\nctypes.c_uint32.from_address(id(7) + 12).value = 8\nx = 7\nx * 6',
        'x = bytearray(96 * 2 ** 20)\nlen(x)',
        'import asyncio\nawait asyncio.sleep(0.01)',
      ]
      for (const code of leaving) {
        const before = processIds(single)
        expect({ code, status: (await run(code)).status }).toEqual({ code, status: 'ok' })
        const next = await run("import os\nos.listdir('/tmp')")
        expect({ code, value: next.value, replaced: processIds(single)[0] !== before[0] }).toEqual({ code, value: [], replaced: true })
      }
      expect((await run('7 * 6')).value).toBe(42)
      // Runs that stay inside keep it: an error, output, awaits that need no event loop, a display() item.
      const pids = processIds(single)
      for (const code of [
        '1 / 0',
        "print('x' * 10000)",
        'import asyncio\nawait asyncio.sleep(0)\n42',
        'display([{"a": 1}])',
        'import json, statistics, decimal, datetime\nstatistics.mean([1, 2])',
      ])
        await run(code)
      expect(processIds(single)).toEqual(pids)
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
