import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime'
import { NodeHttpHandler } from '@smithy/node-http-handler'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {
  createExecgate,
  DirectoryLayer,
  MemoryWorkspace,
  OverlayWorkspace,
  type Execgate,
  type ExecutionRequest,
  type HostFunctionDefinition,
} from '../../src'
import { BedrockConverseProvider } from '../../src/agents/llm'
import { checkHostFunctionDefinition } from '../../src/workspace'
import { FakeConverse } from '../fakes/converse-server'

process.env.AWS_ACCESS_KEY_ID = 'AKIDEXECGATETEST'
process.env.AWS_SECRET_ACCESS_KEY = 'execgate-test-secret'

/**
 * The workspace and host-function contract, on every adapter that calls host functions (quickjs, monty, pyodide), through
 * the real service: each snippet is written once per language and must give the same answer everywhere.
 */
type Snippets = Record<string, string>
const JS: Snippets = {
  fallthrough: `(await read_file('data/prices.csv')).split('\\n')[1]`,
  write: `await write_file('out/total.txt', '3.50'); await read_file('out/total.txt')`,
  overwrite: `await write_file('readme.md', 'changed'); await read_file('readme.md')`,
  list: `await list_files('*.csv')`,
  search: `await search_content('tea', '**/*.csv')`,
  ask: `await ask_llm('What is the capital of France?')`,
  submit: `await submit_result({ total: 7, items: ['tea'] }); 'not this'`,
  traversal: `const seen = []
for (const p of ['../../etc/passwd', '/etc/passwd', 'a\\0b', '..\\\\x', 'file:///etc/passwd', 'leak.txt']) {
  try { seen.push(await read_file(p)) } catch (e) { seen.push(String(e.message).includes('refused') ? 'refused' : 'other: ' + e.message) }
}
seen`,
  budget: `for (let i = 0; i < 10; i++) await list_files(); 'finished'`,
  read: `await read_file('readme.md')`,
  custom: `await price_of('tea', 2)`,
  badArgs: `try { await price_of('tea', 0) } catch (e) { e.message }`,
}
const PY: Snippets = {
  fallthrough: `read_file('data/prices.csv').split('\\n')[1]`,
  write: `write_file('out/total.txt', '3.50')\nread_file('out/total.txt')`,
  overwrite: `write_file('readme.md', 'changed')\nread_file('readme.md')`,
  list: `list_files('*.csv')`,
  search: `search_content('tea', '**/*.csv')`,
  ask: `ask_llm('What is the capital of France?')`,
  submit: `submit_result({'total': 7, 'items': ['tea']})\n'not this'`,
  traversal: `seen = []
for p in ['../../etc/passwd', '/etc/passwd', 'a\\x00b', '..\\\\x', 'file:///etc/passwd', 'leak.txt']:
    try:
        seen.append(read_file(p))
    except Exception as e:
        seen.append('refused' if 'refused' in str(e) else 'other: ' + str(e))
seen`,
  budget: `for i in range(10):\n    list_files()\n'finished'`,
  read: `read_file('readme.md')`,
  custom: `price_of('tea', 2)`,
  badArgs: `try:\n    price_of('tea', 0)\nexcept Exception as e:\n    r = str(e)\nr`,
}

const priceOf: HostFunctionDefinition = {
  name: 'price_of',
  description: 'price_of(item, quantity) -> number',
  parameters: { type: 'array', items: [{ type: 'string' }, { type: 'integer', minimum: 1 }], minItems: 2, maxItems: 2 },
  handler: ([item, quantity]) => (item === 'tea' ? 3.5 : 1) * (quantity as number),
}

let execgate: Execgate
let root: string
let outside: string
let converse: FakeConverse
let llm: BedrockConverseProvider

beforeAll(async () => {
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs', 'monty', 'pyodide', 'process'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      security: { defaultPolicy: { filesystem: 'sandboxed', hostCalls: { maxCount: 20, maxTotalMs: 5000 } } },
    },
    hostFunctions: [priceOf],
  })
  // Warm first: a run that meets pyodide still warming waits only its own time limit (test/execution/warm-up.test.ts).
  await execgate.ready(['pyodide'])
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-stable-'))
  outside = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-outside-'))
  fs.mkdirSync(path.join(root, 'data'))
  fs.writeFileSync(path.join(root, 'data', 'prices.csv'), 'item,price\ntea,3.50\ncake,4.00\n')
  fs.writeFileSync(path.join(root, 'readme.md'), 'stable readme')
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'SECRET-OUTSIDE')
  fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(root, 'leak.txt'))
  converse = new FakeConverse([])
  const endpoint = await converse.listen()
  llm = new BedrockConverseProvider({
    modelId: 'test-model',
    client: new BedrockRuntimeClient({ region: 'us-east-1', endpoint, requestHandler: new NodeHttpHandler() }),
  })
})

