import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parentPort, workerData } from 'node:worker_threads'
import { describeError } from '../../core/errors'
import type { Logger } from '../../observability/logger'
import { LedgerWriter } from './ledger-writer'
import { openBlobStore, openRecordStore, type LedgerFabricSettings } from './open-stores'
import { decodeHandOver, encodeHandOver } from './writer-handover'
import type { WriterReply, WriterRequest, WriterThreadData } from './writer-protocol'

/**
 * The ledger's writer thread (started by ThreadedLedgerWriter): opens its own connections to the record and blob
 * stores the config names, and writes what the result's path posts, off that path. Logs go to the parent's logger.
 */
const port = parentPort!
const data = workerData as WriterThreadData
const send = (reply: WriterReply) => port.postMessage(reply)

const log = (level: 'warn' | 'error') => (fields: object | string, msg?: string) =>
  send({ op: 'log', level, fields: typeof fields === 'string' ? { msg: fields } : fields, msg: msg ?? '' })
const logger = { warn: log('warn'), error: log('error') } as unknown as Logger

let niced = false

/**
 * This thread's nice raised by `data.nice` (to 19 at most): Linux's setpriority takes a thread id and sets that thread
 * alone (POSIX would set the process's, so it is done on Linux only, where /proc/thread-self names the thread). A
 * process may always lower its priority, never raise it back without privilege: a lowered writer that falls behind
 * is replaced (ThreadedLedgerWriter), not raised.
 */
function lowerPriority(): void {
  if (niced || data.nice <= 0 || process.platform !== 'linux') return
  niced = true
  try {
    const thread = Number(path.basename(fs.readlinkSync('/proc/thread-self')))
    os.setPriority(thread, Math.min(19, os.getPriority(thread) + data.nice))
    send({ op: 'niced' })
  } catch (error) {
    logger.warn({ err: describeError(error) }, 'the ledger writer thread could not lower its priority')
  }
}

const writer = new LedgerWriter({
  openRecords: () => openRecordStore(data.fabric as LedgerFabricSettings),
  openBlobs: () => openBlobStore(data.fabric as LedgerFabricSettings),
  execgateVersion: data.execgateVersion,
  outputThresholdBytes: data.outputThresholdBytes,
  logger,
  onWritten: (written) => send({ op: 'written', written }),
  onIdle: lowerPriority,
})

if (data.niceAtStart) lowerPriority()

function answer(id: number, work: Promise<unknown>): void {
  work.then(
    (value) => send({ op: 'done', id, value }),
    (error: unknown) => send({ op: 'failed', id, detail: describeError(error) }),
  )
}

port.on('message', (request: WriterRequest) => {
  switch (request.op) {
    case 'post':
      return writer.post(decodeHandOver(request.handOver))
    case 'flush':
      return answer(request.id, writer.flush())
    case 'retention':
      return answer(request.id, writer.applyRetention(request.policy, request.now, request.tenants))
    case 'close':
      return answer(request.id, writer.close())
    case 'handBack':
      return void writer.handBack().then((items) => send({ op: 'handedBack', handOver: encodeHandOver(items), written: writer.written }))
  }
})
