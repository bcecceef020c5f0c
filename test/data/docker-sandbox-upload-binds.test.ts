import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import Docker from 'dockerode'
import { DockerAdapter } from '../../adapters/docker'
import { OWNER_LABEL, SANDBOX_LABEL } from '../../adapters/docker/sandbox'
import { formatOwner } from '../../adapters/shared/sandbox-owner'
import { createExecgate, type Execgate } from '../../src'

/**
 * Issue 25: a persistent docker sandbox (podman) binds an upload read-only instead of copying it, as the process
 * sandbox does (sandbox-upload-binds.test.ts). A container's binds are fixed at its start, so the sandbox's own upload
 * folder is bound read-only then and each upload is hard-linked into it later, reached from the workspace by a link.
 * The upload is three times `workspace.maxFileBytes`, so a copy would be refused outright; inside, the file is the
 * store's own inode on a read-only mount, appends and chmod are refused, removing the workspace's name leaves the
 * upload as it was, and the store's bytes and link count are unchanged after the sandbox stops.
 */

const SOCKET = process.env.EXECGATE_PODMAN_SOCKET ?? '/run/execgate-podman/podman.sock'
const MAX_FILE_BYTES = 1 << 20
const BIG = Buffer.from('id,amount\n' + Array.from({ length: 300_000 }, (_, i) => `${i},${(i * 7919) % 1000}`).join('\n') + '\n').subarray(
  0,
  3 * MAX_FILE_BYTES,
)
const DIGEST = createHash('sha256').update(BIG).digest('hex')

let dataDir: string
let execgate: Execgate
let blob: string

beforeAll(async () => {
  const availability = await new DockerAdapter({ socketPath: SOCKET }).checkAvailability()
  if (availability.status !== 'available')
    throw new Error(`the docker adapter's engine is not ready (run scripts/setup/podman.sh): ${availability.reason}`)
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-docker-sandbox-binds-'))
  execgate = await createExecgate({
    warm: false,
    overrides: {
      execution: { enabled: ['placeholder', 'docker'] },
      adapters: { docker: { socketPath: SOCKET } },
      readiness: { enabled: false },
      log: { level: 'silent' as const },
      workspace: { maxFileBytes: MAX_FILE_BYTES },
      fabric: { dataDir, ledger: { enabled: false } },
      security: {
        defaultPolicy: { wallTimeMs: 30_000, cpuTimeMs: 30_000 },
        profiles: { inspect: { allowedImports: ['os', 'hashlib'], memoryMb: 256 } },
      },
    },
  })
  await execgate.uploads.put('local', Readable.from([BIG]))
  blob = (await execgate.uploads.locate('local', DIGEST))!.hostPath
}, 120_000)

afterAll(async () => {
  await execgate?.dispose()
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
}, 30_000)

/** The file's inode, whether its mount is read-only, then what append, chmod, truncation and rm of the upload get. */
const PROBE = (file: string) =>
  [
    `stat -L -c %i ${file}`,
    `target=$(readlink -f ${file})`,
    `awk -v m="$(dirname "$target")" '$5 == m { split($6, o, ","); print o[1] }' /proc/self/mountinfo`,
    `(echo tampered >> ${file}) 2>/dev/null && echo wrote || echo write-refused`,
    `(chmod 666 ${file}) 2>/dev/null && echo chmodded || echo chmod-refused`,
    `(: > "$target") 2>/dev/null && echo truncated || echo truncate-refused`,
    `rm -f "$target" 2>/dev/null && echo removed || echo remove-refused`,
    `sha256sum < ${file} | cut -c1-64`,
  ].join('; ')
const REFUSED = ['ro', 'write-refused', 'chmod-refused', 'truncate-refused', 'remove-refused', DIGEST]

