import { ExecgateError } from '../../core'

/**
 * A sandbox snapshot's archive: a POSIX ustar file of the workspace's regular files, written deterministically
 * (paths sorted, mode 0644, owner 0, mtime 0), so the same workspace always gives the same bytes and the archive's
 * SHA-256 names its content. A plain tar, so `tar -xf` reads a snapshot downloaded from GET /v1/artifacts/:sha256.
 * No dependency: the format is 512-byte headers and padded bodies, and we write and read only regular files.
 */

const BLOCK = 512
const NAME_BYTES = 100
const PREFIX_BYTES = 155

export interface ArchiveFile {
  path: string
  content: Uint8Array
}

/** ustar keeps a path in `prefix/name`; a longer one has no place without pax headers, which we do not write. */
function splitPath(path: string): { name: string; prefix: string } {
  if (Buffer.byteLength(path) <= NAME_BYTES) return { name: path, prefix: '' }
  for (let cut = path.indexOf('/'); cut !== -1; cut = path.indexOf('/', cut + 1)) {
    const prefix = path.slice(0, cut)
    const name = path.slice(cut + 1)
    if (Buffer.byteLength(prefix) <= PREFIX_BYTES && Buffer.byteLength(name) <= NAME_BYTES) return { name, prefix }
  }
  throw new ExecgateError('EXECGATE_WORKSPACE_LIMIT', { detail: `${path}: a snapshot keeps paths of at most 255 bytes` })
}

function octal(header: Buffer, offset: number, length: number, value: number): void {
  header.write(value.toString(8).padStart(length - 1, '0') + '\0', offset, length, 'ascii')
}

function header(file: ArchiveFile): Buffer {
  const block = Buffer.alloc(BLOCK)
  const { name, prefix } = splitPath(file.path)
  block.write(name, 0, NAME_BYTES, 'utf8')
  octal(block, 100, 8, 0o644)
  octal(block, 108, 8, 0)
  octal(block, 116, 8, 0)
  octal(block, 124, 12, file.content.byteLength)
  octal(block, 136, 12, 0)
  block.write('0', 156, 1, 'ascii')
  block.write('ustar\0', 257, 6, 'ascii')
  block.write('00', 263, 2, 'ascii')
  block.write(prefix, 345, PREFIX_BYTES, 'utf8')
  // The checksum is the byte sum with its own field read as spaces.
  block.fill(0x20, 148, 156)
  let sum = 0
  for (const byte of block) sum += byte
  block.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8, 'ascii')
  return block
}

/** The archive of these files, the same bytes for the same files whatever their order. */
export function writeArchive(files: readonly ArchiveFile[]): Buffer {
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  const parts: Buffer[] = []
  for (const file of sorted) {
    parts.push(header(file), Buffer.from(file.content.buffer, file.content.byteOffset, file.content.byteLength))
    const pad = (BLOCK - (file.content.byteLength % BLOCK)) % BLOCK
    if (pad) parts.push(Buffer.alloc(pad))
  }
  parts.push(Buffer.alloc(BLOCK * 2))
  return Buffer.concat(parts)
}

function field(block: Buffer, offset: number, length: number): string {
  const raw = block.subarray(offset, offset + length)
  const end = raw.indexOf(0)
  return raw.subarray(0, end === -1 ? length : end).toString('utf8')
}

function notSnapshot(detail: string): ExecgateError {
  return new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: `not a sandbox snapshot: ${detail}` })
}

/** The regular files of an archive this module wrote (or any ustar of regular files and folders). */
export function readArchive(archive: Buffer): ArchiveFile[] {
  const files: ArchiveFile[] = []
  let at = 0
  while (at + BLOCK <= archive.length) {
    const block = archive.subarray(at, at + BLOCK)
    if (block.every((byte) => byte === 0)) return files
    let sum = 0
    for (let index = 0; index < BLOCK; index++) sum += index >= 148 && index < 156 ? 0x20 : block[index]!
    if (Number.parseInt(field(block, 148, 8).trim(), 8) !== sum) throw notSnapshot(`bad header checksum at byte ${at}`)
    const size = Number.parseInt(field(block, 124, 12).trim() || '0', 8)
    const type = field(block, 156, 1)
    const name = field(block, 0, NAME_BYTES)
    const prefix = field(block, 345, PREFIX_BYTES)
    const body = at + BLOCK
    if (!Number.isFinite(size) || body + size > archive.length) throw notSnapshot(`${name} runs past the end`)
    if (type === '0' || type === '') files.push({ path: prefix ? `${prefix}/${name}` : name, content: archive.subarray(body, body + size) })
    else if (type !== '5') throw notSnapshot(`${name} is not a regular file (type ${type})`)
    at = body + Math.ceil(size / BLOCK) * BLOCK
  }
  throw notSnapshot('no end-of-archive blocks')
}
