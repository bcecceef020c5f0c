import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate } from '../../../src'
import { SQLITE_FILE_NAME } from '../../../src/fabric/tasks'
import { crashTestSpecs } from './crash-specs'

/**
 * kill -9 of a process with 1,000 tasks in flight (queued and running), then a restart on the same SQLite file:
 * 0 tasks lost, 0 completed twice, and resubmitting with the same idempotency keys creates nothing new.
 */

const COUNT = 1000

interface Counts {
  [state: string]: number
}

function countStates(file: string): Counts {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Database = require('libsql') as new (
    file: string,
    options: { readonly: boolean },
  ) => { prepare(sql: string): { all(): unknown[] }; close(): void }
  const db = new Database(file, { readonly: true })
  try {
    return Object.fromEntries(
      (db.prepare('SELECT state, count(*) AS n FROM tasks GROUP BY state').all() as { state: string; n: number }[]).map((row) => [
        row.state,
        row.n,
      ]),
    )
  } finally {
    db.close()
  }
}

test(`kill -9 with ${COUNT} tasks in flight, restart: 0 lost, 0 completed twice`, async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-crash-'))
  const file = path.join(dataDir, SQLITE_FILE_NAME)
  const child = spawn(
    process.execPath,
    ['-r', 'ts-node/register/transpile-only', path.join(__dirname, 'crash-child.ts'), dataDir, String(COUNT)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('submitted') && resolve())
      child.on('exit', (code) => reject(new Error(`the child exited (${code}) before submitting`)))
    })
    // Kill it part-way: some done, some running, most still queued.
    let atKill: Counts = {}
    for (;;) {
      atKill = countStates(file)
      if ((atKill.COMPLETED ?? 0) >= COUNT / 5) break
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    child.kill('SIGKILL')
    await new Promise((resolve) => child.once('exit', resolve))
    atKill = countStates(file)
    const inFlight = (atKill.RUNNING ?? 0) + (atKill.SPAWNING ?? 0)
    expect(atKill.PENDING ?? 0).toBeGreaterThan(0)
    expect(inFlight).toBeGreaterThan(0)

    const execgate = await createExecgate({
      env: {
        EXECGATE_LOG_LEVEL: 'silent',
        EXECGATE_READINESS_ENABLED: 'false',
        EXECGATE_EXECUTION_ENABLED: 'quickjs',
        EXECGATE_FABRIC_DATA_DIR: dataDir,
      },
    })
    try {
      // A client that did not hear back resubmits everything with the same keys: nothing new is created.
      const again = await execgate.tasks.submitMany(crashTestSpecs(COUNT))
      expect(new Set(again.map((task) => task.id)).size).toBe(COUNT)
      const done = await Promise.all(again.map((task) => execgate.tasks.wait(task.id)))
      const store = execgate.tasks.scheduler.store
      expect(done.filter((task) => task.state === 'COMPLETED')).toHaveLength(COUNT)
      expect(done.every((task, index) => task.result?.value === index)).toBe(true)
      expect(countStates(file)).toEqual({ COMPLETED: COUNT })
      let completedTwice = 0
      let recovered = 0
      for (const task of done) {
        const events = await store.events(task.id)
        if (events.filter((event) => event.to === 'COMPLETED').length !== 1) completedTwice++
        if (events.some((event) => event.reason.includes('stopped mid-run'))) recovered++
      }
      expect(completedTwice).toBe(0)
      // Every run the kill interrupted was retried by its policy (a backend crash), not lost.
      expect(recovered).toBe(inFlight)
      process.stdout.write(`crash test: at kill ${JSON.stringify(atKill)}; recovered ${recovered} runs; all ${COUNT} COMPLETED once\n`)
    } finally {
      await execgate.dispose()
    }
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL')
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}, 240_000)
