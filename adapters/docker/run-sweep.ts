import type Docker from 'dockerode'
import { ownerMayBeAlive, parseOwner } from '../shared/sandbox-owner'
import { RUN_LABEL, RUN_OWNER_LABEL } from './run-labels'

/**
 * Removes one-shot run containers whose owning execgate process (by label) is gone. A process killed with -9 mid-run
 * never removes its run's container (`AutoRemove` is off: the result is read after the exit), and code that loops keeps
 * it running for good. Only an owner of this host that is certainly dead is swept: another host's (unknowable from
 * here) and a live process's (another execgate, or a test run, on the same engine) are left alone, and so is a
 * container with no readable owner (made by something else, or before runs were labelled).
 */
export async function sweepRunContainers(docker: Docker): Promise<number> {
  const found = await docker.listContainers({ all: true, filters: { label: [RUN_LABEL, RUN_OWNER_LABEL] } })
  let removed = 0
  for (const item of found) {
    const owner = parseOwner(item.Labels?.[RUN_OWNER_LABEL] ?? '')
    if (!owner || ownerMayBeAlive(owner)) continue
    try {
      await docker.getContainer(item.Id).remove({ force: true })
      removed++
    } catch {
      // removed meanwhile (another execgate's sweep), or the engine refused: the next start tries again
    }
  }
  return removed
}
