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
    exception: {
      typeName: (error.exception && error.exception.typeName) || 'Error',
      message: (error.exception && error.exception.message) || String(error.message || error),
    },
    line: frame.line,
    column: frame.column,
    display,
  }
}

process.on('message', (message) => {
  if (!message || message.type !== 'feed') return
  let repl
  try {
    repl = message.state
      ? monty.MontyRepl.load(Buffer.from(message.state))
      : new monty.MontyRepl({ scriptName: 'main.py', limits: message.limits })
  } catch (error) {
    return send({ type: 'result', id: message.id, status: 'internal_error', failure: describe(error), flushed: false })
  }
  let result
  try {
    // Sent as it is (IPC's structured clone keeps dicts as Maps, sets, big integers); the adapter makes it JSON.
    result = { status: 'ok', value: repl.feed(message.code) }
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
  const answer = { type: 'result', id: message.id, ...result, flushed, ...(state ? { state } : {}) }
  try {
    send(answer)
  } catch {
    // A value structured clone cannot carry (a function object): its text instead.
    send({ ...answer, value: String(answer.value) })
  }
})
send({ type: 'ready' })
