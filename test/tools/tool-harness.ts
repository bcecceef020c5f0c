import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../../src'
import { ExecgateClient } from '../../src/client'
import { serve, type RunningServer } from '../../src/server/serve'
import type { CodeRunner, SandboxLike } from '../../src/tools/code-tool'

/**
 * What every framework tool test runs against: one in-process execgate (QuickJS, Monty, the native shell for
 * sandboxes) and the same execgate served over HTTP on loopback, reached with ExecgateClient. Each test runs its
 * framework's tool-call loop in both modes.
 */

export const KEY = 'tools-test-key-0123456789'

export interface ToolBackends {
  execgate: Execgate
  client: ExecgateClient
  /** The served execgate's base URL (tenant `tools`, key KEY). */
  url: string
  modes: { name: 'in-process' | 'remote'; runner: () => CodeRunner; startSandbox: () => Promise<SandboxLike & { stop(): Promise<void> }> }[]
  stop(): Promise<void>
}

export async function startToolBackends(): Promise<ToolBackends> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-tools-'))
  const execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs', 'monty', 'shell'] },
      sandboxes: { adapter: 'shell' },
      readiness: { enabled: false },
      log: { level: 'silent' },
      fabric: { dataDir },
      server: { apiKeys: [`tools=${KEY}`] },
    } as never,
  })
  const server: RunningServer = await serve(execgate, { port: 0, host: '127.0.0.1' }, false)
  const client = new ExecgateClient({ url: server.url, apiKey: KEY })
  return {
    execgate,
    client,
    url: server.url,
    modes: [
      { name: 'in-process', runner: () => execgate, startSandbox: () => execgate.sandboxes.start({ adapter: 'shell' }) },
      { name: 'remote', runner: () => client, startSandbox: () => client.sandboxes.start({ adapter: 'shell' }) },
    ],
    stop: async () => {
      await server.shutdown()
      fs.rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** The code the scripted models ask for, and what they say once they read the tool's answer. */
export const SUM_CALL = { language: 'python' as const, code: 'orders = [17.5, 24.5]\nprint("orders:", len(orders))\nsum(orders)' }
export const SESSION_CALLS = [
  { language: 'python' as const, code: 'total = 40\ntotal' },
  { language: 'python' as const, code: 'total + 2' },
]
export const SANDBOX_CALLS = [
  { language: 'bash' as const, code: 'echo 42 > answer.txt && echo saved' },
  { language: 'bash' as const, code: 'cat answer.txt' },
]

/** JavaScript on quickjs that draws: display() of an SVG string is an `image/svg+xml` output (docs/data.md). */
export const SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4" fill="teal"/></svg>'
export const IMAGE_CALL = { language: 'javascript' as const, code: `display(${JSON.stringify(SVG)}); 'drawn'` }
export const SVG_BASE64 = Buffer.from(SVG).toString('base64')