test('an upload three times the file limit is bound read-only, the same inode as the store, and cannot be changed', async () => {
  const inode = String(fs.statSync(blob).ino)
  const sandbox = await execgate.sandboxes.start({ adapter: 'docker', files: [{ path: 'data/big.csv', sha256: DIGEST }] })
  try {
    const probed = await sandbox.exec({ command: PROBE('data/big.csv') })
    expect({ status: probed.status, stderr: probed.stderr }).toMatchObject({ status: 'ok' })
    expect(probed.stdout.trim().split('\n')).toEqual([inode, ...REFUSED])
    // Python reads it as a file of its workspace (pandas' read_csv opens it the same way).
    const read = await sandbox.exec({ language: 'python', code: "sum(1 for _ in open('data/big.csv'))" })
    expect(read.value).toBe(BIG.toString('utf8').split('\n').length - (BIG.at(-1) === 0x0a ? 1 : 0))
    // By writeFile too, and by an exec's files: each bound, none copied (a copy is over the limit).
    await sandbox.writeFile('again.csv', { sha256: `sha256:${DIGEST}` })
    const perExec = await sandbox.exec({ command: PROBE('per-exec.csv'), files: [{ path: 'per-exec.csv', sha256: DIGEST }] })
    expect(perExec.stdout.trim().split('\n')).toEqual([inode, ...REFUSED])
    // An exec that may only read (another uid, in the workspace's group) reads it too, and still cannot change it.
    const reader = await sandbox.exec({
      command: 'id -u; sha256sum < again.csv | cut -c1-64; (echo x >> again.csv) 2>/dev/null && echo wrote || echo write-refused',
      policy: { filesystem: 'read_only' },
    })
    const [readerUid, ...readerRest] = reader.stdout.trim().split('\n')
    expect(readerUid).not.toBe((await sandbox.exec({ command: 'id -u' })).stdout.trim())
    expect(readerRest).toEqual([DIGEST, 'write-refused'])
    // The host's file calls see the upload's bytes.
    expect(await sandbox.listFiles()).toEqual(
      expect.arrayContaining([
        { path: 'data/big.csv', size: BIG.length },
        { path: 'again.csv', size: BIG.length },
      ]),
    )
    expect(
      createHash('sha256')
        .update(await sandbox.readFile('again.csv'))
        .digest('hex'),
    ).toBe(DIGEST)
    // Bytes written at the path replace the binding; the upload stays as it was.
    await sandbox.writeFile('data/big.csv', 'replaced\n')
    const replaced = await sandbox.exec({ command: 'cat data/big.csv; stat -L -c %i again.csv' })
    expect(replaced.stdout.trim().split('\n')).toEqual(['replaced', inode])
    // Removing a name in the workspace removes the sandbox's name, never the upload.
    const removed = await sandbox.exec({ command: 'rm per-exec.csv && ls; stat -L -c %i again.csv' })
    expect(removed.stdout.trim().split('\n')).toEqual(['again.csv', 'data', inode])
    expect(await sandbox.deleteFile('again.csv')).toBe(true)
    const gone = await sandbox.exec({ command: 'ls' })
    expect(gone.stdout.trim().split('\n')).toEqual(['data'])
    expect(fs.statSync(blob).nlink).toBe(2)
  } finally {
    await sandbox.stop()
  }
  expect(createHash('sha256').update(fs.readFileSync(blob)).digest('hex')).toBe(DIGEST)
  expect(fs.statSync(blob).nlink).toBe(1)
}, 240_000)

test("inline bytes over the file limit are refused (the binding is for uploads only); another tenant's digest is not found", async () => {
  const sandbox = await execgate.sandboxes.start({ adapter: 'docker' })
  try {
    await expect(sandbox.writeFile('copy.csv', BIG)).rejects.toMatchObject({ code: 'EXECGATE_WORKSPACE_LIMIT' })
    // The sandbox's upload folder holds only what it was given, and cannot be listed.
    const folder = await sandbox.exec({
      command: 'ls /run/execgate-uploads 2>/dev/null | wc -l; ls /run/execgate-uploads >/dev/null 2>&1 || echo unlisted',
    })
    expect(folder.stdout.trim().split('\n')).toEqual(['0', 'unlisted'])
  } finally {
    await sandbox.stop()
  }
  await expect(
    execgate.sandboxes.start({ adapter: 'docker', files: [{ path: 'x.csv', sha256: DIGEST }] }, { tenant: 'globex' }),
  ).rejects.toMatchObject({ code: 'EXECGATE_FILE_NOT_FOUND' })
  const globex = await execgate.sandboxes.start({ adapter: 'docker' }, { tenant: 'globex' })
  try {
    await expect(globex.writeFile('x.csv', { sha256: DIGEST })).rejects.toMatchObject({ code: 'EXECGATE_FILE_NOT_FOUND' })
    const probed = await globex.exec({ command: `cat /run/execgate-uploads/${DIGEST} >/dev/null 2>&1 && echo read || echo absent` })
    expect(probed.stdout.trim()).toBe('absent')
  } finally {
    await globex.stop()
  }
}, 240_000)

