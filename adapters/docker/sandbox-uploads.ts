import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { FileMount } from '../../src/core'

const FOLDER_PREFIX = 'execgate-docker-sandbox-uploads-'

/** Where the folder is bound in the sandbox's container (read-only). */
export const UPLOADS_MOUNT_POINT = '/run/execgate-uploads'

/**
 * Makes `/workspace/$1` a symbolic link to `$2` (an upload under the mount point), replacing a file there; a folder at
 * the path is refused by `rm`. Run as the workspace's user.
 */
export const LINK_UPLOAD = 'umask 027; mkdir -p -- "$(dirname -- "$1")" && rm -f -- "$1" && ln -s -- "$2" "$1"'

/**
 * The uploads a persistent docker sandbox binds read-only (`mountFile`). A container's binds are fixed when it starts,
 * so every sandbox gets one host folder of its own bound read-only at /run/execgate-uploads, and an upload bound
 * later is a hard link to the store's blob put into it (the same inode: no copy, any size) plus a symbolic link at
 * its workspace path pointing there. Inside, the file is on a read-only mount: appends, truncation and chmod are
 * refused, and removing the workspace's link removes the sandbox's name for it, never the upload. The folder holds
 * only what this sandbox was given (the tenant's own uploads, found through the tenant check before this), and it is
 * 0711: a name is opened only by its digest, the folder cannot be listed. Where the store is on another filesystem
 * than the temp dir, the upload is copied in once, read-only.
 */
export class SandboxUploadFolder {
  private constructor(readonly directory: string) {}

  static create(): SandboxUploadFolder {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), FOLDER_PREFIX))
    // The container's users are not the server's: they traverse the folder and read a file by its name.
    fs.chmodSync(directory, 0o711)
    return new SandboxUploadFolder(directory)
  }

  /** The container's bind: read-only, fixed at its start. */
  get bind(): string {
    return `${this.directory}:${UPLOADS_MOUNT_POINT}:ro`
  }

  /** Puts the upload into the folder (once per digest); its path inside the container. */
  stage(mount: FileMount): string {
    const name = mount.sha256.replace(/^sha256:/, '')
    if (!/^[0-9a-f]{64}$/.test(name)) throw new Error(`not a sha256 digest: ${mount.sha256}`)
    const file = path.join(this.directory, name)
    if (!fs.existsSync(file)) {
      try {
        // Never chmod or chown the link: it is the store's blob itself (0644).
        fs.linkSync(mount.hostPath, file)
      } catch {
        // Written aside and renamed: a half copy never sits under the name.
        fs.copyFileSync(mount.hostPath, `${file}.part`)
        fs.chmodSync(`${file}.part`, 0o444)
        fs.renameSync(`${file}.part`, file)
      }
    }
    return path.posix.join(UPLOADS_MOUNT_POINT, name)
  }

  /** The size of the upload a link inside the container points to, or undefined when it points anywhere else. */
  bytesAt(target: string): number | undefined {
    if (path.posix.dirname(target) !== UPLOADS_MOUNT_POINT) return undefined
    const name = path.posix.basename(target)
    if (!/^[0-9a-f]{64}$/.test(name)) return undefined
    try {
      return fs.statSync(path.join(this.directory, name)).size
    } catch {
      return undefined
    }
  }

  /** The bytes of the upload a link inside the container points to, or undefined when it points anywhere else. */
  contentAt(target: string): Buffer | undefined {
    if (this.bytesAt(target) === undefined) return undefined
    return fs.readFileSync(path.join(this.directory, path.posix.basename(target)))
  }

  remove(): void {
    fs.rmSync(this.directory, { recursive: true, force: true })
  }
}

/**
 * Removes the upload folders a swept container had bound (its owner is gone, so nothing else removes them): each
 * holds hard links that would keep a deleted upload's bytes on disk. Only folders this module makes are touched.
 */
export function removeUploadFolders(mounts: readonly { Source?: string; Destination?: string }[] | undefined): void {
  for (const mount of mounts ?? []) {
    const source = mount.Source ?? ''
    if (mount.Destination !== UPLOADS_MOUNT_POINT || path.dirname(source) !== os.tmpdir()) continue
    if (path.basename(source).startsWith(FOLDER_PREFIX)) fs.rmSync(source, { recursive: true, force: true })
  }
}
