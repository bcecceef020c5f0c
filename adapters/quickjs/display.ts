import type { QuickJSContext, QuickJSHandle } from 'quickjs-emscripten'

/**
 * `display(value, mimeType?)` for JavaScript and TypeScript on quickjs: the same rich outputs as the Python runner's
 * display() (docs/data.md#rich-outputs). An array of objects or `{ columns, rows }` becomes a table, an SVG string an
 * `image/svg+xml`, another string starting with `<` HTML, anything else JSON.
 *
 * The value is read and shaped inside the VM (the prelude below, under the run's memory limit and deadline, so a
 * hostile getter or a huge array costs the run, not the worker), and crosses as one JSON text whose length is checked
 * before it leaves the VM. The count and bytes are held to the policy's `maxOutputs` and `outputsBytes` here as the
 * code goes, and the host checks every item again (src/core/rich-outputs.ts).
 */

/** Rows a table keeps at most, as in the Python runner. */
export const MAX_TABLE_ROWS = 1000

/** The limits a run's outputs are held to (the policy's; `tableBytes` is its `outputBytes`). */
export interface DisplayLimits {
  maxOutputs: number
  outputsBytes: number
  tableBytes: number
}

/**
 * Evaluates to a function of the two natives, `emit(kind, json)` and `room()`, and the built-ins it relies on, that is
 * the global `display`'s work. The natives stay in its closure: the code sees only `display`. The built-ins are taken
 * when the context is made, before any code runs, so code that replaces `JSON.stringify` changes nothing here.
 */
const PRELUDE = String.raw`(function (emit, room, stringify, isArray, keysOf, hasOwn, toText, encode, decodeBytes) {
  const SVG = /^\s*(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*)*<svg[\s>]/i
  const MIME_TYPES = ['text/html', 'image/svg+xml', 'application/json']
  const utf8Bytes = (text) => {
    try {
      return decodeBytes(encode(text)).length
    } catch (error) {
      return text.length * 3
    }
  }
  const isRecord = (value) => value !== null && typeof value === 'object' && !isArray(value)
  const allRecords = (values) => {
    for (let index = 0; index < values.length; index++) if (!isRecord(values[index])) return false
    return true
  }
  const emitTable = (columns, rowAt, count) => {
    const header = stringify(columns)
    let budget = room() - utf8Bytes(header) - 64
    let rows = ''
    let kept = 0
    const limit = count < ${MAX_TABLE_ROWS} ? count : ${MAX_TABLE_ROWS}
    for (let index = 0; index < limit; index++) {
      const text = stringify(rowAt(index))
      const size = utf8Bytes(text) + 1
      if (size > budget) break
      budget -= size
      rows += (kept ? ',' : '') + text
      kept++
    }
    emit('table', '{"columns":' + header + ',"rows":[' + rows + '],"rowCount":' + count + '}')
  }
  const recordsTable = (records) => {
    const columns = []
    const seen = {}
    const scan = records.length < ${MAX_TABLE_ROWS} ? records.length : ${MAX_TABLE_ROWS}
    for (let index = 0; index < scan; index++) {
      const names = keysOf(records[index])
      for (let at = 0; at < names.length; at++)
        if (!hasOwn(seen, names[at])) {
          seen[names[at]] = true
          columns[columns.length] = names[at]
        }
    }
    emitTable(
      columns,
      (index) => {
        const record = records[index]
        const row = []
        for (let at = 0; at < columns.length; at++) row[at] = hasOwn(record, columns[at]) ? record[columns[at]] : null
        return row
      },
      records.length,
    )
  }
  const columnsTable = (value) => {
    const columns = []
    for (let at = 0; at < value.columns.length; at++) columns[at] = toText(value.columns[at])
    const rows = value.rows
    for (let index = 0; index < rows.length; index++)
      if (!isArray(rows[index])) throw new TypeError('display({ columns, rows }): every row must be an array (row ' + index + ' is not)')
    emitTable(columns, (index) => rows[index], rows.length)
  }
  return function display(value, mimeType) {
    if (arguments.length === 0) throw new TypeError('display() needs a value to show')
    if (mimeType !== undefined && MIME_TYPES.indexOf(mimeType) < 0)
      throw new TypeError('display(value, mimeType): mimeType must be one of ' + MIME_TYPES.join(', '))
    if (typeof value === 'string' && (mimeType === 'image/svg+xml' || (mimeType === undefined && SVG.test(value))))
      return void emit('svg', stringify(value))
    if (typeof value === 'string' && (mimeType === 'text/html' || (mimeType === undefined && value.trimStart().startsWith('<'))))
      return void emit('html', stringify(value))
    if (mimeType === 'text/html' || mimeType === 'image/svg+xml')
      throw new TypeError('display(value, ' + mimeType + '): the value must be a string of markup')
    if (mimeType === undefined && isArray(value) && value.length > 0 && allRecords(value)) return void recordsTable(value)
    if (mimeType === undefined && isRecord(value) && isArray(value.columns) && isArray(value.rows) && keysOf(value).length === 2)
      return void columnsTable(value)
    const text = stringify(value)
    if (text === undefined) throw new TypeError('display() shows tables, JSON values, HTML and SVG; this value has no JSON form')
    emit('json', text)
  }
})`

