'use strict'
/**
 * monty's REPL for sessions, in a child process of its own. MontyRepl (0.0.18) has no print callback: `print`
 * writes to the process's stdout, so it runs here, where stdout is a pipe the adapter reads and caps, never the
 * host's. Each call loads the session's state (bytes from `dump()`), feeds the code, and sends the new state back;
 * the process keeps nothing between calls. Plain JavaScript: started with `node`, no loader.
 *
 * Output ordering: Rust buffers stdout by line, so after the code the REPL prints a marker line only the adapter
 * knows; everything before it on stdout is the call's output, flushed by the marker's newline.
 */
const monty = require('@pydantic/monty')

const send = (message) => process.send(message)

function toJson(value, seen = new Set()) {
  if (value === null || value === undefined) return null
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value
    case 'number':
      return Number.isFinite(value) ? value : String(value)
    case 'bigint':
      return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString()
    case 'object':
      break
    default:
      return String(value)
  }
  if (seen.has(value)) return '[circular]'
  seen.add(value)
  try {
    const tag = Object.prototype.toString.call(value)
    const out = {}
    if (tag === '[object Set]' || Array.isArray(value)) return [...value].map((item) => toJson(item, seen))
    const entries = tag === '[object Map]' ? [...value] : Object.entries(value)
    for (const [key, item] of entries) Object.defineProperty(out, String(key), { value: toJson(item, seen), enumerable: true, writable: true, configurable: true })
    return out
  } finally {
    seen.delete(value)
  }
}

/** The fields the adapter's error mapping reads, copied out of monty's error object (it cannot cross IPC). */
function describe(error) {
  let frames = []
  let display
  try {
    frames = typeof error.traceback === 'function' ? error.traceback() : []
  } catch {}
  try {
    display = typeof error.display === 'function' ? error.display('traceback') : undefined
  } catch {}
  const frame = frames[frames.length - 1] || {}
  return {
    exception: { typeName: (error.exception && error.exception.typeName) || 'Error', message: (error.exception && error.exception.message) || String(error.message || error) },
    line: frame.line,
    column: frame.column,
    display,
  }
}

process.on('message', (message) => {
  if (!message || message.type !== 'feed') return
  let repl
  try {
    repl = message.state ? monty.MontyRepl.load(Buffer.from(message.state)) : new monty.MontyRepl({ scriptName: 'main.py', limits: message.limits })
  } catch (error) {
    return send({ type: 'result', id: message.id, status: 'internal_error', failure: describe(error), flushed: false })
  }
  let result
  try {
    result = { status: 'ok', value: toJson(repl.feed(message.code)) }
  } catch (error) {
    result = { status: 'error', failure: describe(error) }
  }
  let flushed = true
  try {
    repl.feed(`print(${JSON.stringify(message.marker)})`)
  } catch {
    flushed = false // the REPL's time or memory is spent: the adapter replaces this process
  }
  let state
  if (result.status === 'ok') {
    try {
      state = repl.dump()
    } catch (error) {
      result = { status: 'error', failure: describe(error) }
    }
  }
  send({ type: 'result', id: message.id, ...result, flushed, ...(state ? { state } : {}) })
})
send({ type: 'ready' })
