import fs from 'node:fs'

/**
 * Host uids for sandboxes, one per concurrent run: RLIMIT_NPROC counts every process of a uid, so a uid shared
 * between runs (or with the host) would make one run's cap depend on the others. A uid is only handed out again
 * once no process of it is left.
 */
export class UidPool {
  private readonly free: number[]
  private readonly waiting: Array<(uid: number) => void> = []

  /** Uids in the pool: runs that can go at once. */
  readonly capacity: number

  constructor(first: number, last: number) {
    this.free = Array.from({ length: last - first + 1 }, (_, index) => first + index)
    this.capacity = this.free.length
  }

  static parse(range: string): UidPool {
    const [first, last] = range.split('-').map(Number)
    return new UidPool(first, last)
  }

  /** A free uid now, or undefined when every one is in use. */
  tryAcquire(): number | undefined {
    return this.free.shift()
  }

  acquire(signal?: AbortSignal): Promise<number> {
    const uid = this.free.shift()
    if (uid !== undefined) return Promise.resolve(uid)
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const index = this.waiting.indexOf(take)
        if (index !== -1) this.waiting.splice(index, 1)
        reject(new Error('no sandbox uid became free before the run was cancelled or passed its deadline'))
      }
      const take = (freed: number) => {
        signal?.removeEventListener('abort', onAbort)
        resolve(freed)
      }
      this.waiting.push(take)
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  release(uid: number): void {
    const next = this.waiting.shift()
    if (next) next(uid)
    else this.free.push(uid)
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
