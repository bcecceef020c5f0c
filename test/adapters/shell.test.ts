import { ShellAdapter } from '../../adapters/shell'
import { ShellProcessPool, runShellJob } from '../../adapters/shell/child-pool'
import { SHELL_BUILTINS, shellUtilities } from '../../adapters/shell/commands'
import type { ShellJob } from '../../adapters/shell/protocol'
import { BASH_COST } from '../../adapters/process'
import { estimateShellMs, scanShellScript } from '../../adapters/shared/shell-script'
import type { FilesystemAccess } from '../../src/core'
import { describeAdapterContract, contractContext, runChecked } from '../contract/adapter-contract'
import { describeHostileCases, ownExecgate } from '../hostile/hostile-runner'

describeAdapterContract('shell', () => new ShellAdapter())

// The warm pool's processes (and replacements of killed members) are kept on purpose, not leftovers of a case.
describeHostileCases({
  adapter: 'shell',
  language: 'bash',
  hostFunctions: false,
  ...ownExecgate('shell'),
  poolProcess: /adapters\/shell\/child\.js/,
})

describe('shell adapter', () => {
  const adapter = new ShellAdapter()
  afterAll(() => adapter.dispose())
  const run = (code: string, filesystem: FilesystemAccess = 'sandboxed', files = [{ path: 'data.txt', content: 'pear\napple\nfig\n' }]) =>
    runChecked(adapter, { language: 'bash', code, files }, contractContext({ filesystem, wallTimeMs: 10_000 }))

  describe('canRun: the native tier takes bash whose commands it has, decided from the syntax tree', () => {
    test.each([
      'ls',
      'cat data.csv | grep 2026 | wc -l',
      "jq '.items[] | .price' order.json",
      "sed -n 2p f | awk -F, '{ s += $3 } END { print s }'",
      'sort data | uniq -c | sort -rn | head -3',
      'count() { wc -l < "$1"; }; count data.txt',
      'for f in *.txt; do [ -f "$f" ] && echo "$f"; done',
      'x=$(cat a); echo "${x^^}"',
      'yes | head -n 3',
      'xargs -n1 echo < list',
      "bash -c 'grep -c x f'",
    ])('runs here: %s', (code) => {
      expect(adapter.canRun(code, 'bash')).toEqual({ ok: true })
    })

    test.each([
      ['python3 x.py', '`python3`'],
      ['gcc -o a a.c && ./a', '`gcc`'],
      ['curl -s https://example.com | jq .', '`curl`'],
      ['sqlite3 db "select 1"', '`sqlite3`'],
      ['node -e 1', '`node`'],
      ['find . -name "*.py" | xargs python3', '`python3`'],
      ['timeout 5 make', '`make`'],
      ['$TOOL --version', 'only known at run time'],
      ['source ./setup.sh', 'runs a file'],
      ['eval "$CMD"', 'only known at run time'],
    ])('goes to a tier with real programs: %s', (code, reason) => {
      const verdict = adapter.canRun(code, 'bash')
      expect(verdict.ok).toBe(false)
      expect(verdict.reason).toContain(reason)
    })

    test('every builtin the scan trusts is one just-bash runs itself, and the opt-ins are absent', async () => {
      const names = SHELL_BUILTINS.filter((name) => name !== '.' && name !== '[' && name !== ':')
      const result = await run(`for c in ${names.join(' ')}; do printf '%s=%s\\n' "$c" "$(type -t "$c")"; done`)
      expect(result.status).toBe('ok')
      const kinds = Object.fromEntries(
        result.stdout
          .trim()
          .split('\n')
          .map((line) => line.split('=') as [string, string]),
      )
      for (const name of names) expect({ name, kind: kinds[name] }).toEqual({ name, kind: expect.stringMatching(/^(builtin|keyword)$/) })
      for (const optIn of ['python3', 'curl', 'sqlite3', 'js-exec', 'node']) {
        expect(shellUtilities()).not.toContain(optIn)
        const attempt = await run(`${optIn} --version`)
        expect({ optIn, status: attempt.status, message: attempt.error?.message }).toEqual({
          optIn,
          status: 'error',
          message: expect.stringContaining('code 127'),
        })
      }
    })
  })

  describe("the workspace, with the policy's filesystem mode", () => {
    test('sandboxed: reads the files, and what it writes comes back', async () => {
      const result = await run('sort data.txt > sorted.txt; mkdir -p out && wc -l < data.txt > out/count; cat sorted.txt')
      expect(result).toMatchObject({ status: 'ok', stdout: 'apple\nfig\npear\n' })
      expect(result.files).toEqual(
        expect.arrayContaining([
          { path: 'sorted.txt', content: 'apple\nfig\npear\n' },
          { path: 'out/count', content: '3\n' },
        ]),
      )
      expect(result.files?.map((file) => file.path)).not.toContain('data.txt') // unchanged files are not sent back
    })

    test('read_only: reads work, every change to /workspace is refused, /tmp is scratch', async () => {
      const reads = await run('grep -c p data.txt; echo t > /tmp/scratch && cat /tmp/scratch', 'read_only')
      expect(reads).toMatchObject({ status: 'ok', stdout: '2\nt\n' })
      for (const write of [
        'echo x > new.txt',
        'rm data.txt',
        'mv data.txt other.txt',
        'mkdir d',
        'ln -s /tmp/x link',
        'cp data.txt copy.txt',
        'echo x >> data.txt',
      ]) {
        // A command that fails exits 9; a refused redirection (`>`) stops the script with the reason.
        const result = await run(`${write} || exit 9`, 'read_only')
        expect({ write, status: result.status, message: result.error?.message }).toEqual({
          write,
          status: 'error',
          message: expect.stringMatching(/code 9|read-only file system/),
        })
        expect(result.files).toBeUndefined()
      }
      const link = await run('ln -s /workspace/data.txt /tmp/l; echo changed > /tmp/l; cat data.txt', 'read_only')
      expect(link.stdout).toContain('pear')
      expect(link.stdout).not.toContain('changed')
    })

    test('none: the workspace is empty and unwritable', async () => {
      const read = await run('cat data.txt', 'none')
      expect(read).toMatchObject({ status: 'error', stderr: expect.stringMatching(/data\.txt: No such file/) })
      const write = await run('echo x > new.txt', 'none')
      expect(write).toMatchObject({
        status: 'error',
        error: { type: 'ReadOnlyFilesystem', message: expect.stringContaining('no filesystem access') },
      })
      const list = await run('touch a 2>/dev/null; ls -A | wc -l', 'none')
      expect(list).toMatchObject({ status: 'ok', stdout: expect.stringMatching(/^\s*0\n$/) })
    })

    test('the host filesystem is unreachable, whatever the path', async () => {
      const result = await run(
        'cat ../../etc/passwd /etc/passwd /proc/self/environ /proc/1/cmdline 2>&1; ls / ; cd ../../..; pwd; cat etc/hostname 2>&1',
        'sandboxed',
      )
      const text = result.stdout + result.stderr
      expect(text).not.toContain('root:x:0:0')
      expect(text).not.toContain(process.env.PATH ?? 'no-path')
      expect(text).toContain('No such file')
    })
  })

  test('exit codes and stderr map onto the status vocabulary', async () => {
    const failed = await run('echo partial; echo "no such thing" >&2; exit 4')
    expect(failed).toMatchObject({
      status: 'error',
      stdout: 'partial\n',
      stderr: 'no such thing\n',
      error: { type: 'ExitError', message: 'the script exited with code 4: no such thing' },
    })
    const missing = await run('frobnicate')
    expect(missing.error?.message).toMatch(/code 127: .*frobnicate/)
    const deep = await run('f() { f; }; f')
    expect(deep).toMatchObject({ status: 'error', error: { message: expect.stringContaining('recursion depth') } })
  })

  test('stdin reaches the script', async () => {
    const result = await runChecked(adapter, { language: 'bash', code: 'tr a-z A-Z', stdin: 'quiet\n' }, contractContext())
    expect(result).toMatchObject({ status: 'ok', stdout: 'QUIET\n' })
  })

  test('a memory cap below what a worker needs is raised to the floor, not ignored', async () => {
    const result = await runChecked(
      adapter,
      { language: 'bash', code: 'x=y; while true; do x="$x$x"; done' },
      contractContext({ memoryMb: 16, wallTimeMs: 20_000 }),
    )
    expect(result.status).toBe('memory_limit')
  })
})

