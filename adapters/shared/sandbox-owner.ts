import fs from 'node:fs'
import os from 'node:os'

/**
 * Who owns a persistent sandbox's backend (a container, a directory): this host, this process, and when the process
 * started, so a pid the kernel hands to a new process later is not mistaken for the owner. After a kill -9 the next
 * execgate removes what belonged to owners that are gone, and never what a live execgate beside it still uses.
 */
export interface SandboxOwner {
  host: string
  pid: number
  /** The process's start time in clock ticks since boot (/proc/<pid>/stat field 22); 0 where /proc is missing. */
  startTicks: number
}

function startTicksOf(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name (field 2) may hold spaces and parentheses: the fields after it follow the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return Number(fields[19])
  } catch {
    return undefined
  }
}

let self: SandboxOwner | undefined

/** This process as an owner. */
export function currentOwner(): SandboxOwner {
  return (self ??= { host: os.hostname(), pid: process.pid, startTicks: startTicksOf(process.pid) ?? 0 })
}

/** `host/pid:startTicks`, as labels and owner files record it. */
export function formatOwner(owner: SandboxOwner): string {
  return `${owner.host}/${owner.pid}:${owner.startTicks}`
}

export function parseOwner(text: string): SandboxOwner | undefined {
  const match = /^(.+)\/(\d+):(\d+)$/.exec(text.trim())
  return match ? { host: match[1]!, pid: Number(match[2]), startTicks: Number(match[3]) } : undefined
}

/**
 * Whether the owner may still be running: true for another host's (it cannot be checked from here, so it is left
 * alone), and for a process of this host whose pid lives with the same start time.
 */
export function ownerMayBeAlive(owner: SandboxOwner): boolean {
  if (owner.host !== os.hostname()) return true
  const ticks = startTicksOf(owner.pid)
  if (ticks === undefined) return false
  return owner.startTicks === 0 || ticks === owner.startTicks
}
