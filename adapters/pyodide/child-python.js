'use strict'
/**
 * The Python child.js runs once, after pyodide loads: fresh globals per run, the value of the last expression, the
 * egress gateway behind urllib and pyodide.http, display(), and host functions. Nothing here crosses pyodide's
 * JavaScript bridge during a run: host calls and display() items go through a device file (/dev/execgate, child.js),
 * and errors come back as text, so a run that stays in Python never marks itself (child-guard.js). Plain JavaScript,
 * read by the child under the permission model (its own file is one of the few it may read).
 */
module.exports = `
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
    import sys, os, builtins, json, pickle, base64, types, ast, inspect, linecache, functools, operator, traceback, __future__
    from textwrap import dedent
    from _pyodide._base import should_quiet

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

    # The host channel: a device file child.js serves. A line 'H<name>\\t<args JSON>' is a host call, answered by one line
    # read back; 'D<item JSON>' is a display() item. JSON text holds no raw newline, so a line is one message.
    channel = os.open('/dev/execgate', os.O_RDWR)

    def send_line(text):
        view = memoryview(text.encode('utf-8', 'surrogatepass') + b'\\n')
        while view:
            view = view[os.write(channel, view):]

    def host_call(name, args):
        send_line('H' + name + '\\t' + args)
        chunks = []
        while True:
            chunk = os.read(channel, 1 << 16)
            if not chunk:
                raise RuntimeError('the host closed the host-call channel')
            chunks.append(chunk)
            if chunk.endswith(b'\\n'):
                return b''.join(chunks)[:-1].decode('utf-8')

    def display_send(item):
        send_line('D' + item)

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

    # What pyodide's eval_code_async compiles (the dedented source; the value of the last expression unless a trailing
    # semicolon quiets it; top-level await), without what it costs per run (~150 µs of a 1 + 1 run in WebAssembly: a
    # tokenizer pass in Python, an AST deep copy and walk): the last expression is compiled on its own, as an
    # expression, so its value needs no carrier and nothing of the run's globals changes to hold it.
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    futures = functools.reduce(operator.or_, (getattr(__future__, n).compiler_flag for n in __future__.all_feature_names))

    def compile_run(code):
        source = dedent(code)
        module = compile(source, 'main.py', 'exec', flags | ast.PyCF_ONLY_AST, dont_inherit=True)
        last = None
        if module.body and isinstance(module.body[-1], ast.Expr) and not (';' in source and should_quiet(source)):
            last = module.body.pop().value
        head = compile(module, 'main.py', 'exec', flags, dont_inherit=True) if module.body else None
        # The expression keeps the module's future imports (from __future__ import annotations).
        future = head.co_flags & futures if head else 0
        tail = compile(ast.Expression(last), 'main.py', 'eval', flags | future, dont_inherit=True) if last else None
        # Tracebacks show the run's lines, as pyodide's own runner makes them.
        linecache.cache['main.py'] = [lambda: source]
        return head, tail

    def awaits(code):
        return code is not None and bool(code.co_flags & inspect.CO_COROUTINE)

    async def execute_async(head, tail, scope):
        if head is not None:
            started = eval(head, scope)
            if awaits(head):
                await started
        if tail is None:
            return None
        value = eval(tail, scope)
        return (await value) if awaits(tail) else value

    def end_run():
        egress['call'] = None
        # A last line without a newline stays in sys.stdout's buffer: out now, or the next run would print it.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass

    def answer(value, scope, keep, shown):
        session = capture(scope) if keep else None
        return json.dumps([None if value is None else to_json(value), session, shown['omitted']])

    # The run's exception as text, from its first frame in main.py (the frames of run() above it are ours): raised to
    # child.js instead, it would cross the bridge to become a JavaScript error.
    def failed(error):
        try:
            tb = error.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename != 'main.py':
                tb = tb.tb_next
            text = ''.join(traceback.format_exception(type(error), error, tb))
        except BaseException:
            text = type(error).__name__
        return json.dumps([None, None, 0, {'type': type(error).__name__, 'text': text}])

    async def answer_later(head, tail, scope, keep, shown):
        try:
            try:
                value = await execute_async(head, tail, scope)
            finally:
                end_run()
            return answer(value, scope, keep, shown)
        except BaseException as error:
            return failed(error)

    # Code with top-level await that never waits for the event loop (an await of a coroutine, asyncio.sleep(0), pyfetch
    # through the gateway) is driven to its end here: handing it to the event loop would cross the bridge, and the
    # process would be replaced after the run (child-guard.js). Only code that waits for a timer or a task goes on there.
    def drive(coroutine):
        try:
            while True:
                waiting = coroutine.send(None)
                if waiting is not None:
                    return carry_on(coroutine, waiting)
        except StopIteration as done:
            return done.value

    async def carry_on(coroutine, waiting):
        return await hand_over(coroutine, waiting)

    @types.coroutine
    def hand_over(coroutine, waiting):
        # The future the code waits on goes to the event loop's task, and what the task sends or throws back goes on to
        # the code, as if the task had run it from the start.
        while True:
            try:
                sent = yield waiting
            except BaseException as error:
                try:
                    waiting = coroutine.throw(error)
                except StopIteration as done:
                    return done.value
                continue
            try:
                waiting = coroutine.send(sent)
            except StopIteration as done:
                return done.value

    # The answer's JSON text; or, for code with top-level await only, a coroutine the caller awaits for it. Code without
    # one runs here and now: no hop through the event loop (a task scheduled and its promise settled) for every run.
    def run(code, state=None, keep=False, host_names='[]', display_limits='[0, 0, 0]'):
        try:
            return run_here(code, state, keep, host_names, display_limits)
        except BaseException as error:
            return failed(error)

    def run_here(code, state, keep, host_names, display_limits):
        scope = {'__name__': '__main__', '__builtins__': builtins}
        display, shown = make_display(display_send, display_limits)
        scope['display'] = display
        for name in json.loads(host_names):
            scope[name] = host_function(name, host_call)
        egress['call'] = scope.get('http_request')
        if state:
            restore(scope, state)
        later = False
        try:
            head, tail = compile_run(code)
            if awaits(head) or awaits(tail):
                later = True
                return drive(answer_later(head, tail, scope, keep, shown))
            value = None
            if head is not None:
                eval(head, scope)
            if tail is not None:
                value = eval(tail, scope)
        finally:
            if not later:
                end_run()
        return answer(value, scope, keep, shown)

    def parse(code):
        try:
            compile(code, 'main.py', 'exec', flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            return None
        except SyntaxError as error:
            return json.dumps({'type': 'SyntaxError', 'message': error.msg, 'line': error.lineno, 'column': error.offset})

    return (run, parse)

_execgate_hooks = _execgate_setup()
del _execgate_network, _execgate_setup

def _execgate_settle():
    # What exists now is never collected again: a run's collection then walks only what the run made, rather than
    # writing to every object the interpreter holds, which would leave most of the memory to put back after each run.
    import gc
    gc.collect()
    gc.freeze()

_execgate_settle()
del _execgate_settle
`
