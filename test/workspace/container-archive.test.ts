import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {
  UnsafeArchiveError,
  checkContainerArchive,
  isContainerArchive,
  readTar,
  workspaceFilesOf,
  writeContainerArchive,
  writeTar,
  type TarEntry,
} from '../../src/workspace'
import { CONTAINER_ARCHIVE_COMMENT } from '../../src/workspace/container-archive'

/**
 * The container snapshot archive (src/workspace/tar.ts, container-archive.ts) against GNU tar both ways, and every
 * hostile entry an archive named as a snapshot could carry: each is refused as a whole, before anything is unpacked.
 */

const entry = (path: string, extra: Partial<TarEntry> = {}): TarEntry => ({
  path,
  type: 'file',
  mode: 0o640,
  uid: 65534,
  gid: 65534,
  mtime: 1_700_000_000,
  content: Buffer.from(`${path}\n`),
  ...extra,
})
const dir = (path: string): TarEntry => ({ path, type: 'directory', mode: 0o750, uid: 65534, gid: 65534, mtime: 1_700_000_000 })
const marked = (entries: TarEntry[]) => writeTar(entries, CONTAINER_ARCHIVE_COMMENT)

/** An archive whose one entry has this tar type flag (a device, a FIFO): written as a file, its flag changed. */
function withTypeFlag(flag: string): Buffer {
  const archive = marked([dir('workspace'), entry('workspace/dev')])
  const at = archive.indexOf(Buffer.from('workspace/dev\0')) // the entry's header starts with its name
  archive.write(flag, at + 156, 1, 'ascii')
  archive.fill(0x20, at + 148, at + 156)
  let sum = 0
  for (let index = at; index < at + 512; index++) sum += archive[index]!
  archive.write(sum.toString(8).padStart(6, '0') + '\0 ', at + 148, 8, 'ascii')
  return archive
}

test('our archive is a tar GNU tar reads: modes, owners, links, a folder, a path past 255 bytes', () => {
  const long = `workspace/${'d'.repeat(120)}/${'e'.repeat(120)}/${'f'.repeat(90)}`
  const entries: TarEntry[] = [
    dir('workspace/empty'),
    entry('workspace/run.sh', { mode: 0o755 }),
    { ...entry('workspace/link'), type: 'symlink', linkTarget: '/etc/passwd', content: undefined },
    { ...entry('workspace/again'), type: 'hardlink', linkTarget: 'workspace/run.sh', content: undefined },
    entry('tmp/cache.bin', { uid: 65533, gid: 65533 }),
    entry(long),
  ]
  const archive = writeContainerArchive(checkContainerArchive(marked([dir('workspace'), ...entries])))
  expect(isContainerArchive(archive)).toBe(true)
  const listed = execFileSync('tar', ['--numeric-owner', '-tvf', '-'], { input: archive }).toString()
  expect(listed).toMatch(/^-rwxr-xr-x 65534\/65534 +\d+ .* workspace\/run\.sh$/m)
  expect(listed).toMatch(/^l.* workspace\/link -> \/etc\/passwd$/m)
  expect(listed).toMatch(/^h.* workspace\/again link to workspace\/run\.sh$/m)
  expect(listed).toMatch(/^-rw-r----- 65533\/65533 .* tmp\/cache\.bin$/m)
  expect(listed).toContain(long)
  // Read back: the same entries; the workspace's files for a backend without container snapshots.
  const back = checkContainerArchive(archive)
  expect(back.map((item) => [item.path, item.type, item.mode, item.linkTarget])).toEqual(
    expect.arrayContaining(entries.map((item) => [item.path, item.type, item.mode, item.linkTarget])),
  )
  expect(workspaceFilesOf(back).map((file) => [file.path, Buffer.from(file.content).toString()])).toEqual(
    expect.arrayContaining([
      ['run.sh', 'workspace/run.sh\n'],
      ['again', 'workspace/run.sh\n'],
    ]),
  )
  expect(workspaceFilesOf(back).map((file) => file.path)).not.toContain('link')
})

test("GNU tar's own archive (long names, links) reads back through readTar", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-tar-'))
  try {
    const deep = path.join(root, 'workspace', 'a'.repeat(110), 'b'.repeat(110))
    fs.mkdirSync(deep, { recursive: true })
    fs.writeFileSync(path.join(deep, 'c'.repeat(100)), 'deep')
    fs.symlinkSync(`/${'x'.repeat(150)}`, path.join(root, 'workspace', 'far'))
    const archive = execFileSync('tar', ['--create', '--file=-', '--format=gnu', '-C', root, 'workspace'])
    const { entries } = readTar(archive)
    const file = entries.find((item) => item.type === 'file')!
    expect(file.path).toBe(`workspace/${'a'.repeat(110)}/${'b'.repeat(110)}/${'c'.repeat(100)}`)
    expect(Buffer.from(file.content!).toString()).toBe('deep')
    expect(entries.find((item) => item.type === 'symlink')?.linkTarget).toBe(`/${'x'.repeat(150)}`)
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
})

test.each([
  ['an absolute path', [entry('/etc/cron.d/evil')]],
  ['a .. segment', [entry('workspace/../../etc/evil')]],
  ['a path outside the writable places', [entry('etc/evil')]],
  [
    'a file through a symbolic link the archive made',
    [{ ...entry('workspace/up'), type: 'symlink', linkTarget: '/' }, entry('workspace/up/etc/evil')],
  ],
  ['a hard link to a file outside the archive', [{ ...entry('workspace/shadow'), type: 'hardlink', linkTarget: 'etc/shadow' }]],
  [
    'a hard link to a file not before it',
    [{ ...entry('workspace/l'), type: 'hardlink', linkTarget: 'workspace/later' }, entry('workspace/later')],
  ],
  [
    'a path twice (a link, then a file over it)',
    [{ ...entry('workspace/x'), type: 'symlink', linkTarget: '/etc/passwd' }, entry('workspace/x')],
  ],
  ['a writable place that is not a folder', [{ ...entry('tmp'), type: 'symlink', linkTarget: '/etc' }]],
] as [string, TarEntry[]][])('refused: %s', (_name, entries) => {
  expect(() => checkContainerArchive(marked(entries))).toThrow(UnsafeArchiveError)
})

test.each([
  ['a character device', '3'],
  ['a block device', '4'],
  ['a FIFO', '6'],
])('refused: %s', (_name, flag) => {
  expect(() => checkContainerArchive(withTypeFlag(flag))).toThrow(/device, FIFO or socket/)
})

test('set-id bits are dropped; the files past the cap are refused; an unmarked archive is not a container snapshot', () => {
  const [checked] = checkContainerArchive(marked([entry('tmp/suid', { mode: 0o6755 })]))
  expect(checked!.mode).toBe(0o755)
  expect(() => checkContainerArchive(marked([entry('tmp/big', { content: Buffer.alloc(2048) })]), 1024)).toThrow(/more than 1024 bytes/)
  expect(isContainerArchive(writeTar([entry('workspace/a')]))).toBe(false)
})
