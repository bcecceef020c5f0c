import { toWorkspaceFile, workspaceFileBytes, type WorkspaceFile } from '../../src/core'

/**
 * Just enough tar (ustar, with pax and GNU long names) to move workspace files in and out of the sandbox. Reading
 * never touches the host filesystem: links are reported and skipped, so nothing in the sandbox can make the host
 * follow a symlink out of the workspace.
 */

const BLOCK = 512

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0'
}

function header(name: string, size: number, type: string): Buffer {
  const block = Buffer.alloc(BLOCK)
  block.write(name, 0, 100, 'utf8')
  block.write(octal(0o644, 8), 100)
  block.write(octal(0, 8), 108)
  block.write(octal(0, 8), 116)
  block.write(octal(size, 12), 124)
  block.write(octal(0, 12), 136)
  block.write(' '.repeat(8), 148)
  block.write(type, 156)
  block.write('ustar\0', 257)
  block.write('00', 263)
  let sum = 0
  for (const byte of block) sum += byte
  block.write(octal(sum, 7) + ' ', 148)
  return block
}

function padded(data: Buffer): Buffer[] {
  const rest = data.length % BLOCK
  return rest === 0 ? [data] : [data, Buffer.alloc(BLOCK - rest)]
}

/** A pax record: "<length> path=<value>\n", where the length counts itself. */
function paxRecord(key: string, value: string): Buffer {
  const body = ` ${key}=${value}\n`
  const bodyBytes = Buffer.byteLength(body)
  let length = bodyBytes + 1
  while (String(length).length + bodyBytes !== length) length = String(length).length + bodyBytes
  return Buffer.from(`${length}${body}`)
}

export function packFiles(files: readonly WorkspaceFile[]): Buffer {
  const parts: Buffer[] = []
  for (const file of files) {
    const data = workspaceFileBytes(file)
    if (Buffer.byteLength(file.path) > 99) {
      const pax = paxRecord('path', file.path)
      parts.push(header('././@PaxHeader', pax.length, 'x'), ...padded(pax))
    }
    parts.push(header(file.path.slice(0, 99), data.length, '0'), ...padded(data))
  }
  parts.push(Buffer.alloc(BLOCK * 2))
  return Buffer.concat(parts)
}

export interface UnpackedWorkspace {
  files: WorkspaceFile[]
  /** Entries not returned (links, devices, paths leaving the workspace), with why. */
  skipped: string[]
}

function text(block: Buffer, start: number, length: number): string {
  const field = block.subarray(start, start + length)
  const end = field.indexOf(0)
  return field.subarray(0, end === -1 ? length : end).toString('utf8')
}

/** Workspace-relative, or undefined when the path would leave the workspace. */
function confine(raw: string): string | undefined {
  const segments = raw.split('/').filter((segment) => segment !== '' && segment !== '.')
  if (raw.startsWith('/') || raw.includes('\0') || segments.includes('..') || segments.length === 0) return undefined
  return segments.join('/')
}

export function unpackFiles(archive: Buffer): UnpackedWorkspace {
  const files: WorkspaceFile[] = []
  const skipped: string[] = []
  let offset = 0
  let longName: string | undefined
  while (offset + BLOCK <= archive.length) {
    const block = archive.subarray(offset, offset + BLOCK)
    if (block.every((byte) => byte === 0)) break
    const size = parseInt(text(block, 124, 12).trim() || '0', 8)
    const type = text(block, 156, 1) || '0'
    const prefix = text(block, 345, 155)
    const name = longName ?? (prefix ? `${prefix}/${text(block, 0, 100)}` : text(block, 0, 100))
    const body = archive.subarray(offset + BLOCK, offset + BLOCK + size)
    offset += BLOCK + Math.ceil(size / BLOCK) * BLOCK
    longName = undefined
    if (type === 'L') {
      longName = body.toString('utf8').replace(/\0+$/, '')
      continue
    }
    if (type === 'x') {
      longName = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(body.toString('utf8'))?.[1]
      continue
    }
    if (type === '5' || type === 'g') continue
    const path = confine(name)
    if (type !== '0' && type !== '7') {
      skipped.push(`${name}: ${type === '2' ? 'symbolic link' : type === '1' ? 'hard link' : 'not a regular file'}, not collected`)
    } else if (path === undefined) {
      skipped.push(`${name}: outside the workspace, not collected`)
    } else if (body.length < size) {
      skipped.push(`${name}: cut short (the workspace archive passed its size limit)`)
    } else {
      files.push(toWorkspaceFile(path, body))
    }
  }
  return { files, skipped }
}
