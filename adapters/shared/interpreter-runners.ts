import { PYTHON_OUTPUTS } from './python-outputs'

/**
 * The programs that run around the user's code in an OS sandbox or a container (process, docker, bedrock): they read
 * the code as their `RunnerIo` says, run it, and report the value (or the error, with its line) as one JSON document,
 * so the host never has to parse a traceback to know what happened. Each adapter feeds them its own way.
 */

/**
 * Python: exec everything but a final expression, eval that, send its JSON. Before the code runs, a PEP 578 audit
 * hook (which no Python code can remove) enforces the policy's import allow-list at run time: imports written in
 * the code, and the events that stand for a module reached some other way (`__loader__.load_module('os')` then
 * `os.system`), raise PolicyViolation. The namespaces stay the boundary; the hook makes the allow-list hold too.
 * Its state lives in default arguments (immutable here: setting `__defaults__` is itself an audited event).
 * argv: `run <allowed imports, comma-separated>` or `check`.
 */
/** How a runner gets its code and sends its report: the parts that differ between a bwrap sandbox and a container. */
export interface RunnerIo {
  /** Definitions placed before the runner's own (Python) or statements run first (JavaScript). */
  prelude: string
  /** An expression giving the code's source text. */
  load: string
  /** Python: the whole `def _send(doc):` definition. JavaScript: an expression for a function taking the report's JSON text. */
  send: string
  /** Python: install the import guard (an audit hook lives as long as the interpreter). @default true */
  guard?: boolean
  /** Python: an expression for the dict the code runs in. @default a fresh one */
  scope?: string
  /**
   * Python: each rich output goes out through `_send` the moment the code makes it, as an output record ending in a
   * newline (OUTPUT_RECORD, run-report.ts), before the report; for channels the host reads while the run runs.
   * @default false: outputs travel in the report
   */
  streamOutputs?: boolean
}

