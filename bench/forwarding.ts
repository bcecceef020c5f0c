import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../src'
import { serve, type RunningServer } from '../src/server/serve'
import { measureInterleaved, type BenchSection } from './harness'
import { startRedisServer } from './redis-server'

/**
 * A sandbox's exec through the node that owns it against the same exec through another node, which forwards it
 * (docs/sandboxes.md#many-nodes): two servers (`serve()`, in this process) on one redis-server, the sandbox on node A
 * (native shell, `echo hi`), each call a keep-alive HTTP POST /v1/sandboxes/:id/exec. The difference is the cost of
 * forwarding: the registry lookup in Redis and the second HTTP hop.
 */

const KEY = 'bench-key-0123456789abcdef'

export async function run(): Promise<BenchSection> {
  const redis = await startRedisServer()
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-bench-forwarding-'))
  const nodes: { execgate: Execgate; server: RunningServer }[] = []
  try {
    for (const name of ['a', 'b']) {
      const execgate = await createExecgate({
        overrides: {
          execution: { enabled: ['shell'] },
          fabric: { store: 'redis', redisUrl: redis.url, dataDir: path.join(dataDir, name), ledger: { enabled: false } },
          server: { apiKeys: [`bench=${KEY}`] },
          readiness: { enabled: false },
          log: { level: 'silent' },
        },
      })
      nodes.push({ execgate, server: await serve(execgate, { port: 0 }, false) })
    }
    const [a, b] = nodes as [(typeof nodes)[0], (typeof nodes)[0]]
    const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }
    const started = (await (
      await fetch(`${a.server.url}/v1/sandboxes`, { method: 'POST', headers, body: JSON.stringify({ adapter: 'shell' }) })
    ).json()) as { id: string }
    const exec = (url: string) => async () => {
      const response = await fetch(`${url}/v1/sandboxes/${started.id}/exec`, { method: 'POST', headers, body: '{"command":"echo hi"}' })
      const result = (await response.json()) as { status: string; stdout: string }
      if (result.status !== 'ok' || result.stdout !== 'hi\n') throw new Error(`exec answered ${JSON.stringify(result)}`)
    }
    const measured = await measureInterleaved(
      [
        { name: 'shell sandbox exec through its own node (HTTP)', fn: exec(a.server.url) },
        { name: 'the same exec through another node, forwarded', fn: exec(b.server.url) },
      ],
      { iterations: 300, batch: 20, warmup: 20 },
    )
    const added = measured[1]!.p50Ms - measured[0]!.p50Ms
    return {
      title: 'sandboxes across nodes: a forwarded exec vs direct',
      measurements: measured,
      ratios: [`forwarded − direct p50 = +${added.toFixed(3)} ms (target ≤ +3 ms)`],
      notes: [
        'two servers in this process on one redis-server (bench/redis-server.ts); native shell ' +
          'sandbox on node A; interleaved in batches of 20',
        'the forwarding node looks the sandbox up in Redis (one GET of its record, one of its ' +
          'owner’s heartbeat), then pipes the request to the owner over a keep-alive connection',
      ],
    }
  } finally {
    for (const node of nodes.reverse()) await node.server.shutdown()
    await redis.stop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}
