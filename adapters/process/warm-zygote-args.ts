import fs from 'node:fs'

/** Host files that are not secrets and the data stack reads: the loader's cache, libblas's alternative, matplotlibrc, fonts. */
const HOST_FILES = ['/etc/ld.so.cache', '/etc/alternatives', '/etc/matplotlibrc', '/etc/fonts'].filter((file) => fs.existsSync(file))

/**
 * bubblewrap's arguments for the warm data interpreter (docs/data.md#the-warm-data-interpreter): its own namespaces,
 * read-only /usr, the few host files above, an empty environment but for what the data stack needs, the per-run
 * folders read-only at /runs, and the zygote's program as an argument.
 */
export function zygoteArgs(options: { asRoot: boolean; pythonPath: string; runsFolder: string; program: string }): string[] {
  const namespaces = options.asRoot
    ? [
        '--unshare-pid',
        '--unshare-net',
        '--unshare-ipc',
        '--unshare-uts',
        '--unshare-cgroup-try',
        '--cap-add',
        'CAP_SETUID',
        '--cap-add',
        'CAP_SETGID',
        '--cap-add',
        'CAP_KILL',
      ]
    : ['--unshare-all']
  return [
    ...namespaces,
    '--die-with-parent',
    '--new-session',
    '--hostname',
    'sandbox',
    '--clearenv',
    '--setenv',
    'PATH',
    '/usr/bin:/bin',
    '--setenv',
    'HOME',
    '/tmp',
    '--setenv',
    'LANG',
    'C.UTF-8',
    '--setenv',
    'MPLBACKEND',
    'Agg',
    '--setenv',
    'MPLCONFIGDIR',
    '/tmp/matplotlib',
    '--setenv',
    'XDG_CACHE_HOME',
    '/tmp/cache',
    // One BLAS thread: a fork copies only the calling thread, and each run's process cap counts threads.
    '--setenv',
    'OPENBLAS_NUM_THREADS',
    '1',
    '--setenv',
    'OMP_NUM_THREADS',
    '1',
    '--ro-bind',
    '/usr',
    '/usr',
    '--tmpfs',
    '/usr/local',
    '--symlink',
    'usr/bin',
    '/bin',
    '--symlink',
    'usr/lib',
    '/lib',
    '--symlink',
    'usr/lib64',
    '/lib64',
    ...HOST_FILES.flatMap((file) => ['--ro-bind', file, file]),
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--size',
    String(64 * 2 ** 20),
    '--tmpfs',
    '/tmp',
    '--dir',
    '/workspace',
    '--ro-bind',
    options.runsFolder,
    '/runs',
    '--chdir',
    '/',
    // The program as an argument, not a file: nothing of it sits in the sandbox's filesystem for a run to read.
    options.pythonPath,
    '-I',
    '-B',
    '-u',
    '-c',
    options.program,
  ]
}
