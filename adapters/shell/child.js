'use strict'
/**
 * A shell child process: runs one bash script at a time in just-bash over a fresh in-memory filesystem, and
 * answers over IPC. just-bash says it is not robust against denial of service from its input, and V8 aborts the
 * whole process when a heap limit is reached at the wrong moment (a worker thread's resourceLimits took the host
 * down with it in our tests), so each script runs here: a process with its own --max-old-space-size, an empty
 * environment, Node's permission model (reads of node_modules and this file only, no child processes, no
 * workers, no writes), killed by the parent at the deadline. Plain JavaScript: it is forked as is, from sources
 * and from dist/ alike.
 *
 * argv: [justBashEntry]. Messages in: {type:'run', ...ShellJob} | {type:'cancel', id}. Out: ready | result.
 */
const { Bash, InMemoryFs, defineCommand } = require(process.argv[2])

const WORKSPACE = '/workspace'
const MUTATING = new Set(['writeFile', 'appendFile', 'mkdir', 'rm', 'cp', 'mv', 'chmod', 'utimes'])
// Links could make a path outside /workspace write through to a file inside it; without write access none are made.
const LINKING = new Set(['symlink', 'link'])

const inWorkspace = (path) => typeof path === 'string' && (path === WORKSPACE || path.startsWith(`${WORKSPACE}/`))

function refusal(method, path, access) {
  const why = access === 'none' ? 'the policy grants no filesystem access' : 'the policy grants read-only filesystem access'
  return Object.assign(new Error(`${method} ${path}: read-only file system (${why})`), { code: 'EROFS' })
}

/**
 * The policy's `filesystem` over /workspace: `sandboxed` writes, `read_only` and `none` (which also starts with no
 * files) refuse every change there. Outside /workspace (/tmp, /dev/null) is scratch that ends with the run; the
 * host's files are never reachable, since everything is just-bash's in-memory tree.
 */
function guardWorkspace(memory, access) {
  if (access === 'sandboxed') return memory
  return new Proxy(memory, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (typeof property !== 'string' || typeof value !== 'function') return value
      if (LINKING.has(property)) return async (...args) => Promise.reject(refusal(property, String(args[1]), access))
      if (!MUTATING.has(property)) return value.bind(target)
      return async (...args) => {
        const touched = args.slice(0, 2).find(inWorkspace)
        if (touched !== undefined) throw refusal(property, String(touched), access)
        return value.apply(target, args)
      }
    },
  })
}

const fileBytes = (file) => Buffer.from(file.content, file.encoding === 'base64' ? 'base64' : 'utf8')
const strictUtf8 = new TextDecoder('utf-8', { fatal: true })
function toWorkspaceFile(path, bytes) {
  try {
    return { path, content: strictUtf8.decode(bytes) }
  } catch {
    return { path, content: Buffer.from(bytes).toString('base64'), encoding: 'base64' }
  }
}

async function placeFiles(memory, files) {
  const placed = new Map()
  await memory.mkdir(WORKSPACE, { recursive: true })
  for (const file of files) {
    const bytes = fileBytes(file)
    const full = `${WORKSPACE}/${file.path}`
    await memory.mkdir(full.slice(0, full.lastIndexOf('/')), { recursive: true })
    await memory.writeFile(full, bytes)
    placed.set(file.path, bytes)
  }
  return placed
}

/** Regular files under /workspace the run created or changed (links are not followed). */
async function changedFiles(memory, placed) {
  const changed = []
  for (const path of memory.getAllPaths()) {
    if (!path.startsWith(`${WORKSPACE}/`)) continue
    if (!(await memory.lstat(path)).isFile) continue
    const bytes = Buffer.from(await memory.readFileBuffer(path))
    const relative = path.slice(WORKSPACE.length + 1)
    const before = placed.get(relative)
    if (!before || !before.equals(bytes)) changed.push(toWorkspaceFile(relative, bytes))
  }
  return changed
}

/**
 * What the run did to the workspace, for a persistent sandbox's copy of it: files created or changed, and files that
 * were there before and are not now.
 */
async function workspaceChanges(memory, placed) {
  const changed = await changedFiles(memory, placed)
  const deleted = []
  for (const path of placed.keys()) {
    const stat = await memory.lstat(`${WORKSPACE}/${path}`).catch(() => undefined)
    if (!stat || !stat.isFile) deleted.push(path)
  }
  return { changed, deleted }
}

