'use strict'
/**
 * One pyodide instance in a child process started by the pyodide adapter under Node's permission model:
 * read access to pyodide's own files only, no child processes, no workers, no addons, and an empty environment.
 * pyodide's JS bridge (`import js`, `pyodide_js`, `run_js`, JS proxies' constructors) reaches this process's
 * JavaScript, so this process is where that bridge ends: it holds no secrets and can touch nothing. Plain
 * JavaScript, not TypeScript: it runs without a loader, under permissions that would not allow one.
 */
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

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
  process.dlopen = refuse('process.dlopen')
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

// Python side: fresh globals per run, the value of the last expression, and a check that no module or builtin
// was changed for the next run (a run that changes them gets its process recycled).
const PRELUDE = `
def _execgate_network():
    import io, email.message, urllib.request, urllib.response, urllib.error, base64
    import pyodide.http

    def install(egress):
        # Bodies cross the host function as base64 both ways, so bytes arrive as the same bytes (an image, a zip);
        # the answer's 'content' is those bytes, decoded to text only where the helper gives text.
        def request(url, method='GET', headers=None, body=None):
            call = egress['call']
            if call is None:
                raise PermissionError("network access is not allowed by this run's policy (network: 'none')")
            options = {'method': method or 'GET', 'responseType': 'base64'}
            if headers:
                options['headers'] = {str(k): str(v) for k, v in dict(headers).items()}
            if body is not None:
                if isinstance(body, str):
                    options['body'] = body
                else:
                    options['body'] = base64.b64encode(bytes(body)).decode('ascii')
                    options['bodyEncoding'] = 'base64'
            answer = dict(call(str(url), options))
            answer['content'] = base64.b64decode(answer['body'])
            return answer

        def text_of(answer):
            return answer['content'].decode('utf-8', 'replace')

        def open_url(url):
            return io.StringIO(text_of(request(url)))

        class FetchResponse:
            def __init__(self, answer):
                self._answer = answer
                self.status = answer['status']
                self.ok = 200 <= self.status < 300
                self.status_text = ''
                self.url = answer['url']
                self.redirected = answer['redirected']
                self.headers = dict(answer['headers'])
                self.body_used = False
                self.type = 'basic'

            def raise_for_status(self):
                if not self.ok:
                    raise OSError(f'{self.status} error for url: {self.url}')

            async def string(self):
                return text_of(self._answer)

            async def text(self):
                return text_of(self._answer)

            async def json(self, **kwargs):
                import json
                return json.loads(text_of(self._answer), **kwargs)

            async def bytes(self):
                return self._answer['content']

            async def memoryview(self):
                return memoryview(self._answer['content'])

        async def pyfetch(url, **kwargs):
            return FetchResponse(request(url, kwargs.get('method', 'GET'), kwargs.get('headers'), kwargs.get('body')))

        class GatewayHandler(urllib.request.BaseHandler):
            def http_open(self, req):
                try:
                    answer = request(req.full_url, req.get_method(), dict(req.header_items()), req.data)
                except Exception as error:
                    raise urllib.error.URLError(str(error)) from None
                headers = email.message.Message()
                for name, value in answer['headers'].items():
                    headers[name] = value
                response = urllib.response.addinfourl(io.BytesIO(answer['content']), headers, answer['url'], answer['status'])
                response.msg = ''
                return response

            https_open = http_open

        # The host function follows redirects itself (each hop checked again): no redirect handler here.
        opener = urllib.request.OpenerDirector()
        for handler in (
            GatewayHandler(), urllib.request.HTTPDefaultErrorHandler(), urllib.request.HTTPErrorProcessor(), urllib.request.UnknownHandler()
        ):
            opener.add_handler(handler)
        urllib.request.install_opener(opener)
        # Caches the first request fills lazily (urllib.parse's compiled patterns; the warnings registry of tempfile,
        # whose file wrapper an HTTPError's body is), filled now: otherwise the check after every run with a request
        # sees a changed module and replaces the process (a cold start).
        warm = urllib.request.Request('http://warm.invalid/')
        (warm.host, warm.type)
        import tempfile
        tempfile.__dict__.setdefault('__warningregistry__', {})
        pyodide.http.open_url = open_url
        pyodide.http.pyfetch = pyfetch

    return install


def _execgate_setup():
    import sys, builtins, json, pickle, base64, types
    from pyodide.code import eval_code_async

    # The value in the shapes monty gives (adapters/monty/to-json.ts), so a run answers the same on either: integers
    # past 2**53 as decimal strings (a JSON number would lose digits in JavaScript), NaN and infinities as 'NaN' /
    # 'Infinity', sets as lists, dict keys as strings, anything else as its repr.
    def jsonable(value, seen):
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int):
            return value if -(2 ** 53) < value < 2 ** 53 else str(value)
        if isinstance(value, float):
            if value != value:
                return 'NaN'
            if value in (float('inf'), float('-inf')):
                return 'Infinity' if value > 0 else '-Infinity'
            return value
        if not isinstance(value, (list, tuple, set, frozenset, dict)):
            return repr(value)
        if id(value) in seen:
            return '[circular]'
        seen.add(id(value))
        try:
            if isinstance(value, dict):
                return {json_key(key): jsonable(item, seen) for key, item in value.items()}
            return [jsonable(item, seen) for item in value]
        finally:
            seen.discard(id(value))

    def json_key(key):
        if key is None or isinstance(key, bool):
            return json.dumps(key)
        return key if isinstance(key, str) else str(jsonable(key, set()))

    def to_json(value):
        try:
            return json.dumps(jsonable(value, set()))
        except Exception:
            return json.dumps(repr(value))

    def restore(scope, state):
        # The state was pickled by this session's own previous run, in a process like this one: loading it gives
        # the code nothing it could not have built itself.
        for name, value in pickle.loads(base64.b64decode(state)).items():
            scope[name] = value

    def capture(scope):
        kept = {}
        for name, value in scope.items():
            if name.startswith('__') or isinstance(value, (types.ModuleType, types.FunctionType, type)):
                continue
            try:
                pickle.dumps(value)
            except Exception:
                continue
            kept[name] = value
        return base64.b64encode(pickle.dumps(kept)).decode('ascii')

    # display(value, mime=None): the same rich outputs as quickjs and the Python runner (docs/data.md#rich-outputs).
    # A list of dicts or {'columns', 'rows'} becomes a table (its first 1000 rows that fit), an SVG string an
    # image/svg+xml, another string starting with '<' HTML, anything else JSON. Held to the policy's count and bytes
    # here as the code goes; each item goes to the host at once and is checked there again (OutputCollector).
    mime_types = ('text/html', 'image/svg+xml', 'application/json')

    def compact(value):
        # The bytes as the host counts them (JSON.stringify's form).
        return json.dumps(value, separators=(',', ':'), ensure_ascii=False).encode('utf-8', 'surrogatepass')

    def make_display(send, limits):
        max_count, max_bytes, table_bytes = json.loads(limits)
        state = {'count': 0, 'bytes': 0, 'omitted': 0}

        def emit(item, size):
            if state['count'] >= max_count or state['bytes'] + size > max_bytes:
                state['omitted'] += 1
                return
            state['count'] += 1
            state['bytes'] += size
            send(json.dumps(item))

        def table(columns, row_at, count):
            room = 0 if state['count'] >= max_count else max(0, min(max_bytes - state['bytes'], table_bytes))
            budget = room - len(compact(columns)) - 64
            rows = []
            for index in range(min(count, 1000)):
                row = jsonable(list(row_at(index)), set())
                size = len(compact(row)) + 1
                if size > budget:
                    break
                budget -= size
                rows.append(row)
            emit({'kind': 'table', 'columns': columns, 'rows': rows, 'rowCount': count}, len(compact({'columns': columns, 'rows': rows})))

        def display(value, mime=None):
            if mime is not None and mime not in mime_types:
                raise ValueError('display(value, mime): mime must be one of ' + ', '.join(mime_types))
            if isinstance(value, str):
                head = value.lstrip()
                if mime == 'image/svg+xml' or (
                    mime is None and (head.startswith('<svg') or (head.startswith('<?xml') and '<svg' in head[:4096]))
                ):
                    data = value.encode('utf-8', 'surrogatepass')
                    return emit({'kind': 'image', 'mimeType': 'image/svg+xml', 'data': base64.b64encode(data).decode('ascii')}, len(data))
                if mime == 'text/html' or (mime is None and head.startswith('<')):
                    return emit({'kind': 'html', 'mimeType': 'text/html', 'data': value}, len(value.encode('utf-8', 'surrogatepass')))
            if mime in ('text/html', 'image/svg+xml'):
                raise TypeError('display(value, %r): the value must be a string of markup' % mime)
            if mime is None and isinstance(value, (list, tuple)) and value and all(isinstance(record, dict) for record in value):
                columns, keys, seen = [], [], set()
                for record in value[:1000]:
                    for key in record:
                        if str(key) not in seen:
                            seen.add(str(key))
                            columns.append(str(key))
                            keys.append(key)
                return table(columns, lambda index: [value[index].get(key) for key in keys], len(value))
            if (
                mime is None and isinstance(value, dict) and set(value) == {'columns', 'rows'}
                and isinstance(value['columns'], (list, tuple)) and isinstance(value['rows'], (list, tuple))
            ):
                rows = value['rows']
                for index, row in enumerate(rows):
                    if not isinstance(row, (list, tuple)):
                        raise TypeError('display({columns, rows}): every row must be a list (row %d is not)' % index)
                return table([str(column) for column in value['columns']], lambda index: rows[index], len(rows))
            data = jsonable(value, set())
            emit({'kind': 'json', 'mimeType': 'application/json', 'data': data}, len(compact(data)))

        return display, state

    # Host calls raise these; any other name the host sends becomes a RuntimeError.
    raisable = {t.__name__: t for t in (FileNotFoundError, PermissionError, TypeError, ValueError, RuntimeError)}

    def host_function(name, call):
        # Arguments and results cross as JSON text: nothing of the host is ever a Python object here.
        def call_host(*args):
            reply = json.loads(call(name, json.dumps(list(args))))
            if reply.get('ok'):
                return reply.get('value')
            raise raisable.get(reply.get('exception'), RuntimeError)(reply.get('message', 'the host call failed'))
        call_host.__name__ = call_host.__qualname__ = name
        return call_host

    # Network through the egress gateway (docs/network.md): pyodide's http helpers and urllib are steered, once and
    # here (so the module check below takes them as the baseline), to the run's http_request host function. The
    # run's caller lives in this closure only; without one (a run whose policy allows no network) they refuse.
    egress = {'call': None}
    _execgate_network()(egress)

    async def run(code, state=None, keep=False, host_names='[]', host_call=None, display_send=None, display_limits='[0, 0, 0]'):
        scope = {'__name__': '__main__', '__builtins__': builtins}
        display, shown = make_display(display_send, display_limits)
        scope['display'] = display
        for name in json.loads(host_names):
            scope[name] = host_function(name, host_call)
        egress['call'] = scope.get('http_request')
        if state:
            restore(scope, state)
        try:
            value = await eval_code_async(code, scope, return_mode='last_expr', filename='main.py')
        finally:
            egress['call'] = None
            # A last line without a newline stays in sys.stdout's buffer: out now, or the next run would print it.
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
        session = capture(scope) if keep else None
        return json.dumps([None if value is None else to_json(value), session, shown['omitted']])

    # Taken after everything above exists, and kept in this closure rather than in a module a run could edit.
    # __main__ is left out: the runs get their own globals, and our names there are removed before the first run.
    modules = dict(sys.modules)
    module_state = {name: dict(vars(m)) for name, m in modules.items() if m is not None and hasattr(m, '__dict__') and name != '__main__'}
    builtin_state = dict(vars(builtins))

    def poisoned():
        for name, module in modules.items():
            if sys.modules.get(name) is not module:
                return True
        # Dict comparison runs in C: equal keys and values (functions and modules compare by identity).
        if vars(builtins) != builtin_state:
            return True
        for name, state in module_state.items():
            current = vars(modules[name])
            if name == 'sys':
                # The interpreter itself records the last exception here; that is not the run's doing.
                current = {k: v for k, v in current.items() if not k.startswith('last_')}
                state = {k: v for k, v in state.items() if not k.startswith('last_')}
            if current != state:
                return True
        # Modules first imported by the run are dropped, so the next run imports them fresh.
        for name in [n for n in sys.modules if n not in modules]:
            del sys.modules[name]
        return False

    def parse(code):
        import ast
        try:
            compile(code, 'main.py', 'exec', flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            return None
        except SyntaxError as error:
            return json.dumps({'type': 'SyntaxError', 'message': error.msg, 'line': error.lineno, 'column': error.offset})

    return run, poisoned, parse

_execgate_hooks = _execgate_setup()
del _execgate_network
`

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
  return () => {
    for (const [handle, cancel] of pending) cancel(handle)
    pending.clear()
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
  await pyodide.runPythonAsync(PRELUDE)
  const clearLeftoverTimers = keepTimersWithinTheRun()
  const hooks = pyodide.globals.get('_execgate_hooks')
  const run = hooks.get(0)
  const poisoned = hooks.get(1)
  const parse = hooks.get(2)
  pyodide.runPython('del _execgate_hooks')
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
    const decoder = new TextDecoder('utf-8')
    return {
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
  pyodide.setStdout(writer('stdout'))
  pyodide.setStderr(writer('stderr'))
  // A display() item goes out at once, after the text written before it.
  const sendDisplay = (item) => {
    flush()
    send({ type: 'display', id: currentRun, item })
  }

  process.on('message', async (message) => {
    if (message.type === 'parse') {
      const problem = parse(message.code)
      return send({ type: 'parsed', id: message.id, error: problem ? JSON.parse(problem) : undefined })
    }
    if (message.type !== 'run') return
    currentRun = message.id
    let result
    try {
      const state = message.session ? message.session.state || null : null
      const [json, session, outputsOmitted] = JSON.parse(
        await run(
          message.code,
          state,
          Boolean(message.session),
          JSON.stringify(message.hostFunctions || []),
          callHost,
          sendDisplay,
          JSON.stringify(message.outputs || [0, 0, 0]),
        ),
      )
      result = {
        status: 'ok',
        value: json === undefined || json === null ? undefined : JSON.parse(json),
        ...(session ? { session } : {}),
        ...(outputsOmitted ? { outputsOmitted } : {}),
      }
    } catch (error) {
      result = { status: 'error', error: describePythonError(error) }
    }
    clearLeftoverTimers()
    flush()
    // Answer first; then check that the run left every module and builtin as it found them. The adapter does not
    // hand this process to anyone else until the check is in.
    send({ type: 'result', id: message.id, ...result })
    let recycle = false
    try {
      recycle = poisoned()
    } catch {
      recycle = true
    }
    send({ type: 'checked', id: message.id, recycle })
  })
  send({ type: 'ready' })
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
