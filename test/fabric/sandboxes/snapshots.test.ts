import { createHash } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../../../src'
import { readArchive, writeArchive } from '../../../src/fabric/sandboxes/snapshot-archive'
import { until } from './resources'

/**
 * Snapshots against the real stores (ledger.sqlite and its blob folder in a temp dataDir) on the native shell and
 * bubblewrap: a snapshot is a tar named by its SHA-256, recorded in the ledger with the sandbox as its source; a start
 * from it has the files; a fork changes apart from the original; another tenant's snapshot answers like a missing
 * one; a blob changed behind the ledger is refused; the idle timeout takes one on its own.
 */

let execgate: Execgate
let dataDir: string
let processRoot: string
const BINARY = Buffer.from([0, 1, 2, 254, 255, 10, 13])
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-snapshots-'))
  processRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-snapshots-process-'))
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['shell', 'process'] },
      adapters: { process: { persistentDir: processRoot } },
      fabric: { dataDir },
      sandboxes: { snapshotOnIdle: true, snapshotOnStop: false },
      readiness: { enabled: false },
      log: { level: 'silent' },
    },
  })
}, 60_000)

afterAll(async () => {
  await execgate.dispose()
  for (const folder of [dataDir, processRoot]) fs.rmSync(folder, { recursive: true, force: true })
})

test('the archive is deterministic, a plain tar, and reads back what was written (a long path too)', () => {
  const long = `${'d'.repeat(90)}/${'e'.repeat(90)}.txt`
  const files = [
    { path: 'b.txt', content: Buffer.from('bee\n') },
    { path: 'a/bin.dat', content: BINARY },
    { path: long, content: Buffer.from('deep\n') },
  ]
  const archive = writeArchive(files)
  expect(writeArchive([...files].reverse()).equals(archive)).toBe(true)
  expect(readArchive(archive).map((file) => [file.path, Buffer.from(file.content).toString('hex')])).toEqual(
    [...files].sort((a, b) => (a.path < b.path ? -1 : 1)).map((file) => [file.path, file.content.toString('hex')]),
  )
  // GNU tar reads it: a snapshot downloaded from GET /v1/artifacts/:sha256 unpacks with `tar -xf`.
  const listed = execFileSync('tar', ['-tf', '-'], { input: archive }).toString().trim().split('\n').sort()
  expect(listed).toEqual([long, 'a/bin.dat', 'b.txt'].sort())
})

test.each(['shell', 'process'])(
  '%s: snapshot, restore by digest, fork while the original runs',
  async (adapter) => {
    const original = await execgate.sandboxes.start({ adapter }, { tenant: 'acme' })
    try {
      await original.writeFile('data/bin.dat', BINARY)
      expect((await original.exec('mkdir -p notes && echo one > notes/a.txt && echo two > b.txt')).status).toBe('ok')
      const snapshot = await original.snapshot()
      expect(snapshot).toMatchObject({ sandboxId: original.id, adapter, files: 3, reason: 'requested' })
      expect(original.info().lastSnapshot).toEqual(snapshot)
      // Content-addressed: the id is the archive's SHA-256, and the blob store holds it under that name.
      const stored = await execgate.ledger.artifact(snapshot.id, { tenant: 'acme' })
      expect(sha256(stored.content)).toBe(snapshot.id)
      expect(stored.content.length).toBe(snapshot.bytes)
      expect(stored.mediaType).toBe('application/x-tar')
      // Recorded with the sandbox as its source.
      const lineage = await execgate.ledger.lineage(snapshot.id, { tenant: 'acme' })
      // (The shell's and the process's workspaces here are the same files, so the same archive: both sandboxes are sources.)
      expect(lineage.ancestors.activities).toEqual(
        expect.arrayContaining([expect.objectContaining({ kind: 'sandbox_file', sandboxId: original.id, adapter })]),
      )
      // The same workspace is the same snapshot.
      expect((await original.snapshot()).id).toBe(snapshot.id)

      // A fork: started from the snapshot while the original runs on; each changes apart from the other.
      const fork = await execgate.sandboxes.start({ adapter, from: snapshot.id }, { tenant: 'acme' })
      try {
        expect(await fork.listFiles()).toEqual(await original.listFiles())
        expect((await fork.readFile('data/bin.dat')).equals(BINARY)).toBe(true)
        expect((await fork.exec('cat notes/a.txt b.txt')).stdout).toBe('one\ntwo\n')
        expect((await fork.exec('echo fork > b.txt')).status).toBe('ok')
        expect((await original.exec('echo original > b.txt; rm notes/a.txt')).status).toBe('ok')
        expect((await fork.exec('cat b.txt notes/a.txt')).stdout).toBe('fork\none\n')
        expect((await original.exec('cat b.txt')).stdout).toBe('original\n')
      } finally {
        await fork.stop()
      }
    } finally {
      await original.stop()
    }
  },
  60_000,
)

