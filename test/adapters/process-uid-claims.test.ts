import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { formatOwner, type SandboxOwner } from '../../adapters/shared/sandbox-owner'
import { UidPool } from '../../adapters/process/uid-pool'

/**
 * Sandbox uids are claimed host-wide: two pools (two execgate processes, or two adapters in one) on the same range
 * never hand out the same uid, a uid a live process holds is never taken, and one a dead process left is reclaimed.
 * A range of its own, far from the defaults, so other execgate processes on this machine are not disturbed.
 */
const FIRST = 61990
const LAST = 61991
const CLAIMS = path.join(os.tmpdir(), 'execgate-sandbox-uids')

function startTicks(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19])
}

function writeClaim(uid: number, owner: SandboxOwner): void {
  fs.mkdirSync(CLAIMS, { recursive: true, mode: 0o700 })
  fs.writeFileSync(path.join(CLAIMS, `uid-${uid}`), `${formatOwner(owner)}\n`)
}

afterEach(() => {
  for (let uid = FIRST; uid <= LAST; uid++) fs.rmSync(path.join(CLAIMS, `uid-${uid}`), { force: true })
})

test('two pools on one range share out its uids and never the same one', async () => {
  const a = new UidPool(FIRST, LAST)
  const b = new UidPool(FIRST, LAST)
  const first = a.tryAcquire()
  const second = b.tryAcquire()
  expect(new Set([first, second])).toEqual(new Set([FIRST, LAST]))
  expect(a.tryAcquire()).toBeUndefined()
  expect(b.tryAcquire()).toBeUndefined()
  // b waits for a uid; a's release (no waiter of its own) frees the claim and b's wait takes it.
  const waited = b.acquire(AbortSignal.timeout(10_000))
  a.release(first!)
  await expect(waited).resolves.toBe(first)
  b.release(first!)
  b.release(second!)
  expect(fs.existsSync(path.join(CLAIMS, `uid-${FIRST}`))).toBe(false)
})

test('a wait that is cancelled gives up with a reason and leaves no claim behind', async () => {
  const a = new UidPool(FIRST, LAST)
  const held = [a.tryAcquire()!, a.tryAcquire()!]
  const controller = new AbortController()
  const waited = new UidPool(FIRST, LAST).acquire(controller.signal)
  controller.abort()
  await expect(waited).rejects.toThrow(/no sandbox uid became free/)
  for (const uid of held) a.release(uid)
  expect(fs.readdirSync(CLAIMS).filter((entry) => entry === `uid-${FIRST}` || entry === `uid-${LAST}`)).toEqual([])
})

test("a live process's claim is respected; a dead process's claim is reclaimed", async () => {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' })
  await new Promise((resolve) => child.once('spawn', resolve))
  const owner = { host: os.hostname(), pid: child.pid!, startTicks: startTicks(child.pid!) }
  writeClaim(FIRST, owner)
  writeClaim(LAST, owner)
  const pool = new UidPool(FIRST, LAST)
  expect(pool.tryAcquire()).toBeUndefined()
  const waited = pool.acquire(AbortSignal.timeout(20_000))
  let got: number | undefined
  void waited.then((uid) => (got = uid))
  await new Promise((resolve) => setTimeout(resolve, 300))
  expect(got).toBeUndefined()
  child.kill('SIGKILL')
  await new Promise((resolve) => child.once('exit', resolve))
  const uid = await waited
  expect([FIRST, LAST]).toContain(uid)
  pool.release(uid)
})
