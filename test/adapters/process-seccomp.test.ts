import { spawnSync } from 'node:child_process'
import { PassThrough } from 'node:stream'
import {
  PYTHON_SECCOMP_LOADER,
  architectureOf,
  buildSeccompFilter,
  deniedSyscalls,
  hostSeccompFilter,
} from '../../adapters/shared/seccomp-filter'
import { SYSCALL_NUMBERS, type SeccompArchitecture } from '../../adapters/shared/seccomp-syscalls'
import { createExecgate, type Execgate } from '../../src'
import { main } from '../../src/cli'
import { DEFAULT_POLICY } from '../../src/policy'
import { SECCOMP_CASES, type SeccompCase } from '../hostile/seccomp-cases'

/**
 * The process tier's seccomp filter (adapters/shared/seccomp-filter.ts). First the program itself, run by a classic
 * BPF interpreter written here from the kernel's semantics (not execgate's assembler): every decision on both
 * architectures. Then the real kernel: the seccomp corpus (test/hostile/seccomp-cases.ts) through a real execgate
 * with the process adapter, each denied call answering EPERM while the run goes on; the same probes under bubblewrap
 * without the filter, where the kernel answers otherwise; and python3, node and bash still doing their ordinary work.
 */

const arch = architectureOf()
if (!arch) throw new Error(`the seccomp filter is written for x86_64 and aarch64; this is ${process.arch}`)

// ---- an independent classic-BPF interpreter (linux/filter.h semantics, seccomp's subset) ----
const AUDIT: Record<string, number> = { x86_64: 0xc000003e, aarch64: 0xc00000b7, i386: 0x40000003 }
const RET = { KILL_PROCESS: 0x80000000, ALLOW: 0x7fff0000, EPERM: 0x00050001, ENOSYS: 0x00050026 }

function runFilter(program: Buffer, data: { nr: number; arch: number; args?: number[] }): number {
  const word = (offset: number): number => {
    if (offset === 0) return data.nr >>> 0
    if (offset === 4) return data.arch >>> 0
    if (offset >= 16 && offset < 64 && offset % 8 === 0) return (data.args?.[(offset - 16) / 8] ?? 0) >>> 0
    if (offset >= 16 && offset % 8 === 4) return 0 // high words: these tests use 32-bit arguments
    throw new Error(`load at unexpected offset ${offset}`)
  }
  let accumulator = 0
  for (let pc = 0, steps = 0; pc < program.length / 8 && steps < 10_000; steps++) {
    const code = program.readUInt16LE(pc * 8)
    const jt = program.readUInt8(pc * 8 + 2)
    const jf = program.readUInt8(pc * 8 + 3)
    const k = program.readUInt32LE(pc * 8 + 4)
    switch (code) {
      case 0x20: // BPF_LD | BPF_W | BPF_ABS
        accumulator = word(k)
        pc += 1
        break
      case 0x15: // BPF_JMP | BPF_JEQ | BPF_K
        pc += 1 + (accumulator === k ? jt : jf)
        break
      case 0x35: // BPF_JMP | BPF_JGE | BPF_K
        pc += 1 + (accumulator >= k ? jt : jf)
        break
      case 0x45: // BPF_JMP | BPF_JSET | BPF_K
        pc += 1 + ((accumulator & k) !== 0 ? jt : jf)
        break
      case 0x05: // BPF_JMP | BPF_JA
        pc += 1 + k
        break
      case 0x06: // BPF_RET | BPF_K
        return k
      default:
        throw new Error(`unexpected BPF opcode 0x${code.toString(16)} at ${pc}`)
    }
  }
  throw new Error('the program ran off its end')
}

