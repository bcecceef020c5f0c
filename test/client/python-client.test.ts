import { execFile, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { CLIENT_ROUTES } from '../../src/client'
import {
  ACME_KEY,
  METERED_KEY,
  METERED_RATE,
  startDrainingServer,
  startServeProcess,
  type DrainingServer,
  type ServeProcess,
} from './serve-harness'
import scenarios from './scenarios.json'

/**
 * The Python client (clients/python) in `npm test`: its unittest suite, sync and asyncio, runs the shared scenarios
 * (scenarios.json) against a real `execgate serve` on loopback; its route table is the TypeScript client's (which
 * test/client/openapi-contract.test.ts holds to the OpenAPI document); and `pip install ./clients/python` works
 * offline into a fresh venv. Debian's /usr/bin/python3 when present (scripts/setup/python-client.sh), else python3.
 */

const run = promisify(execFile)
const CLIENT_DIR = path.join(__dirname, '../../clients/python')
const PYTHON = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'
const snake = (name: string) => name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`)

let server: ServeProcess
let draining: DrainingServer
beforeAll(async () => {
  ;[server, draining] = await Promise.all([startServeProcess(), startDrainingServer()])
}, 90_000)
afterAll(async () => {
  await Promise.all([server?.stop(), draining?.stop()])
}, 30_000)

test('python3 is there (scripts/setup/python-client.sh installs it)', async () => {
  const { stdout } = await run(PYTHON, ['--version']).catch(() => ({ stdout: '' }))
  expect({ python: PYTHON, version: stdout.trim(), install: 'bash scripts/setup/python-client.sh' }).toMatchObject({
    version: expect.stringMatching(/^Python 3\.(9|1\d)/),
  })
})

test('the Python client calls exactly the routes the TypeScript client calls', async () => {
  const { stdout } = await run(PYTHON, ['-c', 'import json; from execgate._routes import ROUTES; print(json.dumps(ROUTES))'], {
    cwd: CLIENT_DIR,
    env: { ...process.env, PYTHONPATH: path.join(CLIENT_DIR, 'src') },
  })
  const python = JSON.parse(stdout) as Record<string, [string, string]>
  expect(python).toEqual(
    Object.fromEntries(Object.entries(CLIENT_ROUTES).map(([name, route]) => [snake(name), [route.method, route.path]])),
  )
})

/**
 * unittest -v, with the names of the tests that passed printed last, on stdout, as JSON. Its own `… ok` lines go to
 * stderr in two writes each (the name before the test runs, `ok` after it), so anything written between them splits
 * the line: a clean-clone CI run (exit code 0, every test passed) once missed test_stream_async's pass that way.
 */
const SCENARIO_RUNNER = `
import json, sys, unittest
class Result(unittest.TextTestResult):
    passed = []
    def addSuccess(self, test):
        super().addSuccess(test)
        Result.passed.append(test._testMethodName)
suite = unittest.defaultTestLoader.loadTestsFromName('tests.test_scenarios')
result = unittest.TextTestRunner(verbosity=2, resultclass=Result).run(suite)
print('PASSED ' + json.dumps(Result.passed), flush=True)
sys.exit(0 if result.wasSuccessful() else 1)
`

test('the scenario suite passes, sync and asyncio, against execgate serve', async () => {
  const child = spawn(PYTHON, ['-c', SCENARIO_RUNNER], {
    cwd: CLIENT_DIR,
    env: {
      PATH: process.env.PATH ?? '',
      PYTHONPATH: path.join(CLIENT_DIR, 'src'),
      PYTHONDONTWRITEBYTECODE: '1',
      EXECGATE_URL: server.url,
      EXECGATE_API_KEY: ACME_KEY,
      EXECGATE_METERED_KEY: METERED_KEY,
      EXECGATE_METERED_RATE: String(METERED_RATE),
      EXECGATE_DRAINING_URL: draining.url,
    },
  })
  let output = ''
  let stdout = ''
  child.stdout.on('data', (data: Buffer) => ((stdout += data.toString()), (output += data.toString())))
  child.stderr.on('data', (data: Buffer) => (output += data.toString()))
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  const passed = JSON.parse(/^PASSED (.*)$/m.exec(stdout)?.[1] ?? '[]') as string[]
  const expected = scenarios.scenarios.flatMap((name) => [`test_${name}`, `test_${name}_async`])
  if (code !== 0) console.log(output)
  expect({ code, missing: expected.filter((name) => !passed.includes(name)) }).toEqual({ code: 0, missing: [] })
}, 180_000)

test('pip install ./clients/python works offline into a fresh venv, and the installed client runs code', async () => {
  const venv = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-pyclient-'))
  try {
    await run(PYTHON, ['-m', 'venv', venv], { timeout: 120_000 })
    // Build from a copy: pip must not write build files into the checkout.
    const source = path.join(venv, 'source')
    fs.cpSync(CLIENT_DIR, source, { recursive: true, filter: (item) => !item.includes('__pycache__') })
    await run(path.join(venv, 'bin', 'pip'), ['install', '--no-index', '--disable-pip-version-check', '--quiet', source], {
      timeout: 120_000,
    })
    const script =
      `import execgate; from execgate import ExecgateClient; r = ` +
      `ExecgateClient(${JSON.stringify(server.url)}, ` +
      `${JSON.stringify(ACME_KEY)}).execute({"language": "python", "code": "6 * 7"}); ` +
      `print(execgate.__version__, r.status, r.value, execgate.__file__)`
    const { stdout } = await run(path.join(venv, 'bin', 'python'), ['-c', script], { cwd: venv, timeout: 60_000 })
    const [version, status, value, file] = stdout.trim().split(' ')
    expect({ version, status, value }).toEqual({ version: '0.1.0', status: 'ok', value: '42' })
    expect(file!.startsWith(venv)).toBe(true)
  } finally {
    fs.rmSync(venv, { recursive: true, force: true })
  }
}, 300_000)
