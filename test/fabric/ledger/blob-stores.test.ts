import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../../../src'
import { DirectoryBlobStore, S3BlobStore, type BlobStore } from '../../../src/fabric/ledger'
import { sha256 } from '../../../src/fabric/ledger/run-capture'
import { S3Objects } from '../../../src/workspace'
import { startS3Server, type S3Server } from '../../servers/s3-server'

/**
 * The ledger's blobs, one suite for both backends: a local directory, and an S3-compatible bucket on a real s3rver
 * spoken to through the real SDK v3 client. The store itself, then the whole path: runs through createExecgate whose
 * ledger keeps their files and streams there, read back through `execgate.ledger.artifact`.
 */

const BUCKET = 'execgate-ledger-test'

describe.each(['directory', 's3'] as const)('%s blob store', (kind) => {
  let dataDir: string
  let s3: S3Server | undefined
  let store: BlobStore
  let execgate: Execgate
  let savedEnv: NodeJS.ProcessEnv

  /** Objects (or files) the backend holds. */
  async function stored(): Promise<string[]> {
    if (kind === 's3') return (await new S3Objects(s3!.settings(BUCKET, 'ledger/blobs/')).list()).map((entry) => entry.key)
    const root = path.join(dataDir, 'blobs')
    return fs.existsSync(root) ? fs.readdirSync(root).flatMap((folder) => fs.readdirSync(path.join(root, folder))) : []
  }

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `execgate-blobs-${kind}-`))
    savedEnv = { ...process.env }
    let env: Record<string, string> = {}
    if (kind === 's3') {
      s3 = await startS3Server()
      const objects = new S3Objects(s3.settings(BUCKET, 'ledger/'))
      await objects.ensureBucket()
      store = new S3BlobStore(objects)
      env = {
        EXECGATE_FABRIC_LEDGER_BLOBS: 's3',
        EXECGATE_FABRIC_S3_BUCKET: BUCKET,
        EXECGATE_FABRIC_S3_PREFIX: 'ledger/',
        EXECGATE_FABRIC_S3_ENDPOINT: s3.endpoint,
        EXECGATE_FABRIC_S3_FORCE_PATH_STYLE: 'true',
      }
      // The SDK's default credential chain, as a deployment gives it (config never holds credentials).
      process.env.AWS_ACCESS_KEY_ID = 'S3RVER'
      process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER'
    } else {
      store = new DirectoryBlobStore(path.join(dataDir, 'blobs'))
    }
    execgate = await createExecgate({
      env: {
        ...env,
        EXECGATE_LOG_LEVEL: 'silent',
        EXECGATE_READINESS_ENABLED: 'false',
        EXECGATE_EXECUTION_ENABLED: 'quickjs',
        EXECGATE_FABRIC_DATA_DIR: dataDir,
        EXECGATE_SECURITY_DEFAULT_POLICY_FILESYSTEM: 'sandboxed',
      },
    })
  })

  afterAll(async () => {
    await execgate.dispose()
    await s3?.stop()
    process.env = savedEnv
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  test('bytes go in under their digest and come back the same; a second put is the same blob', async () => {
    const bytes = randomBytes(256 * 1024)
    const digest = sha256(bytes)
    expect(await store.has(digest)).toBe(false)
    await store.put(digest, bytes, 'application/octet-stream')
    await store.put(digest, bytes, 'application/octet-stream')
    expect(await store.has(digest)).toBe(true)
    expect((await store.get(digest))!.equals(bytes)).toBe(true)
    expect((await stored()).filter((name) => name === digest)).toHaveLength(1)
  })

  test('an absent digest reads as nothing; deleting removes, and deleting again is fine', async () => {
    const digest = sha256('to be deleted')
    expect(await store.get(digest)).toBeUndefined()
    await store.put(digest, Buffer.from('to be deleted'), 'text/plain')
    await store.delete([digest])
    await store.delete([digest])
    expect(await store.get(digest)).toBeUndefined()
  })

  test('a small blob (written with synchronous calls) is whole, leaves no temp file, and survives its folder being removed', async () => {
    const bytes = Buffer.from('{"plan":"small"}')
    const digest = sha256(bytes)
    await store.put(digest, bytes, 'application/json')
    expect((await store.get(digest))!.equals(bytes)).toBe(true)
    if (kind !== 'directory') return
    const folder = path.dirname((store as DirectoryBlobStore).pathOf(digest))
    expect(fs.readdirSync(folder).filter((name) => name.endsWith('.tmp'))).toEqual([])
    // The store made this folder once and remembers it: removed behind its back, it is made again.
    fs.rmSync(folder, { recursive: true, force: true })
    await store.put(digest, bytes, 'application/json')
    expect((await store.get(digest))!.equals(bytes)).toBe(true)
  })

  test('a name that is not a SHA-256 never reaches the filesystem or the bucket', async () => {
    await expect(store.get('../../etc/passwd')).rejects.toThrow(/not a SHA-256 digest/)
    await expect(store.put('ab/../cd', Buffer.from('x'), 'text/plain')).rejects.toThrow(/not a SHA-256 digest/)
  })

  test("a run's files, long stdout and value are kept here, once each, and read back through the ledger", async () => {
    const binary = randomBytes(64 * 1024).toString('base64')
    const code = `await write_file('report.csv', 'region,total\\nnorth,10\\n'); console.log('x'.repeat(4000)); ({ rows: 1 })`
    const first = await execgate.execute({
      language: 'javascript',
      code,
      files: [{ path: 'input.bin', content: binary, encoding: 'base64' }],
    })
    const second = await execgate.execute({
      language: 'javascript',
      code,
      files: [{ path: 'input.bin', content: binary, encoding: 'base64' }],
    })
    expect([first.status, second.status]).toEqual(['ok', 'ok'])
    const { record } = await execgate.ledger.record(second.runId!)
    const csv = record.outputs.find((output) => output.path === 'report.csv')!
    expect(csv).toMatchObject({ mediaType: 'text/csv', sha256: sha256('region,total\nnorth,10\n') })
    expect((await execgate.ledger.artifact(csv.sha256)).content.toString()).toBe('region,total\nnorth,10\n')
    const input = record.inputs[0]!
    expect((await execgate.ledger.artifact(input.sha256)).content.equals(Buffer.from(binary, 'base64'))).toBe(true)
    expect(record.stdout).toMatchObject({ stored: true, size: 4001 })
    expect((await execgate.ledger.artifact(record.stdout.sha256)).content.toString()).toBe(`${'x'.repeat(4000)}\n`)
    expect(JSON.parse((await execgate.ledger.artifact(record.value!.sha256)).content.toString())).toEqual({ rows: 1 })
    // Two runs, the same five artifacts (code, input, csv, stdout, value): stored once each.
    const names = await stored()
    for (const digest of [record.code.sha256, input.sha256, csv.sha256, record.stdout.sha256, record.value!.sha256])
      expect(names.filter((name) => name === digest)).toHaveLength(1)
  })
})
