import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

/** The real CLI, as an operator runs it (`npm test` builds dist/ first). */
const root = path.join(__dirname, '..')
const bin = path.join(root, 'bin', 'execgate.js')

function execgate(args: string[], options: { input?: string; env?: Record<string, string> } = {}) {
  const child = spawnSync(process.execPath, [bin, ...args], {
    cwd: root,
    input: options.input,
    encoding: 'utf8',
    env: { PATH: process.env.PATH, EXECGATE_FABRIC_DATA_DIR: process.env.EXECGATE_FABRIC_DATA_DIR, ...options.env },
    timeout: 30_000,
  })
  return { code: child.status, stdout: child.stdout, stderr: child.stderr }
}

const noStackTrace = (text: string) => expect(text).not.toMatch(/\n\s+at .+:\d+:\d+/)

describe('execgate CLI', () => {
  beforeAll(() => {
    if (!fs.existsSync(path.join(root, 'dist', 'src', 'cli', 'index.js')))
      throw new Error('dist/ is missing: run `npm run build` (npm test does)')
  })

  test('--version (and -V) prints the package version alone, exit 0', () => {
    const version = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }).version
    for (const flag of ['--version', '-V']) expect(execgate([flag])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' })
  })

  test('run prints the status, the output, the value and the duration; exit 0 for ok', () => {
    const { code, stdout } = execgate(['run', 'examples/voice-order-total.js'])
    expect(code).toBe(0)
    expect(stdout).toMatch(/^status: ok {2}\(quickjs, [\d.]+ ms\)/)
    expect(stdout).toContain('Subtotal $25.00, tax $2.00, total $27.00')
    expect(stdout).toContain('value: {"subtotal":25,"tax":2,"total":27}')
  })

  test('--json prints the ExecutionResult and nothing else', () => {
    const { code, stdout } = execgate(['run', 'examples/pricing-formula.ts', '--json'])
    expect(code).toBe(0)
    const result = JSON.parse(stdout)
    expect(result).toMatchObject({ status: 'ok', adapter: 'quickjs', value: { unitPrice: 10.79, total: 6905.6, marginOk: true } })
    expect(typeof result.durationMs).toBe('number')
  })

  test('runs a Python example on the embedded default (monty)', () => {
    const { code, stdout } = execgate(['run', 'examples/voice-tip-split.py', '--json'])
    expect(code).toBe(0)
    expect(JSON.parse(stdout)).toMatchObject({ status: 'ok', adapter: 'monty', value: { tip: 33.23, total: 217.83, per_person: 54.46 } })
  })

  test('a Python file with a class is escalated to pyodide and runs', () => {
    const { code, stdout } = execgate(['run', 'examples/invoice-summary.py', '--json'])
    expect(code).toBe(0)
    const result = JSON.parse(stdout)
    expect(result).toMatchObject({
      status: 'ok',
      adapter: 'pyodide',
      route: { escalatedFrom: 'monty' },
      value: { outstanding: { Globex: 450.5, Acme: 300.25 } },
    })
    expect(result.stdout).toContain('4 invoices, top customer Acme with $1,500.25')
  })

  test('reads standard input with --lang', () => {
    const { code, stdout } = execgate(['run', '--lang', 'javascript', '-'], { input: 'console.log(2 ** 10)' })
    expect(code).toBe(0)
    expect(stdout).toContain('1024')
  })

  test('an infinite loop ends timeout at the --timeout limit; exit 1', () => {
    const { code, stdout } = execgate(['run', 'examples/infinite-loop.js', '--timeout', '300', '--json'])
    expect(code).toBe(1)
    const result = JSON.parse(stdout)
    expect(result.status).toBe('timeout')
    // Bounded, not hung (ten times the limit); how close to the limit it stops is a bench row.
    expect(result.durationMs).toBeLessThan(10 * 300)
  })

  test('a memory bomb ends memory_limit under --memory', () => {
    // A generous time limit, so only the memory limit can end it even on a loaded machine.
    const { stdout } = execgate(['run', 'examples/memory-bomb.js', '--memory', '32', '--timeout', '30000', '--json'])
    expect(JSON.parse(stdout).status).toBe('memory_limit')
  })

  test('deep recursion ends error', () => {
    const { code, stdout } = execgate(['run', 'examples/deep-recursion.js', '--json'])
    expect(code).toBe(1)
    expect(JSON.parse(stdout)).toMatchObject({ status: 'error', error: { message: expect.stringMatching(/stack/) } })
  })

  test('--adapter placeholder answers not_implemented', () => {
    const { code, stdout } = execgate(['run', 'examples/voice-order-total.js', '--adapter', 'placeholder', '--json'])
    expect(code).toBe(1)
    expect(JSON.parse(stdout)).toMatchObject({ status: 'not_implemented', fallbackAction: 'describe_computation_only' })
  })

  test.each([
    [['run', 'examples/voice-order-total.js', '--timeout', 'abc'], /--timeout must be a positive whole number, got "abc"/],
    [['run', 'examples/voice-order-total.js', '--memory', '0'], /--memory must be a positive whole number, got "0"/],
    [['run', 'no-such-file.js'], /cannot read "no-such-file.js": no such file/],
    [['run', 'README.md'], /cannot tell the language of "README.md".*--lang/],
    [['run', '-'], /standard input needs --lang/],
    [['run', 'examples/voice-order-total.js', '--lang', 'cobol'], /Allowed choices are javascript, typescript, python, bash/],
    [['run', 'examples/voice-order-total.js', '--adapter', 'nope'], /--adapter: unknown adapter "nope"; known adapters: .*quickjs/],
    [['frobnicate'], /unknown command 'frobnicate'/],
    [
      ['run', 'examples/monthly-summary.py', '--fs', 'all'],
      /'--fs <access>' argument 'all' is invalid. Allowed choices are none, read_only, sandboxed/,
    ],
    [['run', 'examples/monthly-summary.py', '--workspace', 'no-such-dir'], /--workspace: "no-such-dir" does not exist/],
    [['run', 'examples/monthly-summary.py', '--workspace', 'README.md'], /--workspace: "README.md" is not a directory/],
  ])('bad input %j is a clear message and exit 2, never a stack trace', (args, message) => {
    const { code, stderr } = execgate(args as string[], { input: '' })
    expect(code).toBe(2)
    expect(stderr).toMatch(message)
    noStackTrace(stderr)
  })

  test('--workspace DIR is read through an in-memory overlay; --save-files keeps what the code wrote', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- one call in one test
    const saved = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'execgate-saved-'))
    try {
      const { code, stdout } = execgate(['run', 'examples/monthly-summary.py', '--workspace', 'examples/workspace', '--save-files', saved])
      expect(code).toBe(0)
      expect(stdout).toContain('value: {"regions":{"north":1510.75,"south":1100,"west":455.75},"total":3066.5}')
      expect(stdout).toContain('files written: summary.txt')
      expect(fs.readFileSync(path.join(saved, 'summary.txt'), 'utf8')).toBe('north: 1510.75\nsouth: 1100.00\nwest: 455.75\n')
      expect(fs.existsSync(path.join(root, 'examples', 'workspace', 'summary.txt'))).toBe(false)
    } finally {
      fs.rmSync(saved, { recursive: true, force: true })
    }
  })

  test('--fs none refuses the workspace functions with policy_violation; read_only refuses the write', () => {
    const none = execgate(['run', 'examples/monthly-summary.py', '--workspace', 'examples/workspace', '--fs', 'none'])
    expect(none.code).toBe(1)
    expect(none.stdout).toContain('status: policy_violation')
    expect(none.stdout).toContain('read_file refused: it reads the workspace, and the policy\'s filesystem access is "none"')
    const readOnly = execgate(['run', 'examples/monthly-summary.py', '--workspace', 'examples/workspace', '--fs', 'read_only'])
    expect(readOnly.stdout).toContain('write_file refused: it writes the workspace')
  })

  test('an invalid configuration value stops start-up with the key, the value and what is allowed', () => {
    const { code, stderr } = execgate(['run', 'examples/voice-order-total.js'], {
      env: { EXECGATE_SECURITY_DEFAULT_POLICY_MEMORY_MB: 'lots' },
    })
    expect(code).toBe(2)
    expect(stderr).toContain('security.defaultPolicy.memoryMb: must be a positive integer: value was "lots"')
    noStackTrace(stderr)
  })

  test('the environment switches the adapter with no code change', () => {
    const { stdout } = execgate(['run', 'examples/voice-order-total.js', '--json'], { env: { EXECGATE_EXECUTION_ADAPTER: 'placeholder' } })
    expect(JSON.parse(stdout).status).toBe('not_implemented')
  })

  test('validate reports a forbidden import with its position', () => {
    const { code, stdout } = execgate(['validate', '--lang', 'javascript', 'examples/voice-order-total.js'])
    expect(code).toBe(0)
    expect(stdout).toMatch(/^valid javascript/)
    const file = path.join(root, 'test', 'fixtures-cli-import.js')
    fs.writeFileSync(file, "const x = 1\nconst fs = require('fs')\n")
    try {
      const bad = execgate(['validate', file])
      expect(bad.code).toBe(1)
      expect(bad.stdout).toMatch(/2:12 error \[import_not_allowed\] require of "fs" is not allowed/)
    } finally {
      fs.rmSync(file)
    }
  })

  test('adapters prints a table of adapters, languages and availability', () => {
    const { code, stdout } = execgate(['adapters'])
    expect(code).toBe(0)
    expect(stdout).toMatch(/^adapter\s+languages\s+tier\s+enabled\s+health\s+breaker/)
    expect(stdout).toMatch(/process\s+python, javascript, bash\s+4\s+yes\s+available/)
    expect(stdout).toContain('active adapter: auto')
    expect(stdout).toContain('last switch: none')
    expect(stdout).toMatch(/quickjs\s+javascript, typescript\s+1\s+yes\s+available/)
    expect(stdout).toMatch(/monty\s+python\s+1\s+yes\s+available/)
    // Admission: slots in use per lane (interactive/batch) of the declared ones, the reservation, queue depth.
    expect(stdout).toMatch(/quickjs\s.*\s0\/0 of 2 \(1 interactive\)\s+0\/0\s/)
    expect(stdout).toMatch(/batch runs on in-process tiers: 0 of \d+/)
  })

  test('policy --adapter prints the enforcement table; a required limit it cannot hold exits 1', () => {
    const { code, stdout } = execgate(['policy', '--adapter', 'process'])
    expect(code).toBe(0)
    expect(stdout).toMatch(/^limit\s+setting\s+enforcement\s+required/)
    expect(stdout).toMatch(/memory\s+128 MiB\s+hard/)
    expect(stdout).toMatch(/hostCalls\s+100 calls, 2000 ms\s+none/)
    const required = execgate(['policy', '--adapter', 'process', '--json'], {
      env: { EXECGATE_SECURITY_DEFAULT_POLICY_REQUIRED: 'hostCalls' },
    })
    expect(required.code).toBe(1)
    expect(JSON.parse(required.stdout)).toMatchObject({ adapter: 'process', usable: false })
    const unknown = execgate(['policy', '--adapter', 'nope'])
    expect({ code: unknown.code, stderr: unknown.stderr.trim() }).toEqual({
      code: 2,
      stderr: expect.stringContaining('--adapter: unknown adapter "nope"'),
    })
  })
})
