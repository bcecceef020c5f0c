import type { OutputOptions, SecurityPolicy } from '../../src/core'

/**
 * Rich outputs in the Python runner (interpreter-runners.ts): matplotlib figures shown (`plt.show()` renders and
 * closes them, as a notebook does) or left open at the end become images; a pandas DataFrame or Series that is the
 * last expression becomes a table; `display(obj)` adds an image, a table, HTML or JSON. Figures render as PNG, or SVG
 * when the request asks (`outputs: { imageFormat: 'svg' }`) or the code sets `plt.rcParams['savefig.format'] = 'svg'`.
 * The runner holds them to the policy's count and bytes
 * as it goes (so a loop of a thousand figures never renders them all) and the host checks them again
 * (src/core/rich-outputs.ts): nothing the runner reports is trusted.
 *
 * A runner whose channel can carry records while the code runs (RunnerIo.streamOutputs) sends each item at once as
 * an output record (OUTPUT_RECORD in run-report.ts), so a streaming caller sees a chart while the run goes on; the
 * report then holds only the count left out.
 *
 * argv[3] carries `maxOutputs,outputsBytes,outputBytes` (runnerOutputLimits); without it, no output is kept.
 */
export const PYTHON_OUTPUTS = String.raw`
class _Outputs:
    def __init__(self, spec, stream=None):
        self.enabled = bool(spec)
        parts = [int(p) for p in spec.split(',')] if spec else [0, 0, 0]
        self.max_count, self.max_bytes, self.table_bytes = parts[0], parts[1], parts[2]
        # The request's outputs.imageFormat: 1 for svg.
        self.svg = len(parts) > 3 and parts[3] == 1
        # Each item sent the moment it is made (RunnerIo.streamOutputs), or else kept for the report.
        self.stream = stream
        self.items = []
        self.count = 0
        self.bytes = 0
        self.omitted = 0
    def room(self, size):
        return self.count < self.max_count and self.bytes + size <= self.max_bytes
    def add(self, doc, size):
        if not self.enabled:
            return
        if not self.room(size):
            self.omitted += 1
            return
        self.count += 1
        self.bytes += size
        if self.stream is None or not self.stream(doc):
            self.items.append(doc)
    def figure(self, fig):
        if not self.enabled:
            return
        if not self.room(0):
            self.omitted += 1
            return
        import io, base64
        svg = self.svg or str(sys.modules['matplotlib'].rcParams.get('savefig.format')) == 'svg'
        buffer = io.BytesIO()
        fig.savefig(buffer, format='svg' if svg else 'png')
        data = buffer.getvalue()
        self.add('{"kind":"image","mimeType":"%s","data":"%s"}' % (
            'image/svg+xml' if svg else 'image/png', base64.b64encode(data).decode('ascii')
        ), len(data))
    def table(self, value):
        if type(value).__name__ == 'Series':
            value = value.to_frame()
        index = value.index
        if not (type(index).__name__ == 'RangeIndex' and index.start == 0 and index.step == 1):
            try:
                value = value.reset_index()
            except ValueError:
                pass
        columns = _json([str(c) for c in value.columns])
        budget = min(self.max_bytes - self.bytes, self.table_bytes) - len(columns) - 64
        rows, size = [], 0
        for row in value.head(1000).itertuples(index=False, name=None):
            text = _json(list(row))
            size += len(text) + 1
            if size > budget:
                break
            rows.append(text)
        doc = '{"kind":"table","columns":%s,"rows":[%s],"rowCount":%d}' % (columns, ','.join(rows), len(value))
        self.add(doc, len(doc))
        return len(rows) < len(value)
    def display(self, obj, mime=None):
        """Adds obj to the run's outputs: a figure, a DataFrame or Series, HTML, an SVG string, or any JSON value."""
        if not self.enabled:
            return
        kind = type(obj).__name__
        if kind == 'Figure' and hasattr(obj, 'savefig'):
            return self.figure(obj)
        if kind in ('DataFrame', 'Series') and type(obj).__module__.startswith('pandas'):
            return self.table(obj)
        if isinstance(obj, str) and (
            mime == 'text/html' or (mime is None and obj.lstrip().startswith('<') and not obj.lstrip().startswith('<svg'))
        ):
            data = _json(obj)
            return self.add('{"kind":"html","mimeType":"text/html","data":%s}' % data, len(obj.encode('utf-8', 'surrogatepass')))
        if isinstance(obj, str) and mime in (None, 'image/svg+xml') and obj.lstrip().startswith('<svg'):
            import base64
            data = obj.encode('utf-8', 'surrogatepass')
            return self.add('{"kind":"image","mimeType":"image/svg+xml","data":"%s"}' % base64.b64encode(data).decode('ascii'), len(data))
        html = getattr(obj, '_repr_html_', None)
        if mime in (None, 'text/html') and callable(html) and not isinstance(obj, type):
            text = str(html())
            return self.add('{"kind":"html","mimeType":"text/html","data":%s}' % _json(text), len(text.encode('utf-8', 'surrogatepass')))
        data = _json(obj)
        self.add('{"kind":"json","mimeType":"application/json","data":%s}' % data, len(data))
    def finish(self, value):
        """
        At the end of the run: a DataFrame or Series value becomes a table, then every figure still open an image.
        True when the table holds only the first rows: the value is then left out, as the table stands for it (a
        frame too large for the output cap would otherwise end the run output_limit).
        """
        if not self.enabled:
            return False
        cut = False
        try:
            if type(value).__name__ in ('DataFrame', 'Series') and type(value).__module__.startswith('pandas'):
                cut = self.table(value)
            self.open_figures()
        except BaseException as error:
            sys.stderr.write('execgate: an output could not be made: %s: %s\n' % (type(error).__name__, error))
        return cut
    def open_figures(self):
        pyplot = sys.modules.get('matplotlib.pyplot')
        if pyplot is None:
            return
        for number in pyplot.get_fignums():
            self.figure(pyplot.figure(number))
        pyplot.close('all')
    def show(self, *args, **kwargs):
        pyplot = sys.modules.get('matplotlib.pyplot')
        if pyplot is not None:
            for number in pyplot.get_fignums():
                self.figure(pyplot.figure(number))
                pyplot.close(number)
    def watch_pyplot(self):
        """plt.show() renders the open figures: patched in pyplot now, or as soon as the code imports it."""
        if not self.enabled:
            return
        outputs = self
        def show(*args, **kwargs):
            outputs.show(*args, **kwargs)
        # A plain function: pyplot sets __signature__ on its show when the backend changes.
        module = sys.modules.get('matplotlib.pyplot')
        if module is not None:
            module.show = show
            return
        class _PyplotFinder:
            def find_spec(self, name, path=None, target=None):
                if name != 'matplotlib.pyplot':
                    return None
                for finder in sys.meta_path:
                    if finder is self or not hasattr(finder, 'find_spec'):
                        continue
                    spec = finder.find_spec(name, path, target)
                    if spec is not None and spec.loader is not None and hasattr(spec.loader, 'exec_module'):
                        run = spec.loader.exec_module
                        def exec_module(module, run=run):
                            run(module)
                            module.show = show
                        spec.loader.exec_module = exec_module
                        return spec
                return None
        sys.meta_path.insert(0, _PyplotFinder())
    def report(self, doc):
        """The report with the outputs in it."""
        if not self.items and not self.omitted:
            return doc
        extra = ',"outputs":[' + ','.join(self.items) + ']'
        if self.omitted:
            extra += ',"outputsOmitted":%d' % self.omitted
        return doc[:-1] + extra + '}'
`

/** argv[3] of the Python runner: the policy's output limits and the request's image format (see PYTHON_OUTPUTS). */
export function runnerOutputLimits(policy: SecurityPolicy, options?: OutputOptions): string {
  return `${policy.maxOutputs},${policy.outputsBytes},${policy.outputBytes},${options?.imageFormat === 'svg' ? 1 : 0}`
}

/**
 * The largest report a runner may send: the value within the output cap, plus the outputs in base64 (4/3 of their
 * bytes) with room for their JSON framing.
 */
export function reportLimitBytes(policy: SecurityPolicy): number {
  return policy.outputBytes + Math.ceil((policy.outputsBytes * 4) / 3) + policy.maxOutputs * 256 + 4096
}
