/**
 * The system calls sandboxed code never needs, with their numbers on the two architectures execgate's OS tiers run
 * on (x86_64: arch/x86/entry/syscalls/syscall_64.tbl; aarch64: include/uapi/asm-generic/unistd.h). A call absent
 * from an architecture (iopl on aarch64) is simply not in its table. The list is Docker's default seccomp profile's
 * deny-list (moby profiles/seccomp/default.json: calls it allows only with a capability the sandbox never has), plus
 * io_uring (denied by Docker since 25.0: its own path to the kernel around this filter's checks).
 */

export type SeccompArchitecture = 'x86_64' | 'aarch64'

/** Why each call is refused, as `execgate policy --adapter process` prints it. */
export const DENIED_SYSCALL_GROUPS: Readonly<Record<string, readonly string[]>> = {
  'process inspection': ['ptrace', 'process_vm_readv', 'process_vm_writev', 'kcmp', 'pidfd_getfd'],
  'kernel keyrings': ['keyctl', 'add_key', 'request_key'],
  'kernel programs and tracing': ['bpf', 'perf_event_open', 'lookup_dcookie', 'fanotify_init'],
  'page-fault handling': ['userfaultfd'],
  'io_uring': ['io_uring_setup', 'io_uring_enter', 'io_uring_register'],
  'mounts': ['mount', 'umount2', 'pivot_root', 'move_mount', 'open_tree', 'fsopen', 'fsconfig', 'fsmount', 'fspick', 'mount_setattr'],
  'namespaces': ['unshare', 'setns'],
  'kexec': ['kexec_load', 'kexec_file_load'],
  'kernel modules': ['init_module', 'finit_module', 'delete_module', 'create_module', 'get_kernel_syms', 'query_module'],
  'system administration': ['acct', 'swapon', 'swapoff', 'reboot', 'quotactl', 'quotactl_fd', 'nfsservctl', 'syslog', 'vhangup', 'sysfs', '_sysctl', 'uselib', 'ustat'],
  'clocks': ['settimeofday', 'clock_settime', 'clock_adjtime'],
  'file handles': ['name_to_handle_at', 'open_by_handle_at'],
  'port I/O': ['iopl', 'ioperm'],
  'NUMA memory policy': ['get_mempolicy', 'set_mempolicy', 'mbind', 'move_pages', 'migrate_pages'],
}

/** Numbers of every call the filter names (denied, or checked by argument), per architecture. */
export const SYSCALL_NUMBERS: Readonly<Record<SeccompArchitecture, Readonly<Record<string, number>>>> = {
  x86_64: {
    ptrace: 101, process_vm_readv: 310, process_vm_writev: 311, kcmp: 312, pidfd_getfd: 438,
    keyctl: 250, add_key: 248, request_key: 249,
    bpf: 321, perf_event_open: 298, lookup_dcookie: 212, fanotify_init: 300,
    userfaultfd: 323,
    io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427,
    mount: 165, umount2: 166, pivot_root: 155, move_mount: 429, open_tree: 428, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433, mount_setattr: 442,
    unshare: 272, setns: 308,
    kexec_load: 246, kexec_file_load: 320,
    init_module: 175, finit_module: 313, delete_module: 176, create_module: 174, get_kernel_syms: 177, query_module: 178,
    acct: 163, swapon: 167, swapoff: 168, reboot: 169, quotactl: 179, quotactl_fd: 443, nfsservctl: 180, syslog: 103, vhangup: 153, sysfs: 139, _sysctl: 156, uselib: 134, ustat: 136,
    settimeofday: 164, clock_settime: 227, clock_adjtime: 305,
    name_to_handle_at: 303, open_by_handle_at: 304,
    iopl: 172, ioperm: 173,
    get_mempolicy: 239, set_mempolicy: 238, mbind: 237, move_pages: 279, migrate_pages: 256,
    clone: 56, clone3: 435, personality: 135,
  },
  aarch64: {
    ptrace: 117, process_vm_readv: 270, process_vm_writev: 271, kcmp: 272, pidfd_getfd: 438,
    keyctl: 219, add_key: 217, request_key: 218,
    bpf: 280, perf_event_open: 241, lookup_dcookie: 18, fanotify_init: 262,
    userfaultfd: 282,
    io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427,
    mount: 40, umount2: 39, pivot_root: 41, move_mount: 429, open_tree: 428, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433, mount_setattr: 442,
    unshare: 97, setns: 268,
    kexec_load: 104, kexec_file_load: 294,
    init_module: 105, finit_module: 273, delete_module: 106,
    acct: 89, swapon: 224, swapoff: 225, reboot: 142, quotactl: 60, quotactl_fd: 443, nfsservctl: 42, syslog: 116, vhangup: 58,
    settimeofday: 170, clock_settime: 112, clock_adjtime: 266,
    name_to_handle_at: 264, open_by_handle_at: 265,
    get_mempolicy: 236, set_mempolicy: 237, mbind: 235, move_pages: 239, migrate_pages: 238,
    clone: 220, clone3: 435, personality: 92,
  },
}

/** `AUDIT_ARCH_*` from linux/audit.h: what `seccomp_data.arch` holds for a call made through each ABI. */
export const AUDIT_ARCH: Readonly<Record<SeccompArchitecture, number>> = {
  x86_64: 0xc000003e,
  aarch64: 0xc00000b7,
}

/** x32 calls arrive with this bit set in the number under AUDIT_ARCH_X86_64: a second table to slip past a filter. */
export const X32_SYSCALL_BIT = 0x40000000

/** CLONE_NEW* flags (linux/sched.h): a clone that creates a namespace is as good as unshare. */
export const CLONE_NAMESPACE_FLAGS = {
  CLONE_NEWTIME: 0x00000080,
  CLONE_NEWNS: 0x00020000,
  CLONE_NEWCGROUP: 0x02000000,
  CLONE_NEWUTS: 0x04000000,
  CLONE_NEWIPC: 0x08000000,
  CLONE_NEWUSER: 0x10000000,
  CLONE_NEWPID: 0x20000000,
  CLONE_NEWNET: 0x40000000,
} as const

/**
 * personality() values Docker allows (the rest can switch off ASLR, READ_IMPLIES_EXEC and the like): PER_LINUX,
 * PER_LINUX32, UNAME26, PER_LINUX32|UNAME26, and 0xffffffff (a query).
 */
export const SAFE_PERSONALITIES = [0x0, 0x8, 0x20000, 0x20008, 0xffffffff] as const
