import type { ExecutionRequest, ExecutionResult, RunInfo, SecurityPolicy } from '../../../src/core'
import { DEFAULT_POLICY } from '../../../src/policy'
import { captureRun } from '../../../src/fabric/ledger/run-capture'
import { parseBody } from '../../../src/fabric/ledger/chain'
import { sha256 } from '../../../src/fabric/ledger/digest'
import { EMPTY_SHA256, restoreOmitted, runEntryJson } from '../../../src/fabric/ledger/run-entry-json'
import { describeRun, type BlobWrite } from '../../../src/fabric/ledger/run-record'
import type { RunRecord } from '../../../src/fabric/ledger/types'

/**
 * A run's record text (runEntryJson) is written key by key: the JSON of objects records share (the engines, a
 * repeated code's and value's references) made once, a value the last record had not serialised again, and the empty
 * streams and lists left out, which a read puts back (`restoreOmitted`, in `parseBody`). Whatever order records come
 * in, the text read back must say exactly what `JSON.stringify(entry)` says, and the entry must be left as it was.
 */

const settings = { execgateVersion: 'test', outputThresholdBytes: 16 }
const engines = { '@pydantic/monty': '0.0.18' }
let runs = 0

function record(
  request: Partial<ExecutionRequest>,
  result: Partial<ExecutionResult>,
  info: Partial<RunInfo> = {},
  policy: SecurityPolicy | undefined = DEFAULT_POLICY,
): { entry: RunRecord; blobs: Map<string, BlobWrite> } {
  const runId = `01a21cd8-1ad0-775a-b399-${String(++runs).padStart(12, '0')}`
  const run: RunInfo = { runId, startedAt: 1_700_000_000_000 + runs, endedAt: 1_700_000_000_001 + runs, tier: 1, engines, ...info }
  const captured = captureRun(
    { status: 'ok', traceId: runId, adapter: 'monty', durationMs: 0.05, stdout: '', stderr: '', ...result } as ExecutionResult,
    { language: 'python', code: '1 + 1', ...request } as ExecutionRequest,
    policy ? { ...run, policy } : run,
  )
  const blobs = new Map<string, BlobWrite>()
  return { entry: describeRun(captured, 'acme', settings, blobs), blobs }
}

function expectSameAsStringify(entry: RunRecord): void {
  const before = JSON.stringify(entry)
  const text = runEntryJson(entry)
  expect(restoreOmitted(JSON.parse(text))).toEqual(JSON.parse(before))
  // The entry is left as it was (its shared fields are put back).
  expect(JSON.stringify(entry)).toBe(before)
}

test('the text says what JSON.stringify says, whatever records come one after another', () => {
  const strictPolicy: SecurityPolicy = { ...DEFAULT_POLICY, wallTimeMs: 1234, allowedImports: ['math'] }
  const entries = [
    record({}, { value: 2 }).entry,
    record({}, { value: 2 }).entry,
    record({ code: 'print("other")' }, { value: 'other' }).entry,
    record({}, { value: 2 }, {}, strictPolicy).entry,
    record({}, { value: 2 }, {}, undefined).entry,
    record(
      { code: 'x = read_file("in.csv")', stdin: 'typed', files: [{ path: 'in.csv', content: 'a,b\n1,2\n' }] },
      {
        status: 'error',
        value: { rows: [1, 2] },
        stdout: 'a long enough output to be stored as an artifact',
        files: [{ path: 'out.txt', content: 'written' }],
        error: { type: 'ValueError', code: 'EXECGATE_RUNTIME_ERROR', message: 'never recorded' },
        fallbackFrom: { adapter: 'monty', reason: 'unsupported' },
      } as Partial<ExecutionResult>,
      { agentType: 'analyst', lane: 'interactive', provenance: { taskId: 'task-1', attempt: 2, planId: 'p', planVersion: 1, stepId: 's' } },
    ).entry,
    record({}, {}).entry,
    record({}, { value: 2 }).entry,
    // Every number its own, so that two keys read in each other's place would show.
    record({}, { value: 2, usage: { wallMs: 1.5, cpuMs: 3, memoryBytes: 4096 } } as Partial<ExecutionResult>).entry,
  ]
  for (const entry of entries) expectSameAsStringify(entry)
  // And again in another order, so each record follows one that spliced other objects.
  for (const entry of [...entries].reverse()) expectSameAsStringify(entry)
})

test('records of a repeated code and value share their references, and name their blobs once', () => {
  const first = record({ code: 'sum([1, 2])' }, { value: 3 })
  const second = record({ code: 'sum([1, 2])' }, { value: 3 })
  expect(second.entry.code).toBe(first.entry.code)
  expect(second.entry.value).toBe(first.entry.value)
  expect(second.entry.inputs).toEqual([])
  expect([...first.blobs.values()].map((blob) => blob.mediaType).sort()).toEqual(['application/json', 'text/x-python'])
  expect(first.entry.code).toMatchObject({ path: 'code', size: Buffer.byteLength('sum([1, 2])'), mediaType: 'text/x-python' })
  expect(first.entry.value).toEqual({ sha256: expect.stringMatching(/^[0-9a-f]{64}$/), size: 1 })
})

test('the empty streams and lists are left out of the text, and a read puts them back as they were', () => {
  const trivial = record({}, { value: 2 }).entry
  const text = runEntryJson(trivial)
  const stored = JSON.parse(text) as Record<string, unknown>
  for (const key of ['inputs', 'outputs', 'stdout', 'stderr']) expect(stored).not.toHaveProperty(key)
  expect(stored).toHaveProperty('code')
  expect(stored).toHaveProperty('value')
  expect(EMPTY_SHA256).toBe(sha256(''))
  const body = parseBody({ body: `{"seq":1,"prevHash":"","recordedAt":1,"entry":${text}}` })
  expect(body.entry).toEqual(JSON.parse(JSON.stringify(trivial)))
  expect(body.entry).toMatchObject({ inputs: [], outputs: [], stdout: { sha256: EMPTY_SHA256, size: 0, stored: false } })

  // A run that has them keeps them; a record written before they were left out reads as it was.
  const busy = record({ files: [{ path: 'in.csv', content: 'a\n' }] }, {
    stdout: 'hi',
    stderr: 'a long enough error text',
    files: [{ path: 'out.txt', content: 'written' }],
  } as Partial<ExecutionResult>).entry
  expect(JSON.parse(runEntryJson(busy))).toEqual(JSON.parse(JSON.stringify(busy)))
  const older = JSON.stringify({ seq: 1, prevHash: '', recordedAt: 1, entry: trivial })
  expect(parseBody({ body: older }).entry).toEqual(JSON.parse(JSON.stringify(trivial)))
})
