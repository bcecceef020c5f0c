import os from 'node:os'

/**
 * The name a process's task scheduler and plan engine write as `owner` (a run they hold, a plan they revise, their
 * leases in Redis): `host:pid#n`, n counting the execgates this process created. Two execgates in one process (a
 * library and a server, two tests) then hold separate leases, so one stopping never gives back the other's, and one
 * starting never takes the other's runs for a dead process's. Whether an owner lives is still judged by its pid on
 * this host (`ownerProcess`).
 */
let instances = 0
/** This process's owners not yet retired: one of its own that is not here stopped (a restart in one process). */
const live = new Set<string>()

export function nextOwnerId(): string {
  instances += 1
  const owner = `${os.hostname()}:${process.pid}#${instances}`
  live.add(owner)
  return owner
}

/** The execgate (or scheduler, or engine) that had this id stopped: its runs and revisions are another's to take. */
export function retireOwnerId(owner: string): void {
  live.delete(owner)
}

/**
 * Whether an owner of this process still runs: an id of this process's `nextOwnerId` until it is retired; undefined
 * for another process's (judged by its pid) or an id without an instance (`host:pid`, judged by its pid as before).
 */
export function ownerOfThisProcessAlive(owner: string): boolean | undefined {
  const { host, pid } = ownerProcess(owner)
  if (host !== os.hostname() || pid !== process.pid || !owner.includes('#')) return undefined
  return live.has(owner)
}

/** The host and pid an owner names (`host:pid`, or `host:pid#n`); pid NaN when it names none. */
export function ownerProcess(owner: string): { host: string; pid: number } {
  const hash = owner.lastIndexOf('#')
  const process = hash >= 0 ? owner.slice(0, hash) : owner
  const colon = process.lastIndexOf(':')
  return { host: process.slice(0, colon), pid: colon >= 0 ? Number(process.slice(colon + 1)) : Number.NaN }
}
