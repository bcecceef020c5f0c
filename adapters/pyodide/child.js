'use strict'
/**
 * One pyodide instance in a child process started by the pyodide adapter under Node's permission model:
 * read access to pyodide's own files only, no child processes, no workers, no addons but execgate's write-watch (loaded
 * before pyodide; every other load is refused after it: child-guard.js), and an empty environment.
 * pyodide's JS bridge (`import js`, `pyodide_js`, `run_js`, JS proxies' constructors) reaches this process's
 * JavaScript, so this process is where that bridge ends: it holds no secrets and can touch nothing. Plain
 * JavaScript, not TypeScript: it runs without a loader, under permissions that would not allow one.
 */
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
// Loaded now, before pyodide and any run: it wraps pyodide's imports as they are instantiated.
const { watchImports, loadWriteWatch, memorySnapshot } = require('./child-guard.js')
const imports = watchImports()
const writes = loadWriteWatch(process.argv[3])

// The permission model forbids process.binding, which pyodide's loader asks for 'constants'. Answer that from
// the public modules and refuse everything else.
const constants = { os: os.constants, fs: fs.constants, crypto: {}, zlib: {} }
process.binding = (name) => {
  if (name === 'constants') return constants
  throw new Error(`process.binding('${name}') is not available in the sandbox`)
}

const pyodideDir = process.argv[2]
const send = (message) => process.send(message)

/** First layer: what Python could reach through `js` that the permission model does not cover. */
function closeTheBridge() {
  for (const name of ['fetch', 'WebSocket', 'XMLHttpRequest', 'EventSource', 'Request', 'Response', 'Headers']) {
    try {
      delete globalThis[name]
    } catch {}
  }
  const refuse = (what) => () => {
    throw new Error(`${what} is not available in the sandbox`)
  }
  process.kill = refuse('process.kill')
  process._kill = refuse('process.kill')
  // process.dlopen was sealed before pyodide loaded (child-guard.js, loadWriteWatch).
  process.chdir = refuse('process.chdir')
  closeTheNetwork(refuse)
}

/**
 * Node 20's permission model does not cover the network, and the bridge reaches this process's modules (through
 * `process.getBuiltinModule`, `process.mainModule.require`, or a pipe's `process.stdout`, itself a `net.Socket`).
 * Python's own clients go out through the host's gateway function; nothing here needs a socket, a listener or a
 * resolver, so every way to one is replaced by a refusal on the shared module objects and prototypes. A first layer,
 * not a boundary: docs/network.md#pyodides-network-precisely.
 */
function closeTheNetwork(refuse) {
  const net = require('node:net')
  const dgram = require('node:dgram')
  const dns = require('node:dns')
  const closed = refuse('network access from the interpreter process (use the gateway: urllib or pyodide.http)')
  const replaceAll = (target, names) => {
    for (const name of names) if (typeof target[name] === 'function') target[name] = closed
  }
  net.Socket.prototype.connect = closed
  net.Server.prototype.listen = closed
  replaceAll(net, ['connect', 'createConnection', 'createServer'])
  dgram.Socket.prototype.bind = closed
  dgram.Socket.prototype.connect = closed
  dgram.Socket.prototype.send = closed
  dgram.createSocket = closed
  for (const target of [dns, dns.promises, dns.Resolver.prototype, dns.promises.Resolver.prototype])
    replaceAll(
      target,
      Object.getOwnPropertyNames(target).filter((name) => name !== 'constructor'),
    )
  for (const name of ['node:tls', 'node:http', 'node:https', 'node:http2'])
    replaceAll(require(name), ['connect', 'request', 'get', 'createServer', 'createSecureServer'])
  process.getBuiltinModule = refuse('process.getBuiltinModule')
  Object.defineProperty(process, 'mainModule', { value: undefined, configurable: false, writable: false })
}

/**
 * Timers and immediates the code schedules through the bridge (`js.setTimeout`, asyncio tasks left unawaited) are
 * the run's: whatever is still pending when the run answers is cleared, so nothing of a run fires after it, in the
 * idle process or inside the next run. Taken after pyodide loads, so its own start-up timers are not counted.
 */
function keepTimersWithinTheRun() {
  const pending = new Map()
  const track = (schedule, cancel) => {
    const original = globalThis[schedule]
    const originalCancel = globalThis[cancel]
    globalThis[schedule] = function (callback, ...rest) {
      if (typeof callback !== 'function') return original.call(this, callback, ...rest)
      let handle
      const once = schedule !== 'setInterval'
      handle = original.call(
        this,
        function (...args) {
          if (once) pending.delete(handle)
          return callback.apply(this, args)
        },
        ...rest,
      )
      pending.set(handle, originalCancel)
      return handle
    }
    globalThis[cancel] = function (handle) {
      pending.delete(handle)
      return originalCancel.call(this, handle)
    }
  }
  track('setTimeout', 'clearTimeout')
  track('setInterval', 'clearInterval')
  track('setImmediate', 'clearImmediate')
  const originalSetImmediate = globalThis.setImmediate
  return {
    // Code without top-level await runs straight through (child-python.js), so a task it started and left unawaited
    // has not had the turn of the event loop it had when every run was itself a task: it gets that one turn here, and
    // only when the run left something pending.
    oneTurnIfPending: () => (pending.size ? new Promise((resolve) => originalSetImmediate(resolve)) : undefined),
    clear: () => {
      for (const [handle, cancel] of pending) cancel(handle)
      pending.clear()
    },
  }
}

