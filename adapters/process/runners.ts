import { START_FORWARDER } from './egress-bridge'
/**
 * The programs that run inside the sandbox around the user's code. They are passed as arguments (`-c`/`-e`), read
 * the code from the file bwrap placed, and report the value (or the error, with its line) as one JSON document on
 * fd 5, so the host never has to parse a traceback to know what happened.
 */

import { nodeRunner, pythonRunner } from '../shared/interpreter-runners'

/** Where the code, the incoming files and the result channel live inside the sandbox. */
export const SANDBOX_PATHS = {
  code: '/run/execgate/code',
  filesIn: '/run/execgate/in.tar',
  workspace: '/workspace',
} as const

/**
 * Inherited descriptors: 3 carries the code, 4 the incoming files, 5 the result, 6 the outgoing files, 7 the seccomp
 * filter (read and closed by bwrap before the sandbox's first program starts).
 */
export const FD = { code: 3, filesIn: 4, result: 5, filesOut: 6, seccomp: 7 } as const

/** The run's rlimits, set by the launcher (dash's `ulimit`: one resource per call; -p is processes). */
export interface LauncherLimits {
  dataKiB: number
  cpuSeconds: number
  fileBlocks512: number
  openFiles: number
  /** Absent when the run shares its uid with others, where RLIMIT_NPROC would count their processes too. */
  processes?: number
}

/**
 * pid 1 of the sandbox (dash): sets the rlimits, unpacks the request's files, runs the program with the file
 * descriptors it must not touch closed, then packs the workspace back. When it exits the pid namespace ends and
 * the kernel kills anything the program left behind, daemons included. Setting the limits here rather than with
 * prlimit outside saves a process start per run; the code inherits them and cannot raise a hard limit.
 */
export function launcherScript(limits: LauncherLimits): string {
  const ulimits = [
    `ulimit -d ${limits.dataKiB}`,
    `ulimit -S -t ${limits.cpuSeconds}`,
    `ulimit -H -t ${limits.cpuSeconds + 1}`,
    `ulimit -f ${limits.fileBlocks512}`,
    `ulimit -n ${limits.openFiles}`,
    'ulimit -c 0',
    ...(limits.processes === undefined ? [] : [`ulimit -p ${limits.processes}`]),
  ]
  return [`${ulimits.join(' && ')} || exit 126`, ...LAUNCHER_BODY].join('\n')
}

const LAUNCHER_BODY = [
  'collect=$EXECGATE_COLLECT; direct=$EXECGATE_EXEC; mounted=$EXECGATE_MOUNTED; unset EXECGATE_COLLECT EXECGATE_EXEC EXECGATE_MOUNTED',
  'cd /workspace || exit 125',
  `if [ -f ${SANDBOX_PATHS.filesIn} ]; then tar -x -f ${SANDBOX_PATHS.filesIn} ` +
    `--no-same-owner --no-same-permissions -C /workspace || exit 125; fi`,
  // Nothing to collect and a runner that handles SIGXCPU itself: the program replaces the launcher as pid 1 (one
  // fork less). pid 1 ignores signals it has no handler for, hence the runners' own SIGXCPU handlers.
  // A run with network starts the egress forwarder first (adapters/process/egress-bridge.ts).
  START_FORWARDER,
  'if [ "$direct" = 1 ]; then exec "$@" 6>&-; fi',
  '"$@" 6>&-',
  'rc=$?',
  // Uploaded files bound in read-only are the caller's own input: never sent back as files the run wrote.
  'if [ "$collect" = 1 ]; then printf "%s\\n" "$mounted" > /tmp/.execgate-mounted; tar -c ' +
    '-f - --anchored --no-wildcards -X /tmp/.execgate-mounted -C /workspace . >&6 2>/dev/null; fi',
  'exit $rc',
]

/** The shared runners, reading the code from the file bwrap placed and reporting on fd 5. */
export const PYTHON_RUNNER = pythonRunner({
  prelude: '',
  load: `open('${SANDBOX_PATHS.code}', encoding='utf-8').read()`,
  send:
    `def _send(doc):\n    data = doc.encode('utf-8', 'surrogatepass')\n    while ` +
    `data:\n        data = data[os.write(${FD.result}, data):]`,
  streamOutputs: true,
})

export const NODE_RUNNER = nodeRunner({
  prelude: '',
  load: `fs.readFileSync('${SANDBOX_PATHS.code}', 'utf8')`,
  send: `(text) => fs.writeSync(${FD.result}, text)`,
})
