import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { currentOwner, formatOwner, ownerMayBeAlive, parseOwner } from '../shared/sandbox-owner'

/**
 * Host-wide claims on sandbox uids. A claim is a file created exclusively (`O_EXCL`) in one folder for the whole host,
 * holding its owner (host/pid:start time): whatever process claims a uid, no other execgate process on the machine
 * (nor another adapter in this one) runs or sweeps that uid until the claim is released. Without it, two execgate
 * processes with the default ranges would share uids, and one's clean-up after a killed run would kill the other's
 * sandbox. A claim whose owner is gone (kill -9) is abandoned: the next claimant sweeps the uid and takes it.
 */

const CLAIMS = path.join(os.tmpdir(), 'execgate-sandbox-uids')
/** A claim file that cannot be read yet is being written by its claimant; it counts as abandoned only past this age. */
const UNREADABLE_GRACE_MS = 60_000

let folderMade = false
let ownerLine: string | undefined

function claimFile(uid: number): string {
  return path.join(CLAIMS, `uid-${uid}`)
}

/** Claims the uid for this process if no one holds it; false when a claim (live or abandoned) exists. */
export function tryClaimUid(uid: number): boolean {
  if (!folderMade) {
    fs.mkdirSync(CLAIMS, { recursive: true, mode: 0o700 })
    folderMade = true
  }
  try {
    fs.writeFileSync(claimFile(uid), (ownerLine ??= `${formatOwner(currentOwner())}\n`), { flag: 'wx', mode: 0o600 })
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw error
  }
}

/** True when the uid's claim was left by a process that is gone (its processes may still run: sweep before reuse). */
export function claimAbandoned(uid: number): boolean {
  const file = claimFile(uid)
  try {
    const owner = parseOwner(fs.readFileSync(file, 'utf8').split('\n')[0] ?? '')
    if (owner) return !ownerMayBeAlive(owner)
    return Date.now() - fs.statSync(file).mtimeMs > UNREADABLE_GRACE_MS
  } catch {
    return false
  }
}

/** Frees the uid's claim (call only once nothing of the uid runs any more). */
export function releaseUidClaim(uid: number): void {
  fs.rmSync(claimFile(uid), { force: true })
}

/** Every uid whose claim was left by a process that is gone. */
export function abandonedClaims(): number[] {
  let entries: string[]
  try {
    entries = fs.readdirSync(CLAIMS)
  } catch {
    return []
  }
  return entries.map((entry) => Number(/^uid-(\d+)$/.exec(entry)?.[1])).filter((uid) => uid > 0 && claimAbandoned(uid))
}