describe('shell processes: the heap cap is the backstop', () => {
  test(
    "a script past the heap cap where just-bash's own limits would let it through kills its " +
      'process alone: memory_limit, then a fresh process',
    async () => {
      const pool = new ShellProcessPool(48, 1)
      // just-bash's data limits are sized from memoryBytes: at 1 GiB they let a doubling string reach 128 MiB in a 48 MiB heap.
      const job = (id: number, script: string): ShellJob => ({
        type: 'run',
        id,
        script,
        files: [],
        filesystem: 'none',
        remainingMs: 0,
        timeoutMs: 30_000,
        outputBytes: 65_536,
        memoryBytes: 1024 ** 3,
        maxCallDepth: 100,
        maxIterations: 1e7,
        commands: shellUtilities(),
      })
      try {
        const bomb = await runShellJob(
          pool,
          job(1, 'x=y; while true; do x="$x$x"; done'),
          contractContext({ wallTimeMs: 30_000, memoryMb: 48 }),
          50,
        )
        expect(bomb).toMatchObject({ status: 'memory_limit', error: { type: 'MemoryError', message: expect.stringContaining('48 MiB') } })
        const next = await runShellJob(pool, job(2, 'echo ok'), contractContext({ wallTimeMs: 30_000 }), 50)
        expect(next).toMatchObject({ status: 'ok', stdout: 'ok\n' })
      } finally {
        await pool.dispose()
      }
    },
    60_000,
  )
})

