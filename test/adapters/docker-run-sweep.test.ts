import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import Docker from 'dockerode'
import { DockerAdapter } from '../../adapters/docker'
import { RUN_OWNER_LABEL } from '../../adapters/docker/run-labels'

/**
 * A one-shot run's container outlives an execgate killed with -9 mid-run (AutoRemove is off; the code sleeps on). The
 * next docker adapter's start removes it, and leaves alone the run container of an execgate still alive on the same
 * engine. Real child processes, a real podman engine (scripts/setup/podman.sh).
 */
const SOCKET = process.env.EXECGATE_PODMAN_SOCKET ?? '/run/execgate-podman/podman.sock'
const engine = new Docker({ socketPath: SOCKET })
const children: ChildProcess[] = []

/** Starts an execgate process with a run in flight; resolves with its owner label and the run's container. */
async function execgateWithARun(): Promise<{ child: ChildProcess; owner: string; container: string }> {
  const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', path.join(__dirname, 'docker-run-child.ts'), SOCKET], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  children.push(child)
  const running = await new Promise<{ owner: string; container: string }>((resolve, reject) => {
    let text = ''
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString()
      const line = text.split('\n').find((item) => item.startsWith('{"running"'))
      if (line) resolve((JSON.parse(line) as { running: { owner: string; container: string } }).running)
    })
    child.once('exit', (code) => reject(new Error(`the child exited (${code}) before its run's container was running`)))
  })
  return { child, ...running }
}

async function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

const containersOf = async (owner: string) =>
  (await engine.listContainers({ all: true, filters: { label: [`${RUN_OWNER_LABEL}=${owner}`] } })).map((item) => item.Id)

beforeAll(async () => {
  const availability = await new DockerAdapter({ socketPath: SOCKET }).checkAvailability()
  if (availability.status !== 'available')
    throw new Error(`the docker adapter's engine is not ready (run scripts/setup/podman.sh): ${availability.reason}`)
})

afterAll(async () => {
  await Promise.all(children.map(killHard))
  // Whatever a failed assertion left: these owners are dead now, so one more start sweeps them.
  const last = new DockerAdapter({ socketPath: SOCKET })
  await last.sweepDeadRuns()
  await last.dispose()
})

test("a dead execgate's run container goes at the next adapter's start; a live one's stays", async () => {
  const [dead, alive] = await Promise.all([execgateWithARun(), execgateWithARun()])
  await killHard(dead.child)
  // What the kill left: the run's container, still running its sleep.
  expect(await containersOf(dead.owner)).toEqual([dead.container])

  const next = new DockerAdapter({ socketPath: SOCKET })
  try {
    // Its first call to the engine (here the readiness check, as at start-up) starts the sweep.
    expect((await next.checkAvailability()).status).toBe('available')
    expect(await next.sweepDeadRuns()).toBeGreaterThanOrEqual(1)
    expect(await containersOf(dead.owner)).toEqual([])
    // The live execgate's run goes on.
    expect(await containersOf(alive.owner)).toEqual([alive.container])
    expect((await engine.getContainer(alive.container).inspect()).State.Running).toBe(true)
  } finally {
    await next.dispose()
  }

  // Once that one dies too, the next start removes its container as well.
  await killHard(alive.child)
  const after = new DockerAdapter({ socketPath: SOCKET })
  try {
    expect(await after.sweepDeadRuns()).toBeGreaterThanOrEqual(1)
    expect(await containersOf(alive.owner)).toEqual([])
  } finally {
    await after.dispose()
  }
}, 180_000)
