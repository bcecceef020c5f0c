import { randomFillSync } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import type { QuickJSContext, QuickJSRuntime, QuickJSWASMModule } from 'quickjs-emscripten'

/**
 * A fresh QuickJS runtime by copying memory instead of building one. QuickJS's own context build and free cost a run
 * ~0.2 ms of its worker's CPU, most of a back-to-back `1 + 1`. The worker builds one runtime and context (console,
 * display) while idle, copies the module's whole state then, and after each run copies it back: the next run starts
 * in memory byte for byte that of a runtime no code has touched, and nothing a run did (globals, prototypes, freed
 * objects it left in the heap) survives it. The module's state is its linear memory and one wasm global, the stack
 * pointer, which every call that returns leaves where it was (a trap does not: the worker then loads a fresh module).
 *
 * The layout (emscripten's: static data, then the stack, then the heap) is read from the wasm binary and checked;
 * when anything does not match, the worker builds a runtime per run as before.
 */

/** emscripten's STACK_SIZE for quickjs-emscripten's builds. */
const STACK_BYTES = 5 * 1024 * 1024
/** The part of the stack a run can reach (QuickJS's stack limit is at most 256 KiB), with a wide margin. */
const STACK_REACH_BYTES = 1024 * 1024

/** The linear memory (the project's `lib` carries no WebAssembly types). */
export interface LinearMemory {
  readonly buffer: ArrayBuffer
}

/** Where the module's state lives in its linear memory: below `staticEnd` (static data) and from `heapStart`. */
export interface MemoryLayout {
  staticEnd: number
  heapStart: number
  /** Offset of QuickJS's `random_state` in a JSContext (seeded from the clock when a context is made). */
  randomStateOffset: number
}

/** The worker's module memory and its layout, when runs start from a copy of a prepared runtime. */
export interface PristineOptions {
  memory: LinearMemory
  layout: MemoryLayout
}

/** The release-sync variant's wasm binary, beside its emscripten module. */
function wasmBinary(): Buffer | undefined {
  try {
    const from = path.dirname(require.resolve('quickjs-emscripten'))
    return fs.readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm', { paths: [from] }))
  } catch {
    return undefined
  }
}

/** The binary's first global (emscripten's stack pointer) initial value, and where its initialised data ends. */
function readBinary(bytes: Uint8Array): { stackHigh: number; dataEnd: number } | undefined {
  let at = 8
  const unsigned = () => {
    let result = 0
    let shift = 0
    let byte: number
    do {
      byte = bytes[at++]!
      result += (byte & 0x7f) * 2 ** shift
      shift += 7
    } while (byte & 0x80)
    return result
  }
  const signed = () => {
    let result = 0
    let shift = 0
    let byte: number
    do {
      byte = bytes[at++]!
      result |= (byte & 0x7f) << shift
      shift += 7
    } while (byte & 0x80)
    return shift < 32 && byte & 0x40 ? result | (-1 << shift) : result
  }
  let stackHigh: number | undefined
  let dataEnd = 0
  while (at < bytes.length) {
    const id = bytes[at++]!
    const size = unsigned()
    const end = at + size
    if (id === 6) {
      unsigned() // count
      const [type, mutable, opcode] = [bytes[at++], bytes[at++], bytes[at++]]
      if (type !== 0x7f || mutable !== 1 || opcode !== 0x41) return undefined // i32, mutable, i32.const
      stackHigh = signed()
    } else if (id === 11) {
      const count = unsigned()
      for (let index = 0; index < count; index++) {
        const flags = unsigned()
        if (flags !== 0) return undefined // only active segments at a constant offset
        if (bytes[at++] !== 0x41) return undefined
        const offset = signed()
        at++ // end
        const length = unsigned()
        at += length
        dataEnd = Math.max(dataEnd, offset + length)
      }
    }
    at = end
  }
  return stackHigh === undefined ? undefined : { stackHigh, dataEnd }
}

/** The pointer behind a context (quickjs-emscripten keeps it in a protected lifetime). */
export function contextPointer(vm: QuickJSContext): number {
  return (vm as unknown as { ctx: { value: number } }).ctx.value
}

/** QuickJS's Math.random: xorshift64* of the context's state, as a double in [0, 1). */
function expectedRandom(state: bigint): number {
  const mask = (1n << 64n) - 1n
  let x = state
  x ^= x >> 12n
  x = (x ^ (x << 25n)) & mask
  x ^= x >> 27n
  const v = (x * 0x2545f4914f6cdd1dn) & mask
  const bits = (0x3ffn << 52n) | (v >> 12n)
  const view = new DataView(new ArrayBuffer(8))
  view.setBigUint64(0, bits, true)
  return view.getFloat64(0, true) - 1
}

/**
 * Finds `random_state` in a throwaway context: the 8-byte word of the context that a Math.random() call changes most
 * of (the call also counts down the interrupt counter beside it), proven by planting a state and getting the number
 * xorshift64* gives for it.
 */
function findRandomState(module: QuickJSWASMModule, memory: LinearMemory): number | undefined {
  const vm = module.newContext()
  try {
    const random = vm.unwrapResult(vm.evalCode('Math.random'))
    const call = () => {
      const result = vm.unwrapResult(vm.callFunction(random, vm.undefined))
      const value = vm.getNumber(result)
      result.dispose()
      return value
    }
    const base = contextPointer(vm)
    const span = 2048
    call()
    const before = new Uint8Array(memory.buffer).slice(base, base + span)
    call()
    const after = new Uint8Array(memory.buffer, base, span)
    let offset = -1
    let most = 0
    for (let word = 0; word < span; word += 8) {
      let changed = 0
      for (let index = word; index < word + 8; index++) if (before[index] !== after[index]) changed++
      if (changed > most) [offset, most] = [word, changed]
    }
    if (most < 4) return undefined
    const planted = 0x0123456789abcdefn
    new DataView(memory.buffer).setBigUint64(base + offset, planted, true)
    // Not the state after all: the planted word may have broken the context, which is then left, not freed.
    const found = call() === expectedRandom(planted) ? offset : undefined
    if (found === undefined) return undefined
    random.dispose()
    vm.dispose()
    return found
  } catch {
    return undefined
  }
}

