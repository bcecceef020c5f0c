import fs from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'

/**
 * The kernel's account of the pages a run wrote (adapters/pyodide/write-watch.c), on a real WebAssembly memory in
 * this process: everything written, by JavaScript or by the kernel, is put back, and nothing else is reported. Then
 * the guard around it (child-guard.js, `memorySnapshot`): proved before it is trusted, and audited by a comparison
 * of the whole memory. `npm run build` builds the addon; on Linux it must be there.
 */
const ADDON = path.resolve(__dirname, '..', '..', 'dist', 'adapters', 'pyodide', 'write-watch.node')
// Loaded without loadWriteWatch: that seals process.dlopen, which this test process still needs.
const load = createRequire(__filename)
const { memorySnapshot } = load('../../adapters/pyodide/child-guard.js') as {
  memorySnapshot: (
    memory: WasmMemory,
    loaded?: { writeWatch?: WriteWatch; why?: string },
  ) => { mode: string; why?: string; restore(): boolean }
}

/** WebAssembly's memory, typed here: the project's TypeScript libs do not include the WebAssembly namespace. */
type WasmMemory = { readonly buffer: ArrayBuffer; grow(pages: number): number }
const { Memory } = (globalThis as unknown as { WebAssembly: { Memory: new (shape: { initial: number; maximum: number }) => WasmMemory } })
  .WebAssembly

type WriteWatch = { watch(memory: ArrayBuffer, saved: Buffer): void; restore(learning?: boolean): number }
const PAGE = 4096
const WASM_PAGES = 64 // 4 MiB

function patterned(): WasmMemory {
  const memory = new Memory({ initial: WASM_PAGES, maximum: WASM_PAGES * 2 })
  const bytes = new Uint8Array(memory.buffer)
  // The first half written (resident pages), the second never touched (pages the kernel has not yet populated).
  for (let offset = 0; offset < bytes.length / 2; offset += 61) bytes[offset] = offset & 0xff
  return memory
}

const linux = process.platform === 'linux'

describe('write-watch: the kernel reports every page written', () => {
  test('is built by npm run build on Linux', () => {
    expect(fs.existsSync(ADDON)).toBe(linux)
  })

  const onLinux = linux ? test : test.skip
  onLinux('puts back pages written by JavaScript and by the kernel, resident or not; pages every run writes become hot', () => {
    const writeWatch = load(ADDON) as WriteWatch
    const memory = patterned()
    const saved = Buffer.from(new Uint8Array(memory.buffer))
    writeWatch.watch(memory.buffer, saved)
    expect(() => writeWatch.watch(memory.buffer, saved)).toThrow('already watching')
    expect(writeWatch.restore()).toBe(0)

    const bytes = new Uint8Array(memory.buffer)
    const half = bytes.length / 2
    // Scattered single bytes in both halves, two adjacent pages, and a span through fill().
    const touched = new Set<number>()
    for (const offset of [0, 5 * PAGE + 7, half - 1, half, half + 3 * PAGE + 100, bytes.length - 1]) {
      bytes[offset] ^= 0x5a
      touched.add(Math.floor(offset / PAGE))
    }
    bytes.fill(0xee, 40 * PAGE + 10, 42 * PAGE + 10)
    for (const page of [40, 41, 42]) touched.add(page)
    // The kernel writing into the memory: a read(2) into it, as the in-memory filesystem's reads do.
    const file = path.join(__dirname, 'pyodide-write-watch.test.ts')
    const fd = fs.openSync(file, 'r')
    try {
      expect(fs.readSync(fd, bytes, 200 * PAGE + 5, 64, 0)).toBe(64)
    } finally {
      fs.closeSync(fd)
    }
    touched.add(200)

    expect(Buffer.compare(Buffer.from(memory.buffer), saved)).not.toBe(0)
    expect(writeWatch.restore()).toBe(touched.size)
    expect(Buffer.compare(Buffer.from(memory.buffer), saved)).toBe(0)
    // Protected again: the pages put back are not reported as written by that.
    expect(writeWatch.restore()).toBe(0)
    bytes[5 * PAGE] ^= 1
    expect(writeWatch.restore()).toBe(1)
    expect(Buffer.compare(Buffer.from(memory.buffer), saved)).toBe(0)

    // Pages written in each of 8 runs become hot: copied back after every run unasked, never protected again.
    const everyRun = [3, 4, 5, 90]
    for (let run = 0; run < 8; run++) {
      for (const page of everyRun) bytes[page * PAGE + run] ^= 0xff
      bytes[(300 + run) * PAGE] ^= 1 // a different page each run: never hot
      expect(writeWatch.restore(true)).toBe(everyRun.length + 1)
      expect(Buffer.compare(Buffer.from(memory.buffer), saved)).toBe(0)
    }
    expect(writeWatch.restore(true)).toBe(everyRun.length)
    for (const page of everyRun) bytes[page * PAGE + 100] ^= 0xff
    bytes[700 * PAGE] ^= 1
    expect(writeWatch.restore(true)).toBe(everyRun.length + 1)
    expect(Buffer.compare(Buffer.from(memory.buffer), saved)).toBe(0)

    // The guard's own proof: the addon can watch one memory a process, so a second snapshot falls back, saying why.
    const second = memorySnapshot(patterned(), { writeWatch })
    expect(second.mode).toBe('compare')
    expect(second.why).toMatch(/already watching/)
  })
})

