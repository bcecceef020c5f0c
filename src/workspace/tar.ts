/**
 * A tar codec for archives of a filesystem tree: regular files, folders, symbolic and hard links with their modes,
 * owners and mtimes. It reads what GNU tar writes (ustar, GNU long names `L`/`K`, pax `x`/`g` headers) and writes
 * ustar, with a pax header for a path or link target too long for ustar. It never touches a filesystem: an archive
 * is untrusted data, checked by its reader (container-archive.ts) before anything is unpacked anywhere.
 */

const BLOCK = 512
const NAME_BYTES = 100
const PREFIX_BYTES = 155

export type TarEntryType = 'file' | 'directory' | 'symlink' | 'hardlink' | 'other'

export interface TarEntry {
  /** As written in the archive (no leading `./`); the reader does not judge it. */
  path: string
  type: TarEntryType
  mode: number
  uid: number
  gid: number
  /** Seconds since the epoch. */
  mtime: number
  /** A link's target (a symbolic link's text, or a hard link's archive path). */
  linkTarget?: string
  /** A regular file's bytes. */
  content?: Uint8Array
  /** For `other`: the tar type flag (a device, a FIFO, …). */
  typeFlag?: string
}

export class TarFormatError extends Error {}

function field(block: Uint8Array, offset: number, length: number): string {
  const raw = Buffer.from(block.buffer, block.byteOffset + offset, length)
  const end = raw.indexOf(0)
  return raw.subarray(0, end === -1 ? length : end).toString('utf8')
}

function number(block: Uint8Array, offset: number, length: number): number {
  // GNU tar writes a number too large for octal in base-256, its first byte's high bit set.
  if (block[offset]! & 0x80) {
    let value = block[offset]! & 0x7f
    for (let index = 1; index < length; index++) value = value * 256 + block[offset + index]!
    return value
  }
  const text = field(block, offset, length).trim()
  const value = text ? Number.parseInt(text, 8) : 0
  if (!Number.isFinite(value)) throw new TarFormatError(`a header number is not octal: ${JSON.stringify(text)}`)
  return value
}

/** The `key=value` records of a pax header body. */
function paxRecords(body: Buffer): Map<string, string> {
  const records = new Map<string, string>()
  let at = 0
  while (at < body.length) {
    const space = body.indexOf(0x20, at)
    const length = space === -1 ? NaN : Number(body.subarray(at, space).toString('ascii'))
    if (!Number.isInteger(length) || length <= 0 || at + length > body.length) throw new TarFormatError('a pax header is malformed')
    const record = body.subarray(space + 1, at + length - 1).toString('utf8')
    const equals = record.indexOf('=')
    if (equals > 0) records.set(record.slice(0, equals), record.slice(equals + 1))
    at += length
  }
  return records
}

/** The `comment` of the archive's first header when that is a pax global header (read without the rest). */
export function globalComment(archive: Uint8Array): string | undefined {
  if (archive.byteLength < BLOCK || archive[156] !== 0x67) return undefined
  const size = number(archive, 124, 12)
  if (BLOCK + size > archive.byteLength) return undefined
  try {
    return paxRecords(Buffer.from(archive.buffer, archive.byteOffset + BLOCK, size)).get('comment')
  } catch {
    return undefined
  }
}

const TYPES: Record<string, TarEntryType> = { '0': 'file', '': 'file', '7': 'file', '1': 'hardlink', '2': 'symlink', '5': 'directory' }

/**
 * Every entry of the archive, in archive order, with the archive's pax global `comment` (if any). Throws
 * `TarFormatError` for a malformed archive; stops reading past `maxBytes` of content.
 */
export function readTar(archive: Uint8Array, maxBytes = Number.POSITIVE_INFINITY): { entries: TarEntry[]; comment?: string } {
  const bytes = Buffer.from(archive.buffer, archive.byteOffset, archive.byteLength)
  const entries: TarEntry[] = []
  let comment: string | undefined
  let longName: string | undefined
  let longLink: string | undefined
  let pax = new Map<string, string>()
  let total = 0
  let at = 0
  while (at + BLOCK <= bytes.length) {
    const block = bytes.subarray(at, at + BLOCK)
    if (block.every((byte) => byte === 0)) return { entries, ...(comment !== undefined ? { comment } : {}) }
    let sum = 0
    for (let index = 0; index < BLOCK; index++) sum += index >= 148 && index < 156 ? 0x20 : block[index]!
    if (number(block, 148, 8) !== sum) throw new TarFormatError(`bad header checksum at byte ${at}`)
    const flag = field(block, 156, 1)
    const size = number(block, 124, 12)
    const body = at + BLOCK
    if (body + size > bytes.length) throw new TarFormatError(`an entry at byte ${at} runs past the end`)
    const content = bytes.subarray(body, body + size)
    at = body + Math.ceil(size / BLOCK) * BLOCK
    if (flag === 'L' || flag === 'K') {
      const text = content.toString('utf8').replace(/\0+$/, '')
      if (flag === 'L') longName = text
      else longLink = text
      continue
    }
    if (flag === 'x' || flag === 'g') {
      const records = paxRecords(content)
      if (flag === 'g') comment = records.get('comment') ?? comment
      else pax = records
      continue
    }
    const magic = field(block, 257, 6)
    const prefix = magic.startsWith('ustar') && block[263] === 0x30 ? field(block, 345, PREFIX_BYTES) : ''
    const name = pax.get('path') ?? longName ?? (prefix ? `${prefix}/${field(block, 0, NAME_BYTES)}` : field(block, 0, NAME_BYTES))
    const link = pax.get('linkpath') ?? longLink ?? field(block, 157, NAME_BYTES)
    const type = TYPES[flag] ?? 'other'
    if (type === 'file') {
      total += size
      if (total > maxBytes) throw new TarFormatError(`its files hold more than ${maxBytes} bytes`)
    }
    entries.push({
      path: name.replace(/^(\.\/)+/, ''),
      type,
      mode: number(block, 100, 8) & 0o7777,
      uid: Number(pax.get('uid') ?? number(block, 108, 8)),
      gid: Number(pax.get('gid') ?? number(block, 116, 8)),
      mtime: Math.floor(Number(pax.get('mtime') ?? number(block, 136, 12))),
      ...(type === 'symlink' || type === 'hardlink' ? { linkTarget: link } : {}),
      ...(type === 'file' ? { content } : {}),
      ...(type === 'other' ? { typeFlag: flag } : {}),
    })
    longName = longLink = undefined
    pax = new Map()
  }
  throw new TarFormatError('no end-of-archive blocks')
}

