/**
 * The server the crash test kills: it serves on a free port, starts a process and a docker sandbox with an exec
 * running in each, prints `{"ready": …}` on stdout, and runs until it is killed.
 */
import { createExecgate } from '../../../src'
import { serve } from '../../../src/server/serve'

async function main(): Promise<void> {
  const [persistentDir, socketPath] = [process.argv[2]!, process.argv[3]!]
  const execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['shell', 'process', 'docker'] },
      adapters: { docker: { socketPath }, process: { persistentDir } },
      readiness: { enabled: false },
      log: { level: 'silent' },
      security: { defaultPolicy: { wallTimeMs: 60_000, cpuTimeMs: 60_000 } },
    },
  })
  const server = await serve(execgate, { port: 0 }, false)
  const sandboxes = await Promise.all(['process', 'docker'].map((adapter) => execgate.sandboxes.start({ adapter, timeoutMs: 60_000 })))
  // An exec in flight in each when the kill comes: a loop with a child process of its own.
  for (const sandbox of sandboxes) void sandbox.exec('sleep 120 & while :; do :; done')
  await new Promise((resolve) => setTimeout(resolve, 500))
  process.stdout.write(`${JSON.stringify({ ready: { url: server.url, ids: sandboxes.map((sandbox) => sandbox.id) } })}\n`)
}

void main()
