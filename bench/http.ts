import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import type { BenchSection } from './harness'

function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) / 1024
}

/**
 * autocannon against `execgate serve` (a separate process, on the embedded default config) posting a trivial
 * JavaScript snippet: requests/s, latency percentiles, errors, and the server's RSS before and after.
 */
export async function run(): Promise<BenchSection> {
  const autocannon = (await import('autocannon')).default
  const bin = path.join(__dirname, '../../bin/execgate.js')
  const server = spawn(process.execPath, [bin, 'serve', '--port', '0'], { env: { ...process.env, EXECGATE_LOG_LEVEL: 'warn', EXECGATE_ADAPTERS_PYODIDE_WARM_ON_START: 'false' }, stdio: ['ignore', 'ignore', 'pipe'] })
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let text = ''
      server.stderr.on('data', (chunk: Buffer) => {
        text += chunk
        const match = /serving on (http:\/\/\S+)/.exec(text)
        if (match) resolve(match[1]!)
      })
      server.on('exit', (code) => reject(new Error(`execgate serve exited with ${code}: ${text}`)))
    })
    const body = JSON.stringify({ language: 'javascript', code: '1 + 1' })
    const options = { url: `${url}/v1/executions`, method: 'POST' as const, headers: { 'content-type': 'application/json' }, body, connections: 16, pipelining: 1 }
    await autocannon({ ...options, duration: 3 }) // warm-up: workers, JIT
    const before = rssMb(server.pid!)
    const result = await autocannon({ ...options, duration: 15 })
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const after = rssMb(server.pid!)
    const errors = result.errors + result.timeouts + result.non2xx
    const measurement = {
      name: 'autocannon → POST /v1/executions (javascript 1 + 1), 16 connections, 15 s',
      iterations: result.requests.total,
      p50Ms: result.latency.p50,
      p95Ms: result.latency.p97_5,
      meanMs: result.latency.average,
      opsPerSec: result.requests.average,
    }
    return {
      title: 'HTTP API under load',
      measurements: [measurement],
      ratios: [
        `${result.requests.average.toFixed(0)} req/s (target ≥ 1,500), p99 ${result.latency.p99} ms, errors ${errors} (target 0)`,
        `server RSS ${before.toFixed(0)} MB before, ${after.toFixed(0)} MB after (target: within 50 MB)`,
      ],
      notes: ['the p95 column is autocannon\'s p97.5; client and server share the machine\'s 2 cores'],
    }
  } finally {
    server.kill('SIGTERM')
  }
}
