import type { SyscallFilterSummary } from '../../src/core'
import { BpfProgram, SECCOMP_DATA, SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, SECCOMP_RET_KILL_PROCESS } from './seccomp-bpf'
import {
  AUDIT_ARCH,
  CLONE_NAMESPACE_FLAGS,
  DENIED_SYSCALL_GROUPS,
  SAFE_PERSONALITIES,
  SYSCALL_NUMBERS,
  X32_SYSCALL_BIT,
  type SeccompArchitecture,
} from './seccomp-syscalls'

/**
 * The OS tiers' last layer (issue 26, part 5): a seccomp filter that answers EPERM to the system calls sandboxed code
 * never needs, so a kernel bug behind one of them is out of reach even if the namespaces fail. Built once per process
 * as classic BPF and handed to bubblewrap (`--seccomp FD`), which installs it (with no_new_privs) after it has made
 * the namespaces, right before it executes the sandbox's first program; every process in the sandbox inherits it.
 *
 * Anything else can apply the same bytes itself: `prctl(PR_SET_NO_NEW_PRIVS, 1)` then
 * `prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &(struct sock_fprog){ len: bytes / 8, filter: bytes })` — e.g. a warm
 * interpreter's forked child, before it runs the user's code (ctypes in Python: see docs/adapters/process.md).
 */

const EPERM = 1
const ENOSYS = 38

export function architectureOf(nodeArch: string = process.arch): SeccompArchitecture | undefined {
  return nodeArch === 'x64' ? 'x86_64' : nodeArch === 'arm64' ? 'aarch64' : undefined
}

/** The denied calls that exist on this architecture, in the order of DENIED_SYSCALL_GROUPS. */
export function deniedSyscalls(arch: SeccompArchitecture): string[] {
  return Object.values(DENIED_SYSCALL_GROUPS)
    .flat()
    .filter((name) => SYSCALL_NUMBERS[arch][name] !== undefined)
}

const NAMESPACE_MASK = Object.values(CLONE_NAMESPACE_FLAGS).reduce((mask, flag) => mask | flag, 0)

/**
 * The filter for one architecture:
 *   1. a call made through another ABI (x86's int 0x80 from an x86_64 process: AUDIT_ARCH_I386, other numbers) kills
 *      the process: its numbers mean different calls, so no list written for this ABI can judge it;
 *   2. x32 calls (the x32 bit in the number) are refused;
 *   3. clone with any CLONE_NEW* flag is refused; clone3 answers ENOSYS, since its flags are behind a pointer seccomp
 *      cannot read, and libc then falls back to clone (Docker does the same);
 *   4. personality is allowed only with the values Docker allows;
 *   5. every denied call answers EPERM; everything else is allowed.
 */
export function buildSeccompFilter(arch: SeccompArchitecture): Buffer {
  const numbers = SYSCALL_NUMBERS[arch]
  const program = new BpfProgram()
  program.load(SECCOMP_DATA.arch).branch('jeq', AUDIT_ARCH[arch], 'syscall', 'next').ret(SECCOMP_RET_KILL_PROCESS)
  program.load(SECCOMP_DATA.nr, 'syscall')
  if (arch === 'x86_64') program.branch('jge', X32_SYSCALL_BIT, 'deny')
  program.branch('jeq', numbers.clone!, 'clone')
  program.branch('jeq', numbers.clone3!, 'enosys')
  program.branch('jeq', numbers.personality!, 'personality')
  for (const name of deniedSyscalls(arch)) program.branch('jeq', numbers[name]!, 'deny')
  program.ret(SECCOMP_RET_ALLOW)
  // clone(flags, …): the flags are its first argument on both architectures; every CLONE_NEW* is in the low word.
  program.load(SECCOMP_DATA.argLow(0), 'clone').branch('jset', NAMESPACE_MASK, 'deny', 'allow')
  // personality(unsigned int): the kernel reads the low word only.
  program.load(SECCOMP_DATA.argLow(0), 'personality')
  for (const value of SAFE_PERSONALITIES) program.branch('jeq', value, 'allow')
  program.jump('deny')
  // BPF jumps only forward: the shared answers come last.
  program.ret(SECCOMP_RET_ALLOW, 'allow')
  program.ret(SECCOMP_RET_ERRNO | EPERM, 'deny')
  program.ret(SECCOMP_RET_ERRNO | ENOSYS, 'enosys')
  return program.encode()
}

const compiled = new Map<SeccompArchitecture, Buffer>()

/** The filter for this host, compiled at first use and kept; undefined on an architecture it is not written for. */
export function hostSeccompFilter(): Buffer | undefined {
  const arch = architectureOf()
  if (!arch) return undefined
  let filter = compiled.get(arch)
  if (!filter) compiled.set(arch, (filter = buildSeccompFilter(arch)))
  return filter
}

/** What the filter does, for capabilities and `execgate policy`. */
export function seccompSummary(arch: SeccompArchitecture | undefined = architectureOf()): SyscallFilterSummary | undefined {
  if (!arch) return undefined
  return {
    denied: deniedSyscalls(arch),
    conditional: [
      { call: 'clone', when: 'with a namespace flag (CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, …)', errno: 'EPERM' },
      { call: 'clone3', when: 'always (its flags cannot be inspected; libc falls back to clone)', errno: 'ENOSYS' },
      { call: 'personality', when: 'with any value but 0, 0x8, 0x20000, 0x20008 or 0xffffffff', errno: 'EPERM' },
      ...(arch === 'x86_64' ? [{ call: 'any x32 call', when: 'always', errno: 'EPERM' }] : []),
    ],
    foreignArchitecture: `the process is killed (only ${arch} calls are judged)`,
  }
}

/**
 * Python that installs a filter in its own process, for an interpreter that forks children outside bubblewrap's
 * `--seccomp` (a warm data interpreter's zygote): `_execgate_apply_seccomp(program_bytes)` sets no_new_privs, then
 * the filter; every thread and child started afterwards inherits it. Call it in the forked child, after any namespace
 * or mount work and right before the user's code. Raises OSError when the kernel refuses.
 */
export const PYTHON_SECCOMP_LOADER = `
def _execgate_apply_seccomp(program):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    class _SockFprog(ctypes.Structure):
        _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_void_p)]
    buffer = ctypes.create_string_buffer(bytes(program), len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    # PR_SET_NO_NEW_PRIVS = 38, PR_SET_SECCOMP = 22, SECCOMP_MODE_FILTER = 2
    if libc.prctl(38, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
        raise OSError(ctypes.get_errno(), 'prctl(PR_SET_NO_NEW_PRIVS) failed')
    if libc.prctl(22, ctypes.c_ulong(2), ctypes.byref(fprog), ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
        raise OSError(ctypes.get_errno(), 'prctl(PR_SET_SECCOMP) failed')
`
