import { PassThrough, type Duplex } from 'node:stream'
import type Docker from 'dockerode'
import { ExecgateError, describeError } from '../../src/core'
import {
  CONTAINER_ROOTS,
  TarFormatError,
  UnsafeArchiveError,
  checkContainerEntries,
  readTar,
  writeContainerArchive,
  type TarEntry,
} from '../../src/workspace'
import { execUsers } from './sandbox-launcher'
import type { SandboxUploadFolder } from './sandbox-uploads'

/**
 * A docker sandbox's snapshot and restore, each one call to the engine. The container's root is read-only and its
 * user unprivileged, so what an exec can change is exactly its writable tmpfs mounts (`CONTAINER_ROOTS`: the
 * workspace, /tmp, /var/tmp, /dev/shm); the engine's own views (`GET /containers/{id}/changes`, `export`, `commit`)
 * see the image's layer and none of them (measured on podman 4.3: `changes` lists only /etc and the /workspace mount
 * point). So a snapshot is one exec of the image's GNU tar over those mounts, run as the workspace's user (it reads
 * what the sandbox's own code could read, never more), streamed and capped; a restore is one `PUT /archive` of the
 * checked, rewritten archive at `/`, which the engine unpacks inside the container, never on the host.
 */

/** One exec of GNU tar: numeric owners, no descent into another mount, an unreadable file skipped (and said). */
const TAR = ['/bin/tar', '--create', '--file=-', '--format=gnu', '--numeric-owner', '--one-file-system', '--ignore-failed-read']

/** Longest a snapshot's exec may take (the engine reads at most the container's tmpfs, all in memory). */
const SNAPSHOT_TIMEOUT_MS = 120_000

export interface ArchiveSandbox {
  readonly id: string
  readonly container: Docker.Container
  /** The workspace's user, `uid:gid`. */
  readonly user: string
  readonly uploads: SandboxUploadFolder
}

/** The container's changed filesystem as a canonical container archive, at most `maxBytes` of files. */
export async function snapshotContainer(sandbox: ArchiveSandbox, maxBytes: number): Promise<{ archive: Buffer; skipped: string[] }> {
  const { stdout, stderr, exitCode } = await execCapped(sandbox, [...TAR, '-C', '/', ...CONTAINER_ROOTS], maxBytes)
  if (exitCode !== 0 && exitCode !== 1)
    throw new ExecgateError('EXECGATE_BACKEND_FAILED', {
      name: 'docker',
      detail: `the snapshot's tar failed: ${stderr.trim().split('\n').pop()}`,
    })
  // What tar could not read (another exec user's private file in /tmp, a file of mode 000) is skipped, and said.
  const skipped = [...stderr.matchAll(/^(?:\/bin\/)?tar: (.+?): (?:Warning: )?Cannot open/gm)].map((match) => `/${match[1]!}`)
  let entries: TarEntry[]
  try {
    // FIFOs and devices (the user cannot make devices) are not kept; tar itself skips sockets.
    const read = readTar(stdout, maxBytes).entries.filter((entry) => entry.type !== 'other')
    entries = checkContainerEntries(read.map((entry) => uploadAsFile(entry, sandbox.uploads)))
  } catch (error) {
    if (error instanceof TarFormatError && /more than/.test(error.message)) throw overLimit(maxBytes)
    throw new ExecgateError('EXECGATE_BACKEND_FAILED', {
      name: 'docker',
      detail: `the snapshot's archive is unusable: ${describeError(error)}`,
    })
  }
  return { archive: writeContainerArchive(entries), skipped }
}

/**
 * A link to an upload bound into the sandbox (sandbox-uploads.ts) is the upload's bytes in the snapshot: a new
 * sandbox has no such binding, and `readFile` sees those bytes there too.
 */
function uploadAsFile(entry: TarEntry, uploads: SandboxUploadFolder): TarEntry {
  if (entry.type !== 'symlink') return entry
  const content = uploads.contentAt(entry.linkTarget!)
  if (!content) return entry
  const { linkTarget: _target, ...rest } = entry
  return { ...rest, type: 'file', mode: 0o640, content }
}

