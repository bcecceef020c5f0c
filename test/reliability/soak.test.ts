import { spawnSync } from 'node:child_process'
import path from 'node:path'

const ROOT = path.resolve(__dirname, '..', '..')

// issue 15: a short run of `npm run soak` (bench/soak.ts, built by `npm test`). The hard invariants hold as in the
// 30-minute target: no request fails (connection errors or 5xx) and no process outlives the server. The memory
// bounds are looser than the (peak 768 MB, growth 50 MB; a 3-minute run now peaks at 371-474 MB and ends
// within a few MB of its floor) so a busy CI machine does not fail them, yet they catch a return of what was fixed:
// quickjs's unbounded WebAssembly memory (4.1 GB peaks), monty's native heap in the server (+250 MB for good), a
// huge print copied whole into the host (+865 MB).
describe('soak: mixed and hostile traffic through execgate serve', () => {
  test('a one-minute soak: 0 failed requests, 0 leftover processes, server RSS bounded', () => {
    const run = spawnSync(
      process.execPath,
      [path.join(ROOT, 'dist', 'bench', 'soak.js'), '--minutes', '1', '--max-peak-mb', '1200', '--max-growth-mb', '250'],
      {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 170_000,
      },
    )
    const output = `${run.stdout}\n${run.stderr}`
    expect(output).toMatch(/errors \(connection or 5xx\): 0; leftover processes: 0/)
    expect({ status: run.status, verdict: output.match(/VERDICT: .*/)?.[0] }).toEqual({
      status: 0,
      verdict: expect.stringMatching(/^VERDICT: PASS/),
    })
  }, 180_000)
})
