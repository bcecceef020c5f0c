import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { FileMount, OutputCapture, OutputOptions, SecurityPolicy } from '../../src/core'
import type { RunController } from '../../src/runtime'
import { runnerOutputLimits } from '../shared/python-outputs'
import type { SpawnedRun } from './spawn-sandbox'

export interface WarmRunOptions {
  code: string
  filesArchive?: Buffer
  /** Uploads to bind read-only into the run's workspace (linked into its folder, bound by the child before it hides /runs). */
  mounts?: readonly FileMount[]
  stdin?: string
  policy: SecurityPolicy
  /** The request's rich-output options (the charts' image format). */
  outputs?: OutputOptions
  controller: RunController
  output: OutputCapture
  reportLimitBytes: number
  /** Each rich output the runner sends while the code runs, unchecked (the host's OutputCollector checks it). */
  onOutputRecord?: (raw: unknown) => void
}

/** The run's code, stdin and files, written into its folder for the child to copy into its own tmpfs. */
export function writeRunFiles(folder: string, options: WarmRunOptions, uid: number | undefined): void {
  fs.writeFileSync(path.join(folder, 'code'), options.code)
  if (options.stdin !== undefined) fs.writeFileSync(path.join(folder, 'stdin'), options.stdin)
  if (options.filesArchive) fs.writeFileSync(path.join(folder, 'in.tar'), options.filesArchive)
  // Only the files written here: an upload's link is the store's own inode, which keeps its owner (and 0644).
  if (uid !== undefined)
    for (const file of ['code', 'stdin', 'in.tar'])
      if (fs.existsSync(path.join(folder, file))) fs.chownSync(path.join(folder, file), uid, uid)
}

/** The go the zygote passes to the run's waiting child: its uploads, import rules, output limits, filter and rlimits. */
export function goMessage(
  id: string,
  options: WarmRunOptions,
  run: {
    goMounts: readonly { path: string; file: string }[]
    uid: number | undefined
    seccompFilter: Buffer | undefined
    workspaceMb: number
    maxOpenFiles: number
  },
): Record<string, unknown> {
  const { goMounts, uid } = run
  const policy = options.policy
  return {
    go: id,
    ...(goMounts.length ? { mounts: goMounts } : {}),
    allowedImports: policy.allowedImports,
    outputs: runnerOutputLimits(policy, options.outputs),
    ...(run.seccompFilter ? { seccomp: run.seccompFilter.toString('base64') } : {}),
    limits: {
      dataBytes: policy.memoryMb * 2 ** 20,
      cpuSeconds: Math.max(1, Math.ceil(policy.cpuTimeMs / 1000)),
      fileBytes: run.workspaceMb * 2 ** 20,
      openFiles: run.maxOpenFiles,
      // The supervisor (C) and pid 1 (G) count too; only a uid of the run's own makes the cap this run's alone.
      ...(uid === undefined ? {} : { processes: policy.maxProcesses + 2 }),
    },
  }
}

/** How the run ended, from the status the zygote saw: null when unknown (a kill), 128 + n for signal n. */
export function exitOf(status: number | null): Pick<SpawnedRun, 'exitCode' | 'signal'> {
  const killedBy = status !== null && status > 128 ? status - 128 : undefined
  return {
    exitCode: status === null || killedBy !== undefined ? null : status,
    signal: status === null ? 'SIGKILL' : killedBy !== undefined ? signalName(killedBy) : null,
  }
}

function signalName(number: number): NodeJS.Signals | null {
  const entry = Object.entries(os.constants.signals).find(([, value]) => value === number)
  return (entry?.[0] as NodeJS.Signals | undefined) ?? null
}
