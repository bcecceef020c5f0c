import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { SqliteUploadIndex, UploadStore } from '../../src/fabric/files'
import { S3Objects } from '../../src/workspace'
import { startS3Server, type S3Server } from '../servers/s3-server'

/**
 * Issue 25: nodes' local copies of uploads are cleaned. Two upload stores as two nodes hold them (folders of their
 * own, one index, one S3-compatible bucket on loopback): node B's copies, fetched from the bucket, stay within its
 * byte budget (least recently used go first), a copy of an upload deleted through node A leaves B at its next trim,
 * and a delete through a node removes that node's own copy at once.
 */

const BUCKET = 'execgate-upload-copies'
const FILE_BYTES = 200_000
const files = ['a', 'b', 'c'].map((seed) =>
  Buffer.from(Array.from({ length: FILE_BYTES / 10 }, (_, i) => `${seed}${String(i).padStart(8, '0')}\n`).join('')),
)
const digests = files.map((content) => createHash('sha256').update(content).digest('hex'))

let s3: S3Server
let root: string
let nodeA: UploadStore
let nodeB: UploadStore

const copyOn = (node: string, sha256: string) => fs.existsSync(path.join(root, node, sha256.slice(0, 2), sha256))

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-upload-copies-'))
  s3 = await startS3Server()
  const shared = new S3Objects(s3.settings(BUCKET)).under('uploads/')
  await new S3Objects(s3.settings(BUCKET)).ensureBucket()
  fs.mkdirSync(path.join(root, 'index'))
  const index = () => new SqliteUploadIndex(path.join(root, 'index'))
  const node = (name: string, localCopyBytes: number) =>
    new UploadStore({
      root: path.join(root, name),
      quotaBytesPerTenant: 10 * FILE_BYTES,
      index: index(),
      shared,
      localCopyBytes,
      copyGraceMs: 0,
    })
  // B keeps two copies at most; A keeps all.
  nodeA = node('a', 0)
  nodeB = node('b', 2 * FILE_BYTES + FILE_BYTES / 2)
}, 60_000)

afterAll(async () => {
  await Promise.all([nodeA?.close(), nodeB?.close()])
  await s3?.stop()
  fs.rmSync(root, { recursive: true, force: true })
}, 30_000)

test('copies fetched from the bucket stay within the budget, least recently used first; deleted uploads leave', async () => {
  for (const content of files) await nodeA.put('acme', Readable.from([content]))
  expect(digests.map((sha256) => copyOn('a', sha256))).toEqual([true, true, true])
  // B fetches a, then b: both kept (400 kB of 500 kB).
  for (const sha256 of digests.slice(0, 2)) {
    const located = await nodeB.locate('acme', sha256)
    expect(createHash('sha256').update(fs.readFileSync(located!.hostPath)).digest('hex')).toBe(sha256)
  }
  expect(nodeB.localCopyBytes()).toBe(2 * FILE_BYTES)
  // a used again, so b is now the least recently used: fetching c removes b, not a.
  await new Promise((resolve) => setTimeout(resolve, 5))
  await nodeB.locate('acme', digests[0]!)
  await new Promise((resolve) => setTimeout(resolve, 5))
  expect(await nodeB.locate('acme', digests[2]!)).toBeDefined()
  expect(digests.map((sha256) => copyOn('b', sha256))).toEqual([true, false, true])
  expect(nodeB.localCopyBytes()).toBe(2 * FILE_BYTES)
  // A removed copy is fetched again when a run names it (and checked against its digest).
  const again = await nodeB.locate('acme', digests[1]!)
  expect(createHash('sha256').update(fs.readFileSync(again!.hostPath)).digest('hex')).toBe(digests[1])
  expect(nodeB.localCopyBytes()).toBeLessThanOrEqual(2 * FILE_BYTES + FILE_BYTES / 2)

  // Deleted through A: A's copy goes at once; B's copy of it goes at B's next trim.
  const onB = digests.filter((sha256) => copyOn('b', sha256))
  expect(await nodeA.delete('acme', onB[0]!)).toBe(true)
  expect(copyOn('a', onB[0]!)).toBe(false)
  expect(copyOn('b', onB[0]!)).toBe(true)
  expect(await nodeB.trimCopies()).toBe(1)
  expect(copyOn('b', onB[0]!)).toBe(false)
  expect(await nodeB.locate('acme', onB[0]!)).toBeUndefined()
  // Deleted through B: B's own copy goes at once.
  expect(await nodeB.delete('acme', onB[1]!)).toBe(true)
  expect(copyOn('b', onB[1]!)).toBe(false)
}, 60_000)

test('without a bucket the folder is the only copy: nothing is ever trimmed', async () => {
  const alone = new UploadStore({ root: path.join(root, 'alone'), quotaBytesPerTenant: 10 * FILE_BYTES, localCopyBytes: 1, copyGraceMs: 0 })
  try {
    for (const content of files) await alone.put('acme', Readable.from([content]))
    expect(await alone.trimCopies()).toBe(0)
    expect(digests.every((sha256) => copyOn('alone', sha256))).toBe(true)
  } finally {
    await alone.close()
  }
})
