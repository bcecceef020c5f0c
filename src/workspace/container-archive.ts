import { globalComment, readTar, writeTar, type TarEntry } from './tar'

/**
 * A container snapshot: every writable place of a sandbox's container (its workspace and its temporary folders), as
 * one tar rooted at the container's `/` (`workspace/…`, `tmp/…`). The archive is untrusted on the way back in (a
 * tenant can name any of its artifacts as a snapshot), so `checkContainerArchive` is the only way to read one: it
 * refuses absolute paths, `..`, paths outside the writable places, paths that pass through a symbolic link the
 * archive itself made, hard links to anything but a file before them, and devices or FIFOs; it drops set-id bits.
 * A symbolic link is kept as data (its text), never followed. What it returns is written back canonically (sorted,
 * hard links last), and only that is unpacked, in the container, by the engine: never on the host.
 */

/** The pax global comment that marks an archive as a container snapshot (an old snapshot is workspace files only). */
export const CONTAINER_ARCHIVE_COMMENT = 'execgate sandbox snapshot; layout=container; v1'

/** The writable places of a sandbox container, as archive paths: all of them are snapshotted, nothing else. */
export const CONTAINER_ROOTS = ['workspace', 'tmp', 'var/tmp', 'dev/shm'] as const

/** The workspace's place in the archive. */
export const WORKSPACE_ROOT_IN_ARCHIVE = 'workspace'

export class UnsafeArchiveError extends Error {}

function rootOf(path: string): string | undefined {
  return CONTAINER_ROOTS.find((root) => path === root || path.startsWith(`${root}/`))
}

/** The archive path, or why it is refused. */
function checkedPath(raw: string): string {
  const path = raw.replace(/\/+$/, '')
  if (!path || path.startsWith('/')) throw new UnsafeArchiveError(`${JSON.stringify(raw)}: an absolute or empty path`)
  if (path.includes('\0')) throw new UnsafeArchiveError(`${JSON.stringify(raw)}: a NUL in the path`)
  const segments = path.split('/')
  if (segments.some((segment) => segment === '..' || segment === '.' || segment === ''))
    throw new UnsafeArchiveError(`${JSON.stringify(raw)}: a path with '..', '.' or '//'`)
  if (!rootOf(path)) throw new UnsafeArchiveError(`${JSON.stringify(raw)}: outside ${CONTAINER_ROOTS.map((root) => `/${root}`).join(', ')}`)
  return path
}

/**
 * The entries of a container archive, checked (see above); throws `UnsafeArchiveError` for an archive that must not
 * be unpacked, `TarFormatError` for one that is not a tar. `maxBytes` caps the files' total size.
 */
export function checkContainerArchive(archive: Uint8Array, maxBytes?: number): TarEntry[] {
  return checkContainerEntries(readTar(archive, maxBytes).entries)
}

/** `checkContainerArchive` of entries already read. */
export function checkContainerEntries(entries: readonly TarEntry[]): TarEntry[] {
  const links = new Set<string>()
  const files = new Set<string>()
  const seen = new Set<string>()
  const checked: TarEntry[] = []
  for (const entry of entries) {
    if (entry.type === 'other') throw new UnsafeArchiveError(`${entry.path}: a device, FIFO or socket (tar type ${entry.typeFlag})`)
    const path = checkedPath(entry.path)
    // Through a link the archive made, an entry would land wherever that link points.
    for (let cut = path.indexOf('/'); cut !== -1; cut = path.indexOf('/', cut + 1))
      if (links.has(path.slice(0, cut))) throw new UnsafeArchiveError(`${path}: under the symbolic link ${path.slice(0, cut)}`)
    if (seen.has(path)) throw new UnsafeArchiveError(`${path}: in the archive twice`)
    seen.add(path)
    // The places themselves are the new container's own mounts: their modes and owners are not the archive's to set.
    if (CONTAINER_ROOTS.includes(path as (typeof CONTAINER_ROOTS)[number])) {
      if (entry.type !== 'directory') throw new UnsafeArchiveError(`${path}: not a folder`)
      continue
    }
    if (entry.type === 'hardlink') {
      const target = checkedPath(entry.linkTarget ?? '')
      if (!files.has(target)) throw new UnsafeArchiveError(`${path}: a hard link to ${target}, not a file before it`)
      checked.push({ ...entry, path, linkTarget: target, mode: entry.mode & 0o1777 })
      continue
    }
    if (entry.type === 'symlink') {
      if (!entry.linkTarget || entry.linkTarget.includes('\0')) throw new UnsafeArchiveError(`${path}: a symbolic link to nothing`)
      links.add(path)
    }
    if (entry.type === 'file') files.add(path)
    checked.push({ ...entry, path, mode: entry.mode & 0o1777 })
  }
  return checked
}

/** True when the archive says it is a container snapshot (else it is an archive of workspace files). */
export function isContainerArchive(archive: Uint8Array): boolean {
  return globalComment(archive) === CONTAINER_ARCHIVE_COMMENT
}

/** The canonical archive of checked entries: sorted by path (a folder before what it holds), hard links last. */
export function writeContainerArchive(entries: readonly TarEntry[]): Buffer {
  const order = (a: TarEntry, b: TarEntry) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)
  const sorted = [
    ...entries.filter((entry) => entry.type !== 'hardlink').sort(order),
    ...entries.filter((entry) => entry.type === 'hardlink').sort(order),
  ]
  return writeTar(sorted, CONTAINER_ARCHIVE_COMMENT)
}

/**
 * The workspace's regular files of checked entries, as workspace paths (hard links as their target's bytes): what a
 * backend without container snapshots restores of one. Links and the temporary folders are left out.
 */
export function workspaceFilesOf(entries: readonly TarEntry[]): { path: string; content: Uint8Array }[] {
  const prefix = `${WORKSPACE_ROOT_IN_ARCHIVE}/`
  const contents = new Map(entries.filter((entry) => entry.type === 'file').map((entry) => [entry.path, entry.content!]))
  return entries
    .filter((entry) => entry.path.startsWith(prefix) && (entry.type === 'file' || entry.type === 'hardlink'))
    .map((entry) => ({
      path: entry.path.slice(prefix.length),
      content: entry.type === 'file' ? entry.content! : contents.get(entry.linkTarget!)!,
    }))
}
