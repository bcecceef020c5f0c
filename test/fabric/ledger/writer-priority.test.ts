import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { loadConfig } from '../../../src/config/load'
import { SqliteLedgerStore } from '../../../src/fabric/ledger'
import { verifyChain } from '../../../src/fabric/ledger/chain'
import type { LedgerItem } from '../../../src/fabric/ledger/ledger-writer'
import { captureRun } from '../../../src/fabric/ledger/run-capture'
import { ThreadedLedgerWriter } from '../../../src/fabric/ledger/threaded-writer'
import type { Logger } from '../../../src/observability/logger'
import { trivialRun } from './trivial-run'

/**
 * The ledger's writer thread lowers its priority (fabric.ledger.writerNice), and a lowered writer that falls behind
 * hands its queue to a new thread at the process's priority: every record is written, once, in the order heard.
 * Real threads, a real SQLite file; the priority is read back from Linux's /proc.
 */

const onLinux = process.platform === 'linux' ? test : test.skip

/**
 * Nice values of this process's threads other than 0, by thread id. libsql's runtime threads are left out: the first
 * thread to open a database starts them for the whole process, they inherit its priority, and they outlive it (they
 * stay idle here: the stores' calls are synchronous).
 */
function nicedThreads(): Map<string, number> {
  const niced = new Map<string, number>()
  for (const thread of fs.readdirSync('/proc/self/task')) {
    try {
      if (fs.readFileSync(`/proc/self/task/${thread}/comm`, 'utf8').startsWith('tokio')) continue
      // Field 19 of stat is the nice value; the command name before it is in parentheses and may hold spaces.
      const nice = Number(fs.readFileSync(`/proc/self/task/${thread}/stat`, 'utf8').split(') ')[1]!.split(' ')[16])
      if (nice !== 0) niced.set(thread, nice)
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return niced
}

function runItem(index: number): LedgerItem {
  const { result, info } = trivialRun(index)
  return { kind: 'run', captured: captureRun(result, { language: 'javascript', code: `${index % 7}` }, info) }
}

function warnings(): { logger: Logger; warned: string[] } {
  const warned: string[] = []
  const logger = {
    warn: (_fields: object, msg?: string) => warned.push(msg ?? ''),
    error: (_fields: object, msg?: string) => warned.push(`error: ${msg ?? ''}`),
    info: () => undefined,
    debug: () => undefined,
  } as unknown as Logger
  return { logger, warned }
}

function writer(dir: string, nice: number, options: { logger?: Logger; behindAt?: number } = {}): ThreadedLedgerWriter {
  const fabric = loadConfig({ env: {}, overrides: { fabric: { dataDir: dir } } }).fabric
  return new ThreadedLedgerWriter(
    { fabric: JSON.parse(JSON.stringify(fabric)), execgateVersion: 'test', outputThresholdBytes: 1024, nice },
    options,
  )
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

onLinux('the writer thread lowers its own priority by writerNice, and only its own; 0 leaves it as it is', async () => {
  expect(nicedThreads().size).toBe(0)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-writer-nice-'))
  const lowered = writer(path.join(dir, 'a'), 10)
  try {
    lowered.post([runItem(0)])
    await lowered.flush()
    const niced = nicedThreads()
    expect([...niced.values()]).toEqual([10])
    expect(niced.has(String(process.pid))).toBe(false)
  } finally {
    await lowered.close()
  }
  const unchanged = writer(path.join(dir, 'b'), 0)
  try {
    unchanged.post([runItem(0)])
    await unchanged.flush()
    expect(nicedThreads().size).toBe(0)
  } finally {
    await unchanged.close()
  }
})

onLinux('a lowered writer that falls behind hands its queue to a new thread: every record written once, in order', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-writer-handback-'))
  const { logger, warned } = warnings()
  const threaded = writer(dir, 10, { logger, behindAt: 100 })
  const runs = 3001
  try {
    threaded.post([runItem(0)])
    await threaded.flush() // the thread has lowered itself and said so
    // 3,000 records in 60 hand-overs, posted without yielding: the thread is more than 100 behind at once.
    for (let index = 1; index < runs; index += 50) threaded.post(Array.from({ length: 50 }, (_, offset) => runItem(index + offset)))
    await threaded.flush()
    expect(threaded.written).toBe(runs)
    expect(warned).toEqual(['the ledger writer fell behind at its lowered priority; a thread at the process priority takes over'])
    // The thread that took over is at the process's priority until its queue has stayed empty for a moment.
    expect(nicedThreads().size).toBe(0)
    await sleep(600)
    expect([...nicedThreads().values()]).toEqual([10])
  } finally {
    await threaded.close()
  }
  const store = new SqliteLedgerStore({ file: path.join(dir, 'ledger.sqlite') })
  try {
    const records = await store.page('local', 0, runs + 10)
    expect(records.map((record) => record.id)).toEqual(Array.from({ length: runs }, (_, index) => `run-${index}`))
    const report = await verifyChain({
      tenant: 'local',
      head: await store.head('local'),
      page: (afterSeq, limit) => store.page('local', afterSeq, limit),
      policy: (sha256) => store.policy(sha256),
    })
    expect(report).toMatchObject({ ok: true, records: runs })
  } finally {
    await store.close()
  }
})
