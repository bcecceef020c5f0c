import { ExecgateError } from '../../core'
import type { SandboxRecord } from './sandbox-types'

/** What a call to a sandbox whose node is gone is told: `EXECGATE_SANDBOX_LOST`, naming its last snapshot and how to restore it. */
export function sandboxLostError(record: SandboxRecord): ExecgateError {
  const snapshot = record.info.lastSnapshot
  return new ExecgateError('EXECGATE_SANDBOX_LOST', {
    id: record.info.id,
    node: record.node,
    detail: 'its heartbeat expired',
    snapshot: snapshot
      ? `its last snapshot is ${snapshot.id} (${snapshot.createdAt}): start a sandbox with from: ${snapshot.id}`
      : 'it had no snapshot',
  })
}
