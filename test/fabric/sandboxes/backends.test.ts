import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate, type ExecutionResult, type Sandbox } from '../../../src'
import { DockerAdapter } from '../../../adapters/docker'
import { PODMAN_SOCKET, containersOf, foldersUnder, mountsUnder, processesOfUids, uidOf, until } from './resources'

/**
 * Persistent sandboxes on the real backends: podman's Docker API (scripts/setup/podman.sh), bubblewrap
 * (scripts/setup/bubblewrap.sh) and the native shell. Each backend gets the same cases: state kept across execs,
 * limits held in every exec with the sandbox usable after each, files in and out, an idle sandbox stopped and its
 * resources freed.
 */

interface Backend {
  adapter: 'shell' | 'process' | 'docker'
  /** Runs real processes (background jobs, a process cap). */
  processes: boolean
  /** Streams output while an exec runs. */
  streams: boolean
  programs: boolean
}

const BACKENDS: Backend[] = [
  { adapter: 'shell', processes: false, streams: false, programs: false },
  { adapter: 'process', processes: true, streams: true, programs: true },
  { adapter: 'docker', processes: true, streams: true, programs: true },
]

let execgate: Execgate
let root: string

beforeAll(async () => {
  const availability = await new DockerAdapter({ socketPath: PODMAN_SOCKET }).checkAvailability()
  if (availability.status !== 'available')
    throw new Error(`the docker adapter's engine is not ready (run scripts/setup/podman.sh): ${availability.reason}`)
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-sandboxes-test-'))
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['shell', 'process', 'docker'] },
      adapters: { docker: { socketPath: PODMAN_SOCKET }, process: { persistentDir: root } },
      readiness: { enabled: false },
      log: { level: 'silent' },
      sandboxes: { maxPerTenant: 16 },
    },
  })
}, 120_000)

afterAll(async () => {
  await execgate?.dispose()
  fs.rmSync(root, { recursive: true, force: true })
})

/** Whether the backend still holds anything of the sandbox outside this process. */
async function backendHolds(backend: Backend, sandbox: Sandbox): Promise<boolean> {
  if (backend.adapter === 'docker') return (await containersOf([sandbox.id])).length > 0
  if (backend.adapter === 'process') return foldersUnder(root).includes(sandbox.id) || mountsUnder(path.join(root, sandbox.id)).length > 0
  return false
}

/** The status, with the result's message, error and stderr in the failure (toMatchObject would show the status only). */
function expectStatus(result: ExecutionResult, status: ExecutionResult['status']): void {
  const seen = `${result.status}: ${result.message ?? ''} ${JSON.stringify(result.error ?? null)} stderr: ${result.stderr.slice(-300)}`
  expect(seen).toMatch(new RegExp(`^${status}: `))
}

