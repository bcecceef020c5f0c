import { pythonRunner } from '../shared/interpreter-runners'
import { RECORD_SEPARATOR } from '../shared/run-report'

/**
 * AgentCore's Code Interpreter returns stdout, stderr and an exit code, not the value of the last expression. The
 * code is sent wrapped: the user's program travels base64-encoded inside execgate's runner, which runs it and
 * prints its report (the value, or the error with its type and line) after the code's output, behind a record
 * separator and a per-run nonce that the adapter strips. State lives in one dict per interpreter session, so a
 * session keeps its variables between calls. The import guard is installed as everywhere; in a session each call
 * adds its own (an audit hook cannot be removed), so a session is held to the strictest allow-list it has seen.
 */
export function wrapPython(code: string, nonce: string, allowedImports: readonly string[]): string {
  const encoded = Buffer.from(code, 'utf8').toString('base64')
  return pythonRunner({
    prelude: [
      'import base64',
      `sys.argv = ['-c', 'run', ${JSON.stringify(allowedImports.join(','))}]`,
      `_EXECGATE_SOURCE = base64.b64decode('${encoded}').decode('utf-8')`,
      `_EXECGATE_NONCE = '${nonce}'`,
    ].join('\n'),
    load: '_EXECGATE_SOURCE',
    send: `def _send(doc):\n    sys.stdout.flush()\n    print('${'\\x1e'}' + _EXECGATE_NONCE + doc, flush=True)`,
    scope: "globals().setdefault('_execgate_scope', {'__name__': '__main__', '__builtins__': __builtins__})",
  })
}

/** JavaScript: indirect eval in the interpreter's global scope (so a session keeps its globals); promises awaited. */
export function wrapJavaScript(code: string, nonce: string): string {
  const source = JSON.stringify(code)
  const marker = JSON.stringify(RECORD_SEPARATOR + nonce)
  return `(async () => {
  const report = (doc) => console.log(${marker} + JSON.stringify(doc))
  try {
    let value = (0, eval)(${source})
    if (value instanceof Promise) value = await value
    let json
    try { json = value === undefined ? undefined : JSON.parse(JSON.stringify(value)) } catch { json = String(value) }
    report(json === undefined ? { ok: true } : { ok: true, value: json })
  } catch (error) {
    const line = /<anonymous>:(\\d+)/.exec(String(error && error.stack))
    // A thrown null or undefined has no message to pass on: say what was thrown (an interpreter whose heap is
    // exhausted can throw null when it cannot allocate the error object itself).
    const message =
      error == null ? 'the code threw ' + error + ', not an Error' : String(error.message !== undefined ? error.message : error)
    report({ error: { type: (error && error.name) || 'Error', message, ...(line ? { line: Number(line[1]) } : {}) } })
  }
})()`
}
