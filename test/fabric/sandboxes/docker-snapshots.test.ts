import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import Docker from 'dockerode'
import { createExecgate, type Execgate, type Sandbox } from '../../../src'
import { DockerAdapter } from '../../../adapters/docker'
import { writeTar, type TarEntry } from '../../../src/workspace'
import { CONTAINER_ARCHIVE_COMMENT } from '../../../src/workspace/container-archive'
import { DEFAULT_POLICY } from '../../../src/policy'
import { PODMAN_SOCKET } from './resources'

/**
 * Docker sandbox snapshots on podman's Docker API (scripts/setup/podman.sh): a snapshot holds the container's whole
 * changed filesystem (the workspace, /tmp, /var/tmp, /dev/shm: the root is read-only), is one exec of tar, and a
 * restore is one `PUT /archive` that brings back files, folders, modes, owners and links; an archive that would write
 * anywhere else is refused whole, and a snapshot past `sandboxes.maxSnapshotBytes` stores nothing.
 */

const MAX_SNAPSHOT_BYTES = 8 * 2 ** 20
let execgate: Execgate
let dataDir: string

beforeAll(async () => {
  const availability = await new DockerAdapter({ socketPath: PODMAN_SOCKET }).checkAvailability()
  if (availability.status !== 'available')
    throw new Error(`the docker adapter's engine is not ready (run scripts/setup/podman.sh): ${availability.reason}`)
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-docker-snapshots-'))
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['shell', 'docker'] },
      adapters: { docker: { socketPath: PODMAN_SOCKET } },
      fabric: { dataDir },
      sandboxes: { snapshotOnIdle: false, maxSnapshotBytes: MAX_SNAPSHOT_BYTES, maxPerTenant: 8 },
      readiness: { enabled: false },
      log: { level: 'silent' },
    },
  })
}, 120_000)

