'use strict'
/**
 * The fast half of the check after each pyodide run: every watched module dict's memory (its size, its table and the
 * key and value pointers in it) compared word by word with a copy taken at start. Equal memory means the same keys
 * bound to the same objects, so the run changed nothing there; any difference, however harmless, defers to the
 * Python comparison (child-check.js: identity, or equal plain values), which is exact and ~30× slower. Plain
 * JavaScript, read by the child under the permission model.
 *
 * Why equal memory is proof: every key and value the copy points at is kept alive in Python (the snapshot, or
 * `hold()` after a retake), so no address in it can be reused by another object; a table that was resized, turned
 * into one with non-str keys or split shows as a difference. The layout read here (CPython 3.14 on wasm32) is proved
 * at start against Python's own account of every watched dict (`id` of the dict, of each key and value, in order):
 * if anything disagrees the comparison is off and every check takes the Python path.
 *
 * Code that reaches JavaScript could patch prototypes and globals by the time a check runs, so what is used here is
 * taken when this file loads (before any run) or is syntax: typed-array element reads, which never consult a
 * prototype. (It could also write the interpreter's memory itself: the process, not this check, is the boundary.)
 */
const Words = Uint32Array
const bufferGetter = Object.getOwnPropertyDescriptor(WebAssembly.Memory.prototype, 'buffer').get
const bufferOf = Function.prototype.call.bind(bufferGetter)

// CPython 3.14, 32-bit: PyDictObject {refcnt, type, ma_used, (pad), _ma_watcher_tag (8), ma_keys, ma_values} and
// PyDictKeysObject {dk_refcnt, dk_log2_size, dk_log2_index_bytes, dk_kind, dk_version, dk_usable, dk_nentries,
// dk_indices[]}, the entries after the indices; a str-keyed entry is {me_key, me_value}. In 32-bit words:
const DICT_USED = 2
const DICT_KEYS = 6
const DICT_VALUES = 7
const KEYS_SHAPE = 1 // dk_log2_size, dk_log2_index_bytes, dk_kind (and a byte of padding, never written)
const KEYS_ENTRY_COUNT = 4
const KEYS_INDICES_BYTES = 20
const UNICODE_KIND = 1
// Per dict in the plan: its word address, then what it had: ma_used, ma_keys, the keys' shape word, dk_nentries,
// the word address of its entries and where their copy starts in `copy`.
const PLAN = 7

/**
 * @param memory the interpreter's WebAssembly.Memory
 * @param rows for each watched dict, from Python at start: [address, len, key addresses, value addresses]
 * @returns `same()` (true: memory as at the last take) and `retake()`, or undefined when the layout is not this one
 */
function watchDicts(memory, rows) {
  const count = rows.length
  const plan = new Words(count * PLAN)
  let copy = new Words(0)
  let heap = new Words(bufferOf(memory))
  let buffer = heap.buffer
  const view = () => {
    const now = bufferOf(memory)
    if (now !== buffer) {
      buffer = now
      heap = new Words(now)
    }
    return heap
  }

  /** Reads every dict's table into the plan and the copy; false if one is not a combined, str-keyed table. */
  const take = () => {
    const words = view()
    let total = 0
    for (let d = 0, base = 0; d < count; d++, base += PLAN) {
      const at = plan[base] >>> 2
      const keys = words[at + DICT_KEYS]
      if (words[at + DICT_VALUES] !== 0 || keys % 4 !== 0) return false
      const shape = words[(keys >>> 2) + KEYS_SHAPE]
      if (((shape >>> 16) & 0xff) !== UNICODE_KIND) return false
      plan[base + 1] = words[at + DICT_USED]
      plan[base + 2] = keys
      plan[base + 3] = shape
      plan[base + 4] = words[(keys >>> 2) + KEYS_ENTRY_COUNT]
      plan[base + 5] = (keys + KEYS_INDICES_BYTES + 2 ** ((shape >>> 8) & 0xff)) >>> 2
      plan[base + 6] = total
      total += plan[base + 4] * 2
    }
    const next = new Words(total)
    for (let d = 0, base = 0; d < count; d++, base += PLAN) {
      const end = plan[base + 5] + plan[base + 4] * 2
      for (let word = plan[base + 5], kept = plan[base + 6]; word < end; word++, kept++) next[kept] = words[word]
    }
    copy = next
    return true
  }

  for (let d = 0; d < count; d++) plan[d * PLAN] = rows[d][0]
  if (!take() || !proved(view(), plan, copy, rows)) return undefined

  let on = true
  return {
    same() {
      if (!on) return false
      const words = view()
      for (let d = 0, base = 0; d < count; d++, base += PLAN) {
        const at = plan[base] >>> 2
        const keys = plan[base + 2] >>> 2
        if (words[at + DICT_USED] !== plan[base + 1] || words[at + DICT_KEYS] !== plan[base + 2] || words[at + DICT_VALUES] !== 0)
          return false
        if (words[keys + KEYS_SHAPE] !== plan[base + 3] || words[keys + KEYS_ENTRY_COUNT] !== plan[base + 4]) return false
        const end = plan[base + 5] + plan[base + 4] * 2
        for (let word = plan[base + 5], kept = plan[base + 6]; word < end; word++, kept++) if (words[word] !== copy[kept]) return false
      }
      return true
    },
    /** After the Python comparison accepted a change (and `hold()` keeps what the dicts point at alive). */
    retake() {
      on = on && take()
      return on
    },
  }
}

/** Each dict as the plan reads it holds what Python says it holds: its size, its keys and values in order. */
function proved(words, plan, copy, rows) {
  for (let d = 0; d < rows.length; d++) {
    const [, size, keys, values] = rows[d]
    const base = d * PLAN
    if (plan[base + 1] !== size || keys.length !== size || values.length !== size) return false
    let found = 0
    for (let entry = 0, kept = plan[base + 6]; entry < plan[base + 4]; entry++, kept += 2) {
      if (copy[kept + 1] === 0) continue
      if (found >= size || copy[kept] !== keys[found] || copy[kept + 1] !== values[found]) return false
      found++
    }
    if (found !== size) return false
  }
  return words.length > 0
}

module.exports = { watchDicts }
