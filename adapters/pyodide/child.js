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
}

// Python side: fresh globals per run, the value of the last expression, and a check that no module or builtin
// was changed for the next run (a run that changes them gets its process recycled).
const PRELUDE = `
def _execgate_setup():
    import sys, builtins, json, pickle, base64, types
    from pyodide.code import eval_code_async

    def to_json(value):
        try:
            return json.dumps(value, default=lambda o: repr(o))
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

    async def run(code, state=None, keep=False):
        scope = {'__name__': '__main__', '__builtins__': builtins}
        if state:
            restore(scope, state)
        value = await eval_code_async(code, scope, return_mode='last_expr', filename='main.py')
        session = capture(scope) if keep else None
        return json.dumps([None if value is None else to_json(value), session])

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
`

async function main() {
  const { loadPyodide } = require(path.join(pyodideDir, 'pyodide.js'))
  const pyodide = await loadPyodide({ indexURL: pyodideDir + path.sep, stdout: () => undefined, stderr: () => undefined })
  closeTheBridge()
  await pyodide.runPythonAsync(PRELUDE)
  const hooks = pyodide.globals.get('_execgate_hooks')
  const run = hooks.get(0)
  const poisoned = hooks.get(1)
  const parse = hooks.get(2)
  pyodide.runPython('del _execgate_hooks')
  let current = 0
  let pending = []
  let pendingBytes = 0
  const flush = () => {
    if (pending.length) send({ type: 'output', id: current, chunks: pending })
    pending = []
    pendingBytes = 0
  }
  const writer = (stream) => ({
    batched: (text) => {
      pending.push([stream, text + '\n'])
      pendingBytes += text.length
      if (pendingBytes > 1024) flush()
    },
  })
  pyodide.setStdout(writer('stdout'))
  pyodide.setStderr(writer('stderr'))

  process.on('message', async (message) => {
    if (message.type === 'parse') {
      const problem = parse(message.code)
      return send({ type: 'parsed', id: message.id, error: problem ? JSON.parse(problem) : undefined })
    }
    if (message.type !== 'run') return
    current = message.id
    let result
    try {
      const [json, session] = JSON.parse(await run(message.code, message.session ? message.session.state || null : null, Boolean(message.session)))
      result = { status: 'ok', value: json === undefined || json === null ? undefined : JSON.parse(json), ...(session ? { session } : {}) }
    } catch (error) {
      result = { status: 'error', error: describePythonError(error) }
    }
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

/** The Python exception's type, message and line from pyodide's PythonError text. */
function describePythonError(error) {
  const text = String((error && error.message) || error)
  const lines = text.trim().split('\n')
  const last = lines[lines.length - 1] || text
  const match = /^([A-Za-z_][\w.]*): ?(.*)$/.exec(last)
  const lineMatches = [...text.matchAll(/File "main\.py", line (\d+)/g)]
  const syntaxLine = /line (\d+)/.exec(last)
  const line = lineMatches.length ? Number(lineMatches[lineMatches.length - 1][1]) : undefined
  return {
    type: match ? match[1].split('.').pop() : 'Error',
    message: match ? match[2] : last,
    ...(line ?? (match && match[1] === 'SyntaxError' && syntaxLine) ? { line: line ?? Number(syntaxLine[1]) } : {}),
    stack: text.slice(-4000),
  }
}

main().catch((error) => {
  send({ type: 'failed', reason: String((error && error.message) || error) })
  process.exit(1)
})