/** The binary's layout, read once a thread (a replaced module is the same binary). */
let binaryLayout: { read: ReturnType<typeof readBinary> } | undefined

/** The module's memory layout, or undefined when this build's is not the one checked for. */
export function memoryLayout(module: QuickJSWASMModule, memory: LinearMemory): MemoryLayout | undefined {
  binaryLayout ??= { read: ((binary) => binary && readBinary(binary))(wasmBinary()) }
  const read = binaryLayout.read
  if (!read) return undefined
  const staticEnd = read.stackHigh - STACK_BYTES
  if (staticEnd < read.dataEnd || read.stackHigh > memory.buffer.byteLength) return undefined
  const randomStateOffset = findRandomState(module, memory)
  if (randomStateOffset === undefined) return undefined
  // The stack's far end has never been used: a static variable there would mean the layout is not the one assumed.
  if (staticEnd % 4 !== 0) return undefined
  const farStack = new Int32Array(memory.buffer, staticEnd, (STACK_BYTES - STACK_REACH_BYTES) / 4)
  for (let index = 0; index < farStack.length; index++) if (farStack[index] !== 0) return undefined
  return { staticEnd, heapStart: read.stackHigh, randomStateOffset }
}

interface HostRefState {
  nextId: number
  freelist: number[]
  groups: Map<number, Map<number, object>>
}

/**
 * Seeds for Math.random, 8 bytes each, from the system's CSPRNG 512 at a time, each handed out once: a call to
 * `randomFillSync` costs ~1.7 µs however few bytes it fills (up to 8 µs on a cold worker, in its CPU profile), and a
 * reset is otherwise a few memory copies. Node's randomUUID keeps its entropy the same way.
 */
const SEED_BYTES = 8
const seedPool = new Uint8Array(SEED_BYTES * 512)
let seedsUsed = seedPool.length

function nextSeed(): Uint8Array {
  if (seedsUsed === seedPool.length) {
    randomFillSync(seedPool)
    seedsUsed = 0
  }
  const seed = seedPool.subarray(seedsUsed, seedsUsed + SEED_BYTES)
  seedsUsed += SEED_BYTES
  return seed
}

/** The lazily made handles of a QuickJSContext: one made during a run would point into memory the copy frees. */
const LAZY_HANDLES = ['_global', '_BigInt', '_Symbol', '_SymbolIterator', '_SymbolAsyncIterator'] as const

/**
 * A copy of a prepared runtime's memory and of what quickjs-emscripten keeps about it on this side (the host
 * references its functions call through), put back after each run.
 */
export class PristineRuntime {
  private readonly staticPart: Uint8Array
  private readonly heapPart: Uint8Array
  private readonly hostRefs: HostRefState
  private readonly handles: unknown[]

  constructor(
    private readonly memory: LinearMemory,
    private readonly layout: MemoryLayout,
    private readonly runtime: QuickJSRuntime,
    private readonly vm: QuickJSContext,
  ) {
    const bytes = new Uint8Array(memory.buffer)
    // The heap's used part ends at its last non-zero word (dlmalloc's top chunk header is below it).
    const words = new Int32Array(memory.buffer)
    let end = words.length
    while (end * 4 > layout.heapStart && words[end - 1] === 0) end--
    end = Math.max(end * 4, layout.heapStart)
    this.staticPart = bytes.slice(0, layout.staticEnd)
    this.heapPart = bytes.slice(layout.heapStart, end)
    this.hostRefs = cloneRefs(this.refs())
    this.handles = this.lazyHandles()
  }

  /**
   * Puts the prepared state back and gives the context a new Math.random seed. Returns false when something on this
   * side changed in a way the copy cannot undo (the caller then loads a fresh module).
   */
  restore(): boolean {
    const bytes = new Uint8Array(this.memory.buffer)
    bytes.set(this.staticPart, 0)
    bytes.set(this.heapPart, this.layout.heapStart)
    const seed = contextPointer(this.vm) + this.layout.randomStateOffset
    bytes.set(nextSeed(), seed)
    bytes[seed] |= 1 // xorshift's state must not be zero
    const refs = this.refs()
    const saved = cloneRefs(this.hostRefs)
    refs.nextId = saved.nextId
    refs.freelist = saved.freelist
    refs.groups = saved.groups
    return this.lazyHandles().every((handle, index) => handle === this.handles[index])
  }

  private refs(): HostRefState {
    return (this.runtime as unknown as { hostRefs: HostRefState }).hostRefs
  }

  private lazyHandles(): unknown[] {
    const vm = this.vm as unknown as Record<string, unknown>
    return LAZY_HANDLES.map((name) => vm[name])
  }
}

/** True when quickjs-emscripten's host-reference map has the fields this copy restores. */
export function hostRefsCopyable(runtime: QuickJSRuntime): boolean {
  const refs = (runtime as unknown as { hostRefs?: Partial<HostRefState> }).hostRefs
  return typeof refs?.nextId === 'number' && Array.isArray(refs.freelist) && refs.groups instanceof Map
}

function cloneRefs(refs: HostRefState): HostRefState {
  const groups = new Map<number, Map<number, object>>()
  for (const [id, group] of refs.groups) groups.set(id, new Map(group))
  return { nextId: refs.nextId, freelist: [...refs.freelist], groups }
}