describe('memorySnapshot: the restore the pyodide child runs after each run', () => {
  test('without the addon, compares the whole memory and puts back every change', () => {
    const memory = patterned()
    const snapshot = memorySnapshot(memory, { why: 'it is not built for this platform' })
    expect(snapshot.mode).toBe('compare')
    const saved = Buffer.from(new Uint8Array(memory.buffer))
    const bytes = new Uint8Array(memory.buffer)
    bytes[12345] ^= 1
    bytes[bytes.length - 1] = 9
    expect(snapshot.restore()).toBe(true)
    expect(Buffer.compare(Buffer.from(memory.buffer), saved)).toBe(0)
    // Grown: the new part would keep the run's bytes, so the process is to be replaced.
    memory.grow(1)
    expect(snapshot.restore()).toBe(false)
  })

  /**
   * A stand-in for the kernel that sees only the writes it is told of, as a kernel that missed a write would: the
   * audit, a comparison of the whole memory every 256 runs, must catch what it missed. (A real kernel's misses cannot
   * be produced on purpose.)
   */
  function blindKernel(): WriteWatch & { sees: Set<number> } {
    let live: Uint8Array
    let saved: Buffer
    const sees = new Set<number>()
    return {
      sees,
      watch(memory, copy) {
        live = new Uint8Array(memory)
        saved = copy
        sees.add(live.length - 1)
      },
      restore() {
        for (const offset of sees) live[offset] = saved[offset]!
        const count = sees.size
        sees.clear()
        return count
      },
    }
  }

  test('trusts the kernel only once it has proved itself, and replaces the process when it fails', () => {
    const liar: WriteWatch = { watch() {}, restore: () => 0 }
    const lied = patterned()
    const before = Buffer.from(new Uint8Array(lied.buffer))
    expect(memorySnapshot(lied, { writeWatch: liar }).why).toBe('its self-test failed')
    // The proof's changed byte is put back though the stand-in did not: the first run finds the memory as saved.
    expect(Buffer.compare(Buffer.from(lied.buffer), before)).toBe(0)
    const refused: WriteWatch = {
      watch() {
        throw new Error('asynchronous write protection: Invalid argument')
      },
      restore: () => -1,
    }
    expect(memorySnapshot(patterned(), { writeWatch: refused }).why).toMatch(/kernel refused.*Invalid argument/)

    const kernel = blindKernel()
    const memory = patterned()
    const snapshot = memorySnapshot(memory, { writeWatch: kernel })
    expect(snapshot.mode).toBe('write-watch')
    expect(snapshot.restore()).toBe(true)
    // Trusted, then the kernel cannot say (-1: the memory no longer registered, say): the process is replaced.
    kernel.restore = () => -1
    expect(snapshot.restore()).toBe(false)
  })

  test('audits the kernel every 256 runs: a write it missed replaces the process', () => {
    const kernel = blindKernel()
    const memory = patterned()
    const saved = Buffer.from(new Uint8Array(memory.buffer))
    const snapshot = memorySnapshot(memory, { writeWatch: kernel })
    expect(snapshot.mode).toBe('write-watch')
    const bytes = new Uint8Array(memory.buffer)
    let runs = 0
    // 255 runs whose writes the kernel saw: each is put back and the process kept.
    for (; runs < 255; runs++) {
      bytes[runs * 16] ^= 0xff
      kernel.sees.add(runs * 16)
      expect(snapshot.restore()).toBe(true)
    }
    expect(Buffer.compare(Buffer.from(memory.buffer), saved)).toBe(0)
    // One write the kernel missed: the 256th run's audit finds it, puts it back, and says replace.
    bytes[777_777] ^= 0xff
    expect(snapshot.restore()).toBe(false)
    expect(Buffer.compare(Buffer.from(memory.buffer), saved)).toBe(0)
  })
})