afterAll(async () => {
  await execgate.dispose()
  await converse.close()
  fs.rmSync(root, { recursive: true, force: true })
  fs.rmSync(outside, { recursive: true, force: true })
})

const overlay = () => new OverlayWorkspace(new DirectoryLayer(root, 1024 * 1024), new MemoryWorkspace())

describe.each([
  ['quickjs', 'javascript', JS],
  ['monty', 'python', PY],
  ['pyodide', 'python', PY],
] as const)('host functions on %s', (adapter, language, snippets) => {
  const run = (code: string, options: Parameters<Execgate['execute']>[1] = {}, extra: Partial<ExecutionRequest> = {}) =>
    execgate.execute({ language, code, adapter, ...extra }, { workspace: overlay(), llm, ...options })

  test('a read falls through the overlay to the stable layer', async () => {
    const result = await run(snippets.fallthrough!)
    expect(result).toMatchObject({ status: 'ok', value: 'tea,3.50', hostCalls: [{ name: 'read_file', ok: true }] })
  })

  test('a write lands in the overlay only, and the result lists it', async () => {
    const workspace = overlay()
    const result = await run(snippets.write!, { workspace })
    expect(result).toMatchObject({ status: 'ok', value: '3.50', files: [{ path: 'out/total.txt', content: '3.50' }] })
    expect(fs.existsSync(path.join(root, 'out'))).toBe(false)
    expect((await workspace.overlay.read('out/total.txt'))?.toString()).toBe('3.50')
    const overwritten = await run(snippets.overwrite!)
    expect(overwritten.value).toBe('changed')
    expect(fs.readFileSync(path.join(root, 'readme.md'), 'utf8')).toBe('stable readme')
  })

  test('list_files takes a glob; search_content returns {path, line, text}', async () => {
    expect((await run(snippets.list!)).value).toEqual(['data/prices.csv'])
    expect((await run(snippets.search!)).value).toEqual([{ path: 'data/prices.csv', line: 2, text: 'tea,3.50' }])
  })

  test('ask_llm asks the model over the Converse protocol', async () => {
    converse['replies'].push('Paris')
    const result = await run(snippets.ask!)
    expect(result).toMatchObject({ status: 'ok', value: 'Paris' })
    expect(converse.requests.at(-1)?.messages[0]?.text).toBe('What is the capital of France?')
  })

  test('submit_result sets the value of the run', async () => {
    expect((await run(snippets.submit!)).value).toEqual({ total: 7, items: ['tea'] })
  })

  test('traversal is refused: .., absolute, NUL, backslash, URL, a link leading out', async () => {
    const result = await run(snippets.traversal!)
    expect(result.status).toBe('ok')
    expect(result.value).toEqual(['refused', 'refused', 'refused', 'refused', 'refused', 'refused'])
    expect(JSON.stringify(result)).not.toContain('SECRET-OUTSIDE')
  })

  test('the host-call budget ends the run with policy_violation', async () => {
    const result = await run(snippets.budget!, {}, { policy: { hostCalls: { maxCount: 3 } } })
    expect(result).toMatchObject({ status: 'policy_violation', message: expect.stringContaining('allows 3 host calls') })
    expect(result.hostCalls).toHaveLength(4)
  })

  test('filesystem "none" refuses file functions with policy_violation', async () => {
    const result = await run(snippets.read!, {}, { policy: { filesystem: 'none' } })
    expect(result).toMatchObject({ status: 'policy_violation', message: expect.stringContaining('filesystem access is "none"') })
  })

  test('read_only allows reads', async () => {
    expect(await run(snippets.read!, {}, { policy: { filesystem: 'read_only' } })).toMatchObject({ status: 'ok', value: 'stable readme' })
  })

  test("a user's typed host function is validated against its schema", async () => {
    expect((await run(snippets.custom!)).value).toBe(7)
    expect((await run(snippets.badArgs!)).value).toContain('price_of: argument 2 must be >= 1')
  })

  test("request files are the run's workspace when the caller gives none", async () => {
    const result = await execgate.execute({
      language,
      adapter,
      code: snippets.read!,
      files: [{ path: 'readme.md', content: 'from the request' }],
    })
    expect(result).toMatchObject({ status: 'ok', value: 'from the request' })
  })
})

describe.each(['monty', 'pyodide'])('Python exceptions from host calls on %s', (adapter) => {
  test('a missing file raises FileNotFoundError, a bad argument TypeError, a refused path PermissionError', async () => {
    const code = `kinds = []
for call in [lambda: read_file('nope.txt'), lambda: price_of('tea', 0), lambda: read_file('../x')]:
    try:
        call()
    except Exception as e:
        kinds.append(type(e).__name__)
kinds`
    const result = await execgate.execute({ language: 'python', adapter, code }, { workspace: overlay() })
    expect(result).toMatchObject({ status: 'ok', value: ['FileNotFoundError', 'TypeError', 'PermissionError'] })
  })
})

