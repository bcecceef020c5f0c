import { SYSCALL_NUMBERS } from '../../adapters/shared/seccomp-syscalls'

/**
 * The process tier's seccomp corpus: code that makes each system call the filter denies (adapters/shared/
 * seccomp-filter.ts) and then goes on printing. Each case names the advisory or exploit technique that made the call
 * worth denying (`source`); most of them are why Docker's default profile denies it too. Python reaches the raw call
 * through ctypes' `syscall()`, so neither libc nor an interpreter check stands between the code and the kernel; bash
 * uses the program such code would use (`unshare -r`). JavaScript has no case: the process tier's Node runner takes
 * `process` and `require` away before the code runs (adapters/shared/interpreter-runners.ts), so it has no way to a
 * raw call or a program; the filter still covers node itself, whose start (threads through clone3's ENOSYS and
 * clone) the test checks.
 *
 * `args` are chosen so that, without the filter, the kernel answers something other than EPERM where it can
 * (PTRACE_TRACEME succeeds, an invalid bpf command is EINVAL, …). Those cases are marked `unfilteredDiffers`, and the
 * test runs them under bubblewrap without `--seccomp` too: there they must not answer EPERM, so the EPERM inside the
 * sandbox is the filter's. (Measured on Linux 6.18 as a sandbox uid; the others answer EPERM, ENOSYS or ENODEV
 * without the filter as well, for want of a capability or of the feature in the kernel.)
 */

export interface SeccompCase {
  id: string
  language: 'python' | 'bash'
  /** The system call the case makes. */
  call: string
  code: string
  /** What the call answers inside the sandbox: `EPERM` for the deny-list, `ENOSYS` for clone3. */
  expect: 'EPERM' | 'ENOSYS'
  /** Without the filter this probe answers something other than EPERM (and other than `expect`). */
  unfilteredDiffers?: true
  source: string
}

/** Prints `<call>: OK|<errno name>`, then `still running`: the run must go on after the refusal. */
const PY_PRELUDE = `import ctypes, errno, os, platform
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def probe(name, numbers, *args):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(numbers[platform.machine()]), *[ctypes.c_long(arg) for arg in args])
    if result == 0 and name in ('clone', 'clone3'):
        os._exit(0)  # the child of a clone the filter let through: it must not run the rest twice
    print(f"{name}: {'OK' if result >= 0 else errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno())}", flush=True)
`

function pythonCase(
  call: string,
  args: number[],
  expect: SeccompCase['expect'],
  source: string,
  unfilteredDiffers?: 'differs',
): SeccompCase {
  const numbers = { x86_64: SYSCALL_NUMBERS.x86_64[call], aarch64: SYSCALL_NUMBERS.aarch64[call] }
  const present = Object.fromEntries(Object.entries(numbers).filter(([, value]) => value !== undefined))
  return {
    id: `py-seccomp-${call.replace(/_/g, '-')}`,
    language: 'python',
    call,
    code: `${PY_PRELUDE}probe(${JSON.stringify(call)}, ${JSON.stringify(present)}, ${args.join(', ')})\nprint('still running')`,
    expect,
    ...(unfilteredDiffers ? { unfilteredDiffers: true as const } : {}),
    source,
  }
}

const DOCKER = 'Docker default seccomp profile (moby profiles/seccomp/default.json)'
const CLONE_NEWUSER = 0x10000000
const SIGCHLD = 17

