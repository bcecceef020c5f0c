import type { Command, Option } from 'commander'
import { createExecgate } from '../index'
import { nonNegativePort } from './usage'
import { trimHeapWhenIdle } from './idle-heap-trim'
import { capYoungGeneration } from './young-generation'

/** `execgate serve` (the HTTP API and MCP at /mcp) and `execgate mcp` (MCP over stdio). */
export function registerServeCommands(program: Command, configOption: () => Option): void {
  program
    .command('serve')
    .description('serve the HTTP API (and MCP at /mcp) until SIGTERM')
    .option('--host <host>', 'address to bind (default: server.host; loopback only without API keys)')
    .option('--port <port>', 'port to bind (default: server.port; 0 for any free port)', nonNegativePort)
    .addOption(configOption())
    .action(async (flags: { host?: string; port?: number; config?: string }) => {
      // Before the load: what the young generation grows to under load, V8 keeps (young-generation.ts).
      capYoungGeneration()
      // After it: what the old generation grew into, given back once the server is idle (idle-heap-trim.ts).
      trimHeapWhenIdle()
      // Listen at once (/healthz; /readyz 503 until the first tier is warm). The warm-ups start before the server's
      // modules load, so the workers and child processes start while this thread loads fastify.
      const execgate = await createExecgate({ file: flags.config, warm: false, role: 'server' })
      const warm = execgate.ready()
      try {
        const { serve } = await import('../server/serve')
        const running = await serve(execgate, { host: flags.host, port: flags.port })
        // Queued tasks (and those a crash interrupted) run from the start, not from the first task request; after the
        // first tier is warm, so opening the stores (SQLite's native module) does not hold readiness back.
        await warm
        await execgate.tasks.start()
        await execgate.plans.start()
        process.stderr.write(`[execgate] serving on ${running.url}\n`)
        // An operator's (and the soak's) way to see what the server keeps: with node --expose-gc, SIGUSR2 runs a full GC.
        const gc = (globalThis as { gc?: () => void }).gc
        if (gc) process.on('SIGUSR2', () => gc())
      } catch (error) {
        await execgate.dispose()
        throw error
      }
      await new Promise(() => undefined) // until a signal ends the process
    })

  program
    .command('mcp')
    .description('serve the MCP tools (execute_code, validate_code, list_languages) over stdio')
    .addOption(configOption())
    .action(async (flags: { config?: string }) => {
      // Answer the client's handshake at once and warm the adapters meanwhile.
      const execgate = await createExecgate({ file: flags.config, warm: false })
      void execgate.ready()
      try {
        const { serveMcpStdio } = await import('../server/mcp')
        await serveMcpStdio(execgate)
      } finally {
        await execgate.dispose()
      }
    })
}