describe('cost model: which tier is faster, from the script and its input', () => {
  const shell = new ShellAdapter()
  afterAll(() => shell.dispose())
  const pipeline = 'cat data.csv | grep 2026 | cut -d, -f2 | sort | uniq -c | sort -rn | head -5'

  test('counts the commands a pipeline passes its data through', () => {
    expect(scanShellScript(pipeline).stages).toBe(7)
    expect(scanShellScript('x=1; echo $x').stages).toBe(1)
  })

  test('trivial scripts are far cheaper here; a 7-stage pipeline over 440 KB is cheaper under bubblewrap', () => {
    const processMs = (code: string, bytes: number) => estimateShellMs(scanShellScript(code), bytes, BASH_COST)
    expect(shell.estimateMs('echo hi | wc -c', 'bash', {}) * 10).toBeLessThan(processMs('echo hi | wc -c', 0))
    expect(shell.estimateMs(pipeline, 'bash', { inputBytes: 40_000 })).toBeLessThan(processMs(pipeline, 40_000))
    expect(shell.estimateMs(pipeline, 'bash', { inputBytes: 440_000 })).toBeGreaterThan(processMs(pipeline, 440_000))
    // The estimate grows with the input and with the number of stages.
    expect(shell.estimateMs(pipeline, 'bash', { inputBytes: 200_000 })).toBeGreaterThan(
      shell.estimateMs(pipeline, 'bash', { inputBytes: 100_000 }),
    )
    expect(shell.estimateMs(pipeline, 'bash', { inputBytes: 100_000 })).toBeGreaterThan(
      shell.estimateMs('wc -l data.csv', 'bash', { inputBytes: 100_000 }),
    )
  })
})