export const SECCOMP_CASES: readonly SeccompCase[] = [
  pythonCase(
    'ptrace',
    [0 /* PTRACE_TRACEME */, 0, 0, 0],
    'EPERM',
    'CVE-2019-13272 (PTRACE_TRACEME credential handling); ptrace reads and writes other processes',
    'differs',
  ),
  pythonCase('process_vm_readv', [1, 0, 0, 0, 0, 0], 'EPERM', `${DOCKER}: reads another process's memory`, 'differs'),
  pythonCase(
    'keyctl',
    [0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session keyring */, 0],
    'EPERM',
    'CVE-2016-0728 (keyring refcount overflow via keyctl KEYCTL_JOIN_SESSION_KEYRING); keyrings are not namespaced',
    'differs',
  ),
  pythonCase(
    'add_key',
    [0, 0, 0, 0, 0],
    'EPERM',
    'CVE-2016-0728, CVE-2017-6951 (add_key NULL type); keyrings are not namespaced',
    'differs',
  ),
  pythonCase('request_key', [0, 0, 0, 0], 'EPERM', 'CVE-2017-6951 family; keyrings are not namespaced', 'differs'),
  pythonCase(
    'bpf',
    [9999, 0, 0],
    'EPERM',
    'CVE-2021-3490, CVE-2021-31440 (eBPF verifier bounds): local root through bpf programs',
    'differs',
  ),
  pythonCase(
    'perf_event_open',
    [0, 0, -1, -1, 0],
    'EPERM',
    'CVE-2013-2094, CVE-2023-2235 (perf_events): local root; also a side channel',
    'differs',
  ),
  pythonCase(
    'userfaultfd',
    [1 /* UFFD_USER_MODE_ONLY */],
    'EPERM',
    'userfaultfd stalls kernel copies at will, the usual way to win exploit races (CVE-2021-22555 exploit, CVE-2016-5195 variants)',
    'differs',
  ),
  pythonCase(
    'io_uring_setup',
    [1, 0],
    'EPERM',
    'CVE-2022-29582, CVE-2023-2598 (io_uring): Google disabled it in ChromeOS, Android and production; Docker 25 denies it',
    'differs',
  ),
  pythonCase('mount', [0, 0, 0, 0, 0], 'EPERM', `${DOCKER}: mounts reshape what the sandbox sees`),
  pythonCase('umount2', [0, 0], 'EPERM', `${DOCKER}: unmounting a bind exposes what is under it`),
  pythonCase('pivot_root', [0, 0], 'EPERM', `${DOCKER}: changes the sandbox's root`),
  pythonCase('fsopen', [0, 0], 'EPERM', 'CVE-2022-0185 (legacy_parse_param heap overflow through fsopen/fsconfig in a user namespace)'),
  pythonCase('open_tree', [-100, 0, 0], 'EPERM', `${DOCKER} (new mount API: open_tree, move_mount, fsmount, fspick, mount_setattr)`),
  pythonCase(
    'unshare',
    [CLONE_NEWUSER],
    'EPERM',
    'CVE-2022-0185, CVE-2023-32233 (nf_tables): a fresh user namespace hands the code capabilities over new kernel surface',
    'differs',
  ),
  pythonCase('setns', [-1, 0], 'EPERM', `${DOCKER}: joins another namespace`, 'differs'),
  pythonCase(
    'clone',
    [CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0],
    'EPERM',
    'clone with CLONE_NEW* is unshare by another name (CVE-2022-0185 reached through either)',
    'differs',
  ),
  pythonCase(
    'clone3',
    [0, 0],
    'ENOSYS',
    'clone3 hides its flags behind a pointer seccomp cannot read: ENOSYS makes libc fall back to clone, which is checked (as Docker does)',
    'differs',
  ),
  pythonCase('kexec_load', [0, 0, 0, 0], 'EPERM', `${DOCKER}: loads a new kernel`),
  pythonCase('kexec_file_load', [-1, -1, 0, 0, 0], 'EPERM', `${DOCKER}: loads a new kernel`),
  pythonCase('init_module', [0, 0, 0], 'EPERM', `${DOCKER}: kernel code`),
  pythonCase('finit_module', [-1, 0, 0], 'EPERM', `${DOCKER}: kernel code`),
  pythonCase('delete_module', [0, 0], 'EPERM', `${DOCKER}: unloads kernel code`),
  pythonCase('acct', [0], 'EPERM', `${DOCKER}: process accounting is host-wide`),
  pythonCase('swapon', [0, 0], 'EPERM', `${DOCKER}: host swap`),
  pythonCase('swapoff', [0], 'EPERM', `${DOCKER}: host swap`),
  pythonCase('reboot', [0, 0, 0, 0], 'EPERM', `${DOCKER}: the host`),
  pythonCase('settimeofday', [0, 0], 'EPERM', `${DOCKER}: the host clock is not namespaced`),
  pythonCase('clock_settime', [0, 0], 'EPERM', `${DOCKER}: the host clock is not namespaced`),
  pythonCase(
    'open_by_handle_at',
    [-1, 0, 0],
    'EPERM',
    'the 2014 "shocker" Docker breakout: open_by_handle_at reads host files by inode handle',
    'differs',
  ),
  pythonCase(
    'name_to_handle_at',
    [-100, 0, 0, 0, 0],
    'EPERM',
    'the "shocker" breakout\'s other half: file handles outlive the mount namespace',
    'differs',
  ),
  pythonCase('iopl', [3], 'EPERM', `${DOCKER}: raw port I/O`),
  pythonCase('quotactl', [0, 0, 0, 0], 'EPERM', `${DOCKER}: host quotas`),
  pythonCase('lookup_dcookie', [0, 0, 0], 'EPERM', `${DOCKER}: kernel profiling interface`),
  pythonCase(
    'personality',
    [0x0040000 /* ADDR_NO_RANDOMIZE */],
    'EPERM',
    `${DOCKER} allows only 0, 0x8, 0x20000, 0x20008, 0xffffffff: ADDR_NO_RANDOMIZE turns ASLR off for what the code starts`,
    'differs',
  ),
  {
    id: 'bash-seccomp-unshare-r',
    language: 'bash',
    call: 'unshare',
    code: "unshare -r id -u 2>&1 | sed 's/^/unshare: /'\necho still running",
    expect: 'EPERM',
    unfilteredDiffers: true,
    source: 'util-linux unshare -r (a root user namespace); CVE-2022-0185 and every user-namespace kernel exploit start here',
  },
]
