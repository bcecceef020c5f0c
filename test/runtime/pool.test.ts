import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Pool, PooledChildProcess } from '../../src/runtime'

/**
 * The one pool (src/runtime/pool.ts) with real child processes (src/runtime/child-process.ts): a tiny child that
 * answers `echo` messages, or one that cannot load.
 */

type Echo = { type: 'echo'; text: string; pid: number }

let dir: string
let good: string
let failing: string

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-pool-'))
  good = path.join(dir, 'good.js')
  failing = path.join(dir, 'failing.js')
  fs.writeFileSync(
    good,
    "process.on('message', (m) => process.send({ type: 'echo', text: m.text, pid: process.pid })); process.send({ type: 'ready' })\n",
  )
  fs.writeFileSync(failing, "process.send({ type: 'failed', reason: 'no interpreter here' }, () => process.exit(1))\n")
})

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

class EchoProcess extends PooledChildProcess<Echo> {
  constructor(module: string, onExit: (member: EchoProcess, reason: string) => void) {
    super({ module, execArgv: [], env: {}, loads: 'the echo child' }, (member, reason) => onExit(member as EchoProcess, reason))
  }
  protected exitReason(code: number | null, signal: NodeJS.Signals | null): string {
    return `the echo child exited (${signal ?? `code ${code}`})`
  }
}

function echoPool(module: string, size: number): Pool<EchoProcess> {
  return new Pool<EchoProcess>({
    size,
    start: (onExit) => new EchoProcess(module, onExit),
    cannotStart: 'echo children cannot start',
    disposed: 'the echo pool was disposed',
  })
}

function ask(member: EchoProcess, text: string): Promise<Echo> {
  return new Promise((resolve, reject) => {
    member.attach(resolve, (reason) => reject(new Error(reason)))
    member.send({ text })
  })
}

test('serves runs on warm members, in arrival order, and replaces a killed one', async () => {
  const pool = echoPool(good, 2)
  try {
    await pool.warmUp()
    expect(pool.hasIdle).toBe(true)
    const first = await pool.acquire()
    const second = await pool.acquire()
    // A third caller waits for a member to come back.
    const third = pool.acquire()
    expect((await ask(first, 'a')).text).toBe('a')
    pool.release(first)
    expect(await third).toBe(first)
    const killedPid = second.child.pid
    await pool.replace(second)
    expect(second.dead).toBe(true)
    const replacement = await pool.acquire()
    expect(replacement).not.toBe(second)
    expect((await ask(replacement, 'b')).pid).not.toBe(killedPid)
    pool.release(replacement)
    pool.release(first)
  } finally {
    await pool.dispose()
  }
})

test('a pool whose members cannot load is broken after three tries and says why', async () => {
  const pool = echoPool(failing, 1)
  try {
    await expect(pool.warmUp()).rejects.toThrow(/echo children cannot start: .*(no interpreter here|exited)/)
    expect(pool.broken).toBe(true)
    await expect(pool.acquire()).rejects.toThrow('echo children cannot start')
  } finally {
    await pool.dispose()
  }
})

test('dispose kills every member and turns away waiters', async () => {
  const pool = echoPool(good, 1)
  const member = await pool.acquire()
  const waiter = expect(pool.acquire()).rejects.toThrow('the echo pool was disposed')
  await pool.dispose()
  await waiter
  expect(member.dead).toBe(true)
  await expect(pool.acquire()).rejects.toThrow('the echo pool was disposed')
})

test('`prepare` runs once, at the first start and not at construction; its rejection breaks the pool with its words', async () => {
  let prepared = 0
  const pool = new Pool<EchoProcess>({
    size: 1,
    startNow: false,
    prepare: async () => {
      prepared++
      await new Promise((resolve) => setTimeout(resolve, 20))
    },
    start: (onExit) => new EchoProcess(good, onExit),
    cannotStart: 'echo children cannot start',
    disposed: 'the echo pool was disposed',
  })
  try {
    expect(prepared).toBe(0)
    // An acquire during `prepare` waits for it, then gets the member started after it.
    const member = await pool.acquire()
    expect((await ask(member, 'after prepare')).text).toBe('after prepare')
    pool.release(member)
    await pool.warmUp()
    expect(prepared).toBe(1)
  } finally {
    await pool.dispose()
  }
  const refusing = new Pool<EchoProcess>({
    size: 1,
    prepare: async () => {
      throw new Error('no namespace here')
    },
    start: (onExit) => new EchoProcess(good, onExit),
    cannotStart: 'echo children cannot start',
    disposed: 'the echo pool was disposed',
  })
  try {
    await expect(refusing.acquire()).rejects.toThrow('echo children cannot start: no namespace here')
    expect(refusing.broken).toBe(true)
  } finally {
    await refusing.dispose()
  }
})
