import { createExecgate } from '../src'
import { measure, type BenchSection } from './harness'

/** One container per execution through the Docker Engine API (podman's service in CI): create to remove. */
export async function run(): Promise<BenchSection> {
  const socketPath = process.env.EXECGATE_PODMAN_SOCKET ?? '/run/execgate-podman/podman.sock'
  const execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['docker'], adapter: 'docker' },
      adapters: { docker: { socketPath } },
      readiness: { enabled: false },
      log: { level: 'silent' },
    },
  })
  try {
    const check = await execgate.checkNow()
    const health = check.adapters[0]!.health
    if (health.state !== 'available') throw new Error(`the docker adapter is ${health.state}: ${health.reason}`)
    const series = async (language: 'python' | 'javascript', code: string) =>
      measure(
        `ExecutionService → docker adapter: ${language} ${code}`,
        async () => {
          const result = await execgate.execute({ language, code })
          if (result.status !== 'ok') throw new Error(`execgate answered ${result.status}: ${result.message}`)
        },
        { iterations: 30, warmup: 3 },
      )
    const python = await series('python', 'print(2)')
    const node = await series('javascript', 'console.log(2)')
    return {
      title: 'docker adapter: a container per run',
      measurements: [python, node],
      ratios: [
        `python p50 = ${python.p50Ms.toFixed(0)} ms, javascript p50 = ${node.p50Ms.toFixed(0)} ` +
          `ms, each create → attach → start → wait → remove`,
      ],
      notes: ['podman 4.3 (runc) serving the Docker API on a unix socket; the image is a debootstrapped Debian 12 with python3 and nodejs'],
    }
  } finally {
    await execgate.dispose()
  }
}
