import fs from 'node:fs'
import path from 'node:path'
import type { FileMount } from '../../src/core'

/**
 * Uploads a persistent process sandbox binds read-only (`mountFile`): each is reached through `<folder>/uploads/`
 * (the sandbox's own folder, which its uid may traverse while the upload store's folder is often private) as a hard
 * link to the store's blob: the same inode, so a 100 MB upload costs no copy, and the sandbox keeps its file if the
 * upload is deleted meanwhile. Where the store is on another filesystem, a sandbox that runs as us binds the store's
 * file itself; one with a uid of its own gets a read-only copy (what one-shot runs do too, upload-mounts.ts).
 */
export function stageSandboxUpload(folder: string, mount: FileMount, dedicatedUid: boolean): FileMount {
  const staging = path.join(folder, 'uploads')
  fs.mkdirSync(staging, { recursive: true, mode: 0o711 })
  const file = path.join(staging, mount.sha256)
  if (fs.existsSync(file)) return { ...mount, hostPath: file }
  try {
    fs.linkSync(mount.hostPath, file)
  } catch {
    if (!dedicatedUid) return mount
    // Written aside and renamed: a half copy never sits under the name.
    fs.copyFileSync(mount.hostPath, `${file}.part`)
    fs.chmodSync(`${file}.part`, 0o444)
    fs.renameSync(`${file}.part`, file)
  }
  return { ...mount, hostPath: file }
}