/** The worker's side of display(): the count and bytes so far, and where accepted items go. */
export class QuickJsDisplay {
  private count = 0
  private bytes = 0
  /** Items left out for the limits, reported to the host as the runner's `outputsOmitted`. */
  omitted = 0

  constructor(
    private readonly limits: () => DisplayLimits | undefined,
    private readonly send: (item: unknown) => void,
  ) {}

  /** The prelude's `display`, built on the first call (it holds `emit` and `room` in its closure). */
  private shaper: QuickJSHandle | undefined
  /** The built-ins the prelude uses, taken before any code runs (see PRELUDE). */
  private builtins: QuickJSHandle[] = []

  /**
   * Defines the global `display` in the context as a native stub that builds the prelude's function on its first
   * call. Evaluating the prelude costs a fresh context ~0.3 ms of CPU, more than a whole `1 + 1` run, and most runs
   * never display anything; taking the built-ins it needs is a few property reads. Built lazily, the prelude runs
   * under the run's own memory limit and deadline.
   */
  install(vm: QuickJSContext, stringify: QuickJSHandle): void {
    // Each read is a call into the module; intermediate objects are read once and freed (a fresh context pays for
    // every one of these on a back-to-back run's path).
    const stringFn = vm.getProp(vm.global, 'String')
    const objectFn = vm.getProp(vm.global, 'Object')
    const prototype = vm.getProp(objectFn, 'prototype')
    const arrayFn = vm.getProp(vm.global, 'Array')
    // Function.prototype.call, read through a built-in function; bound to hasOwnProperty on the first display().
    const call = vm.getProp(stringFn, 'call')
    this.builtins = [
      // The run's own copy (taken before any code): one handle copied, not two property reads.
      stringify.dup(),
      vm.getProp(arrayFn, 'isArray'),
      vm.getProp(objectFn, 'keys'),
      vm.getProp(call, 'bind'),
      stringFn,
      vm.getProp(vm.global, 'encodeURIComponent'),
      vm.getProp(vm.global, 'unescape'),
      call,
      vm.getProp(prototype, 'hasOwnProperty'),
    ]
    for (const handle of [objectFn, prototype, arrayFn]) handle.dispose()
    const stub = vm.newFunction('display', (...args) => {
      this.shaper ??= this.build(vm)
      return vm.callFunction(this.shaper, vm.undefined, ...args)
    })
    vm.setProp(vm.global, 'display', stub)
    stub.dispose()
  }

  /** Forgets a run: its counts, and the prelude's function (made in memory the runtime's reset replaced). */
  reset(): void {
    this.count = 0
    this.bytes = 0
    this.omitted = 0
    this.shaper = undefined
  }

