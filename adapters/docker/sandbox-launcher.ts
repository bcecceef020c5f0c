/** The shell programs around a persistent docker sandbox: its pid 1 and each exec's launcher, and the exec users. */

/**
 * pid 1 of the sandbox's container (bash): blocks reading its stdin, a pipe the engine holds open (`OpenStdin`), so it
 * never forks. bash reaps every child it is handed, so processes an exec leaves behind do not pile up as zombies
 * against the pids limit; on SIGUSR1 from the engine it kills every process of the workspace's user with its `kill`
 * builtin. That stop needs no new process, so it works when a fork bomb holds every pid of the container and a
 * `docker exec` of `kill` could not start. (dash was tried first: it exits when a fork fails, which took the keeper
 * down under a fork bomb, and it does not reap children it did not start.)
 */
export const KEEPER = 'trap "kill -9 -1" USR1; trap "exit 0" TERM; while :; do read -r _ || sleep 1; done'

/**
 * Around every exec (dash): whatever an earlier exec left is killed first (nothing may outlive its exec), the exec's
 * rlimits are set, the program runs, its leftovers (background jobs, daemons) are killed, and the exit record is
 * written on both streams. `kill -9 -1` reaches every process of the exec's user but the launcher itself and pid 1.
 */
export function sandboxLauncher(
  limits: { dataKiB: number; cpuSeconds: number; fileBlocks512: number; processes?: number },
  egressStartLine?: string,
): string {
  const processes = limits.processes === undefined ? '' : ` && ulimit -p ${limits.processes}`
  return [
    'nonce=$EXECGATE_NONCE; ready=$EXECGATE_LAUNCHER_READY; unset EXECGATE_LAUNCHER_READY',
    'kill -9 -1 2>/dev/null',
    `ulimit -d ${limits.dataKiB} && ulimit -S -t ${limits.cpuSeconds} && ulimit -H -t ` +
      `${limits.cpuSeconds + 1} && ulimit -f ${limits.fileBlocks512} && ulimit -c 0${processes} ` +
      `|| exit 126`,
    'umask 027',
    // An exec with network: its forwarder (the exec user's, so the kill at the end takes it too) before the program.
    ...(egressStartLine ? [egressStartLine] : []),
    `if [ "$ready" = 1 ]; then unset EXECGATE_NONCE; printf '\\036%sready\\n' "$nonce"; fi`,
    '"$@"',
    'rc=$?',
    'kill -9 -1 2>/dev/null',
    `printf '\\036%sexit %d\\n' "$nonce" "$rc" >&2`,
    `printf '\\036%sexit %d\\n' "$nonce" "$rc"`,
    'exit $rc',
  ].join('\n')
}

/**
 * The users an exec runs as, by the policy's `filesystem`: the workspace (mode 0750) belongs to the configured user,
 * whose execs write it; `read_only` execs run as another uid in its group (read, no write), `none` execs as a uid and
 * group of their own (no access at all).
 */
export function execUsers(user: string): Record<'sandboxed' | 'read_only' | 'none', string> {
  const [uid, gid] = user.split(':').map(Number) as [number, number]
  const other = uid > 1 ? uid - 1 : uid + 1
  return { sandboxed: user, read_only: `${other}:${gid}`, none: `${other}:${other}` }
}
