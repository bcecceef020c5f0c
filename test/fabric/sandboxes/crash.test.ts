import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate } from '../../../src'
import { serve } from '../../../src/server/serve'
import { PODMAN_SOCKET, containersOf, foldersUnder, mountsUnder, processesOfUids, uidOf, until } from './resources'

/**
 * kill -9 of a server that owns sandboxes (a process and a docker one, each with an exec running) leaves a container,
 * a folder with its tmpfs, and processes of the sandbox's uid. The next server's start removes all of them, and
 * leaves alone the sandboxes of an execgate that is still running.
 */
test('a killed server leaves nothing running after the next start', async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-sandbox-crash-'))
  const child = spawn(
    process.execPath,
    ['-r', 'ts-node/register/transpile-only', path.join(__dirname, 'crash-child.ts'), root, PODMAN_SOCKET],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
  const bystander = await createExecgate({
    overrides: {
      execution: { enabled: ['process', 'docker'] },
      adapters: { docker: { socketPath: PODMAN_SOCKET }, process: { persistentDir: root } },
      readiness: { enabled: false },
      log: { level: 'silent' },
    },
  })
  try {
    const ready = await new Promise<{ url: string; ids: string[] }>((resolve, reject) => {
      let text = ''
      child.stdout.on('data', (chunk: Buffer) => {
        text += chunk.toString()
        const line = text.split('\n').find((item) => item.startsWith('{"ready"'))
        if (line) resolve((JSON.parse(line) as { ready: { url: string; ids: string[] } }).ready)
      })
      child.on('exit', (code) => reject(new Error(`the child exited (${code}) before its sandboxes were ready`)))
    })
    // A live execgate's sandboxes on the same host, in the same folder root: the sweep must not touch them.
    const alive = await Promise.all(['process', 'docker'].map((adapter) => bystander.sandboxes.start({ adapter })))
    const [processId, dockerId] = ready.ids as [string, string]
    const uid = uidOf(path.join(root, processId))!
    expect(uid).toBeGreaterThan(0)
    expect(processesOfUids([uid]).length).toBeGreaterThan(0)
    child.kill('SIGKILL')
    await new Promise((resolve) => child.once('exit', resolve))

    // What the kill left: the container, the folder and its mount (the exec's processes die with bwrap's parent).
    expect(await containersOf([dockerId])).toEqual([dockerId])
    expect(foldersUnder(root)).toEqual(expect.arrayContaining([processId]))
    expect(mountsUnder(path.join(root, processId))).toHaveLength(1)

    const next = await createExecgate({
      overrides: {
        execution: { enabled: ['shell', 'process', 'docker'] },
        adapters: { docker: { socketPath: PODMAN_SOCKET }, process: { persistentDir: root } },
        readiness: { enabled: false },
        log: { level: 'silent' },
      },
    })
    const server = await serve(next, { port: 0 }, false)
    try {
      // serve() sweeps at start, without waiting for a first sandbox.
      expect(
        await until(async () => (await containersOf([dockerId])).length === 0 && !foldersUnder(root).includes(processId), 30_000),
      ).toBe(true)
      expect(mountsUnder(path.join(root, processId))).toEqual([])
      expect(processesOfUids([uid])).toEqual([])
      // The bystander's sandboxes are untouched and still work.
      expect(await containersOf(alive.map((item) => item.id))).toEqual([alive[1]!.id])
      expect(foldersUnder(root)).toContain(alive[0]!.id)
      for (const sandbox of alive) expect((await sandbox.exec('echo still here')).stdout).toBe('still here\n')
    } finally {
      await server.shutdown()
    }
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL')
    await bystander.dispose()
    fs.rmSync(root, { recursive: true, force: true })
  }
}, 180_000)
