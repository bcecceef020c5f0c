import { outOfMemoryEvidence } from '../../adapters/shared/out-of-memory'

// Interpreter ends captured from real runs (docker, 64 MiB) and how each is read; process and docker share this.
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
 8: 0x7f92b89d4d5b v8::internal::Heap::AllocateExternalBackingStore(std::function<void* (unsigned long)> const&, unsigned long) [/lib/x86_64-linux-gnu/libnode.so.108]
`

test('the line that shows memory ran out is named: V8, Python and the C library alike', () => {
  expect(
    outOfMemoryEvidence(
      '<--- Last few GCs --->\nFATAL ERROR: Committing semi space failed. Allocation failed - JavaScript heap out of memory\n 1: 0x7f 13: 0x7f',
    ),
  ).toBe('FATAL ERROR: Committing semi space failed. Allocation failed - JavaScript heap out of memory')
  expect(outOfMemoryEvidence('Traceback (most recent call last):\n  File "<code>", line 3, in <module>\nMemoryError\n')).toBe('MemoryError')
  expect(outOfMemoryEvidence('bash: xmalloc: cannot allocate 1073741824 bytes')).toBe('bash: xmalloc: cannot allocate 1073741824 bytes')
})

test("V8's failed check inside its heap under memory pressure is memory; any other V8 crash or error is not", () => {
  expect(outOfMemoryEvidence(V8_HEAP_CHECK)).toBe(
    'V8 failed inside its heap: Check failed: reservation_.SetPermissions( unprotect_start, unprotect_size, MemoryChunk::GetCodeModificationPermission()).',
  )
  const elsewhere = V8_HEAP_CHECK.replace(/v8::internal::(PagedSpace|Heap)::\w+/g, 'v8::internal::Parser::ParseProgram')
  expect(outOfMemoryEvidence(elsewhere)).toBeUndefined()
  expect(outOfMemoryEvidence('Error: boom\n    at <code>:1:7')).toBeUndefined()
})