test("tenants: another tenant's snapshot answers exactly like one nobody took", async () => {
  const acme = await execgate.sandboxes.start({ adapter: 'shell' }, { tenant: 'acme' })
  try {
    await acme.writeFile('secret.txt', 'acme only\n')
    const snapshot = await acme.snapshot()
    const refusal = async (id: string) =>
      execgate.sandboxes.start({ from: id }, { tenant: 'globex' }).then(
        () => ({ code: 'started', message: '' }),
        (error: Error & { code?: string }) => ({ code: error.code, message: error.message.replace(id, '<id>') }),
      )
    const foreign = await refusal(snapshot.id)
    expect(foreign).toEqual(await refusal('e'.repeat(64)))
    expect(foreign.code).toBe('EXECGATE_NOT_FOUND')
    expect(execgate.sandboxes.list({ tenant: 'globex' })).toEqual([])
    const bad = await execgate.sandboxes
      .start({ from: 'not-a-digest' }, { tenant: 'acme' })
      .catch((error: Error & { code?: string }) => error)
    expect(bad).toMatchObject({ code: 'EXECGATE_REQUEST_INVALID' })
  } finally {
    await acme.stop()
  }
}, 60_000)

test('a snapshot whose blob changed behind the ledger is refused, not restored', async () => {
  const sandbox = await execgate.sandboxes.start({ adapter: 'shell' }, { tenant: 'tamper' })
  let snapshotId = ''
  try {
    await sandbox.writeFile('a.txt', 'original\n')
    snapshotId = (await sandbox.snapshot()).id
  } finally {
    await sandbox.stop()
  }
  const blob = path.join(execgate.config.fabric.dataDir, 'blobs', snapshotId.slice(0, 2), snapshotId)
  const archive = fs.readFileSync(blob)
  const at = archive.indexOf('original')
  archive.write('tampered', at)
  fs.writeFileSync(blob, archive)
  await expect(execgate.sandboxes.start({ adapter: 'shell', from: snapshotId }, { tenant: 'tamper' })).rejects.toMatchObject({
    code: 'EXECGATE_SNAPSHOT_CORRUPT',
  })
  expect(execgate.sandboxes.list({ tenant: 'tamper' })).toEqual([])
}, 60_000)

test('the idle timeout snapshots the workspace before it stops the sandbox (sandboxes.snapshotOnIdle)', async () => {
  const sandbox = await execgate.sandboxes.start({ adapter: 'shell', idleTimeoutMs: 300 }, { tenant: 'idle' })
  await sandbox.writeFile('kept.txt', 'kept across the idle timeout\n')
  expect(await until(() => sandbox.info().lastSnapshot !== undefined, 15_000)).toBe(true)
  expect(execgate.sandboxes.get(sandbox.id, { tenant: 'idle' })).toBeUndefined()
  const snapshot = sandbox.info().lastSnapshot
  expect(snapshot).toMatchObject({ reason: 'idle', files: 1 })
  const restored = await execgate.sandboxes.start({ adapter: 'shell', from: snapshot!.id }, { tenant: 'idle' })
  try {
    expect((await restored.readFile('kept.txt')).toString()).toBe('kept across the idle timeout\n')
  } finally {
    await restored.stop()
  }
}, 60_000)
