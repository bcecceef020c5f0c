import fs from 'node:fs'

/**
 * What the hostile runner watches in the host around a case (test/hostile/README.md, the `expect` keys): the realm's
 * shared objects, active handles, descendant processes, uncaught errors and unhandled rejections.
 */

/** Own property names and values of the host realm's shared objects, to detect pollution. */
export function snapshotRealm(hostObj: object): Map<string, unknown> {
  const snapshot = new Map<string, unknown>()
  const targets: Record<string, object> = {
    'Object.prototype': Object.prototype,
    'Array.prototype': Array.prototype,
    'Function.prototype': Function.prototype,
    globalThis,
    hostObj,
  }
  for (const [label, target] of Object.entries(targets)) {
    for (const key of Reflect.ownKeys(target)) {
      const descriptor = Object.getOwnPropertyDescriptor(target, key)
      snapshot.set(`${label}.${String(key)}`, descriptor && 'value' in descriptor ? descriptor.value : descriptor?.get)
    }
  }
  return snapshot
}

export function changedKeys(before: Map<string, unknown>, after: Map<string, unknown>): string[] {
  const changed: string[] = []
  for (const [key, value] of after) if (!before.has(key) || !Object.is(before.get(key), value)) changed.push(key)
  return changed.filter((key) => !IGNORED_GLOBAL_CHANGES.some((pattern) => pattern.test(key)))
}

// Jest and Node set these on globalThis between tests by themselves.
const IGNORED_GLOBAL_NAMES = (
  '__coverage__ expect jasmine __jest performance crypto fetch navigator WebAssembly structuredClone AbortController Blob ' +
  'BroadcastChannel Buffer DOMException Event EventTarget FormData Headers MessageChannel MessageEvent MessagePort Request ' +
  'Response TextDecoder TextEncoder URL URLSearchParams queueMicrotask atob btoa setImmediate clearImmediate global'
).split(' ')
const IGNORED_GLOBAL_CHANGES = [new RegExp(`^globalThis\\.(${IGNORED_GLOBAL_NAMES.join('|')})$`)]

export function resourceCounts(): Map<string, number> {
  const counts = new Map<string, number>()
  for (const type of process.getActiveResourcesInfo()) counts.set(type, (counts.get(type) ?? 0) + 1)
  return counts
}

export function newResources(before: Map<string, number>): string[] {
  const grown: string[] = []
  for (const [type, count] of resourceCounts())
    if (count > (before.get(type) ?? 0)) grown.push(`${type} +${count - (before.get(type) ?? 0)}`)
  return grown
}

/** Every process descended from this one, read from /proc (spawning `ps` would list itself). */
export function descendantPids(root = process.pid): number[] {
  const children = new Map<number, number[]>()
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let stat: string
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8')
    } catch {
      continue // exited while we looked
    }
    // The command name is in parentheses and may contain spaces; the parent pid is the second field after it.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)])
  }
  const found: number[] = []
  const stack = [root]
  while (stack.length) {
    for (const child of children.get(stack.pop()!) ?? []) {
      found.push(child)
      stack.push(child)
    }
  }
  return found
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Watches the host for events a payload must not cause. */
export class HostWatch {
  uncaught: string[] = []
  rejections: string[] = []
  private readonly onUncaught = (error: Error) => this.uncaught.push(String(error?.message ?? error))
  private readonly onRejection = (reason: unknown) => this.rejections.push(String((reason as Error)?.message ?? reason))
  start() {
    process.on('uncaughtException', this.onUncaught)
    process.on('unhandledRejection', this.onRejection)
  }
  stop() {
    process.off('uncaughtException', this.onUncaught)
    process.off('unhandledRejection', this.onRejection)
  }
}

export function commandLine(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ')
  } catch {
    return ''
  }
}
