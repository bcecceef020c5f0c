import { currentOwner, formatOwner } from '../shared/sandbox-owner'

/**
 * The labels of a one-shot run's container: the run's trace id, and the execgate process that made it (`host/pid:start`,
 * as sandbox containers carry theirs), so the containers of one process can be told from another's on a shared engine
 * (several execgate processes, or test runs, on one podman or Docker daemon).
 */
export const RUN_LABEL = 'io.execgate.run'
export const RUN_OWNER_LABEL = 'io.execgate.run.owner'

export function runLabels(traceId: string): Record<string, string> {
  return { [RUN_LABEL]: traceId, [RUN_OWNER_LABEL]: formatOwner(currentOwner()) }
}

/** The engine's label filter for this process's run containers. */
export function ownRunsFilter(): { label: string[] } {
  return { label: [`${RUN_OWNER_LABEL}=${formatOwner(currentOwner())}`] }
}
