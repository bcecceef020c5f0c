import type { CodeExecutionAdapter } from '../../src/core'
import { MontyAdapter } from '../../adapters/monty'
import { ProcessAdapter } from '../../adapters/process'
import { PyodideAdapter } from '../../adapters/pyodide'
import { contractContext } from '../contract/adapter-contract'

/**
 * A Python MemoryError is `memory_limit` on every Python adapter, however it arises: one allocation too large for
 * the limit (CPython raises MemoryError at once, with no message: pyodide's error parser read the bare
 * `MemoryError` line as type 'Error' and answered `error`), a slow climb, or the code raising it itself.
 * docker maps the runner's report with the same rule as process (adapters/docker, `MemoryError` → memory_limit).
 */
const CASES: Array<[string, string]> = [
  ['one allocation past the limit', 'cells = [0] * (10 ** 9)\nlen(cells)'],
  ['a slow climb', "keep = []\nwhile True:\n    keep.append('x' * 1_000_000)"],
  ['raised by the code, without a message', 'raise MemoryError'],
]

const ADAPTERS: Array<[string, () => CodeExecutionAdapter]> = [
  ['monty', () => new MontyAdapter()],
  ['pyodide', () => new PyodideAdapter({ poolSize: 1 })],
  ['process', () => new ProcessAdapter()],
]

describe.each(ADAPTERS)('%s: a MemoryError is memory_limit', (_name, create) => {
  const adapter = create()
  afterAll(() => adapter.dispose())

  test.each(CASES)(
    '%s',
    async (_case, code) => {
      const result = await adapter.execute({ language: 'python', code }, contractContext({ memoryMb: 64, wallTimeMs: 30_000 }))
      expect({ status: result.status, type: result.error?.type }).toEqual({ status: 'memory_limit', type: 'MemoryError' })
      expect(result.error?.message).toMatch(/memory limit reached/)
    },
    60_000,
  )
})
