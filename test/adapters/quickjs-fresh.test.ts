import { performance } from 'node:perf_hooks'
import { newQuickJSWASMModuleFromVariant, newVariant, RELEASE_SYNC, type QuickJSWASMModule } from 'quickjs-emscripten'
import { QuickJsAdapter } from '../../adapters/quickjs'
import { QuickJsRun } from '../../adapters/quickjs/run'
import { memoryLayout, type LinearMemory, type PristineOptions } from '../../adapters/quickjs/snapshot'
import { contractContext, runChecked } from '../contract/adapter-contract'
import { HostileHostFunctions } from '../hostile/fixtures'

// A worker's runs start from a copy of a prepared runtime's memory (adapters/quickjs/snapshot.ts), not a runtime
// built per run. These check that nothing one run does reaches the next on the same worker, and that the copy is
// what this build actually takes (the fallback builds a runtime per run and would pass the adapter tests unseen).

async function loadModule(): Promise<{ module: QuickJSWASMModule; memory: LinearMemory }> {
  const WasmMemory = (globalThis as unknown as { WebAssembly: { Memory: new (d: { initial: number; maximum: number }) => LinearMemory } })
    .WebAssembly.Memory
  const memory = new WasmMemory({ initial: 256, maximum: 4096 })
  // The CommonJS build of the emscripten module: jest's VM cannot take the variant's dynamic import (the worker can).
  const base = {
    ...RELEASE_SYNC,
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    importModuleLoader: async () => require('@jitl/quickjs-wasmfile-release-sync/emscripten-module'),
  } as typeof RELEASE_SYNC
  const variant = newVariant(base, { emscriptenModule: { wasmMemory: memory, printErr: () => undefined } as never })
  return { module: await newQuickJSWASMModuleFromVariant(variant), memory }
}

const HOST = { write: () => true, cancelled: () => false, hostFunctionNames: [], callHost: async () => undefined }

describe('quickjs: a run starts from the prepared runtime, copied back', () => {
  let pristine: PristineOptions
  let module: QuickJSWASMModule

  beforeAll(async () => {
    const loaded = await loadModule()
    module = loaded.module
    const layout = memoryLayout(module, loaded.memory)
    expect(layout).toBeDefined()
    pristine = { memory: loaded.memory, layout: layout! }
  })

  const start = (run: QuickJsRun) =>
    run.start({ memoryBytes: 32 << 20, stackBytes: 256 << 10, deadline: performance.now() + 5000, timeoutMs: 5000 }, HOST)

  test('this build takes the copy, and after a reset the memory is the prepared one again', async () => {
    const run = new QuickJsRun(module, pristine)
    expect(run.reusable).toBe(true)
    const bytes = () => new Uint8Array(pristine.memory.buffer).slice(pristine.layout.heapStart, pristine.layout.heapStart + 65536)
    const prepared = bytes()
    await start(run).execute({ script: 'globalThis.kept = new Array(1000).fill("x"); Object.prototype.polluted = 1; 1', async: false })
    expect(bytes()).not.toEqual(prepared)
    expect(run.reset()).toBe(true)
    const after = bytes()
    // Only the context's Math.random seed differs (it is reseeded on each reset).
    const differing = after.reduce((count, byte, index) => count + (byte === prepared[index] ? 0 : 1), 0)
    expect(differing).toBeLessThanOrEqual(8)
    expect(await start(run).execute({ script: '[typeof kept, typeof ({}).polluted]', async: false })).toEqual({
      status: 'ok',
      value: ['undefined', 'undefined'],
    })
  })
})

describe('quickjs: nothing a run does reaches the next run on the same worker', () => {
  const adapter = new QuickJsAdapter({ workers: 1 })
  afterAll(() => adapter.dispose())
  const run = (code: string, policy = {}, extra = {}) =>
    runChecked(adapter, { language: 'javascript', code }, contractContext(policy, extra))

  test('globals, prototypes, built-ins and console are as new', async () => {
    const first = await run(
      'globalThis.secret = 41; Array.prototype.push = () => 0; JSON.stringify = () => "x"; delete globalThis.console;\n' +
        'var v = 1; secret + v',
    )
    expect(first).toMatchObject({ status: 'ok', value: 42 })
    const next = await run('console.log("still here"); const a = []; a.push(1); [typeof secret, typeof v, a.length, JSON.stringify({ a })]')
    expect(next).toMatchObject({ status: 'ok', value: ['undefined', 'undefined', 1, '{"a":[1]}'], stdout: 'still here\n' })
  })

  test('Math.random is seeded anew for every run', async () => {
    const values = new Set<unknown>()
    for (let index = 0; index < 5; index++) values.add((await run('Math.random()')).value)
    expect(values.size).toBe(5)
  })

  test('Math.random seeds stay distinct past a refill of the seed pool (512 seeds a worker)', async () => {
    const values = new Set<unknown>()
    // A worker takes at most every run; 1,100 runs use up at least one pool and go on into the next.
    for (let index = 0; index < 1100; index++) values.add((await run('[Math.random(), Math.random()].join()')).value)
    expect(values.size).toBe(1100)
  })

  test('host functions exist only in the runs that have them', async () => {
    const withThem = await run('typeof hostFn', {}, { hostFunctions: new HostileHostFunctions() })
    expect(withThem.value).toBe('function')
    expect((await run('typeof hostFn')).value).toBe('undefined')
    const again = await run('(await hostFn()).a', {}, { hostFunctions: new HostileHostFunctions() })
    expect(again).toMatchObject({ status: 'ok', value: 1 })
  })

  test('the deadline holds on every run, and the run after a timeout is fresh', async () => {
    for (let index = 0; index < 2; index++) {
      const stuck = await run('globalThis.left = 1; while (true) {}', { wallTimeMs: 300, cpuTimeMs: 300 })
      expect(stuck.status).toBe('timeout')
    }
    expect((await run('typeof left')).value).toBe('undefined')
  })

  test('display() counts start again on each run', async () => {
    for (let index = 0; index < 2; index++) {
      const shown = await run('display({ n: 1 }); display("<b>x</b>"); 0', { maxOutputs: 2 })
      expect(shown.status).toBe('ok')
      expect(shown.outputs).toHaveLength(2)
    }
  })

  test('after a run at its memory limit, the next has the whole limit again', async () => {
    const bomb = await run("const parts = []; for (;;) parts.push('x'.repeat(1 << 16) + parts.length)", {
      memoryMb: 32,
      wallTimeMs: 10_000,
      cpuTimeMs: 10_000,
    })
    expect(bomb.status).toBe('memory_limit')
    const next = await run("const parts = []; for (let i = 0; i < 200; i++) parts.push('y'.repeat(1 << 16) + i); parts.length", {
      memoryMb: 32,
    })
    expect(next).toMatchObject({ status: 'ok', value: 200 })
  }, 30_000)
})
