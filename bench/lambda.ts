import { LambdaAdapter } from '../adapters/lambda'
import { ServerlessOffline } from '../deploy/lambda/offline'
import { createExecgate } from '../src'
import { measureInterleaved, type BenchSection } from './harness'

/**
 * Invoke overhead over the local emulator: the same trivial JavaScript through execgate → lambda adapter →
 * serverless-offline → the shipped handler, against execgate running it locally on quickjs.
 */
export async function run(): Promise<BenchSection> {
  process.env.AWS_ACCESS_KEY_ID ??= 'AKIDEXECGATEBENCH'
  process.env.AWS_SECRET_ACCESS_KEY ??= 'execgate-bench'
  const offline = new ServerlessOffline(30)
  const endpoint = await offline.start()
  const remote = await createExecgate({
    overrides: {
      execution: { enabled: ['lambda'], adapter: 'lambda' },
      adapters: { lambda: { endpoint } },
      readiness: { enabled: false },
      log: { level: 'silent' },
    },
  })
  const local = await createExecgate({
    overrides: { execution: { enabled: ['quickjs'], adapter: 'quickjs' }, readiness: { enabled: false }, log: { level: 'silent' } },
  })
  try {
    const check = await new LambdaAdapter({ endpoint }).checkAvailability()
    if (check.status !== 'available') throw new Error(`the emulated function is ${check.status}: ${check.reason}`)
    const request = { language: 'javascript' as const, code: '6 * 7' }
    const [viaLambda, direct] = await measureInterleaved(
      [
        {
          name: 'execgate → lambda adapter → serverless-offline → handler (quickjs): 6 * 7',
          fn: async () => {
            const r = await remote.execute(request)
            if (r.status !== 'ok') throw new Error(`${r.status}: ${r.message}`)
          },
        },
        { name: 'execgate → quickjs, in this process: 6 * 7', fn: () => local.execute(request) },
      ],
      { iterations: 300, batch: 30, warmup: 10 },
    )
    return {
      title: 'lambda adapter: invoke overhead over the local emulator',
      measurements: [viaLambda, direct],
      ratios: [
        `median invoke overhead = ${(viaLambda.p50Ms - direct.p50Ms).toFixed(2)} ms (SDK signing, ` +
          `HTTP to serverless-offline, its handler dispatch)`,
      ],
    }
  } finally {
    await Promise.allSettled([remote.dispose(), local.dispose()])
    await offline.stop()
  }
}