test('a snapshot holds an upload bound in as its bytes, and restores them as a file of the new sandbox', async () => {
  const ledgerDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-docker-sandbox-binds-ledger-'))
  const withLedger = await createExecgate({
    warm: false,
    overrides: {
      execution: { enabled: ['placeholder', 'docker'] },
      adapters: { docker: { socketPath: SOCKET } },
      readiness: { enabled: false },
      log: { level: 'silent' as const },
      fabric: { dataDir: ledgerDir },
    },
  })
  try {
    const small = Buffer.from('region,revenue\nnorth,15\n')
    const digest = createHash('sha256').update(small).digest('hex')
    await withLedger.uploads.put('local', Readable.from([small]))
    const sandbox = await withLedger.sandboxes.start({ adapter: 'docker', files: [{ path: 'small.csv', sha256: digest }] })
    let snapshotId: string
    try {
      const linked = await sandbox.exec({ command: '[ -L small.csv ] && echo link' })
      expect(linked.stdout.trim()).toBe('link')
      snapshotId = (await sandbox.snapshot()).id
    } finally {
      await sandbox.stop()
    }
    const restored = await withLedger.sandboxes.start({ adapter: 'docker', from: snapshotId })
    try {
      expect(Buffer.from(await restored.readFile('small.csv')).equals(small)).toBe(true)
      const plain = await restored.exec({ command: '[ -L small.csv ] && echo link || cat small.csv' })
      expect(plain.stdout).toBe(small.toString())
    } finally {
      await restored.stop()
    }
  } finally {
    await withLedger.dispose()
    fs.rmSync(ledgerDir, { recursive: true, force: true })
  }
}, 240_000)

test("a one-shot docker run binds the upload read-only too: its own mount, refused writes, the upload's bytes", async () => {
  const code = [
    'import os, hashlib',
    "mounts = [line.split()[5].split(',')[0] for line in open('/proc/self/mountinfo') if line.split()[4] == '/workspace/big.csv']",
    'try:',
    "    open('big.csv', 'a').write('tampered')",
    "    wrote = 'wrote'",
    'except OSError:',
    "    wrote = 'write-refused'",
    "[mounts, wrote, os.path.getsize('big.csv'), hashlib.sha256(open('big.csv', 'rb').read()).hexdigest()]",
  ].join('\n')
  const result = await execgate.execute(
    { language: 'python', adapter: 'docker', code, files: [{ path: 'big.csv', sha256: DIGEST }] },
    { profile: 'inspect' },
  )
  expect({ status: result.status, stderr: result.stderr, message: result.message }).toMatchObject({ status: 'ok' })
  expect(result.value).toEqual([['ro'], 'write-refused', BIG.length, DIGEST])
  expect(createHash('sha256').update(fs.readFileSync(blob)).digest('hex')).toBe(DIGEST)
}, 240_000)

test("a dead owner's sandbox container is swept with its upload folder (whose links would keep deleted uploads)", async () => {
  const docker = new Docker({ socketPath: SOCKET })
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-docker-sandbox-uploads-'))
  fs.linkSync(blob, path.join(folder, DIGEST))
  expect(fs.statSync(blob).nlink).toBe(2)
  // pid 4194304 is past the kernel's largest: that owner is certainly gone.
  const container = await docker.createContainer({
    Image: 'execgate-sandbox:bookworm',
    Cmd: ['/bin/true'],
    Labels: { [SANDBOX_LABEL]: 'sb-swept', [OWNER_LABEL]: formatOwner({ host: os.hostname(), pid: 4_194_304, startTicks: 1 }) },
    HostConfig: { Binds: [`${folder}:/run/execgate-uploads:ro`], NetworkMode: 'none' },
  })
  try {
    expect(await new DockerAdapter({ socketPath: SOCKET }).sweepSandboxes()).toBeGreaterThanOrEqual(1)
    expect(fs.existsSync(folder)).toBe(false)
    expect(fs.statSync(blob).nlink).toBe(1)
  } finally {
    await container.remove({ force: true }).catch(() => undefined)
    fs.rmSync(folder, { recursive: true, force: true })
  }
}, 120_000)
