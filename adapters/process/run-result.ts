import { performance } from 'node:perf_hooks'
import {
  createResult,
  valueBytes,
  type ExecutionResult,
  type ExecutionStatus,
  type FileMount,
  type OutputCapture,
  type OutputCollector,
  type SecurityPolicy,
} from '../../src/core'
import { collectedOutputs } from '../shared/run-report'
import { classifyExit } from './classify'
import type { SpawnedRun } from './spawn-sandbox'
import { unpackFiles } from './tar'

/**
 * A one-shot run's result from how its sandbox ended: the status (the runner's report first, then the exit), its
 * output and rich outputs, and with `collectFiles` the workspace's files, less the uploads bound in (`mounts`).
 */
export function processRunResult(
  run: SpawnedRun,
  policy: SecurityPolicy,
  output: OutputCapture,
  outputs: OutputCollector,
  shape: { name: string; collectFiles: boolean; mounts: readonly FileMount[]; started: number },
): ExecutionResult {
  const { name, collectFiles, mounts, started } = shape
  const outcome = classifyExit(run, policy, output.finish().stderr)
  const returned = outcome.status === 'ok' || outcome.status === 'error' ? outcome.value : undefined
  const captured = output.finish(valueBytes(returned))
  const rich = collectedOutputs(outputs, outcome, name)
  const status: ExecutionStatus = rich.status === 'ok' && captured.truncated ? 'output_limit' : rich.status
  const unpacked = collectFiles && run.filesArchive && !run.stoppedFor ? unpackFiles(run.filesArchive) : undefined
  const mounted = new Set(mounts.map((mount) => mount.path))
  const workspace = unpacked && { ...unpacked, files: unpacked.files.filter((file) => !mounted.has(file.path)) }
  return createResult(status, name, {
    ...captured,
    value: returned,
    error: outcome.error,
    ...(rich.message ? { message: rich.message } : {}),
    ...(rich.outputs ? { outputs: rich.outputs } : {}),
    files: workspace?.files,
    ...(workspace?.skipped.length || run.archiveCut
      ? {
          message:
            outcome.error?.message ??
            'workspace: ' +
              [
                ...(workspace?.skipped ?? []),
                ...(run.archiveCut ? ['the workspace archive passed its size limit; later files were lost'] : []),
              ].join('; '),
        }
      : {}),
    usage: { wallMs: performance.now() - started, outputBytes: output.totalBytes },
  })
}
