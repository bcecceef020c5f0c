import { InvalidArgumentError, type Command } from 'commander'
import type { ResumeChanges } from '../fabric/tasks'

/**
 * The limits `task resume` and `plan resume` may change, as flags: the same four fields `POST /v1/tasks/:id/resume`
 * and `POST /v1/plans/:id/resume` take, each checked against the policy profile where the resume is made.
 */

const positiveInteger =
  (flag: string) =>
  (value: string): number => {
    const parsed = Number(value)
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(parsed) || parsed < 1)
      throw new InvalidArgumentError(`${flag} must be a whole number of at least 1, got "${value}"`)
    return parsed
  }

const jsonObject =
  (flag: string) =>
  (value: string): Record<string, unknown> => {
    let parsed: unknown
    try {
      parsed = JSON.parse(value)
    } catch (error) {
      throw new InvalidArgumentError(`${flag} must be a JSON object: ${(error as Error).message}`)
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new InvalidArgumentError(`${flag} must be a JSON object`)
    return parsed as Record<string, unknown>
  }

/** Adds `--timeout-ms`, `--memory-mb`, `--adapter` and `--policy` to a resume command. */
export function withResumeOptions(command: Command): Command {
  return command
    .option('--timeout-ms <n>', 'the run time limit, in ms', positiveInteger('--timeout-ms'))
    .option('--memory-mb <n>', 'the memory limit, in MB', positiveInteger('--memory-mb'))
    .option('--adapter <name>', 'run on this adapter')
    .option('--policy <json>', 'policy overrides as JSON, e.g. \'{"outputBytes": 4096}\'', jsonObject('--policy'))
}

/** The changes among a resume command's flags (everything but `--config` and `--json`). */
export function resumeChangesFrom(flags: ResumeChanges & { config?: string; json?: boolean }): ResumeChanges {
  const { config: _config, json: _json, ...changes } = flags
  return changes
}
