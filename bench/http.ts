import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { workingSubject, type Subject } from './against'
import type { BenchSection, Measurement } from './harness'

export const compares = true

const ROUNDS = 3
const ROUND_SECONDS = 5
const SETTLE_SECONDS = 10

function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) / 1024
}

async function startServer(subject: Subject, dataDir: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [subject.bin, 'serve', '--port', '0'], {
    env: {
      ...process.env,
      EXECGATE_LOG_LEVEL: 'warn',
      EXECGATE_ADAPTERS_PYODIDE_WARM_ON_START: 'false',
      EXECGATE_FABRIC_DATA_DIR: dataDir,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  const url = await new Promise<string>((resolve, reject) => {
    let text = ''
    child.stderr!.on('data', (chunk: Buffer) => {
      text += chunk
      const match = /serving on (http:\/\/\S+)/.exec(text)
      if (match) resolve(match[1]!)
    })
    child.on('exit', (code) => reject(new Error(`execgate serve exited with ${code}: ${text}`)))
  })
  return { url, child }
}

/**
 * The server's ledger counters from its /metrics, after the load: a figure "with the ledger on" must not have shed
 * records past the queue limit (it would leave their cost out), so any lost fails the section.
 */
async function ledgerCounts(url: string): Promise<{ written: number }> {
  const text = await (await fetch(`${url}/metrics`)).text()
  const counter = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN)
  const lost = counter('execgate_ledger_records_lost_total')
  const written = counter('execgate_ledger_records_written_total')
  if (!Number.isFinite(written) || !Number.isFinite(lost))
    throw new Error(`the server's /metrics lacks execgate_ledger_records_written_total or execgate_ledger_records_lost_total`)
  if (lost > 0) throw new Error(`the server's ledger lost ${lost} records under the load: its figure would leave their cost out`)
  return { written }
}

/**
 * autocannon against `execgate serve` (a separate process per subject, embedded default config, the ledger on in a
 * temp dir) posting a trivial JavaScript snippet, in alternating 5 s rounds when several subjects are compared:
 * requests/s, latency, errors, and each server's RSS before the load, at its peak, and 10 s after the load ends.
 */
export async function run(subjects: readonly Subject[] = [workingSubject()]): Promise<BenchSection> {
  const autocannon = (await import('autocannon')).default
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-bench-http-'))
  const servers: { url: string; child: ChildProcess }[] = []
  try {
    for (const subject of subjects) servers.push(await startServer(subject, path.join(dataDir, subject.tag)))
    const body = JSON.stringify({ language: 'javascript', code: '1 + 1' })
    const options = (url: string) => ({
      url: `${url}/v1/executions`,
      method: 'POST' as const,
      headers: { 'content-type': 'application/json' },
      body,
      connections: 16,
      pipelining: 1,
    })
    for (const server of servers) await autocannon({ ...options(server.url), duration: 3 }) // warm-up: workers, JIT
    await new Promise((resolve) => setTimeout(resolve, 2000))
    const before = servers.map((server) => rssMb(server.child.pid!))
    const peak = [...before]
    const totals = servers.map(() => ({
      requests: 0,
      seconds: 0,
      errors: 0,
      p50: [] as number[],
      p97: [] as number[],
      p99: [] as number[],
    }))
    for (let round = 0; round < ROUNDS; round++) {
      for (const [index, server] of servers.entries()) {
        const sampler = setInterval(() => (peak[index] = Math.max(peak[index]!, rssMb(server.child.pid!))), 250)
        const result = await autocannon({ ...options(server.url), duration: ROUND_SECONDS })
        clearInterval(sampler)
        const total = totals[index]!
        total.requests += result.requests.total
        total.seconds += result.duration
        total.errors += result.errors + result.timeouts + result.non2xx
        total.p50.push(result.latency.p50)
        total.p97.push(result.latency.p97_5)
        total.p99.push(result.latency.p99)
      }
    }
    await new Promise((resolve) => setTimeout(resolve, SETTLE_SECONDS * 1000))
    const after = servers.map((server) => rssMb(server.child.pid!))
    const ledgers = await Promise.all(servers.map((server) => ledgerCounts(server.url)))
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
    const measurements: Measurement[] = totals.map((total, index) => ({
      name:
        `${subjects.length > 1 ? `[${subjects[index]!.tag}] ` : ''}autocannon → POST ` +
        `/v1/executions (javascript 1 + 1), 16 connections, ${ROUNDS} × ${ROUND_SECONDS} s`,
      iterations: total.requests,
      p50Ms: median(total.p50),
      p95Ms: median(total.p97),
      meanMs: NaN,
      opsPerSec: total.requests / total.seconds,
    }))
    const ratios = measurements.flatMap((m, index) => {
      const tag = subjects.length > 1 ? `[${subjects[index]!.tag}] ` : ''
      return [
        `${tag}${m.opsPerSec.toFixed(0)} req/s (target ≥ 3,000), p99 ` +
          `${median(totals[index]!.p99)} ms, errors ${totals[index]!.errors} (target 0)`,
        `${tag}server RSS ${before[index]!.toFixed(0)} MB before the load, ` +
          `${peak[index]!.toFixed(0)} MB at its peak, ${after[index]!.toFixed(0)} MB ` +
          `${SETTLE_SECONDS} s after it ended (target: within 50 MB of before)`,
        `${tag}ledger on: ${ledgers[index]!.written} records written, none lost`,
      ]
    })
    if (measurements.length > 1)
      ratios.push(`throughput work/base = ${(measurements[measurements.length - 1]!.opsPerSec / measurements[0]!.opsPerSec).toFixed(2)}×`)
    return {
      title: 'HTTP API under load',
      measurements,
      ratios,
      notes: [
        "the p95 column is autocannon's p97.5 (median of the rounds); client and servers share the machine's 2 cores",
        ...(subjects.length > 1
          ? [`rounds alternate between the servers (base, work, base, …), ${ROUND_SECONDS} s each; both run throughout`]
          : []),
      ],
    }
  } finally {
    for (const server of servers) server.child.kill('SIGTERM')
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}
