import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate, type ExecutionRequest, type ExecutionResult, type Sandbox } from '../src'
import { measureInterleaved, ratio, type BenchSection, type Measurement } from './harness'

/**
 * Persistent sandboxes (docs/sandboxes.md): an exec into a running sandbox against the backend's one-shot run of the
 * same code, on each backend, both through ExecutionService (policy, static checks, admission, output cap). For
 * docker the one-shot run is a fresh container (create, start, wait, remove); the exec is a `docker exec` into the
 * sandbox's container.
 */

function expectOk(result: ExecutionResult, what: string): void {
  if (result.status !== 'ok') throw new Error(`${what} answered ${result.status}: ${result.message ?? result.error?.message}`)
}

interface Case {
  adapter: 'docker' | 'process' | 'shell'
  request: Pick<ExecutionRequest, 'language' | 'code'>
  iterations: number
  target?: string
}

const CASES: Case[] = [
  { adapter: 'docker', request: { language: 'python', code: 'print(2)' }, iterations: 40, target: '≥ 5×' },
  { adapter: 'docker', request: { language: 'bash', code: 'echo hi' }, iterations: 40 },
  { adapter: 'process', request: { language: 'python', code: 'print(2)' }, iterations: 100 },
  { adapter: 'process', request: { language: 'bash', code: 'echo hi' }, iterations: 100 },
  { adapter: 'shell', request: { language: 'bash', code: 'echo hi | wc -c' }, iterations: 200 },
]

export async function run(): Promise<BenchSection> {
  const socketPath = process.env.EXECGATE_PODMAN_SOCKET ?? '/run/execgate-podman/podman.sock'
  const persistentDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-bench-sandboxes-'))
  const execgate: Execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['shell', 'process', 'docker'] },
      adapters: { docker: { socketPath }, process: { persistentDir } },
      readiness: { enabled: false },
      log: { level: 'silent' },
    },
  })
  const measurements: Measurement[] = []
  const ratios: string[] = []
  const sandboxes = new Map<string, Sandbox>()
  try {
    for (const item of CASES) {
      // The docker adapter's one-shot runs are Python and JavaScript; bash runs only in its sandboxes.
      const oneShot = item.adapter !== 'docker' || item.request.language !== 'bash'
      let sandbox = sandboxes.get(item.adapter)
      if (!sandbox) sandboxes.set(item.adapter, (sandbox = await execgate.sandboxes.start({ adapter: item.adapter })))
      // A pipe in a series name would split the markdown table's cell.
      const label = `${item.request.language} ${item.request.code}`.replace(/\|/g, '\\|')
      const series = [
        {
          name: `${item.adapter} sandbox exec · ${label}`,
          fn: async () =>
            expectOk(await sandbox!.exec({ language: item.request.language, code: item.request.code }), `${item.adapter} sandbox`),
        },
        ...(oneShot
          ? [
              {
                name: `${item.adapter} one-shot run · ${label}`,
                fn: async () => expectOk(await execgate.execute({ ...item.request, adapter: item.adapter }), `${item.adapter} one-shot`),
              },
            ]
          : []),
      ]
      const measured = await measureInterleaved(series, { iterations: item.iterations, batch: 10, warmup: 3 })
      measurements.push(...measured)
      if (measured[1]) ratios.push(ratio(`${item.adapter} one-shot/sandbox exec (${label})`, measured[1], measured[0]!, item.target))
    }
  } finally {
    await execgate.dispose()
    fs.rmSync(persistentDir, { recursive: true, force: true })
  }
  return {
    title: 'sandboxes: an exec into a running sandbox vs a one-shot run',
    measurements,
    ratios,
    notes: [
      'both series go through ExecutionService.execute (the sandbox exec with options.sandbox); interleaved in batches of 10',
      'docker: podman 4.3 (runc) serving the Docker API on a unix socket; the one-shot run is a ' +
        "fresh container per run, the exec a `docker exec` into the sandbox's container",
      "process: the exec is a fresh bubblewrap run over the sandbox's folder (a tmpfs of its " +
        'own); the one-shot run a fresh bubblewrap run over an empty tmpfs',
      "shell: the exec hands the workspace to the shell adapter's warm process pool and takes " +
        'back what changed; the one-shot run the same pool',
    ],
  }
}
