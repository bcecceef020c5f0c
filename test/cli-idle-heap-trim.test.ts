import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)
const BUILT = path.join(__dirname, '..', 'dist', 'src', 'cli', 'idle-heap-trim.js')

// A load that leaves its heap behind: a large structure built in bursts (so it is promoted to the old generation),
// then dropped. Then the process either idles or keeps its event loop busy, with or without the trim, and prints
// what happened as JSON.
const SCRIPT = `
const v8 = require('node:v8')
const vm = require('node:vm')
const [mode, activity] = process.argv.slice(1)
const committed = () => v8.getHeapStatistics().total_heap_size
const trims = []
if (mode === 'trim')
  require(${JSON.stringify(BUILT)}).trimHeapWhenIdle({
    checkMs: 100,
    growthBytes: 8 * 1024 * 1024,
    onTrim: (before, after) => trims.push({ before, after }),
  })
const gcLeftExposed = vm.runInNewContext('typeof gc') !== 'undefined'
;(async () => {
  let kept = []
  for (let round = 0; round < 40; round++) {
    for (let i = 0; i < 5000; i++) kept.push({ round, i, text: 'item ' + round + ' ' + i, list: [round, i] })
    await new Promise((resolve) => setImmediate(resolve))
  }
  const loaded = committed()
  kept = undefined
  const until = Date.now() + 1500
  if (activity === 'busy') {
    // Busy about 60% of every 10 ms: a server under load, not an idle one.
    while (Date.now() < until) {
      const spin = Date.now() + 6
      while (Date.now() < spin);
      await new Promise((resolve) => setTimeout(resolve, 4))
    }
  } else await new Promise((resolve) => setTimeout(resolve, until - Date.now()))
  process.stdout.write(JSON.stringify({ loaded, after: committed(), trims, gcLeftExposed }))
})()
`

interface Outcome {
  loaded: number
  after: number
  trims: { before: number; after: number }[]
  gcLeftExposed: boolean
}

async function outcome(mode: 'trim', activity: 'idle' | 'busy'): Promise<Outcome> {
  const { stdout } = await run(process.execPath, ['-e', SCRIPT, mode, activity], { timeout: 60_000 })
  return JSON.parse(stdout) as Outcome
}

const MiB = 1024 * 1024

// issue 29: `execgate serve` stayed +57 to +78 MB above its pre-load RSS 10 s after the load; V8's own memory reducer
// starts 8 s after the load's last full collection at the earliest. The server now collects once it is idle.
describe('trimHeapWhenIdle', () => {
  test('an idle process gives back the heap a dropped load left, once', async () => {
    const trimmed = await outcome('trim', 'idle')
    expect(trimmed.trims).toHaveLength(1)
    expect(trimmed.trims[0]!.before - trimmed.trims[0]!.after).toBeGreaterThan(8 * MiB)
    expect(trimmed.loaded - trimmed.after).toBeGreaterThan(8 * MiB)
    // `gc` was taken for the trim only: a context made afterwards does not get it.
    expect(trimmed.gcLeftExposed).toBe(false)
  }, 120_000)

  test('a busy event loop is not trimmed', async () => {
    const busy = await outcome('trim', 'busy')
    expect(busy.trims).toEqual([])
  }, 120_000)
})