// A callback the code scheduled that throws outside Python (a microtask, a timer during the run) ends this process
// with the reason on stderr, where the adapter reads it, instead of a bare exit code.
process.on('uncaughtException', (error) => {
  const what = String((error && error.message) || error)
    .split('\n')[0]
    .slice(0, 200)
  process.stderr.write(`[execgate] a callback the code scheduled threw: ${what}\n`, () => process.exit(1))
})

async function main() {
  const { loadPyodide } = require(path.join(pyodideDir, 'pyodide.js'))
  const pyodide = await loadPyodide({ indexURL: pyodideDir + path.sep, stdout: () => undefined, stderr: () => undefined })
  closeTheBridge()
  const channel = serveTheChannel(pyodide.FS)
  await pyodide.runPythonAsync(require('./child-python.js'))
  const leftoverTimers = keepTimersWithinTheRun()
  const hooks = pyodide.globals.get('_execgate_hooks')
  const [run, parse] = [0, 1].map((index) => hooks.get(index))
  hooks.destroy()
  pyodide.runPython('del _execgate_hooks')
  // Taken last, when the process is as every run will find it (child-guard.js).
  const memory = memorySnapshot(pyodide._module.wasmMemory || pyodide._module.memory, writes)
  let pending = []
  let pendingBytes = 0
  const flush = () => {
    if (pending.length) send({ type: 'output', id: currentRun, chunks: pending })
    pending = []
    pendingBytes = 0
  }
  // Raw bytes, not pyodide's line batches: a batch is a line with its newline dropped, so output that ends without
  // one would gain a newline. The decoder keeps a UTF-8 character split across two writes whole.
  const writer = (stream) => {
    let decoder = new TextDecoder('utf-8')
    return {
      // At a run's end: a character the run left unfinished is its own (a replacement character), never the next run's.
      end: () => {
        const text = decoder.decode()
        decoder = new TextDecoder('utf-8')
        if (text) pending.push([stream, text])
      },
      write: (bytes) => {
        const text = decoder.decode(bytes, { stream: true })
        if (text) {
          pending.push([stream, text])
          pendingBytes += text.length
          if (pendingBytes > 1024) flush()
        }
        return bytes.length
      },
    }
  }
  const streams = [writer('stdout'), writer('stderr')]
  pyodide.setStdout(streams[0])
  pyodide.setStderr(streams[1])
  // A display() item goes out at once, after the text written before it.
  sendDisplay = (item) => {
    flush()
    send({ type: 'display', id: currentRun, item })
  }

  process.on('message', async (message) => {
    if (message.type === 'parse') {
      const problem = parse(message.code)
      send({ type: 'parsed', id: message.id, error: problem ? JSON.parse(problem) : undefined })
      // Compiling leaves the source's names interned: put back, like a run's changes, before the process serves again.
      if (!memory.restore()) process.exit(0)
      return
    }
    if (message.type !== 'run') return
    currentRun = message.id
    let result
    imports.begin()
    try {
      const state = message.session ? message.session.state || null : null
      let answer = run(
        message.code,
        state,
        Boolean(message.session),
        JSON.stringify(message.hostFunctions || []),
        JSON.stringify(message.outputs || [0, 0, 0]),
      )
      // Code with top-level await answers through a coroutine; any other code has answered already (child-python.js).
      if (typeof answer !== 'string') answer = await settle(answer)
      else {
        const turn = leftoverTimers.oneTurnIfPending()
        if (turn) await turn
      }
      const [json, session, outputsOmitted, failure] = JSON.parse(answer)
      // The run's exception, as text (child-python.js): described as pyodide's own error would be.
      if (failure) throw { message: failure.text, type: failure.type }
      result = {
        status: 'ok',
        value: json === undefined || json === null ? undefined : JSON.parse(json),
        ...(session ? { session } : {}),
        ...(outputsOmitted ? { outputsOmitted } : {}),
      }
    } catch (error) {
      // pyodide cannot be used after a fatal error (a JavaScript error thrown through the interpreter: the permission
      // model's refusal of a process, say). The process ends, with pyodide's account of it on stderr for the adapter.
      if (error && error.pyodide_fatal_error) process.exit(1)
      result = { status: 'error', error: describePythonError(error) }
    }
    leftoverTimers.clear()
    for (const stream of streams) stream.end()
    flush()
    // A line the run left unfinished or an answer it did not read stays with the run.
    channel.reset()
    // Answer first; then put the interpreter's memory back as the run found it (child-guard.js). A run that reached
    // JavaScript, wrote a file or grew the memory leaves this process to be replaced instead. The adapter does not
    // hand this process to anyone else until the verdict is in.
    send({ type: 'result', id: message.id, ...result })
    const touched = imports.end()
    let recycle = true
    try {
      recycle = touched || !memory.restore()
    } catch {
      recycle = true
    }
    send({ type: 'checked', id: message.id, recycle })
  })
  send({ type: 'ready', note: memory.why ? `memory restore: compare (write-watch: ${memory.why})` : `memory restore: ${memory.mode}` })
}