test('pyodide runs what monty cannot (a class) with host functions, and keeps a session between calls', async () => {
  const workspace = overlay()
  const first = await execgate.execute(
    {
      language: 'python',
      sessionId: 'hf-1',
      code:
        'class Basket:\n    def __init__(self, rows):\n        self.rows = rows\nbasket = ' +
        "Basket(read_file('data/prices.csv').splitlines()[1:])\ncount = len(basket.rows)\ncount",
    },
    { workspace },
  )
  expect(first).toMatchObject({ status: 'ok', adapter: 'pyodide', value: 2 })
  const second = await execgate.execute(
    { language: 'python', sessionId: 'hf-1', code: "write_file('count.txt', str(count))\ncount * 10" },
    { workspace },
  )
  expect(second).toMatchObject({ status: 'ok', adapter: 'pyodide', value: 20 })
  expect((await workspace.overlay.read('count.txt'))?.toString()).toBe('2')
})

test('pyodide: code that reaches the host channel itself gets no more than the functions it was offered', async () => {
  // The wrapper's closure holds the JavaScript function that writes host-call requests; calling it directly with a
  // function the run was not offered (price_of is registered, but this code never names it), or with arguments
  // that are not a JSON list, is refused like any other call.
  const code = `call = [
    c.cell_contents for c in read_file.__closure__ if callable(c.cell_contents) and not isinstance(c.cell_contents, str)
][0]
seen = []
for name, args in [
    ('price' + '_of', '["tea", 2]'), ('exec_shell', '[]'), ('read_file', '{"path": "readme.md"}'), ('read_file', '["readme.md"]'),
]:
    seen.append(call(name, args))
seen`
  const result = await execgate.execute({ language: 'python', adapter: 'pyodide', code }, { workspace: overlay() })
  expect(result.status).toBe('ok')
  const replies = (result.value as string[]).map(
    (text) => JSON.parse(text) as { ok: boolean; exception?: string; message?: string; value?: unknown },
  )
  expect(replies[0]).toMatchObject({ ok: false, exception: 'TypeError', message: expect.stringContaining('price_of') })
  expect(replies[1]).toMatchObject({ ok: false, exception: 'TypeError', message: expect.stringContaining('exec_shell') })
  expect(replies[2]).toMatchObject({ ok: false, exception: 'TypeError', message: expect.stringContaining('JSON list') })
  expect(replies[3]).toEqual({ ok: true, value: 'stable readme' })
  expect(result.hostCalls?.map((call) => [call.name, call.ok])).toEqual([
    ['price_of', false],
    ['exec_shell', false],
    ['read_file', true],
  ])
})

describe('backends with real files (process)', () => {
  test('the workspace arrives as files, and files the code writes come back into the overlay', async () => {
    const workspace = overlay()
    const code = "print(open('data/prices.csv').read().splitlines()[1])\nopen('out.txt', 'w').write('written in the sandbox')"
    const result = await execgate.execute({ language: 'python', adapter: 'process', code }, { workspace })
    expect(result).toMatchObject({ status: 'ok', stdout: 'tea,3.50\n' })
    expect(result.files).toEqual(expect.arrayContaining([{ path: 'out.txt', content: 'written in the sandbox' }]))
    expect((await workspace.overlay.read('out.txt'))?.toString()).toBe('written in the sandbox')
    expect(fs.existsSync(path.join(root, 'out.txt'))).toBe(false)
  })
})

test('a bad request file path is invalid_request naming the field', async () => {
  const result = await execgate.execute({
    language: 'javascript',
    code: '1',
    files: [
      { path: 'ok.txt', content: '' },
      { path: '../x', content: 'y' },
    ],
  })
  expect(result).toMatchObject({
    status: 'invalid_request',
    message: expect.stringContaining('files[1].path: workspace path "../x" refused'),
  })
})

test('a definition built anew for each run, with a schema $id, is accepted every time', () => {
  // Equal schemas share one compiled validator; compiled once per object, ajv refused the second copy's $id.
  const build = (): HostFunctionDefinition => ({
    name: 'rate_of',
    description: 'rate_of(code) -> number',
    parameters: { $id: 'execgate-test/rate-of', type: 'array', items: [{ type: 'string' }], minItems: 1, maxItems: 1 },
    handler: () => 1,
  })
  for (let run = 0; run < 3; run++) expect(() => checkHostFunctionDefinition(build())).not.toThrow()
})
