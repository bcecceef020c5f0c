import fs from 'node:fs'
import { claimAbandoned, releaseUidClaim, tryClaimUid } from './uid-claims'
import type { WarmUids } from './warm-python'

/** How often a run waiting for a uid looks again for one another process (or another pool here) released. */
const POLL_MS = 10
/** How often a waiting run looks for claims a dead process left. */
const RECLAIM_MS = 1000

/**
 * Host uids for sandboxes, one per concurrent run: RLIMIT_NPROC counts every process of a uid, so a uid shared
 * between runs (or with the host) would make one run's cap depend on the others. Each uid is claimed host-wide
 * (uid-claims.ts) for the run's life, so two execgate processes with the same range never share one, and a uid is
 * only handed out again once no process of it is left.
 */
export class UidPool {
  private readonly waiting: Array<(uid: number) => void> = []
  private next = 0
  private reclaimedAt = -Infinity

  /** Uids in the pool: runs that can go at once (when no other process on the host uses the same range). */
  readonly capacity: number

  constructor(
    private readonly first: number,
    last: number,
  ) {
    this.capacity = last - first + 1
  }

  static parse(range: string): UidPool {
    const [first, last] = range.split('-').map(Number)
    return new UidPool(first, last)
  }

  /** A free uid now, claimed host-wide, or undefined when every one is in use. */
  tryAcquire(): number | undefined {
    for (let step = 0; step < this.capacity; step++) {
      const uid = this.first + ((this.next + step) % this.capacity)
      if (tryClaimUid(uid)) {
        this.next = (uid - this.first + 1) % this.capacity
        return uid
      }
    }
    return undefined
  }

  /** A uid as soon as one is free: released here, released by another process, or abandoned by a dead one. */
  acquire(signal?: AbortSignal): Promise<number> {
    const uid = this.tryAcquire()
    if (uid !== undefined) return Promise.resolve(uid)
    if (signal?.aborted) return Promise.reject(new Error('the run was cancelled or passed its deadline before a sandbox uid was free'))
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined
      let settled = false
      const finish = () => {
        settled = true
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        const index = this.waiting.indexOf(take)
        if (index !== -1) this.waiting.splice(index, 1)
      }
      const onAbort = () => {
        finish()
        reject(new Error('no sandbox uid became free before the run was cancelled or passed its deadline'))
      }
      const take = (freed: number) => {
        finish()
        resolve(freed)
      }
      const look = async () => {
        const found = this.tryAcquire() ?? (await this.reclaim())
        // Settled meanwhile (a uid handed over here, or the wait aborted): what was found goes back.
        if (settled) return found === undefined ? undefined : this.release(found)
        if (found !== undefined) return take(found)
        timer = setTimeout(() => void look(), POLL_MS)
      }
      this.waiting.push(take)
      signal?.addEventListener('abort', onAbort, { once: true })
      timer = setTimeout(() => void look(), POLL_MS)
    })
  }

  /** Takes a uid of this range whose claim a dead process left, once its processes are gone (at most once a second). */
  private async reclaim(): Promise<number | undefined> {
    if (performance.now() - this.reclaimedAt < RECLAIM_MS) return undefined
    this.reclaimedAt = performance.now()
    for (let uid = this.first; uid < this.first + this.capacity; uid++) {
      if (!claimAbandoned(uid) || !(await sweep(uid))) continue
      releaseUidClaim(uid)
      if (tryClaimUid(uid)) return uid
    }
    return undefined
  }

  /** Gives the uid to a run of this pool that waits for one, or frees its claim for every process on the host. */
  release(uid: number): void {
    const waiter = this.waiting.shift()
    if (waiter) waiter(uid)
    else releaseUidClaim(uid)
  }
}

/** Pids of every live process the uid owns, read from /proc (the host's view: sandboxes map their uid to this one). */
export function processesOf(uid: number): number[] {
  const pids: number[] = []
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const status = fs.readFileSync(`/proc/${entry}/status`, 'utf8')
      const real = /^Uid:\s+(\d+)/m.exec(status)?.[1]
      // A zombie holds no resources a next run could reach and cannot be killed; its parent reaps it.
      if (Number(real) === uid && !/^State:\s+Z/m.test(status)) pids.push(Number(entry))
    } catch {
      // the process ended while we looked
    }
  }
  return pids
}

/** Kills everything the uid still runs and waits until nothing is left (or the wait passes `timeoutMs`). */
export async function sweep(uid: number, timeoutMs = 2000): Promise<boolean> {
  const until = Date.now() + timeoutMs
  for (;;) {
    const pids = processesOf(uid)
    if (pids.length === 0) return true
    if (Date.now() > until) return false
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // already gone
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** The uid pool as the warm interpreter uses it: its runs and its spare hold uids of their own. */
export function warmUids(pool: UidPool): WarmUids {
  return {
    tryAcquire: () => pool.tryAcquire(),
    acquire: (signal) => pool.acquire(signal),
    release: (uid) => pool.release(uid),
    sweep: (uid) => sweep(uid),
  }
}
