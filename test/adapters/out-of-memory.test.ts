import { outOfMemoryEvidence } from '../../adapters/shared/out-of-memory'
import { classifyExit } from '../../adapters/process/classify'
import type { SpawnedRun } from '../../adapters/process/spawn-sandbox'
import { DEFAULT_POLICY } from '../../src/policy'

// Interpreter ends captured from real runs (docker, 64 MiB) and how each is read; process and docker share this.
// A trailing backslash continues a captured line (the template literal drops it and the line break).
const V8_HEAP_CHECK = `
#
# Fatal error in , line 0
# Check failed: reservation_.SetPermissions( unprotect_start, unprotect_size, MemoryChunk::GetCodeModificationPermission()).
#
#FailureMessage Object: 0x7ffd0da0b8d0
 1: 0x7f92b8462a85  [/lib/x86_64-linux-gnu/libnode.so.108]
 2: 0x7f92b91118e8 V8_Fatal(char const*, ...) [/lib/x86_64-linux-gnu/libnode.so.108]
 4: 0x7f92b8a400a0 v8::internal::PagedSpace::SetCodeModificationPermissions() [/lib/x86_64-linux-gnu/libnode.so.108]
 5: 0x7f92b89d0a36 v8::internal::Heap::MarkCompact() [/lib/x86_64-linux-gnu/libnode.so.108]
 8: 0x7f92b89d4d5b v8::internal::Heap::AllocateExternalBackingStore(std::function<void* (unsigned long)> const&, unsigned long) \
[/lib/x86_64-linux-gnu/libnode.so.108]
`

test('the line that shows memory ran out is named: V8, Python and the C library alike', () => {
  expect(
    outOfMemoryEvidence(
      '<--- Last few GCs --->\nFATAL ERROR: Committing semi space failed. Allocation failed - ' +
        'JavaScript heap out of memory\n 1: 0x7f 13: 0x7f',
    ),
  ).toBe('FATAL ERROR: Committing semi space failed. Allocation failed - JavaScript heap out of memory')
  expect(outOfMemoryEvidence('Traceback (most recent call last):\n  File "<code>", line 3, in <module>\nMemoryError\n')).toBe('MemoryError')
  expect(outOfMemoryEvidence('bash: xmalloc: cannot allocate 1073741824 bytes')).toBe('bash: xmalloc: cannot allocate 1073741824 bytes')
})

test("V8's failed check inside its heap under memory pressure is memory; any other V8 crash or error is not", () => {
  expect(outOfMemoryEvidence(V8_HEAP_CHECK)).toBe(
    'V8 failed inside its heap: Check failed: reservation_.SetPermissions( unprotect_start, ' +
      'unprotect_size, MemoryChunk::GetCodeModificationPermission()).',
  )
  const elsewhere = V8_HEAP_CHECK.replace(/v8::internal::(PagedSpace|Heap)::\w+/g, 'v8::internal::Parser::ParseProgram')
  expect(outOfMemoryEvidence(elsewhere)).toBeUndefined()
  expect(outOfMemoryEvidence('Error: boom\n    at <code>:1:7')).toBeUndefined()
})

describe('process: a run stopped at its deadline', () => {
  const stopped = (): SpawnedRun => ({
    stoppedFor: 'timeout',
    exitCode: null,
    signal: 'SIGKILL',
    report: '',
    archiveCut: false,
    wallMs: 1001,
  })
  const policy = { ...DEFAULT_POLICY, wallTimeMs: 1000, memoryMb: 64 }

  // Whole-suite run 1 this session: bash-string-doubling on process, at load ~20, printed this and was killed at 1,000 ms
  // (1,122 ms in all) while bash was exiting of it: answered timeout, though the memory limit had broken first.
  test('is memory_limit when its last words are a refused allocation (bash exits of xrealloc)', () => {
    expect(classifyExit(stopped(), policy, '/run/execgate/code: xrealloc: cannot allocate 33554560 bytes\n')).toEqual({
      status: 'memory_limit',
      error: {
        type: 'MemoryError',
        message: 'memory limit reached (64 MiB): /run/execgate/code: xrealloc: cannot allocate 33554560 bytes',
      },
    })
  })

  test('is a timeout when the code caught the error and ran on, or said nothing of memory', () => {
    expect(classifyExit(stopped(), policy, 'MemoryError\nstill going\n').status).toBe('timeout')
    expect(classifyExit(stopped(), policy, '').status).toBe('timeout')
    expect(classifyExit({ ...stopped(), stoppedFor: 'cancelled' }, policy, 'MemoryError\n').status).toBe('cancelled')
  })
})