export function pythonRunner(io: RunnerIo): string {
  return String.raw`
import os, sys
${io.prelude}
class PolicyViolation(PermissionError):
    pass
def _execgate_guard(allowed):
    events = (('os.system', 'os'), ('os.exec', 'os'), ('os.posix_spawn', 'os'), ('os.spawn', 'os'), ('os.fork', 'os'),
              ('os.kill', 'os'), ('subprocess.', 'subprocess'), ('ctypes.', 'ctypes'), ('socket.', 'socket'),
              ('gc.get_', 'gc'), ('sys._current_frames', 'sys'), ('sys.settrace', 'sys'), ('sys.setprofile', 'sys'),
              ('code.__new__', 'types'), ('function.__new__', 'types'))
    def hook(event, args, allowed=frozenset(allowed), events=events, getframe=sys._getframe, violation=PolicyViolation):
        if event == 'sys._getframe' or event == 'open' or event == 'exec' or event == 'compile':
            return
        if event == 'import':
            name = args[0]
            if name.split('.')[0] in allowed:
                return
            frame = getframe(1)
            while frame is not None and frame.f_code.co_filename.startswith('<frozen importlib'):
                frame = frame.f_back
            if frame is not None and frame.f_code.co_filename == '<code>':
                raise violation('import of %r is not allowed by the policy (allowed: %s)' % (name, ', '.join(sorted(allowed)) or 'none'))
            return
        if event == 'object.__setattr__' and args[0] is hook:
            raise violation('the policy guard cannot be changed')
        for prefix, module in events:
            if event.startswith(prefix) and module not in allowed:
                # A data library the policy allows (numpy, pandas: /dist-packages/) on the stack does this itself:
                # numpy rewrites code objects and loads its C parts with ctypes as it imports.
                frame = getframe(1)
                while frame is not None:
                    if '/dist-packages/' in frame.f_code.co_filename:
                        return
                    frame = frame.f_back
                raise violation('%s needs the %r module, which the policy does not allow' % (event, module))
    sys.addaudithook(hook)
def _execgate_direct_egress(path='/run/execgate/egress.sock', forwarder=('127.0.0.1', 3128)):
    # A run with network reaches the egress gateway through the forwarder on 127.0.0.1:3128 (adapters/shared/
    # egress-bridge.ts). This interpreter's own HTTP clients (urllib, http.client) connect to the gateway's socket
    # straight instead: one process hop less per request (docs/benchmarks.md). The gateway sees the same bytes on the
    # same socket, so its checks are unchanged; processes the code starts still use the forwarder.
    if os.environ.get('HTTP_PROXY') != 'http://%s:%d' % forwarder or not os.path.exists(path):
        return
    import socket
    class GatewaySocket(socket.socket):
        def setsockopt(self, level, *rest):
            if level == socket.IPPROTO_TCP:
                return None  # TCP_NODELAY and friends: a unix socket has no Nagle to turn off
            return socket.socket.setsockopt(self, level, *rest)
    original = socket.create_connection
    def create_connection(address, timeout=socket._GLOBAL_DEFAULT_TIMEOUT, source_address=None, **rest):
        if tuple(address[:2]) != forwarder:
            return original(address, timeout, source_address, **rest)
        sock = GatewaySocket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if timeout is not socket._GLOBAL_DEFAULT_TIMEOUT:
                sock.settimeout(timeout)
            sock.connect(path)
        except BaseException:
            sock.close()
            raise
        return sock
    socket.create_connection = create_connection
# JSON by hand: importing json (and ast, traceback) would double the cost of a short run.
_ESCAPES = {i: '\\u%04x' % i for i in range(32)}
_ESCAPES.update({34: '\\"', 92: '\\\\'})
def _json(v, depth=0):
    if v is None: return 'null'
    if v is True: return 'true'
    if v is False: return 'false'
    if isinstance(v, int): return str(int(v)) if abs(v) <= 2 ** 53 else _json(str(v))
    if isinstance(v, float): return repr(v) if v == v and v not in (float('inf'), float('-inf')) else 'null'
    if isinstance(v, str): return '"' + str(v).translate(_ESCAPES) + '"'
    if depth > 100: return _json(repr(v))
    # numpy scalars and arrays, pandas Series: their plain Python values; a DataFrame: its columns; a date: ISO 8601.
    tolist = getattr(type(v), 'tolist', None)
    if callable(tolist): return _json(v.tolist(), depth + 1)
    if callable(getattr(type(v), 'to_dict', None)) and callable(getattr(type(v), 'itertuples', None)):
        return _json(v.to_dict('list'), depth + 1)
    if callable(getattr(type(v), 'isoformat', None)): return _json(v.isoformat())
    if isinstance(v, dict): return '{' + ','.join(_json(str(k)) + ':' + _json(x, depth + 1) for k, x in v.items()) + '}'
    if isinstance(v, (list, tuple, set, frozenset)): return '[' + ','.join(_json(x, depth + 1) for x in v) + ']'
    return _json(repr(v))
${io.send}
${PYTHON_OUTPUTS}
def _send_output(doc, pid=os.getpid(), send=_send):
    # Only the runner streams (as only it reports): a forked child keeps what it displays, and it is lost with it.
    if os.getpid() != pid:
        return False
    send('{"output":' + doc + '}\n')
    return True
_OUT = _Outputs(sys.argv[3] if len(sys.argv) > 3 and sys.argv[1] == 'run' else '', ${io.streamOutputs ? '_send_output' : 'None'})
def _report(doc, pid=os.getpid(), send=_send, outputs=_OUT):
    # A process the code forks runs this epilogue too (its own exception, its own "ok"): only the runner reports,
    # or a fork bomb's children would write over its report (hostile case py-fork-bomb).
    if os.getpid() == pid:
        send(outputs.report(doc))
def _split(src):
    """The code before its final expression, and that expression (compiled), or (None, None)."""
    lines = src.split('\n')
    for start in range(len(lines) - 1, -1, -1):
        line = lines[start]
        if not line or line[0] in ' \t#)]}':
            continue
        try:
            final = compile('\n' * start + '\n'.join(lines[start:]), '<code>', 'eval')
            body = compile('\n'.join(lines[:start]), '<code>', 'exec')
            return body, final
        except SyntaxError:
            return None, None
    return None, None
def _main():
    import _signal
    _signal.signal(24, lambda *_: os._exit(152))  # SIGXCPU: the CPU limit, reported as 128 + 24
    src = ${io.load}
    try:
        whole = compile(src, '<code>', 'exec')
        if sys.argv[1] == 'check':
            return _report('{"ok":true}')
        body, final = _split(src)
        _execgate_direct_egress()
        ${io.guard === false ? '' : "_execgate_guard(sys.argv[2].split(',') if sys.argv[2] else ())"}
        scope = ${io.scope ?? "{'__name__': '__main__', '__builtins__': __builtins__}"}
        scope['display'] = _OUT.display
        _OUT.watch_pyplot()
        if final is None:
            exec(whole, scope)
            value = None
        else:
            exec(body, scope)
            value = eval(final, scope)
        if _OUT.finish(value):
            value = None
        sys.stdout.flush()
        _report('{"ok":true}' if value is None else '{"ok":true,"value":' + _json(value) + '}')
    except SystemExit as error:
        _OUT.finish(None)
        code = error.code if isinstance(error.code, int) else (0 if error.code is None else 1)
        _report('{"ok":true}' if code == 0 else '{"error":{"type":"SystemExit","message":"the program exited with code %d"}}' % code)
    except BaseException as error:
        import traceback
        tb = error.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != '<code>':
            tb = tb.tb_next
        traceback.print_exception(type(error), error, tb)
        _OUT.finish(None)
        line = getattr(error, 'lineno', None) if isinstance(error, SyntaxError) else None
        while tb is not None:
            line = tb.tb_lineno
            tb = tb.tb_next
        info = '{"type":' + _json(type(error).__name__) + ',"message":' + _json(str(error))
        _report('{"error":' + info + (',"line":%d}}' % line if line else '}}'))
_main()
`
}