/**
 * `yes`, which just-bash lacks. Real `yes` runs until its reader closes the pipe; just-bash hands whole outputs
 * between commands, so this one stops after `limitBytes`: enough for `yes | head -n 100000`, and a flood still
 * passes the output cap. just-bash accounts output per byte (~150 ms a MiB on this machine kind when it is busy), so
 * the limit is kept near what a flood needs: a flood of 8 MiB ran past a 1 s limit and ended `timeout`, not
 * `output_limit`.
 */
function yesCommand(limitBytes) {
  return defineCommand('yes', async (args) => {
    const line = `${args.length > 0 ? args.join(' ') : 'y'}\n`
    return { stdout: line.repeat(Math.max(1, Math.floor(limitBytes / line.length))), stderr: '', exitCode: 0 }
  })
}

const MIB = 1024 * 1024
const stopped = (job, cancelled) =>
  cancelled
    ? { status: 'cancelled', error: { type: 'Cancelled', message: 'the run was cancelled' } }
    : { status: 'timeout', error: { type: 'TimeoutError', message: `execution passed the ${job.timeoutMs} ms time limit` } }

/**
 * just-bash reports its own limits only as text on stderr with exit 126 (124 for its deadline), so those messages
 * are read to give each its status; every other non-zero exit is the script's own error.
 */
// What just-bash's own limits say when they stop a script (exit code 126): read as the memory limit.
const LIMIT_MESSAGE = new RegExp(
  /(output size|string length|heredoc size|live bytes|input bytes|filesystem bytes|array elements).*(limit|exceeded)/.source +
    /|exceeded.*(output size|string length)/.source,
  'i',
)

function fromExit(job, exitCode, stderr) {
  if (exitCode === 0) return { status: 'ok' }
  const lastLine = stderr.trim().split('\n').pop() || ''
  if (exitCode === 124 && /execution deadline/.test(lastLine)) return stopped(job, false)
  if (exitCode === 126 && LIMIT_MESSAGE.test(lastLine)) {
    return {
      status: 'memory_limit',
      error: { type: 'MemoryError', message: `memory limit reached (${Math.round(job.memoryBytes / MIB)} MiB): ${lastLine}` },
    }
  }
  return {
    status: 'error',
    error: { type: 'ExitError', message: `the script exited with code ${exitCode}${lastLine ? `: ${lastLine}` : ''}` },
  }
}

let current // { id, abort }

/** Everything an interpreter is built from; jobs with the same shape can use an interpreter built ahead for it. */
const shapeOf = (job) =>
  JSON.stringify([
    job.filesystem,
    job.memoryBytes,
    job.outputBytes,
    job.timeoutMs,
    job.maxCallDepth,
    job.maxIterations,
    job.maxWorkspaceBytes,
    job.commands,
  ])

/**
 * A fresh interpreter over a fresh, empty filesystem for one run. Its own clock is the policy's whole wall time; the
 * run's remaining time (less, when it waited) is held by the abort below and by the parent's kill.
 */
