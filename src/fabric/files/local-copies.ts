import fs from 'node:fs'
import path from 'node:path'

/**
 * This node's copies of uploads shared through the bucket, kept within a byte budget (`fabric.files.localCopyBytes`).
 * Where the bucket holds every upload, the folder is only a cache: a copy can always be fetched again (and checked
 * against its digest), so the least recently used go first past the budget, and a copy whose upload no tenant holds
 * any more (deleted through another node) goes at the next trim. A copy used within `graceMs` is never removed: a run
 * that has just located it is about to bind it (a bound file outlives its name anyway, but the bind needs the name).
 */
export interface LocalCopiesOptions {
  /** The store's folder (`<root>/ab/<sha256>`). */
  root: string
  /** Bytes of copies kept; 0 keeps every copy. */
  maxBytes: number
  /** Whether any tenant still holds the digest (the upload index). */
  held(sha256: string): Promise<boolean>
  /** Removes this node's copy. */
  remove(sha256: string): Promise<void>
  /** @default 60000 */
  graceMs?: number
  now?: () => number
}

const DIGEST = /^[0-9a-f]{64}$/

export class LocalCopies {
  /** Digest → bytes and last use (ms); read from the folder (mtime) at first use, so a restart keeps the order. */
  private copies?: Map<string, { bytes: number; usedAt: number }>
  private trimming: Promise<number> = Promise.resolve(0)

  constructor(private readonly options: LocalCopiesOptions) {}

  private now(): number {
    return (this.options.now ?? Date.now)()
  }

  private known(): Map<string, { bytes: number; usedAt: number }> {
    if (this.copies) return this.copies
    const copies = new Map<string, { bytes: number; usedAt: number }>()
    for (const shard of safeReaddir(this.options.root)) {
      if (!/^[0-9a-f]{2}$/.test(shard)) continue
      for (const name of safeReaddir(path.join(this.options.root, shard))) {
        if (!DIGEST.test(name)) continue
        try {
          const stat = fs.statSync(path.join(this.options.root, shard, name))
          copies.set(name, { bytes: stat.size, usedAt: stat.mtimeMs })
        } catch {
          // Removed meanwhile.
        }
      }
    }
    return (this.copies = copies)
  }

  /** Says the copy was just made or used. */
  used(sha256: string, bytes: number): void {
    this.known().set(sha256, { bytes, usedAt: this.now() })
  }

  forget(sha256: string): void {
    this.known().delete(sha256)
  }

  /** Bytes of the copies this node keeps. */
  bytes(): number {
    let total = 0
    for (const copy of this.known().values()) total += copy.bytes
    return total
  }

  /**
   * Removes copies no tenant holds, then the least recently used past the budget, never `keep` (the copy a caller is
   * about to use); resolves to how many went.
   */
  trim(keep?: string): Promise<number> {
    this.trimming = this.trimming.then(
      () => this.trimOnce(keep),
      () => this.trimOnce(keep),
    )
    return this.trimming
  }

  private async trimOnce(keep: string | undefined): Promise<number> {
    const copies = this.known()
    const fresh = this.now() - (this.options.graceMs ?? 60_000)
    let removed = 0
    const drop = async (sha256: string) => {
      await this.options.remove(sha256)
      copies.delete(sha256)
      removed++
    }
    for (const [sha256, copy] of [...copies])
      if (sha256 !== keep && copy.usedAt <= fresh && !(await this.options.held(sha256))) await drop(sha256)
    if (this.options.maxBytes > 0) {
      let total = this.bytes()
      const oldestFirst = [...copies].sort((a, b) => a[1].usedAt - b[1].usedAt)
      for (const [sha256, copy] of oldestFirst) {
        if (total <= this.options.maxBytes) break
        if (copy.usedAt > fresh || sha256 === keep) continue
        await drop(sha256)
        total -= copy.bytes
      }
    }
    return removed
  }
}

function safeReaddir(folder: string): string[] {
  try {
    return fs.readdirSync(folder)
  } catch {
    return []
  }
}
