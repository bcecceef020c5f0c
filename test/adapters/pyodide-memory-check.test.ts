// The memory comparison of the post-run check (adapters/pyodide/child-memory-check.js) on a real WebAssembly.Memory
// laid out as CPython 3.14 lays out a str-keyed dict on wasm32. test/adapters/pyodide.test.ts runs it in the real
// interpreter (every change it watches still replaces the process); this file pins down what it answers and refuses.

type Watch = { same(): boolean; retake(): boolean } | undefined
type Row = [number, number, number[], number[]]
// Node's WebAssembly, typed here: the project's lib settings leave it out.
type WasmMemory = { readonly buffer: ArrayBuffer; grow(pages: number): number }
const { Memory } = (
  globalThis as unknown as {
    WebAssembly: { Memory: { new (limits: { initial: number; maximum: number }): WasmMemory; prototype: object } }
  }
).WebAssembly
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { watchDicts } = require('../../adapters/pyodide/child-memory-check.js') as {
  watchDicts: (memory: WasmMemory, rows: Row[]) => Watch
}

const DICT = 1024
const KEYS = 2048
const ENTRIES = KEYS + 20 + 8 // dk_indices: 2 ** 3 bytes
const UNICODE = 1

/** One dict of `pairs` (key and value addresses) in a fresh memory, and the row Python would give for it. */
function dictMemory(pairs: [number, number][], kind = UNICODE): { memory: WasmMemory; words: () => Uint32Array; row: Row } {
  const memory = new Memory({ initial: 1, maximum: 4 })
  const words = () => new Uint32Array(memory.buffer)
  const heap = words()
  heap[DICT / 4 + 2] = pairs.length // ma_used
  heap[DICT / 4 + 6] = KEYS // ma_keys
  heap[DICT / 4 + 7] = 0 // ma_values: a combined table
  heap[KEYS / 4 + 1] = 3 | (3 << 8) | (kind << 16) // log2 size, log2 index bytes, kind
  heap[KEYS / 4 + 4] = pairs.length // dk_nentries
  pairs.forEach(([key, value], index) => {
    heap[ENTRIES / 4 + 2 * index] = key
    heap[ENTRIES / 4 + 2 * index + 1] = value
  })
  return { memory, words, row: [DICT, pairs.length, pairs.map(([key]) => key), pairs.map(([, value]) => value)] }
}

const PAIRS: [number, number][] = [
  [4096, 8192],
  [4112, 8208],
  [4128, 8224],
]

test('equal memory is the same; a value, a count or a table changed is not, until taken again', () => {
  const { memory, words, row } = dictMemory(PAIRS)
  const watch = watchDicts(memory, [row])!
  expect(watch.same()).toBe(true)
  words()[ENTRIES / 4 + 3] = 9999 // the second value replaced
  expect(watch.same()).toBe(false)
  words()[ENTRIES / 4 + 3] = 8208
  expect(watch.same()).toBe(true)
  words()[DICT / 4 + 2] = 2 // ma_used
  expect(watch.same()).toBe(false)
  words()[DICT / 4 + 2] = 3
  words()[DICT / 4 + 6] = KEYS + 512 // another keys table
  expect(watch.same()).toBe(false)
  words()[DICT / 4 + 6] = KEYS
  words()[ENTRIES / 4 + 5] = 0 // an entry deleted
  expect(watch.same()).toBe(false)
  // Taken again (after the Python comparison accepted the change): compared against the new memory from then on.
  expect(watch.retake()).toBe(true)
  expect(watch.same()).toBe(true)
  words()[ENTRIES / 4] = 1 // a key replaced
  expect(watch.same()).toBe(false)
})

test('a layout that does not read as Python says is refused: the check then always takes the Python path', () => {
  const wrongValue: Row = [DICT, 3, PAIRS.map(([key]) => key), [8192, 8208, 1]]
  expect(watchDicts(dictMemory(PAIRS).memory, [wrongValue])).toBeUndefined()
  const wrongSize: Row = [DICT, 2, PAIRS.slice(0, 2).map(([key]) => key), PAIRS.slice(0, 2).map(([, value]) => value)]
  expect(watchDicts(dictMemory(PAIRS).memory, [wrongSize])).toBeUndefined()
  const general = dictMemory(PAIRS, 0)
  expect(watchDicts(general.memory, [general.row])).toBeUndefined()
})

test('a table that turns into one with non-str keys is not taken again: the comparison stays off', () => {
  const { memory, words, row } = dictMemory(PAIRS)
  const watch = watchDicts(memory, [row])!
  words()[KEYS / 4 + 1] = 3 | (3 << 8) // kind 0: general keys
  expect(watch.same()).toBe(false)
  expect(watch.retake()).toBe(false)
  words()[KEYS / 4 + 1] = 3 | (3 << 8) | (UNICODE << 16)
  expect(watch.same()).toBe(false)
})

test('it reads the memory after it grows, and not through built-ins patched after it loaded', () => {
  const { memory, words, row } = dictMemory(PAIRS)
  const watch = watchDicts(memory, [row])!
  memory.grow(1)
  expect(watch.same()).toBe(true)
  const buffer = Object.getOwnPropertyDescriptor(Memory.prototype, 'buffer')!
  const decoy = dictMemory(PAIRS).memory.buffer
  Object.defineProperty(Memory.prototype, 'buffer', { get: () => decoy, configurable: true })
  try {
    new Uint32Array(buffer.get!.call(memory))[ENTRIES / 4 + 1] = 9999
    expect(watch.same()).toBe(false)
  } finally {
    Object.defineProperty(Memory.prototype, 'buffer', buffer)
  }
  expect(words()[ENTRIES / 4 + 1]).toBe(9999)
})
