import { nodeRunner, pythonRunner } from '../shared/interpreter-runners'

/**
 * The process adapter's runners, fed differently: a container's root is read-only and its tmpfs workspace does not
 * exist before it starts, so the code and the request's files arrive base64-encoded in environment variables
 * (`EXECGATE_PAYLOAD_0…n`, removed before the code runs), and the report goes to stdout after the code's own output
 * behind a record separator and a per-run nonce, which the host strips. Before the code runs, the runner writes
 * `<RS><nonce>ready` as stdout's first line: the code's time starts there, not when the engine starts the container
 * (an interpreter takes 0.2–1 s to start in a fresh container, more on a busy machine, and that is not the code's).
 */

/** Each environment string stays under the kernel's 128 KiB limit per string. */
export const PAYLOAD_CHUNK = 96 * 1024
/** Code and files together, base64: stays well inside the 2 MiB the kernel allows for arguments and environment. */
export const PAYLOAD_LIMIT = 1024 * 1024

const PYTHON_PRELUDE = String.raw`
def _execgate_payload():
    import base64, json
    keys = sorted((k for k in os.environ if k.startswith('EXECGATE_PAYLOAD_')), key=lambda k: int(k.rsplit('_', 1)[1]))
    data = json.loads(base64.b64decode(''.join(os.environ.pop(k) for k in keys)))
    for f in data.get('files', ()):
        folder = os.path.dirname(f['path'])
        if folder:
            os.makedirs(folder, exist_ok=True)
        with open(f['path'], 'wb') as out:
            out.write(base64.b64decode(f['content']))
    os.write(1, ('\x1e' + _NONCE + 'ready\n').encode())
    return data['code']
_NONCE = os.environ.pop('EXECGATE_NONCE', '')`

const PYTHON_SEND = String.raw`def _send(doc):
    sys.stdout.flush()
    data = ('\x1e' + _NONCE + doc + ('' if doc.endswith('\n') else '\n')).encode('utf-8', 'surrogatepass')
    while data:
        data = data[os.write(1, data):]`

const NODE_PRELUDE = String.raw`
const payloadKeys = Object.keys(process.env)
  .filter((k) => k.startsWith('EXECGATE_PAYLOAD_'))
  .sort((a, b) => Number(a.split('_').pop()) - Number(b.split('_').pop()))
const payload = JSON.parse(Buffer.from(payloadKeys.map((k) => process.env[k]).join(''), 'base64').toString('utf8'))
for (const k of payloadKeys) delete process.env[k]
const nonce = process.env.EXECGATE_NONCE || ''
delete process.env.EXECGATE_NONCE
for (const f of payload.files || []) {
  fs.mkdirSync(require('path').dirname(f.path), { recursive: true })
  fs.writeFileSync(f.path, Buffer.from(f.content, 'base64'))
}
fs.writeSync(1, '\x1e' + nonce + 'ready\n')`

export const DOCKER_PYTHON_RUNNER = pythonRunner({
  prelude: PYTHON_PRELUDE,
  load: '_execgate_payload()',
  send: PYTHON_SEND,
  streamOutputs: true,
})
export const DOCKER_NODE_RUNNER = nodeRunner({
  prelude: NODE_PRELUDE,
  load: 'payload.code',
  send: "(text) => fs.writeSync(1, '\\x1e' + nonce + text + '\\n')",
})

/** The payload as environment entries, or undefined when it is over PAYLOAD_LIMIT. */
export function payloadEnvironment(
  code: string,
  files: ReadonlyArray<{ path: string; content: string; encoding?: string }>,
): string[] | undefined {
  const encoded = Buffer.from(
    JSON.stringify({
      code,
      files: files.map((file) => ({
        path: file.path,
        content: file.encoding === 'base64' ? file.content : Buffer.from(file.content, 'utf8').toString('base64'),
      })),
    }),
  ).toString('base64')
  if (encoded.length > PAYLOAD_LIMIT) return undefined
  const entries: string[] = []
  for (let offset = 0, index = 0; offset < encoded.length; offset += PAYLOAD_CHUNK, index++)
    entries.push(`EXECGATE_PAYLOAD_${index}=${encoded.slice(offset, offset + PAYLOAD_CHUNK)}`)
  return entries
}

/**
 * A sandbox's exec has no files to carry (they are in its workspace already), so its code travels as plain text in
 * `EXECGATE_CODE_0…n` instead of base64 JSON: in the image's Python, importing base64 and json from a read-only root
 * (no bytecode cache can be written) cost 19 ms an exec, a fifth of a sandbox's Python exec.
 */
const SANDBOX_PYTHON_PRELUDE = String.raw`
def _execgate_code():
    keys = sorted((k for k in os.environ if k.startswith('EXECGATE_CODE_')), key=lambda k: int(k.rsplit('_', 1)[1]))
    code = ''.join(os.environ.pop(k) for k in keys)
    os.write(1, ('\x1e' + _NONCE + 'ready\n').encode())
    return code
_NONCE = os.environ.pop('EXECGATE_NONCE', '')`

const SANDBOX_NODE_PRELUDE = String.raw`
const codeKeys = Object.keys(process.env)
  .filter((k) => k.startsWith('EXECGATE_CODE_'))
  .sort((a, b) => Number(a.split('_').pop()) - Number(b.split('_').pop()))
const sandboxCode = codeKeys.map((k) => process.env[k]).join('')
for (const k of codeKeys) delete process.env[k]
const nonce = process.env.EXECGATE_NONCE || ''
delete process.env.EXECGATE_NONCE
fs.writeSync(1, '\x1e' + nonce + 'ready\n')`

export const SANDBOX_PYTHON_RUNNER = pythonRunner({
  prelude: SANDBOX_PYTHON_PRELUDE,
  load: '_execgate_code()',
  send: PYTHON_SEND,
  streamOutputs: true,
})
export const SANDBOX_NODE_RUNNER = nodeRunner({
  prelude: SANDBOX_NODE_PRELUDE,
  load: 'sandboxCode',
  send: "(text) => fs.writeSync(1, '\\x1e' + nonce + text + '\\n')",
})

/** Characters per environment string: at most 96 KiB of UTF-8 (3 bytes a character in the BMP, 4 for a pair). */
const CODE_CHUNK = 32 * 1024

/** The code as environment entries, or a reason it cannot go (a NUL byte, which no environment string holds; over PAYLOAD_LIMIT). */
export function sandboxCodeEnvironment(code: string): string[] | { refused: string } {
  if (code.includes('\0')) return { refused: 'the code contains a NUL character' }
  if (Buffer.byteLength(code) > PAYLOAD_LIMIT) return { refused: `the code is over ${PAYLOAD_LIMIT / 1024} KiB` }
  const entries: string[] = []
  for (let offset = 0, index = 0; offset < code.length; index++) {
    let end = Math.min(code.length, offset + CODE_CHUNK)
    // Never between the two halves of a surrogate pair.
    if (end < code.length && /[\uDC00-\uDFFF]/.test(code[end]!)) end--
    entries.push(`EXECGATE_CODE_${index}=${code.slice(offset, end)}`)
    offset = end
  }
  return entries
}
