'use strict'
// Runs 1,000 trivial executions on the compiled pyodide adapter in a fresh Node process and prints the host's RSS
// after warm-up and after the runs (a separate process, so Jest's own memory does not blur the figure).
const { PyodideAdapter } = require(process.argv[2])
const policy = {
  wallTimeMs: 10000,
  cpuTimeMs: 10000,
  memoryMb: 128,
  outputBytes: 65536,
  network: 'none',
  filesystem: 'none',
  allowedImports: [],
  hostCalls: { maxCount: 0, maxTotalMs: 0 },
  maxProcesses: 1,
  required: [],
}
const context = () => ({ traceId: 'rss', policy, signal: new AbortController().signal, deadline: performance.now() + 10000 })
;(async () => {
  const adapter = new PyodideAdapter({ poolSize: 2 })
  await adapter.warm()
  let failures = 0
  for (let i = 0; i < 50; i++) await adapter.execute({ language: 'python', code: `sum(range(${i}))` }, context())
  global.gc?.()
  const before = process.memoryUsage().rss
  for (let i = 0; i < 1000; i++) {
    const result = await adapter.execute({ language: 'python', code: `print(${i})\nsum(range(${i}))` }, context())
    if (result.status !== 'ok') failures++
  }
  global.gc?.()
  const after = process.memoryUsage().rss
  await adapter.dispose()
  process.stdout.write(JSON.stringify({ before, after, failures }))
})()