  /** Frees the handles it holds; the context cannot be disposed while a handle to one of its objects is alive. */
  dispose(): void {
    for (const handle of [...this.builtins, ...(this.shaper ? [this.shaper] : [])]) if (handle.alive) handle.dispose()
    this.builtins = []
    this.shaper = undefined
  }

  private build(vm: QuickJSContext): QuickJSHandle {
    const [stringify, isArray, keysOf, bind, toText, encode, decodeBytes, call, hasOwnProperty] = this.builtins as [
      QuickJSHandle,
      QuickJSHandle,
      QuickJSHandle,
      QuickJSHandle,
      QuickJSHandle,
      QuickJSHandle,
      QuickJSHandle,
      QuickJSHandle,
      QuickJSHandle,
    ]
    const emit = vm.newFunction('emit', (kind, json) => {
      this.emit(vm.getString(kind), vm, json)
    })
    const room = vm.newFunction('room', () => vm.newNumber(this.room()))
    // hasOwn(object, key): the pristine call bound to the pristine hasOwnProperty, with the pristine bind.
    const hasOwn = vm.unwrapResult(vm.callFunction(bind, call, hasOwnProperty))
    try {
      const factory = vm.unwrapResult(vm.evalCode(PRELUDE, 'execgate-display.js'))
      try {
        return vm.unwrapResult(
          vm.callFunction(factory, vm.undefined, emit, room, stringify, isArray, keysOf, hasOwn, toText, encode, decodeBytes),
        )
      } finally {
        factory.dispose()
      }
    } finally {
      emit.dispose()
      room.dispose()
      hasOwn.dispose()
    }
  }

  /** Bytes a table may still take: what is left of `outputsBytes`, at most the output cap. */
  private room(): number {
    const limits = this.limits()
    if (!limits || this.count >= limits.maxOutputs) return 0
    return Math.max(0, Math.min(limits.outputsBytes - this.bytes, limits.tableBytes))
  }

  private emit(kind: string, vm: QuickJSContext, json: QuickJSHandle): void {
    const limits = this.limits()
    if (!limits || this.count >= limits.maxOutputs) return void this.omitted++
    // JSON escaping at most sextuples a character: a text longer than this cannot fit, so it never leaves the VM.
    const lengthHandle = vm.getProp(json, 'length')
    const length = vm.getNumber(lengthHandle)
    lengthHandle.dispose()
    if (length > 6 * (limits.outputsBytes - this.bytes) + 64) return void this.omitted++
    const text = vm.getString(json)
    let item: ReturnType<typeof toItem>
    try {
      item = toItem(kind, text)
    } catch {
      return void this.omitted++ // not the JSON the prelude makes: nothing the host could show
    }
    if (!item || this.bytes + item.bytes > limits.outputsBytes) return void this.omitted++
    this.count++
    this.bytes += item.bytes
    this.send(item.output)
  }
}

/** One item in the shape the host accepts, with the bytes it counts (an image's decoded bytes, a table's JSON). */
function toItem(kind: string, text: string): { output: unknown; bytes: number } | undefined {
  const value: unknown = JSON.parse(text)
  switch (kind) {
    case 'svg': {
      const data = Buffer.from(String(value), 'utf8')
      return { output: { kind: 'image', mimeType: 'image/svg+xml', data: data.toString('base64') }, bytes: data.length }
    }
    case 'html':
      return { output: { kind: 'html', mimeType: 'text/html', data: String(value) }, bytes: Buffer.byteLength(String(value)) }
    case 'table': {
      const { columns, rows, rowCount } = value as { columns: string[]; rows: unknown[][]; rowCount: number }
      return { output: { kind: 'table', columns, rows, rowCount }, bytes: Buffer.byteLength(JSON.stringify({ columns, rows })) }
    }
    case 'json':
      return { output: { kind: 'json', mimeType: 'application/json', data: value }, bytes: Buffer.byteLength(JSON.stringify(value)) }
    default:
      return undefined
  }
}