describe.each(['x86_64', 'aarch64'] as const)('the %s program', (programArch: SeccompArchitecture) => {
  const program = buildSeccompFilter(programArch)
  const numbers = SYSCALL_NUMBERS[programArch]
  const decide = (nr: number, args?: number[], auditArch = AUDIT[programArch]!) =>
    runFilter(program, { nr, arch: auditArch, ...(args ? { args } : {}) })

  test('every denied call answers EPERM; ordinary calls are allowed', () => {
    const denied = deniedSyscalls(programArch)
    expect(denied.length).toBeGreaterThan(45)
    expect(denied.map((name) => [name, decide(numbers[name]!)])).toEqual(denied.map((name) => [name, RET.EPERM]))
    // read, write, openat, mmap, futex, exit_group, execve, wait4, getrandom: what every interpreter does all day.
    const ordinary = programArch === 'x86_64' ? [0, 1, 257, 9, 202, 231, 59, 61, 318] : [63, 64, 56, 222, 98, 94, 221, 260, 278]
    expect(ordinary.map((nr) => decide(nr))).toEqual(ordinary.map(() => RET.ALLOW))
  })

  test('clone only without namespace flags; clone3 ENOSYS; personality only with the safe values', () => {
    const CLONE_THREAD_FLAGS = 0x3d0f00 // what glibc's pthread_create passes
    expect(decide(numbers.clone!, [CLONE_THREAD_FLAGS])).toBe(RET.ALLOW)
    expect(decide(numbers.clone!, [17 /* fork: SIGCHLD */])).toBe(RET.ALLOW)
    for (const flag of [0x80, 0x20000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000])
      expect(decide(numbers.clone!, [flag | 17])).toBe(RET.EPERM)
    expect(decide(numbers.clone3!)).toBe(RET.ENOSYS)
    for (const value of [0, 8, 0x20000, 0x20008, 0xffffffff]) expect(decide(numbers.personality!, [value])).toBe(RET.ALLOW)
    for (const value of [0x0040000 /* ADDR_NO_RANDOMIZE */, 0x0400000 /* READ_IMPLIES_EXEC */])
      expect(decide(numbers.personality!, [value])).toBe(RET.EPERM)
  })

  test('a call through another ABI kills the process; x32 calls are refused', () => {
    expect(decide(numbers.ptrace!, undefined, AUDIT.i386)).toBe(RET.KILL_PROCESS)
    expect(decide(0, undefined, AUDIT[programArch === 'x86_64' ? 'aarch64' : 'x86_64'])).toBe(RET.KILL_PROCESS)
    if (programArch === 'x86_64') expect(decide(0x40000000 | 0 /* x32 read */)).toBe(RET.EPERM)
  })
})

// ---- the real kernel ----
const BROAD = {
  ...DEFAULT_POLICY,
  wallTimeMs: 15_000,
  cpuTimeMs: 15_000,
  memoryMb: 256,
  maxProcesses: 32,
  allowedImports: ['ctypes', 'errno', 'os', 'platform', 'threading', 'subprocess', 'multiprocessing', 'json', 'sys'],
}
let execgate: Execgate
beforeAll(async () => {
  execgate = await createExecgate({
    overrides: { execution: { enabled: ['process'] }, readiness: { enabled: false }, log: { level: 'silent' } },
  })
}, 60_000)
afterAll(() => execgate.dispose())

const runnable = SECCOMP_CASES.filter((item) => item.language !== 'python' || SYSCALL_NUMBERS[arch][item.call] !== undefined)
const absent = SECCOMP_CASES.filter((item) => !runnable.includes(item))
const line = (item: SeccompCase) => (item.language === 'python' ? `${item.call}: ${item.expect}` : 'Operation not permitted')

test(`cases whose call does not exist on ${arch}: ${absent.map((item) => item.id).join(', ') || 'none'}`, () => {
  expect(absent.every((item) => SYSCALL_NUMBERS[arch][item.call] === undefined)).toBe(true)
})

test.each(runnable.map((item) => [item.id, item] as const))(
  '%s: the call is refused and the run goes on',
  async (_id, item) => {
    const result = await runCase(item)
    expect({ status: result.status, stdout: result.stdout, stderr: result.stderr }).toEqual({
      status: 'ok',
      stdout: expect.stringContaining(line(item)),
      stderr: result.stderr,
    })
    expect(result.stdout).toMatch(/still running\n$/)
  },
  60_000,
)

async function runCase(item: SeccompCase) {
  return execgate.execute({ language: item.language, code: item.code, adapter: 'process' }, { basePolicy: BROAD })
}

/** The same probe under bubblewrap as the adapter starts it, minus `--seccomp`: the kernel's own answer. */
function unfiltered(item: SeccompCase): string {
  const program = item.language === 'python' ? ['python3', '-I', '-c', item.code] : ['bash', '-c', item.code]
  const binds = [
    '--ro-bind',
    '/usr',
    '/usr',
    '--symlink',
    'usr/lib',
    '/lib',
    '--symlink',
    'usr/lib64',
    '/lib64',
    '--symlink',
    'usr/bin',
    '/bin',
  ]
  const child = spawnSync(
    'bwrap',
    [
      '--unshare-all',
      '--die-with-parent',
      '--cap-drop',
      'ALL',
      ...binds,
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      '--tmpfs',
      '/tmp',
      ...program,
    ],
    {
      encoding: 'utf8',
      env: { PATH: '/usr/bin:/bin' },
      timeout: 30_000,
      // As root, a uid nobody else's runs use: the adapter's uid pool may sweep its own uids at any moment.
      ...(process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {}),
    },
  )
  return `${child.stdout}${child.stderr}`
}

test.each(runnable.filter((item) => item.unfilteredDiffers).map((item) => [item.id, item] as const))(
  "%s: without the filter the kernel answers otherwise (so the refusal is the filter's)",
  (_id, item) => {
    const output = unfiltered(item)
    expect(output).toContain('still running')
    expect(output).not.toContain(line(item))
  },
)