/**
 * Node: the code runs as a script in the process's own context; the namespaces are the boundary. Before it runs,
 * `process`, `require` and the module globals are taken off the global object, so the constructor tricks that
 * reach `process` from a realm (the hostile corpus's escapes) find nothing, and the allow-list has no `require`.
 * The runner keeps its own references.
 */
export function nodeRunner(io: RunnerIo): string {
  return String.raw`
const fs = require('fs'), vm = require('vm'), { isPromise } = require('util').types
${io.prelude}
const proc = process
// Output goes straight to the descriptors: stdout is a socket, where Node writes asynchronously, and a flood that
// never yields would grow the write queue until memory ran out instead of reaching the output cap.
for (const [stream, fd] of [[proc.stdout, 1], [proc.stderr, 2]]) stream.write = (chunk, encoding, callback) => {
  let data = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk)
  while (data.length) { try { data = data.subarray(fs.writeSync(fd, data)) } catch (error) { if (error.code !== 'EAGAIN') break } }
  if (typeof encoding === 'function') encoding(); else if (typeof callback === 'function') callback()
  return true
}
for (const name of ['process', 'require', 'module', 'exports', '__filename', '__dirname', 'global']) delete globalThis[name]
const sendText = ${io.send}
const send = (doc) => { try { sendText(JSON.stringify(doc)) } catch {} }
const lineOf = (error) => {
  const m = /<code>:(\d+)(?::(\d+))?/.exec(String(error && error.stack))
  return m ? { line: +m[1], column: m[2] ? +m[2] : undefined } : {}
}
const describe = (error) => ({
  type: (error && error.name) || 'Error',
  message: String(error && error.message !== undefined ? error.message : error),
  ...lineOf(error),
})
const userStack = (error) =>
  String((error && error.stack) || error).split('\n').filter((line) => !/node:internal|\[eval\]/.test(line)).join('\n')
const fail = (error) => { try { proc.stderr.write(userStack(error) + '\n') } catch {} send({ error: describe(error) }); proc.exit(1) }
proc.on('SIGXCPU', () => proc.exit(152)) // the CPU limit, reported as 128 + 24 (see the launcher)
proc.on('uncaughtException', fail)
proc.on('unhandledRejection', fail)
const src = ${io.load}
;(async () => {
  let script
  try { script = new vm.Script(src, { filename: '<code>' }) } catch (error) { return fail(error) }
  if (proc.argv[1] === 'check') return send({ ok: true })
  try {
    let value = script.runInThisContext()
    if (isPromise(value)) value = await value
    let json
    try { json = value === undefined ? undefined : JSON.parse(JSON.stringify(value)) } catch { json = String(value) }
    send(json === undefined ? { ok: true } : { ok: true, value: json })
  } catch (error) { fail(error) }
})()
`
}
