import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { createExecgate, type Execgate } from '../../src'

/**
 * Issue 25: a persistent process sandbox binds an upload read-only instead of copying it. The upload is three times
 * `workspace.maxFileBytes`, so a copy would be refused outright; inside the sandbox the file is the upload store's
 * own inode on a read-only mount, writes and removal are refused, and the store's bytes are unchanged after. Real
 * bubblewrap, the real upload store (SQLite), the sandbox's own uid and tmpfs workspace as root.
 */

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
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-sandbox-binds-'))
  execgate = await createExecgate({
    warm: false,
    overrides: {
      execution: { enabled: ['placeholder', 'quickjs', 'process'] },
      readiness: { enabled: false },
      log: { level: 'silent' as const },
      workspace: { maxFileBytes: MAX_FILE_BYTES },
      fabric: { dataDir, ledger: { enabled: false } },
    },
  })
  await execgate.uploads.put('local', Readable.from([BIG]))
  blob = (await execgate.uploads.locate('local', DIGEST))!.hostPath
}, 60_000)

afterAll(async () => {
  await execgate?.dispose()
  fs.rmSync(dataDir, { recursive: true, force: true })
}, 30_000)

const PROBE = (file: string) =>
  [
    `stat -c %i ${file}`,
    `awk '$5 == "/workspace/${file}" { split($6, o, ","); print o[1] }' /proc/self/mountinfo`,
    `(echo tampered >> ${file}) 2>/dev/null && echo wrote || echo write-refused`,
    `rm -f ${file} 2>/dev/null && echo removed || echo remove-refused`,
    `(chmod 666 ${file}) 2>/dev/null && echo chmodded || echo chmod-refused`,
    `sha256sum < ${file} | cut -c1-64`,
  ].join('; ')

test('an upload three times the file limit is bound read-only, the same inode as the store, and cannot be changed', async () => {
  const inode = String(fs.statSync(blob).ino)
  const sandbox = await execgate.sandboxes.start({ adapter: 'process', files: [{ path: 'data/big.csv', sha256: DIGEST }] })
  try {
    const probed = await sandbox.exec({ command: PROBE('data/big.csv') })
    expect({ status: probed.status, stderr: probed.stderr }).toMatchObject({ status: 'ok' })
    expect(probed.stdout.trim().split('\n')).toEqual([inode, 'ro', 'write-refused', 'remove-refused', 'chmod-refused', DIGEST])
    // By writeFile too, and by an exec's files: each bound, none copied (a copy is over the limit).
    await sandbox.writeFile('again.csv', { sha256: `sha256:${DIGEST}` })
    const perExec = await sandbox.exec({ command: PROBE('per-exec.csv'), files: [{ path: 'per-exec.csv', sha256: DIGEST }] })
    expect(perExec.stdout.trim().split('\n')).toEqual([inode, 'ro', 'write-refused', 'remove-refused', 'chmod-refused', DIGEST])
    const again = await sandbox.exec({ command: `stat -c %i again.csv; cmp again.csv data/big.csv && echo same` })
    expect(again.stdout.trim().split('\n')).toEqual([inode, 'same'])
    // The host's file calls see the upload's bytes, not the placeholder the binding covers.
    const listed = await sandbox.listFiles()
    expect(listed).toEqual(
      expect.arrayContaining([
        { path: 'data/big.csv', size: BIG.length },
        { path: 'again.csv', size: BIG.length },
      ]),
    )
    expect(
      createHash('sha256')
        .update(await sandbox.readFile('data/big.csv'))
        .digest('hex'),
    ).toBe(DIGEST)
    // Bytes written at the path replace the binding; the upload stays as it was.
    await sandbox.writeFile('data/big.csv', 'replaced\n')
    const replaced = await sandbox.exec({ command: 'cat data/big.csv; stat -c %i again.csv' })
    expect(replaced.stdout.trim().split('\n')).toEqual(['replaced', inode])
    expect(await sandbox.deleteFile('again.csv')).toBe(true)
    const gone = await sandbox.exec({ command: 'ls' })
    expect(gone.stdout.trim().split('\n').sort()).toEqual(['data', 'per-exec.csv'])
  } finally {
    await sandbox.stop()
  }
  expect(createHash('sha256').update(fs.readFileSync(blob)).digest('hex')).toBe(DIGEST)
  expect(fs.statSync(blob).nlink).toBe(1)
}, 120_000)

test(
  'bytes given inline over the file limit are still refused: the binding is for uploads ' + "only; another tenant's digest is not found",
  async () => {
    const sandbox = await execgate.sandboxes.start({ adapter: 'process' })
    try {
      await expect(sandbox.writeFile('copy.csv', BIG)).rejects.toMatchObject({ code: 'EXECGATE_WORKSPACE_LIMIT' })
    } finally {
      await sandbox.stop()
    }
    await expect(
      execgate.sandboxes.start({ adapter: 'process', files: [{ path: 'x.csv', sha256: DIGEST }] }, { tenant: 'globex' }),
    ).rejects.toMatchObject({ code: 'EXECGATE_FILE_NOT_FOUND' })
  },
  120_000,
)
