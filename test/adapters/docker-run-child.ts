/**
 * The execgate process docker-run-sweep.test.ts kills with SIGKILL: it starts a one-shot docker run that sleeps far
 * past the test, prints `{"running": {owner, container}}` once the run's container exists, and waits to be killed.
 */
import { performance } from 'node:perf_hooks'
import Docker from 'dockerode'
import { DockerAdapter } from '../../adapters/docker'
import { RUN_OWNER_LABEL, ownRunsFilter } from '../../adapters/docker/run-labels'
import { DEFAULT_POLICY } from '../../src/policy'

async function main(): Promise<void> {
  const socketPath = process.argv[2]!
  const adapter = new DockerAdapter({ socketPath })
  const policy = { ...DEFAULT_POLICY, wallTimeMs: 600_000, cpuTimeMs: 600_000, allowedImports: ['time'] }
  const context = {
    traceId: `run-sweep-${process.pid}`,
    policy,
    signal: new AbortController().signal,
    deadline: performance.now() + 600_000,
  }
  void adapter.execute({ language: 'python', code: 'import time\ntime.sleep(600)' }, context)
  const docker = new Docker({ socketPath })
  for (;;) {
    const [mine] = await docker.listContainers({ filters: ownRunsFilter() })
    if (mine?.State === 'running') {
      process.stdout.write(`${JSON.stringify({ running: { owner: mine.Labels[RUN_OWNER_LABEL], container: mine.Id } })}\n`)
      return
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

void main()