function octal(header: Buffer, offset: number, length: number, value: number): void {
  header.write(value.toString(8).padStart(length - 1, '0') + '\0', offset, length, 'ascii')
}

function checksum(block: Buffer): Buffer {
  // The checksum is the byte sum with its own field read as spaces.
  block.fill(0x20, 148, 156)
  let sum = 0
  for (const byte of block) sum += byte
  block.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8, 'ascii')
  return block
}

/** ustar keeps a path in `prefix/name`; undefined when it has no place there (a pax header carries it then). */
function splitPath(path: string): { name: string; prefix: string } | undefined {
  if (Buffer.byteLength(path) <= NAME_BYTES) return { name: path, prefix: '' }
  for (let cut = path.indexOf('/'); cut !== -1; cut = path.indexOf('/', cut + 1)) {
    const prefix = path.slice(0, cut)
    const name = path.slice(cut + 1)
    if (Buffer.byteLength(prefix) <= PREFIX_BYTES && Buffer.byteLength(name) <= NAME_BYTES) return { name, prefix }
  }
  return undefined
}

function header(flag: string, name: string, prefix: string, size: number, entry: Partial<TarEntry>, link = ''): Buffer {
  const block = Buffer.alloc(BLOCK)
  block.write(name, 0, NAME_BYTES, 'utf8')
  octal(block, 100, 8, entry.mode ?? 0o644)
  octal(block, 108, 8, entry.uid ?? 0)
  octal(block, 116, 8, entry.gid ?? 0)
  octal(block, 124, 12, size)
  octal(block, 136, 12, entry.mtime ?? 0)
  block.write(flag, 156, 1, 'ascii')
  block.write(link, 157, NAME_BYTES, 'utf8')
  block.write('ustar\0', 257, 6, 'ascii')
  block.write('00', 263, 2, 'ascii')
  block.write(prefix, 345, PREFIX_BYTES, 'utf8')
  return checksum(block)
}

function padded(body: Buffer): Buffer[] {
  const pad = (BLOCK - (body.length % BLOCK)) % BLOCK
  return pad ? [body, Buffer.alloc(pad)] : [body]
}

/** A pax header block and body holding these records (each `length key=value\n`, its length counting itself). */
function paxHeader(flag: 'x' | 'g', records: Record<string, string>): Buffer[] {
  const lines = Object.entries(records).map(([key, value]) => {
    const rest = ` ${key}=${value}\n`
    let length = Buffer.byteLength(rest) + 1
    while (String(length).length + Buffer.byteLength(rest) !== length) length = String(length).length + Buffer.byteLength(rest)
    return `${length}${rest}`
  })
  const body = Buffer.from(lines.join(''), 'utf8')
  return [header(flag, flag === 'g' ? 'pax_global_header' : 'PaxHeader', '', body.length, {}), ...padded(body)]
}

const FLAGS: Record<Exclude<TarEntryType, 'other'>, string> = { file: '0', directory: '5', symlink: '2', hardlink: '1' }

/** The archive of these entries, in the order given, after a pax global header with `comment` when one is given. */
export function writeTar(entries: readonly TarEntry[], comment?: string): Buffer {
  const parts: Buffer[] = comment === undefined ? [] : paxHeader('g', { comment })
  for (const entry of entries) {
    if (entry.type === 'other') throw new TarFormatError(`${entry.path}: only files, folders and links are written`)
    const name = entry.type === 'directory' && !entry.path.endsWith('/') ? `${entry.path}/` : entry.path
    const link = entry.linkTarget ?? ''
    const split = splitPath(name)
    const longLink = Buffer.byteLength(link) > NAME_BYTES
    if (!split || longLink) parts.push(...paxHeader('x', { ...(split ? {} : { path: name }), ...(longLink ? { linkpath: link } : {}) }))
    const content =
      entry.type === 'file' ? Buffer.from(entry.content!.buffer, entry.content!.byteOffset, entry.content!.byteLength) : undefined
    const { name: short, prefix } = split ?? { name: name.slice(-NAME_BYTES), prefix: '' }
    parts.push(header(FLAGS[entry.type], short, prefix, content?.length ?? 0, entry, longLink ? '' : link))
    if (content) parts.push(...padded(content))
  }
  parts.push(Buffer.alloc(BLOCK * 2))
  return Buffer.concat(parts)
}
