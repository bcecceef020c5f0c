import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { FileMount } from '../../src/core'

/**
 * Uploads as the run's uid can reach them. bubblewrap starts as that uid, so a bind source must be on a path it may
 * traverse, and the upload store's folder (under `fabric.dataDir`) is the operator's, often private. Each run gets a
 * folder of its own under `<tmpdir>/execgate-mounts` (0711: nobody can list it) holding a hard link to each upload
 * (the same inode: no copy), or a copy where the store is on another filesystem. Removed when the run ends.
 */
const STAGING_ROOT = path.join(os.tmpdir(), 'execgate-mounts')

export interface StagedMounts {
  mounts: FileMount[]
  remove(): void
}

export function stageMounts(mounts: readonly FileMount[]): StagedMounts {
  if (mounts.length === 0) return { mounts: [], remove: () => undefined }
  fs.mkdirSync(STAGING_ROOT, { recursive: true, mode: 0o711 })
  fs.chmodSync(STAGING_ROOT, 0o711)
  const folder = path.join(STAGING_ROOT, randomBytes(12).toString('hex'))
  fs.mkdirSync(folder, { mode: 0o711 })
  try {
    return { mounts: linkUploads(mounts, folder), remove: () => fs.rmSync(folder, { recursive: true, force: true }) }
  } catch (error) {
    fs.rmSync(folder, { recursive: true, force: true })
    throw error
  }
}

/**
 * Each upload as `<folder>/<index>`: a hard link (the same inode, so never chown or chmod it: that would change the
 * store's blob), or a read-only copy where the folder is on another filesystem. The warm interpreter's runs use it
 * with their per-run folder, which its zygote sees at /runs.
 */
export function linkUploads(mounts: readonly FileMount[], folder: string): FileMount[] {
  return mounts.map((mount, index) => {
    const file = path.join(folder, String(index))
    try {
      fs.linkSync(mount.hostPath, file)
    } catch {
      fs.copyFileSync(mount.hostPath, file)
      fs.chmodSync(file, 0o444)
    }
    return { ...mount, hostPath: file }
  })
}
