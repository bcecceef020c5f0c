import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ArtifactLedger, DirectoryBlobStore, SqliteLedgerStore, type LedgerRecordStore } from '../../../src/fabric/ledger'
import { LedgerWriter } from '../../../src/fabric/ledger/ledger-writer'
import type { Logger } from '../../../src/observability/logger'
import { trivialRun } from './trivial-run'

/**
 * The ledger's write queue is bounded (fabric.ledger.queueLimit): when the writer falls behind, a run's answer never
 * waits for it, and a record that cannot be queued is counted and logged, never dropped silently. The store here is
 * a real SQLite file whose appends are held back until the test lets them through: a writer that fell behind.
 */

function heldBack(store: SqliteLedgerStore): { store: LedgerRecordStore; release(): void } {
  let release!: () => void
  const gate = new Promise<void>((resolve) => (release = resolve))
  const held = Object.create(store) as LedgerRecordStore
  held.append = async (drafts) => {
    await gate
    return store.append(drafts)
  }
  return { store: held, release }
}

function recordingLogger(): { logger: Logger; errors: { fields: Record<string, unknown>; msg: string }[] } {
  const errors: { fields: Record<string, unknown>; msg: string }[] = []
  const logger = {
    error: (fields: object | string, msg?: string) =>
      errors.push({ fields: typeof fields === 'string' ? {} : (fields as Record<string, unknown>), msg: msg ?? String(fields) }),
    warn: () => undefined,
    info: () => undefined,
    debug: () => undefined,
    trace: () => undefined,
    child: () => logger,
    isLevelEnabled: () => true,
  } as Logger
  return { logger, errors }
}

const run = trivialRun

test('a writer that fell behind: records past the queue limit are counted and logged, the rest are all written', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-ledger-queue-'))
  const sqlite = new SqliteLedgerStore({ file: path.join(dir, 'ledger.sqlite') })
  const { store, release } = heldBack(sqlite)
  const { logger, errors } = recordingLogger()
  const ledger = new ArtifactLedger({
    openRecords: () => store,
    openBlobs: () => new DirectoryBlobStore(path.join(dir, 'blobs')),
    execgateVersion: 'test',
    queueLimit: 5,
    logger,
  })
  try {
    for (let index = 0; index < 8; index++) {
      const { result, info } = run(index)
      // onResult is synchronous: a run's answer is never held by the ledger, whatever the writer's state.
      expect(ledger.onResult(result, { language: 'javascript', code: `${index}` }, info)).toBeUndefined()
    }
    expect(ledger.stats()).toMatchObject({ queued: 5, written: 0, lost: 3, queueLimit: 5 })
    // One line (at most one a second) with the count, not one per record.
    expect(errors).toHaveLength(1)
    expect(errors[0]!.msg).toMatch(/ledger records lost: the write queue is full/)
    expect(errors[0]!.fields).toMatchObject({ lost: 1, queued: 5, queueLimit: 5 })

    release()
    await ledger.flush()
    expect(ledger.stats()).toMatchObject({ queued: 0, written: 5, lost: 3 })
    const report = await ledger.verify()
    expect(report).toMatchObject({ ok: true, records: 5 })
    for (let index = 0; index < 5; index++) expect((await ledger.record(`run-${index}`)).record.runId).toBe(`run-${index}`)
    await expect(ledger.record('run-5')).rejects.toMatchObject({ code: 'EXECGATE_NOT_FOUND' })

    // With room again, the next run is queued and written.
    const { result, info } = run(8)
    ledger.onResult(result, { language: 'javascript', code: '8' }, info)
    await ledger.flush()
    expect(ledger.stats()).toMatchObject({ queued: 0, written: 6, lost: 3 })
  } finally {
    await ledger.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('runs that never yield are handed to the writer once the oldest is past the 20 ms window, not only at a full batch', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-ledger-window-'))
  const sqlite = new SqliteLedgerStore({ file: path.join(dir, 'ledger.sqlite') })
  // A real in-thread writer, its hand-overs counted as they are posted.
  const handOvers: number[] = []
  const ledger = new ArtifactLedger({
    openRecords: () => sqlite,
    openBlobs: () => new DirectoryBlobStore(path.join(dir, 'blobs')),
    execgateVersion: 'test',
    writer: () => {
      const writer = new LedgerWriter({
        openRecords: () => sqlite,
        openBlobs: () => new DirectoryBlobStore(path.join(dir, 'blobs')),
        execgateVersion: 'test',
        outputThresholdBytes: 1024,
        ownsStores: false,
      })
      return {
        get written() {
          return writer.written
        },
        post: (items) => {
          handOvers.push(items.length)
          writer.post(items)
        },
        flush: () => writer.flush(),
        applyRetention: (policy, now, tenants) => writer.applyRetention(policy, now, tenants),
        close: () => writer.close(),
      }
    },
  })
  try {
    // Back to back, with no turn of the event loop between them (the window's timer cannot fire), 5 ms of run apart.
    const start = Date.now()
    const record = (index: number) => {
      const { result, info } = run(index)
      const at = start + 5 * index
      ledger.onResult(result, { language: 'python', code: `${index}` }, { ...info, startedAt: at, endedAt: at })
    }
    for (let index = 0; index < 4; index++) record(index)
    // 15 ms between the first and the last: still within the window, nothing handed over.
    expect(handOvers).toEqual([])
    // The fifth ends 20 ms after the first: the queue goes to the writer with it, all five at once.
    record(4)
    expect(handOvers).toEqual([5])
    record(5)
    expect(handOvers).toEqual([5])
    await ledger.flush()
    expect(handOvers).toEqual([5, 1])
    expect(ledger.stats()).toMatchObject({ written: 6, queued: 0, lost: 0 })
  } finally {
    await ledger.close()
    await sqlite.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