afterAll(async () => {
  await execgate?.dispose()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

/** Every entry of the container's writable places: type, mode, owner, size, link text; a file's digest and mtime. */
const LISTING = [
  'cd / && find workspace tmp var/tmp dev/shm -mindepth 1 -printf "%p %y %m %u:%g %s %l\\n" | sort',
  'find workspace tmp var/tmp dev/shm -type f -exec stat -c "%n %Y" {} + | sort',
  'find workspace tmp var/tmp dev/shm -type f -exec md5sum {} + | sort',
].join('\n')

async function using<T>(sandboxes: Promise<Sandbox>[], body: (...started: Sandbox[]) => Promise<T>): Promise<T> {
  const started = await Promise.all(sandboxes)
  try {
    return await body(...started)
  } finally {
    await Promise.all(started.map((sandbox) => sandbox.stop()))
  }
}

test('the snapshot holds the changed filesystem outside the workspace too, restored exactly in a fresh container', async () => {
  await using([execgate.sandboxes.start({ adapter: 'docker' }, { tenant: 'acme' })], async (original) => {
    const setUp = await original.exec(
      [
        'set -e',
        'mkdir -p tools/bin empty /tmp/cache /var/tmp/pylib/pkg',
        "printf '#!/bin/sh\\necho tool ran\\n' > tools/bin/tool && chmod 750 tools/bin/tool && chmod 700 empty",
        'ln -s /etc/os-release release-link && ln -s tools/bin/tool tool-link && ln tools/bin/tool tool-hardlink',
        'echo cached > /tmp/cache/data && chmod 600 /tmp/cache/data',
        // A package installed outside the workspace: the root is read-only, so /var/tmp is where one can go.
        "printf 'VALUE = 42\\n' > /var/tmp/pylib/pkg/__init__.py",
        'echo shm > /dev/shm/segment',
        'echo gone > /tmp/deleted && rm /tmp/deleted',
        // The image's own folders cannot change: the root is read-only and the user is not root.
        '(echo x > /etc/thing) 2>/dev/null && echo wrote /etc || echo no /etc',
        '(touch /usr/local/bin/x) 2>/dev/null && echo wrote /usr/local || echo no /usr/local',
      ].join('\n'),
    )
    expect(setUp).toMatchObject({ status: 'ok', stdout: 'no /etc\nno /usr/local\n' })
    const before = await original.exec(LISTING)
    expect(before.stdout).toContain('tmp/cache/data f 600 nobody:nogroup 7')
    expect(before.stdout).toContain('workspace/release-link l 777 nobody:nogroup 15 /etc/os-release')
    const snapshot = await original.snapshot()
    expect(snapshot).toMatchObject({ adapter: 'docker', files: 5 }) // tool, its hard link, data, __init__.py, segment
    expect(snapshot.skipped).toBeUndefined()

    await using([execgate.sandboxes.start({ adapter: 'docker', from: snapshot.id }, { tenant: 'acme' })], async (restored) => {
      // Every path, type, mode, owner, size, link text, content and file mtime, as in the original.
      expect((await restored.exec(LISTING)).stdout).toBe(before.stdout)
      expect((await restored.exec('stat -c %h tools/bin/tool; ./tool-link; ls /tmp')).stdout).toBe('2\ntool ran\ncache\n')
      const imported = await restored.exec('PYTHONPATH=/var/tmp/pylib python3 -c "import pkg; print(pkg.VALUE)"')
      expect(imported.stdout).toBe('42\n')
    })
    // A backend without container snapshots restores the workspace's regular files (a link is never followed there).
    await using([execgate.sandboxes.start({ adapter: 'shell', from: snapshot.id }, { tenant: 'acme' })], async (shell) => {
      expect((await shell.listFiles()).map((entry) => entry.path).sort()).toEqual(['tool-hardlink', 'tools/bin/tool'])
    })
  })
}, 180_000)

test("what the workspace's user cannot read is left out and named in skipped", async () => {
  await using([execgate.sandboxes.start({ adapter: 'docker' }, { tenant: 'acme' })], async (sandbox) => {
    // An exec with filesystem 'none' runs as a uid of its own: its file in /tmp is 0640 and not the workspace user's.
    const theirs = await sandbox.exec({ command: 'echo theirs > /tmp/theirs', policy: { filesystem: 'none' } })
    expect(theirs.status).toBe('ok')
    expect((await sandbox.exec('echo mine > /tmp/mine && echo sealed > /tmp/sealed && chmod 000 /tmp/sealed')).status).toBe('ok')
    const snapshot = await sandbox.snapshot()
    expect(snapshot.skipped?.sort()).toEqual(['/tmp/sealed', '/tmp/theirs'])
    expect(snapshot.files).toBe(1)
  })
}, 120_000)

test('a snapshot is one exec of tar and a restore one PUT /archive, whatever the number of files', async () => {
  const counted = ['exec', 'getArchive', 'putArchive', 'export', 'changes'] as const
  const spies = counted.map((method) => jest.spyOn(Docker.Container.prototype, method))
  const calls = () => Object.fromEntries(counted.map((method, index) => [method, spies[index]!.mock.calls.length]))
  try {
    await using([execgate.sandboxes.start({ adapter: 'docker' }, { tenant: 'acme' })], async (original) => {
      expect((await original.exec('mkdir many && for i in $(seq 1 300); do echo $i > many/$i; done')).status).toBe('ok')
      spies.forEach((spy) => spy.mockClear())
      const snapshot = await original.snapshot()
      expect(calls()).toEqual({ exec: 1, getArchive: 0, putArchive: 0, export: 0, changes: 0 })
      spies.forEach((spy) => spy.mockClear())
      await using([execgate.sandboxes.start({ adapter: 'docker', from: snapshot.id }, { tenant: 'acme' })], async (restored) => {
        expect(calls()).toEqual({ exec: 0, getArchive: 0, putArchive: 1, export: 0, changes: 0 })
        expect((await restored.listFiles()).length).toBe(300)
      })
      // No image or container holds a snapshot: it is the tenant's artifact, and another tenant finds nothing.
      await expect(execgate.sandboxes.start({ adapter: 'docker', from: snapshot.id }, { tenant: 'globex' })).rejects.toMatchObject({
        code: 'EXECGATE_NOT_FOUND',
      })
      expect(calls().putArchive).toBe(1)
    })
  } finally {
    spies.forEach((spy) => spy.mockRestore())
  }
}, 180_000)

const file = (name: string, extra: Partial<TarEntry> = {}): TarEntry => ({
  path: name,
  type: 'file',
  mode: 0o644,
  uid: 0,
  gid: 0,
  mtime: 0,
  content: Buffer.from('owned\n'),
  ...extra,
})
const HOSTILE: [string, TarEntry[]][] = [
  ['a path with ..', [file('tmp/ok'), file('workspace/../../etc/cron.d/evil')]],
  ['an absolute path', [file('tmp/ok'), file('/etc/evil')]],
  [
    'a file through a link to /',
    [file('tmp/ok'), { ...file('workspace/up'), type: 'symlink', linkTarget: '/' }, file('workspace/up/etc/evil')],
  ],
  ['a hard link to the image', [file('tmp/ok'), { ...file('workspace/shadow'), type: 'hardlink', linkTarget: 'etc/shadow' }]],
]

test.each(HOSTILE)(
  'a hostile archive (%s) named as a snapshot is refused whole, nothing written anywhere',
  async (_name, entries) => {
    const archive = writeTar(entries, CONTAINER_ARCHIVE_COMMENT)
    // A tenant can name any of its own artifacts as a snapshot: here one saved from a sandbox's workspace.
    const id = await using([execgate.sandboxes.start({ adapter: 'shell' }, { tenant: 'mallory' })], async (shell) => {
      await shell.writeFile('evil.tar', archive)
      return (await shell.saveArtifact('evil.tar')).sha256
    })
    for (const adapter of ['docker', 'shell']) {
      await expect(execgate.sandboxes.start({ adapter, from: id }, { tenant: 'mallory' })).rejects.toMatchObject({
        code: 'EXECGATE_REQUEST_INVALID',
        message: expect.stringContaining('not a sandbox snapshot'),
      })
    }
    expect(execgate.sandboxes.list({ tenant: 'mallory' })).toEqual([])
    // The adapter checks too (defence in depth): straight into a container, nothing of it is unpacked, not even tmp/ok.
    const adapter = new DockerAdapter({ socketPath: PODMAN_SOCKET })
    const handle = await adapter.openSandbox({
      id: `sb-hostile-${process.pid}-${Date.now()}`,
      policy: DEFAULT_POLICY,
      limits: { maxFileBytes: 2 ** 20, maxTotalBytes: 2 ** 24, maxFiles: 100 },
    })
    try {
      await expect(handle.restoreArchive!(archive, MAX_SNAPSHOT_BYTES)).rejects.toMatchObject({ code: 'EXECGATE_REQUEST_INVALID' })
      const policy = { ...DEFAULT_POLICY, filesystem: 'sandboxed' as const }
      const context = { traceId: 'hostile', policy, signal: new AbortController().signal, deadline: performance.now() + 30_000 }
      const listed = await handle.exec({ language: 'bash', code: 'ls -A /tmp /workspace' }, context)
      expect(listed.stdout).toBe('/tmp:\n\n/workspace:\n')
    } finally {
      await handle.close()
      await adapter.dispose()
    }
    expect(fs.existsSync('/etc/evil')).toBe(false)
  },
  120_000,
)

test('past sandboxes.maxSnapshotBytes a snapshot answers EXECGATE_WORKSPACE_LIMIT and stores nothing', async () => {
  const blobs = () =>
    fs.existsSync(path.join(dataDir, 'blobs')) ? fs.readdirSync(path.join(dataDir, 'blobs'), { recursive: true }).length : 0
  await using([execgate.sandboxes.start({ adapter: 'docker' }, { tenant: 'big' })], async (sandbox) => {
    expect((await sandbox.exec(`head -c ${MAX_SNAPSHOT_BYTES + 1024} /dev/urandom > /tmp/big`)).status).toBe('ok')
    const stored = blobs()
    await expect(sandbox.snapshot()).rejects.toMatchObject({
      code: 'EXECGATE_WORKSPACE_LIMIT',
      message: expect.stringContaining('maxSnapshotBytes'),
    })
    expect(blobs()).toBe(stored)
    expect(sandbox.info().lastSnapshot).toBeUndefined()
    // The sandbox goes on, and once under the cap a snapshot is taken.
    expect((await sandbox.exec('rm /tmp/big && echo small > /tmp/small')).status).toBe('ok')
    expect(await sandbox.snapshot()).toMatchObject({ files: 1 })
  })
}, 120_000)
