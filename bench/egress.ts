import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { ContainerModule } from 'inversify'
import { EgressGateway, hostFetch, tableResolver } from '../src/egress'
import { against, tagged, workingSubject, type Subject } from './against'
import { measureInterleaved, type BenchSection, type Measurement } from './harness'

/**
 * The egress gateway's cost: the same GET to a loopback server straight and through the gateway. Host function:
 * `hostFetch` (what `http_request` runs) against Node's http.get, interleaved. Process tier: the proxy path a
 * sandbox uses (the runner's direct socket, or the forwarder, + unix socket + gateway) timed inside the sandbox by
 * Python's urllib, against the same urllib GET straight from a host Python (the sandbox has no straight path to
 * compare with). With `--against <ref>` the process part runs on both builds, alternated, ROUNDS times each.
 */
const GETS_PER_RUN = 200
/** Sandboxed loops per build, alternated between builds. */
const ROUNDS = 5

/** The process part measures every build it is given (`--against`); the host-function part this tree only. */
export const compares = true

function get(url: string, agent?: http.Agent): Promise<void> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent }, (response) => {
        response.resume()
        response.on('end', () => resolve())
      })
      .on('error', reject)
  })
}

const PYTHON_GETS = (url: string) => `import urllib.request, time
samples = []
for i in range(${GETS_PER_RUN}):
    t = time.perf_counter()
    urllib.request.urlopen('${url}').read()
    samples.append((time.perf_counter() - t) * 1000)
samples.sort()
[samples[len(samples) // 2], samples[int(len(samples) * 0.95)]]`

export async function run(subjects: readonly Subject[] = [workingSubject()]): Promise<BenchSection> {
  const server = http.createServer((_request, response) => response.end('hello from loopback'))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  const port = (server.address() as AddressInfo).port
  const gateway = new EgressGateway({
    resolver: tableResolver({ 'api.example.test': '127.0.0.1' }),
    allowPrivateRanges: ['127.0.0.0/8'],
    caps: { maxRequests: 1_000_000 },
  })
  const notes: string[] = []
  const measurements: Measurement[] = []
  const ratios: string[] = []
  try {
    const handle = gateway.openRun([`api.example.test:${port}`])
    const straight = `http://127.0.0.1:${port}/hello`
    const viaGateway = `http://api.example.test:${port}/hello`
    // A fresh connection per request on both sides: the gateway opens one per request (no pooled upstreams).
    const [direct, hosted] = await measureInterleaved(
      [
        { name: 'GET straight to the loopback server (Node http.get, new connection)', fn: () => get(straight) },
        {
          name: 'GET through the gateway (hostFetch: rules, resolve, address check, record)',
          fn: () => hostFetch(viaGateway, {}, { run: handle.run, secrets: [] }),
        },
      ],
      { iterations: 2000, batch: 100, warmup: 100 },
    )
    measurements.push(direct!, hosted!)
    ratios.push(`host function p50 overhead: ${(hosted!.p50Ms - direct!.p50Ms).toFixed(3)} ms (target ≤ 1 ms)`)
    handle.close()

    // Not spawnSync: the loopback server answers on this process's event loop.
    const python = await promisify(execFile)(
      'python3',
      [
        '-c',
        `${PYTHON_GETS(straight).replace(/\n\[samples.*$/, '')}\nprint(samples[len(samples) // 2], samples[int(len(samples) * 0.95)])`,
      ],
      { encoding: 'utf8', timeout: 60_000 },
    )
    const [hostP50, hostP95] = python.stdout.trim().split(/\s+/).map(Number) as [number, number]
    measurements.push({
      name: `Python urllib GET straight (host python3, ${GETS_PER_RUN} GETs)`,
      iterations: GETS_PER_RUN,
      p50Ms: hostP50,
      p95Ms: hostP95,
      meanMs: NaN,
      opsPerSec: 1000 / hostP50,
    })
    // Each build (with --against: the base and this tree) runs the same sandboxed loop, alternately, ROUNDS times;
    // a build's figure is the median of its rounds' p50s, so the machine's noise falls on both alike.
    const services = []
    for (const subject of subjects) {
      const egress = subject.load<typeof import('../src/egress')>('src/egress/index')
      services.push({
        subject,
        rounds: [] as [number, number][],
        execgate: await subject.lib.createExecgate({
          overrides: {
            execution: { enabled: ['process'] },
            readiness: { enabled: false },
            log: { level: 'silent' },
            fabric: { ledger: { enabled: false } },
            security: {
              defaultPolicy: {
                wallTimeMs: 60_000,
                cpuTimeMs: 60_000,
                memoryMb: 256,
                network: [`api.example.test:${port}`],
                allowedImports: ['urllib', 'time', 'socket'],
              },
              egress: { maxRequests: 10_000 },
            },
          },
          modules: [
            new ContainerModule(
              ({ rebindSync }) =>
                void rebindSync(subject.lib.tokens.EgressGateway).toConstantValue(
                  new egress.EgressGateway({
                    resolver: egress.tableResolver({ 'api.example.test': '127.0.0.1' }),
                    allowPrivateRanges: ['127.0.0.0/8'],
                    caps: { maxRequests: 10_000 },
                  }),
                ),
            ),
          ],
        }),
      })
    }
    try {
      for (let round = 0; round < ROUNDS; round++) {
        for (const service of round % 2 ? [...services].reverse() : services) {
          const result = await service.execgate.execute({ language: 'python', adapter: 'process', code: PYTHON_GETS(viaGateway) })
          if (result.status !== 'ok' || !Array.isArray(result.value))
            notes.push(`${service.subject.tag}: process: ${result.status} ${result.message ?? ''}`)
          else service.rounds.push(result.value as [number, number])
        }
      }
      const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN
      const figures = services.map((service) => {
        const p50Ms = median(service.rounds.map(([p50]) => p50))
        const p95Ms = median(service.rounds.map(([, p95]) => p95))
        const name = tagged(
          subjects,
          service.subject,
          `Python urllib GET in the process sandbox through the gateway (${GETS_PER_RUN} GETs × ${ROUNDS} rounds, median p50)`,
        )
        measurements.push({ name, iterations: GETS_PER_RUN * service.rounds.length, p50Ms, p95Ms, meanMs: NaN, opsPerSec: 1000 / p50Ms })
        ratios.push(`${tagged(subjects, service.subject, 'process p50 overhead')}: ${(p50Ms - hostP50).toFixed(3)} ms (target ≤ 2 ms)`)
        notes.push(`${service.subject.tag} rounds' p50s: ${service.rounds.map(([p50]) => p50.toFixed(3)).join(', ')} ms`)
        return { p50Ms }
      })
      if (figures.length === 2) ratios.push(against('process sandbox GET through the gateway', figures[1]!, figures[0]!))
    } finally {
      for (const service of services) await service.execgate.dispose()
    }
  } finally {
    await gateway.dispose()
    server.close()
  }
  return { title: 'Egress gateway: a GET through it vs straight to a loopback server', measurements, ratios, notes }
}
