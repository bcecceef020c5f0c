import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../../src'
import { buildServer } from '../../src/server/app'
import type { Logger } from '../../src/observability/logger'
import * as tokens from '../../src/app/tokens'

/**
 * The servers the client scenario suites (TypeScript and Python) run against, on loopback:
 * - `execgate serve` of the built CLI, as a deployment runs it: tenant `acme` (the scenarios) and tenant `metered` at
 *   60 requests a minute (the 429 scenario drains its bucket, then the client waits out `Retry-After`);
 * - a draining server: the same HTTP app in-process after its shutdown began, so every POST answers 503
 *   EXECGATE_SHUTTING_DOWN (a real `serve` closes its listener at once on SIGTERM, so a new request meets a refused
 *   connection instead; the app's own 503 is what a load balancer's keep-alive connection sees).
 */

export const ACME_KEY = 'acme-client-key-0123456789'
export const METERED_KEY = 'metered-client-key-0123456789'
export const METERED_RATE = 60
const BIN = path.join(__dirname, '..', '..', 'bin', 'execgate.js')

export interface ServeProcess {
  url: string
  dataDir: string
  stop(): Promise<void>
}

export async function startServeProcess(): Promise<ServeProcess> {
  if (!fs.existsSync(path.join(__dirname, '..', '..', 'dist', 'src', 'cli', 'index.js')))
    throw new Error('dist/ is not built: run `npm run build` (npm test builds first)')
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-client-'))
  const configFile = path.join(dataDir, 'config.json')
  fs.writeFileSync(
    configFile,
    JSON.stringify({
      server: { apiKeys: [`acme=${ACME_KEY}`, `metered=${METERED_KEY}`], tenants: { metered: { ratePerMinute: METERED_RATE } } },
      execution: { enabled: ['placeholder', 'quickjs', 'monty', 'shell'] },
      sandboxes: { adapter: 'shell' },
      readiness: { enabled: false },
      fabric: { dataDir },
    }),
  )
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--host', '127.0.0.1', '--config', configFile], {
    cwd: dataDir,
    env: { PATH: process.env.PATH ?? '', HOME: dataDir, EXECGATE_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  const url = await new Promise<string>((resolve, reject) => {
    let text = ''
    const timer = setTimeout(() => reject(new Error(`execgate serve did not start in 60 s: ${text}`)), 60_000)
    child.stderr!.on('data', (data: Buffer) => {
      text += data.toString()
      const match = /serving on (http:\/\/\S+)/.exec(text)
      if (match) (clearTimeout(timer), resolve(match[1]!))
    })
    child.once('exit', (code) => (clearTimeout(timer), reject(new Error(`execgate serve exited ${code}: ${text}`))))
  })
  return { url, dataDir, stop: () => stopChild(child, dataDir) }
}

async function stopChild(child: ChildProcess, dataDir: string): Promise<void> {
  if (child.exitCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
    await exited
    clearTimeout(timer)
  }
  fs.rmSync(dataDir, { recursive: true, force: true })
}

export interface DrainingServer {
  url: string
  stop(): Promise<void>
}

export async function startDrainingServer(): Promise<DrainingServer> {
  const execgate: Execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      fabric: { dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-draining-')) },
    } as never,
  })
  const { app, beginShutdown } = buildServer({
    execgate,
    logger: execgate.container.get<Logger>(tokens.Logger),
    tenants: new Map([[ACME_KEY, { name: 'acme', profiles: [], ratePerMinute: 6000 }]]),
    bodyLimitBytes: 1_000_000,
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  beginShutdown()
  const address = app.server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${address.port}`,
    stop: async () => {
      await app.close()
      await execgate.dispose()
    },
  }
}
