import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../../src'
import { MemoryWorkspace, OverlayWorkspace, S3Layer, S3Objects, S3Workspace } from '../../src/workspace'
import { startS3Server, type S3Server } from '../servers/s3-server'

/**
 * Bucket-backed workspaces against a real S3-compatible server (s3rver, through the SDK v3 client): the workspace's
 * contract (read, list, write, limits, changes), a bucket prefix as the stable layer of an overlay, and session
 * workspaces in the bucket (`fabric.workspaces: s3`) that a second execgate (another node) continues.
 */

const BUCKET = 'execgate-workspaces'
let s3: S3Server
let savedEnv: NodeJS.ProcessEnv
let prefixes = 0
const objects = (prefix = `w${++prefixes}/`) => new S3Objects(s3.settings(BUCKET, prefix))

beforeAll(async () => {
  s3 = await startS3Server()
  await objects('').ensureBucket()
  savedEnv = { ...process.env }
  process.env.AWS_ACCESS_KEY_ID = 'S3RVER'
  process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER'
})
afterAll(async () => {
  process.env = savedEnv
  await s3.stop()
})

describe('S3Workspace', () => {
  test('round-trips files, text and binary, and lists them sorted with their sizes', async () => {
    const workspace = new S3Workspace(objects())
    const binary = Buffer.from([0, 255, 1, 254, 128])
    await workspace.write('data/b.bin', binary)
    await workspace.write('a.txt', Buffer.from('hello'))
    expect((await workspace.read('data/b.bin'))!.equals(binary)).toBe(true)
    expect((await workspace.read('a.txt'))!.toString()).toBe('hello')
    expect(await workspace.read('missing.txt')).toBeUndefined()
    expect(await workspace.list()).toEqual([
      { path: 'a.txt', size: 5 },
      { path: 'data/b.bin', size: 5 },
    ])
    expect(
      workspace
        .changes()
        .map((change) => change.path)
        .sort(),
    ).toEqual(['a.txt', 'data/b.bin'])
  })

  test('what one workspace wrote, another over the same prefix reads (a restart, another node)', async () => {
    const where = objects()
    await new S3Workspace(where).write('notes/plan.md', Buffer.from('# step 1'))
    const reopened = new S3Workspace(new S3Objects(s3.settings(BUCKET, where.prefix)))
    expect((await reopened.read('notes/plan.md'))!.toString()).toBe('# step 1')
    expect(await reopened.list()).toEqual([{ path: 'notes/plan.md', size: 8 }])
    expect(reopened.changes()).toEqual([])
  })

  test('limits count what the prefix already holds; a file and a folder of one name are refused', async () => {
    const where = objects()
    await new S3Workspace(where).write('old.txt', Buffer.alloc(60))
    const workspace = new S3Workspace(where, { maxTotalBytes: 100, maxFiles: 2, maxFileBytes: 80 })
    await expect(workspace.write('big.txt', Buffer.alloc(81))).rejects.toMatchObject({ code: 'EXECGATE_WORKSPACE_LIMIT' })
    await expect(workspace.write('more.txt', Buffer.alloc(50))).rejects.toThrow(/would bring the workspace to 110 bytes/)
    await workspace.write('dir/x.txt', Buffer.alloc(10))
    await expect(workspace.write('third.txt', Buffer.alloc(1))).rejects.toThrow(/limit of 2 files/)
    expect(await workspace.list()).toEqual([
      { path: 'dir/x.txt', size: 10 },
      { path: 'old.txt', size: 60 },
    ])
    const roomy = new S3Workspace(where)
    await expect(roomy.write('dir', Buffer.alloc(1))).rejects.toMatchObject({ code: 'EXECGATE_WORKSPACE_PATH' })
    await expect(roomy.write('old.txt/inner', Buffer.alloc(1))).rejects.toThrow(/old\.txt is a file, not a directory/)
  })

  test('clear removes everything under the prefix and nothing beside it', async () => {
    const parent = objects()
    const one = new S3Workspace(parent.under('one/'))
    const two = new S3Workspace(parent.under('two/'))
    await one.write('a.txt', Buffer.from('1'))
    await two.write('a.txt', Buffer.from('2'))
    await one.clear()
    expect(await new S3Workspace(parent.under('one/')).list()).toEqual([])
    expect((await two.read('a.txt'))!.toString()).toBe('2')
  })
})