/** Awaits a Python coroutine's proxy and releases it. */
async function settle(awaitable) {
  try {
    return await awaitable
  } finally {
    awaitable.destroy()
  }
}

let sendDisplay = () => undefined

/**
 * /dev/execgate, the device file through which the Python side makes host calls and sends display() items
 * (child-python.js): reads and writes of a file are imports a run may call (child-guard.js), where calling a JavaScript
 * function through the bridge would mark the run. A line 'H<name>\t<args>' is a host call, whose answer the next
 * reads return; 'D<item>' a display() item.
 */
function serveTheChannel(FS) {
  const decoder = new TextDecoder('utf-8')
  let line = []
  let reply = Buffer.alloc(0)
  const device = FS.makedev(64, 0)
  FS.registerDevice(device, {
    write(stream, buffer, offset, length) {
      const bytes = buffer.subarray(offset, offset + length)
      let start = 0
      for (let newline = bytes.indexOf(10); newline >= 0; newline = bytes.indexOf(10, start)) {
        line.push(Buffer.from(bytes.subarray(start, newline)))
        const text = decoder.decode(Buffer.concat(line))
        line = []
        start = newline + 1
        if (text[0] === 'H') {
          const tab = text.indexOf('\t')
          reply = Buffer.from(callHost(text.slice(1, tab), text.slice(tab + 1)) + '\n', 'utf8')
        } else if (text[0] === 'D') sendDisplay(text.slice(1))
      }
      if (start < bytes.length) line.push(Buffer.from(bytes.subarray(start)))
      return length
    },
    read(stream, buffer, offset, length) {
      const count = Math.min(length, reply.length)
      buffer.set(reply.subarray(0, count), offset)
      reply = reply.subarray(count)
      return count
    },
  })
  FS.mkdev('/dev/execgate', device)
  return {
    reset: () => {
      line = []
      reply = Buffer.alloc(0)
    },
  }
}

// Host calls are synchronous for the Python code (as on monty): the request goes out on fd 4 and this process
// blocks on fd 5 until the adapter answers. A call the adapter refuses outright (over budget, filesystem access
// denied) is never answered: the adapter ends the run and kills this process.
const HOST_REQUESTS_FD = 4
const HOST_REPLIES_FD = 5
let replyCarry = Buffer.alloc(0)
let currentRun = 0

function callHost(name, argsJson) {
  fs.writeSync(HOST_REQUESTS_FD, JSON.stringify({ id: currentRun, name, args: argsJson }) + '\n')
  const chunk = Buffer.alloc(64 * 1024)
  for (;;) {
    const newline = replyCarry.indexOf(10)
    if (newline >= 0) {
      const line = replyCarry.subarray(0, newline).toString('utf8')
      replyCarry = replyCarry.subarray(newline + 1)
      return line
    }
    const read = fs.readSync(HOST_REPLIES_FD, chunk, 0, chunk.length, null)
    if (read === 0) throw new Error('the host closed the host-call channel')
    replyCarry = Buffer.concat([replyCarry, chunk.subarray(0, read)])
  }
}

/** The Python exception's type, message and line from pyodide's PythonError text. */
function describePythonError(error) {
  const text = String((error && error.message) || error)
  const lines = text.trim().split('\n')
  const last = lines[lines.length - 1] || text
  // A bare last line (`MemoryError`, raised without a message) has no colon; pyodide's PythonError carries the
  // type itself, so the type never falls back to a generic 'Error' (a MemoryError must map to memory_limit).
  const pythonType = error && typeof error.type === 'string' ? error.type : undefined
  const match = /^([A-Za-z_][\w.]*): ?(.*)$/.exec(last) || (pythonType && last === pythonType ? [last, last, ''] : null)
  const lineMatches = [...text.matchAll(/File "main\.py", line (\d+)/g)]
  const syntaxLine = /line (\d+)/.exec(last)
  const line = lineMatches.length ? Number(lineMatches[lineMatches.length - 1][1]) : undefined
  return {
    type: match ? match[1].split('.').pop() : 'Error',
    message: match ? match[2] : last,
    ...((line ?? (match && match[1] === 'SyntaxError' && syntaxLine)) ? { line: line ?? Number(syntaxLine[1]) } : {}),
    stack: text.slice(-4000),
  }
}

main().catch((error) => {
  send({ type: 'failed', reason: String((error && error.message) || error) })
  process.exit(1)
})