describe.each(BACKENDS)('$adapter sandbox', (backend) => {
  let sandbox: Sandbox
  beforeAll(async () => {
    sandbox = await execgate.sandboxes.start({
      adapter: backend.adapter,
      policy: { maxProcesses: 8 },
      files: [{ path: 'data.csv', content: 'date,price\n2026-01-02,5\n2025-03-04,7\n2026-05-06,11\n' }],
    })
  }, 60_000)
  afterAll(() => sandbox?.stop())

  test('a file one exec writes is read by the next; cd and variables do not leak between execs', async () => {
    const first = await sandbox.exec('mkdir -p out && grep -c 2026 data.csv > out/count.txt && cd out && export LEAK=yes && pwd')
    expectStatus(first, 'ok')
    expect(first.stdout).toBe('/workspace/out\n')
    const second = await sandbox.exec('pwd; cat out/count.txt; echo "LEAK=${LEAK:-unset}"')
    expectStatus(second, 'ok')
    expect(second.stdout).toBe('/workspace\n2\nLEAK=unset\n')
    expect(second.route?.reason).toBe(`sandbox ${sandbox.id}`)
    expect(second.adapter).toBe(backend.adapter)
  })

  test('limits hold in every exec, and the sandbox is usable after each', async () => {
    await sandbox.writeFile('keep.txt', 'kept\n')
    const alive = async () => {
      const check = await sandbox.exec('cat keep.txt')
      expectStatus(check, 'ok')
      expect(check.stdout).toBe('kept\n')
    }
    const loop = await sandbox.exec({ command: 'while :; do :; done', timeoutMs: 1000 })
    expectStatus(loop, 'timeout')
    await alive()
    // A doubling string: every backend's bash runs out (yes is bounded on the native shell, so it is no bomb there).
    const bomb = await sandbox.exec('x=y; while :; do x="$x$x"; done')
    expectStatus(bomb, 'memory_limit')
    await alive()
    const flood = await sandbox.exec('yes')
    expectStatus(flood, 'output_limit')
    expect(flood.truncated).toBe(true)
    await alive()
    // No network: no route out of the namespace or container; the native shell has no network command at all
    // (its /dev/tcp is a file of its in-memory tree, so curl is the probe there).
    const probe = backend.processes ? 'exec 3<>/dev/tcp/1.1.1.1/53 && echo CONNECTED' : 'curl -s http://1.1.1.1 && echo CONNECTED'
    const network = await sandbox.exec({ command: probe, timeoutMs: 3000 })
    expect(network.status).not.toBe('ok')
    expect(network.stdout).not.toContain('CONNECTED')
    await alive()
    const readOnly = await sandbox.exec({ command: 'cat keep.txt && echo changed > keep.txt', policy: { filesystem: 'read_only' } })
    expect(readOnly.status).toBe('error')
    const noAccess = await sandbox.exec({ command: 'cat keep.txt', policy: { filesystem: 'none' } })
    expect(noAccess.status).toBe('error')
    expect(noAccess.stdout).not.toContain('kept')
    await alive()
    // An exec may tighten the sandbox's policy, never loosen it.
    const loosened = await sandbox.exec({ command: 'echo hi', timeoutMs: 60_000 })
    expect(loosened).toMatchObject({ status: 'policy_violation', error: { code: 'EXECGATE_POLICY_LOOSENED' } })
  }, 120_000)

  test('files in and out: bytes kept exactly, listed, deleted; paths cannot leave the workspace', async () => {
    const bytes = Buffer.from([0, 1, 2, 0xfe, 0xff, 10, 13])
    await sandbox.writeFile('bin/blob.bin', bytes)
    expect(Buffer.compare(await sandbox.readFile('bin/blob.bin'), bytes)).toBe(0)
    const sized = await sandbox.exec('wc -c < bin/blob.bin')
    expect(sized.stdout.trim()).toBe('7')
    await sandbox.exec('echo made-inside > inside.txt')
    const listed = (await sandbox.listFiles()).map((entry) => entry.path)
    expect(listed).toEqual(expect.arrayContaining(['bin/blob.bin', 'data.csv', 'inside.txt']))
    expect(await sandbox.readFiles(['inside.txt', 'bin/blob.bin'])).toEqual([
      { path: 'inside.txt', content: 'made-inside\n' },
      { path: 'bin/blob.bin', content: bytes.toString('base64'), encoding: 'base64' },
    ])
    expect(await sandbox.deleteFile('inside.txt')).toBe(true)
    expect(await sandbox.deleteFile('inside.txt')).toBe(false)
    await expect(sandbox.readFile('inside.txt')).rejects.toMatchObject({ code: 'EXECGATE_WORKSPACE_NOT_FOUND' })
    await expect(sandbox.writeFile('../escape.txt', 'x')).rejects.toMatchObject({ code: 'EXECGATE_WORKSPACE_PATH' })
    await expect(sandbox.readFile('/etc/passwd')).rejects.toMatchObject({ code: 'EXECGATE_WORKSPACE_PATH' })
  }, 60_000)

  test('a cancelled exec ends cancelled and the sandbox lives on', async () => {
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 300)
    const cancelled = await sandbox.exec({ command: 'while :; do :; done', timeoutMs: 4000 }, { signal: controller.signal })
    expectStatus(cancelled, 'cancelled')
    expectStatus(await sandbox.exec('true'), 'ok')
  }, 30_000)

  test('execs run one at a time, in the order they were called', async () => {
    const slow = sandbox.exec('for i in 1 2 3 4 5 6 7 8 9 10; do echo slow >> order.txt; done')
    const fast = sandbox.exec('echo fast >> order.txt')
    await Promise.all([slow, fast])
    expect((await sandbox.readFile('order.txt')).toString()).toBe('slow\n'.repeat(10) + 'fast\n')
  })

  if (backend.processes) {
    test('background processes end with their exec, and the process cap holds', async () => {
      const started = await sandbox.exec('(while :; do date +%s%N > beat; sleep 0.05; done) & echo started')
      expect(started.stdout).toBe('started\n')
      await new Promise((resolve) => setTimeout(resolve, 300))
      const first = (await sandbox.readFile('beat').catch(() => Buffer.from(''))).toString()
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect((await sandbox.readFile('beat').catch(() => Buffer.from(''))).toString()).toBe(first)
      const forks = await sandbox.exec({ command: 'for i in $(seq 60); do sleep 5 & done; wait', timeoutMs: 4000 })
      expect(forks.stderr).toMatch(/fork|Resource temporarily unavailable|retry/i)
      expectStatus(await sandbox.exec('echo after'), 'ok')
    }, 60_000)
  }

  if (backend.streams) {
    test('output streams while the exec runs', async () => {
      const chunks: string[] = []
      const result = await sandbox.exec('echo one; sleep 0.3; echo two >&2', {
        onOutput: (stream, chunk) => chunks.push(`${stream}:${chunk}`),
      })
      expectStatus(result, 'ok')
      expect(chunks).toEqual(['stdout:one\n', 'stderr:two\n'])
    })
  }

  if (backend.programs) {
    test('Python and JavaScript run in the same workspace, under the import allow-list', async () => {
      const python = await sandbox.exec({
        language: 'python',
        code: "open('from-python.txt', 'w').write('py')\nsum(int(line.split(',')[1]) for line in open('data.csv').read().splitlines()[1:])",
      })
      expectStatus(python, 'ok')
      expect(python.value).toBe(23)
      expect((await sandbox.exec('cat from-python.txt')).stdout).toBe('py')
      const javascript = await sandbox.exec({ language: 'javascript', code: '[1, 2, 3].map((n) => n * 2)' })
      expect(javascript.value).toEqual([2, 4, 6])
      const refused = await sandbox.exec({ language: 'python', code: 'import os\nos.listdir()' })
      expect(refused.status).toBe('policy_violation')
    }, 60_000)
  } else {
    test('a language the backend does not run is refused', async () => {
      const refused = await sandbox.exec({ language: 'python', code: '1' })
      expect(refused).toMatchObject({ status: 'invalid_request', error: { code: 'EXECGATE_LANGUAGE_UNSUPPORTED' } })
    })
  }

  test('an idle sandbox is stopped and its resources freed', async () => {
    const idle = await execgate.sandboxes.start({ adapter: backend.adapter, idleTimeoutMs: 1500 })
    await idle.exec('echo x > x.txt')
    expect(await backendHolds(backend, idle)).toBe(backend.adapter !== 'shell')
    expect(await until(() => execgate.sandboxes.get(idle.id) === undefined, 10_000)).toBe(true)
    expect(await until(async () => !(await backendHolds(backend, idle)), 10_000)).toBe(true)
    const after = await idle.exec('cat x.txt')
    expect(after).toMatchObject({ status: 'invalid_request', error: { code: 'EXECGATE_SANDBOX_STOPPED' } })
    expect(after.message).toContain('idle for 1500 ms')
    await expect(idle.readFile('x.txt')).rejects.toMatchObject({ code: 'EXECGATE_SANDBOX_STOPPED' })
  }, 60_000)

  test('stop frees the sandbox at once; a call waiting behind a running exec is told it stopped', async () => {
    const doomed = await execgate.sandboxes.start({ adapter: backend.adapter })
    const uid = uidOf(path.join(root, doomed.id))
    const running = doomed.exec({ command: 'while :; do :; done', timeoutMs: 4000 })
    const waiting = doomed.exec('echo never')
    await new Promise((resolve) => setTimeout(resolve, 300))
    await doomed.stop()
    expect((await running).status).toBe('cancelled')
    expect(await waiting).toMatchObject({ status: 'invalid_request', error: { code: 'EXECGATE_SANDBOX_STOPPED' } })
    expect(await backendHolds(backend, doomed)).toBe(false)
    if (uid !== undefined) expect(processesOfUids([uid])).toEqual([])
  }, 30_000)
})

test('dispose stops every sandbox and leaves nothing behind', async () => {
  const own = await createExecgate({
    overrides: {
      execution: { enabled: ['shell', 'process', 'docker'] },
      adapters: { docker: { socketPath: PODMAN_SOCKET }, process: { persistentDir: path.join(root, 'dispose') } },
      readiness: { enabled: false },
      log: { level: 'silent' },
    },
  })
  const started = await Promise.all(['shell', 'process', 'docker'].map((adapter) => own.sandboxes.start({ adapter })))
  const uids = foldersUnder(path.join(root, 'dispose')).map((folder) => uidOf(path.join(root, 'dispose', folder))!)
  expect(uids).toHaveLength(1)
  await own.dispose()
  expect(own.sandboxes.list()).toEqual([])
  expect(await containersOf(started.map((item) => item.id))).toEqual([])
  expect(foldersUnder(path.join(root, 'dispose'))).toEqual([])
  expect(mountsUnder(path.join(root, 'dispose'))).toEqual([])
  expect(processesOfUids(uids)).toEqual([])
  expect((await started[0]!.exec('true')).error?.code).toBe('EXECGATE_SANDBOX_STOPPED')
}, 60_000)