function interpreter(job) {
  const memory = new InMemoryFs()
  // just-bash's own data limits sit below the heap cap, so a big string or pipe fails with a clear message first;
  // the heap cap (--max-old-space-size) is what holds when they do not.
  const dataBytes = Math.floor(job.memoryBytes / 4)
  // A string grown by doubling (`x="$x$x"`) is stopped at this length, but the heap then holds the string, its
  // halves and the refused doubling: at a quarter of a 128 MiB cap the heap stood at 134 MB after the refusal, at the
  // cap itself, and the process sometimes died of it on a busy machine (a later exec then answered memory_limit for a
  // flood). An eighth leaves it at 70 MB.
  const stringBytes = Math.floor(job.memoryBytes / 8)
  const bash = new Bash({
    fs: guardWorkspace(memory, job.filesystem),
    cwd: WORKSPACE,
    env: { HOME: WORKSPACE, PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' },
    commands: job.commands,
    customCommands: [yesCommand(Math.min(Math.floor(dataBytes / 4), Math.max(2 * job.outputBytes, MIB)))],
    executionLimits: {
      maxExecutionTimeMs: Math.max(1, Math.floor(job.timeoutMs)),
      maxCallDepth: job.maxCallDepth,
      maxCommandCount: job.maxIterations,
      maxLoopIterations: job.maxIterations,
      maxAwkIterations: job.maxIterations,
      maxSedIterations: job.maxIterations,
      maxJqIterations: job.maxIterations,
      maxStringLength: stringBytes,
      maxHeredocSize: dataBytes,
      maxOutputSize: dataBytes,
      maxLiveBytes: dataBytes,
      maxInputBytes: dataBytes,
      maxFileSystemBytes: Math.min(dataBytes, job.maxWorkspaceBytes || dataBytes),
    },
  })
  return { shape: shapeOf(job), memory, bash }
}

/**
 * The next run's interpreter, built while the child is idle with the last job's shape (constructing one is ~0.55 ms
 * of a trivial run's ~1.5 ms here, docs/benchmarks.md). It is used by one run only and never saw another.
 */
let spare

function buildSpare(job) {
  setImmediate(() => {
    if (!current && !spare) spare = interpreter(job)
  })
}

async function run(job) {
  const started = Date.now()
  const built = spare && spare.shape === shapeOf(job) ? spare : interpreter(job)
  spare = undefined
  const { memory, bash } = built
  const placed = await placeFiles(memory, job.filesystem === 'none' ? [] : job.files)
  const abort = new AbortController()
  current = { id: job.id, abort, cancelled: false }
  const deadline = setTimeout(() => abort.abort(), Math.max(0, job.remainingMs - (Date.now() - started)))
  try {
    let result
    try {
      result = await bash.exec(job.script, { signal: abort.signal, ...(job.stdin !== undefined ? { stdin: job.stdin } : {}) })
    } catch (error) {
      // just-bash lets a failed redirection write (`> file`) escape exec instead of failing the command; a refusal
      // of ours ends the script there, as `set -e` would, with the reason.
      if (!error || error.code !== 'EROFS') throw error
      process.send({
        type: 'result',
        id: job.id,
        stdout: '',
        stderr: '',
        status: 'error',
        error: { type: 'ReadOnlyFilesystem', message: `the script stopped: ${error.message}` },
      })
      return
    }
    let outcome =
      abort.signal.aborted && result.exitCode !== 0 ? stopped(job, current.cancelled) : fromExit(job, result.exitCode, result.stderr)
    const outputBytes = Buffer.byteLength(result.stdout) + Buffer.byteLength(result.stderr)
    // A flood stopped by the clock or a data limit was stopped by its output first: say so, as a killed sandbox would.
    if ((outcome.status === 'timeout' || outcome.status === 'memory_limit') && outputBytes > job.outputBytes) {
      outcome = { status: 'output_limit', error: { type: 'OutputLimit', message: `output passed the ${job.outputBytes}-byte limit` } }
    }
    // A persistent sandbox keeps what a script did when it ended on its own, its own error included; a script a
    // limit stopped leaves the workspace as it was.
    if (job.keepWorkspace) {
      const kept = job.filesystem === 'sandboxed' && (outcome.status === 'ok' || outcome.status === 'error')
      process.send({
        type: 'result',
        id: job.id,
        stdout: result.stdout,
        stderr: result.stderr,
        ...outcome,
        ...(kept ? { workspace: await workspaceChanges(memory, placed) } : {}),
      })
      return
    }
    const files = job.filesystem === 'sandboxed' && outcome.status === 'ok' ? await changedFiles(memory, placed) : undefined
    process.send({
      type: 'result',
      id: job.id,
      stdout: result.stdout,
      stderr: result.stderr,
      ...outcome,
      ...(files && files.length ? { files } : {}),
    })
  } finally {
    clearTimeout(deadline)
    current = undefined
    buildSpare(job)
  }
}

process.on('message', (message) => {
  if (message.type === 'cancel') {
    if (current && current.id === message.id) {
      current.cancelled = true
      current.abort.abort()
    }
    return
  }
  run(message).catch((error) => {
    process.send({
      type: 'result',
      id: message.id,
      stdout: '',
      stderr: '',
      status: 'internal_error',
      error: { type: 'InternalError', message: String((error && error.message) || error) },
    })
  })
})
process.on('disconnect', () => process.exit(0))

// Warm the interpreter once so the first request does not pay for just-bash's lazy command loading.
new Bash({ fs: new InMemoryFs() }).exec('echo warm | wc -c >/dev/null').then(
  () => process.send({ type: 'ready' }),
  (error) => process.send({ type: 'failed', reason: String((error && error.message) || error) }),
)