test('python3, node and bash still do their ordinary work under the filter: threads, processes, pipes', async () => {
  const python = await execgate.execute(
    {
      language: 'python',
      adapter: 'process',
      code:
        'import threading, subprocess, multiprocessing\nt = threading.Thread(target=print, ' +
        "args=('thread',)); t.start(); t.join()\nprint(subprocess.run(['echo', 'child'], " +
        'capture_output=True, text=True).stdout.strip())\nwith multiprocessing.Pool(2) as pool: ' +
        'print(sum(pool.map(abs, [-1, -2, -3])))',
    },
    { basePolicy: BROAD },
  )
  expect([python.status, python.stdout]).toEqual(['ok', 'thread\nchild\n6\n'])
  // node starts threads (V8's platform workers) with clone after clone3's ENOSYS; GC and promises use them.
  const node = await execgate.execute(
    {
      language: 'javascript',
      adapter: 'process',
      code:
        '(async () => { const big = new Array(2e6).fill(1).length; const parts = await ' +
        "Promise.all([20, 22].map(async (n) => n)); console.log('node', big); return parts[0] + " +
        'parts[1] })()',
    },
    { basePolicy: BROAD },
  )
  expect([node.status, node.stdout, node.stderr, node.value]).toEqual(['ok', 'node 2000000\n', '', 42])
  const bash = await execgate.execute(
    {
      language: 'bash',
      adapter: 'process',
      code:
        'seq 1 5 | (while read n; do echo $((n * n)); done) | paste -sd+ | bc 2>/dev/null || echo ' +
        "55\ngrep '^Seccomp:' /proc/self/status",
    },
    { basePolicy: BROAD },
  )
  expect([bash.status, bash.stdout]).toEqual(['ok', '55\nSeccomp:\t2\n'])
}, 120_000)

test('`execgate policy --adapter process` lists the denied calls; the adapter declares the filter', async () => {
  expect(hostSeccompFilter()).toBe(hostSeccompFilter()) // compiled once
  const out = new PassThrough()
  let printed = ''
  out.on('data', (chunk: Buffer) => (printed += chunk.toString()))
  const code = await main(['node', 'execgate', 'policy', '--adapter', 'process'], out)
  expect(code).toBe(0)
  expect(printed).toContain(`seccomp filter on every run: ${deniedSyscalls(arch).length} system calls answer EPERM:`)
  for (const call of [
    'ptrace',
    'keyctl',
    'add_key',
    'request_key',
    'bpf',
    'userfaultfd',
    'perf_event_open',
    'mount',
    'umount2',
    'pivot_root',
    'unshare',
    'setns',
    'kexec_load',
    'init_module',
    'finit_module',
    'delete_module',
    'acct',
    'swapon',
    'reboot',
    'open_by_handle_at',
  ]) {
    expect(printed).toMatch(new RegExp(`\\s${call}(\\s|$)`, 'm'))
  }
  expect(printed).toContain('clone: EPERM with a namespace flag')
  const explained = execgate.explainPolicy('process')
  expect(explained.syscallFilter?.denied).toEqual(deniedSyscalls(arch))
}, 60_000)

test("a run's record names the interpreters' versions once the adapter has learned them", async () => {
  // Learned in the background from the first run on; the availability check waits for them.
  await execgate
    .adapters()
    .find((item) => item.name === 'process')!
    .checkAvailability()
  const result = await execgate.execute({ language: 'python', adapter: 'process', code: '1' }, { basePolicy: BROAD })
  const { record } = await execgate.ledger.record(result.runId!)
  expect(record.engines).toMatchObject({
    node: process.version,
    python3: expect.stringMatching(/^3\.\d+\.\d+/),
    bash: expect.stringMatching(/^\d+\.\d+/),
    'sandbox-node': expect.stringMatching(/^\d+\.\d+/),
  })
}, 60_000)

test("a process outside bubblewrap (a warm interpreter's forked child) installs the same filter with PYTHON_SECCOMP_LOADER", () => {
  const numbers = SYSCALL_NUMBERS[arch]
  const code = `${PYTHON_SECCOMP_LOADER}
import ctypes, errno, os, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
def unshare_user():
    ctypes.set_errno(0)
    return 'OK' if libc.syscall(${numbers.unshare}, 0x10000000) == 0 else errno.errorcode[ctypes.get_errno()]
pid = os.fork()
if pid == 0:
    _execgate_apply_seccomp(bytes.fromhex(sys.argv[1]))
    thread = threading.Thread(target=lambda: None); thread.start(); thread.join()
    print('child', unshare_user(), [line for line in open('/proc/self/status') if line.startswith('Seccomp:')][0].split()[1], flush=True)
    os._exit(0)
os.waitpid(pid, 0)
print('parent', 'Seccomp:\\t0' in open('/proc/self/status').read())
`
  const child = spawnSync('python3', ['-c', code, hostSeccompFilter()!.toString('hex')], { encoding: 'utf8', timeout: 30_000 })
  expect([child.stderr, child.stdout]).toEqual(['', 'child EPERM 2\nparent True\n'])
})