/** Unpacks a container archive (untrusted: checked, its owners kept to the sandbox's users) in one engine call. */
export async function restoreContainer(sandbox: ArchiveSandbox, archive: Uint8Array, maxBytes: number): Promise<void> {
  let entries: TarEntry[]
  try {
    entries = checkContainerEntries(readTar(archive, maxBytes).entries)
  } catch (error) {
    if (error instanceof TarFormatError && /more than/.test(error.message)) throw overLimit(maxBytes)
    if (error instanceof TarFormatError || error instanceof UnsafeArchiveError)
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: `not a sandbox snapshot: ${error.message}` })
    throw error
  }
  // An owner the archive names is kept only if it is one of the sandbox's exec users; any other becomes the workspace's.
  const [uid, gid] = sandbox.user.split(':').map(Number) as [number, number]
  const users = Object.values(execUsers(sandbox.user)).map((pair) => pair.split(':').map(Number) as [number, number])
  const uids = new Set(users.map(([id]) => id))
  const gids = new Set(users.map(([, group]) => group))
  const owned = entries.map((entry) => ({
    ...entry,
    uid: uids.has(entry.uid) ? entry.uid : uid,
    gid: gids.has(entry.gid) ? entry.gid : gid,
  }))
  try {
    await sandbox.container.putArchive(writeContainerArchive(owned), { path: '/' })
  } catch (error) {
    const message = engineMessage(error)
    if (/no space left|file too large/i.test(message))
      throw new ExecgateError('EXECGATE_WORKSPACE_LIMIT', {
        detail: `the snapshot does not fit the sandbox's mounts (adapters.docker.workspaceMb): ${message}`,
      })
    throw new ExecgateError(
      'EXECGATE_BACKEND_FAILED',
      { name: 'docker', detail: `restoring into sandbox ${sandbox.id} failed: ${message}` },
      { cause: error, source: 'docker' },
    )
  }
}

function overLimit(maxBytes: number): ExecgateError {
  return new ExecgateError('EXECGATE_WORKSPACE_LIMIT', {
    detail: `a snapshot holds at most ${maxBytes} bytes (sandboxes.maxSnapshotBytes)`,
  })
}

function engineMessage(error: unknown): string {
  return (error as { json?: { message?: string } })?.json?.message ?? describeError(error)
}

/**
 * One exec, its stdout kept as bytes up to `maxBytes` plus the archive's headers (one 512-byte header per entry is
 * not counted against the files' size, so an eighth more): past that the stream is cut and the exec answers over-limit.
 */
async function execCapped(
  sandbox: ArchiveSandbox,
  cmd: string[],
  maxBytes: number,
): Promise<{ stdout: Buffer; stderr: string; exitCode: number | null }> {
  const streamCap = maxBytes + Math.ceil(maxBytes / 8) + 1024 * 1024
  let exec: Docker.Exec
  let stream: Duplex
  try {
    exec = await sandbox.container.exec({
      Cmd: cmd,
      User: sandbox.user,
      WorkingDir: '/',
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
    })
    stream = (await exec.start({ hijack: true, stdin: false })) as unknown as Duplex
  } catch (error) {
    throw new ExecgateError(
      'EXECGATE_BACKEND_FAILED',
      { name: 'docker', detail: `the snapshot's exec into sandbox ${sandbox.id} failed: ${engineMessage(error)}` },
      { cause: error, source: 'docker' },
    )
  }
  const out: Buffer[] = []
  const err: Buffer[] = []
  let bytes = 0
  let over = false
  const stdout = new PassThrough().on('data', (chunk: Buffer) => {
    bytes += chunk.length
    if (bytes > streamCap) {
      over = true
      stream.destroy()
    } else out.push(chunk)
  })
  const stderr = new PassThrough().on('data', (chunk: Buffer) => err.push(chunk))
  sandbox.container.modem.demuxStream(stream, stdout, stderr)
  let timer: NodeJS.Timeout | undefined
  const ended = await Promise.race([
    new Promise<boolean>(
      (resolve) => (
        stream.on('end', () => resolve(true)),
        stream.on('close', () => resolve(true)),
        stream.on('error', () => resolve(true))
      ),
    ),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), SNAPSHOT_TIMEOUT_MS))),
  ]).finally(() => clearTimeout(timer))
  stream.destroy()
  if (over) throw overLimit(maxBytes)
  if (!ended)
    throw new ExecgateError('EXECGATE_BACKEND_FAILED', {
      name: 'docker',
      detail: `the snapshot of sandbox ${sandbox.id} took over ${SNAPSHOT_TIMEOUT_MS} ms`,
    })
  const inspected = await exec.inspect()
  return { stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString('utf8'), exitCode: inspected.ExitCode ?? null }
}