test('a bucket prefix is a read-only stable layer under an overlay: writes stay in the overlay', async () => {
  const where = objects()
  await new S3Workspace(where).write('input.csv', Buffer.from('a,b\n1,2\n'))
  const overlay = new OverlayWorkspace(new S3Layer(where), new MemoryWorkspace())
  expect((await overlay.read('input.csv'))!.toString()).toBe('a,b\n1,2\n')
  await overlay.write('input.csv', Buffer.from('changed'))
  expect((await overlay.read('input.csv'))!.toString()).toBe('changed')
  expect((await new S3Layer(where).read('input.csv'))!.toString()).toBe('a,b\n1,2\n')
})

describe('session workspaces in the bucket (fabric.workspaces: s3)', () => {
  let dataDir: string
  const gates: Execgate[] = []
  const open = async (prefix: string) => {
    const gate = await createExecgate({
      env: {
        EXECGATE_LOG_LEVEL: 'silent',
        EXECGATE_READINESS_ENABLED: 'false',
        EXECGATE_EXECUTION_ENABLED: 'quickjs',
        EXECGATE_FABRIC_DATA_DIR: dataDir,
        EXECGATE_FABRIC_WORKSPACES: 's3',
        EXECGATE_FABRIC_S3_BUCKET: BUCKET,
        EXECGATE_FABRIC_S3_PREFIX: prefix,
        EXECGATE_FABRIC_S3_ENDPOINT: s3.endpoint,
        EXECGATE_FABRIC_S3_FORCE_PATH_STYLE: 'true',
        EXECGATE_SECURITY_DEFAULT_POLICY_FILESYSTEM: 'sandboxed',
      },
    })
    gates.push(gate)
    return gate
  }
  beforeAll(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-s3-sessions-'))
  })
  afterAll(async () => {
    await Promise.all(gates.map((gate) => gate.dispose()))
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  test('a file one call writes, the next call reads, on another execgate over the same bucket; closing clears it', async () => {
    const first = await open('deploy/')
    const wrote = await first.execute({
      language: 'javascript',
      code: `await write_file('state.json', JSON.stringify({ step: 1 })); 'saved'`,
      sessionId: 's-1',
    })
    expect(wrote).toMatchObject({ status: 'ok', value: 'saved' })
    const keys = (await new S3Objects(s3.settings(BUCKET, 'deploy/')).list()).map((entry) => entry.key)
    expect(keys).toEqual(['workspaces/sessions/s-1/state.json'])
    const second = await open('deploy/')
    const read = await second.execute({
      language: 'javascript',
      code: `JSON.parse(await read_file('state.json')).step + 1`,
      sessionId: 's-1',
    })
    expect(read).toMatchObject({ status: 'ok', value: 2 })
    expect(await second.closeSession('s-1')).toBe(true)
    // Closing removes the files in the background: wait until the bucket says so.
    for (let waited = 0; (await new S3Objects(s3.settings(BUCKET, 'deploy/')).list()).length > 0; waited += 50) {
      if (waited > 5000) throw new Error('the session files were not removed')
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  })

  test('without a bucket named, s3 workspaces stop start-up naming the key', async () => {
    await expect(
      createExecgate({
        env: {
          EXECGATE_LOG_LEVEL: 'silent',
          EXECGATE_READINESS_ENABLED: 'false',
          EXECGATE_EXECUTION_ENABLED: 'quickjs',
          EXECGATE_FABRIC_WORKSPACES: 's3',
          EXECGATE_FABRIC_DATA_DIR: dataDir,
        },
        warm: false,
      }),
    ).rejects.toThrow(/fabric\.workspaces is "s3" but fabric\.s3\.bucket is empty/)
  })
})
