import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../../src'
import { serve, type RunningServer } from '../../src/server/serve'
import { ACME, GLOBEX, httpCaller, type CallAnswer, type CallInit } from '../servers/http-caller'

/**
 * The server the tenant-profile tests run against: tenants acme and globex both under the `tight` profile below, a real
 * server on loopback, real quickjs, a real SQLite task store in a temp dir.
 */

export const TIGHT = {
  wallTimeMs: 3000,
  cpuTimeMs: 3000,
  memoryMb: 64,
  outputBytes: 32 * 1024,
  maxProcesses: 4,
  maxOutputs: 4,
  outputsBytes: 512 * 1024,
  hostCalls: { maxCount: 20, maxTotalMs: 1000 },
  network: 'none' as const,
  filesystem: 'read_only' as const,
  allowedImports: ['math', 'json'],
}

/** A task's output cap, and what it prints: more than the cap, well within the profile's 32 KiB. */
export const HELD_OUTPUT_BYTES = 64
export const PRINTED = 'x'.repeat(200)

export interface TightProfileServer {
  readonly execgate: Execgate
  readonly url: string
  call(url: string, init?: CallInit): Promise<CallAnswer>
  /** A task SUSPENDED by its own output cap (resource exhaustion, docs/tasks.md): held with no race against a run. */
  exhaustedTask(key: string): Promise<string>
  /** The task once it has ended or is suspended. */
  settled(id: string, key: string): Promise<any>
}

/** Starts the server before the calling file's tests and stops it after them: called once at the top of the file. */
export function tightProfileServer(name: string): TightProfileServer {
  let execgate: Execgate
  let server: RunningServer
  let dataDir: string
  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `execgate-${name}-`))
    execgate = await createExecgate({
      overrides: {
        execution: { enabled: ['quickjs'] },
        readiness: { enabled: false },
        log: { level: 'silent' },
        fabric: { dataDir },
        security: { profiles: { tight: TIGHT } },
        server: { apiKeys: [`acme=${ACME}`, `globex=${GLOBEX}`], tenants: { acme: { profile: 'tight' }, globex: { profile: 'tight' } } },
      },
    })
    server = await serve(execgate, { port: 0 }, false)
  }, 60_000)
  afterAll(async () => {
    await server.shutdown()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })
  const call = httpCaller(() => server.url)
  async function settled(id: string, key: string) {
    for (;;) {
      const task = (await call(`/v1/tasks/${id}`, { key })).json
      if (['COMPLETED', 'FAILED', 'TERMINATED', 'SUSPENDED'].includes(task.state)) return task
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  return {
    get execgate() {
      return execgate
    },
    get url() {
      return server.url
    },
    call,
    settled,
    async exhaustedTask(key) {
      const created = await call('/v1/tasks', {
        key,
        body: {
          request: {
            language: 'javascript',
            code: `console.log(${JSON.stringify(PRINTED)}); 7`,
            policy: { outputBytes: HELD_OUTPUT_BYTES },
          },
        },
      })
      expect(created.status).toBe(201)
      const task = await settled(created.json.id, key)
      expect({ state: task.state, reason: task.reason.split(':')[0] }).toEqual({
        state: 'SUSPENDED',
        reason: 'resource_exhaustion (output_limit)',
      })
      return task.id
    },
  }
}
