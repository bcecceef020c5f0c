/**
 * Reading an interpreter's stderr for the sign that it ran out of memory: the OS sandbox (rlimits) and the container
 * (a cgroup) both refuse an allocation the same way, and both report it as `memory_limit`.
 */

/** What an out-of-memory end looks like from each interpreter once an allocation is refused (rlimit or cgroup). */
const OUT_OF_MEMORY = /heap out of memory|Allocation failed|cannot allocate|Cannot allocate memory|std::bad_alloc|MemoryError/i
/**
 * V8 can also die on a failed check inside its heap when memory runs out under it (a page it cannot re-protect
 * during a collection: `# Check failed: reservation_.SetPermissions(…)`, exit 133), with a native stack through
 * the heap's code. Only a failure inside the heap counts; any other V8 crash stays an error.
 */
const V8_HEAP_FAILURE =
  /^# ?(Check failed: .*|Fatal process out of memory.*)$[\s\S]*v8::internal::(?:Heap|BackingStore|PagedSpace|MemoryAllocator)::/m

/** The stderr line that shows the interpreter ran out of memory, or undefined when nothing does. */
export function outOfMemoryEvidence(stderr: string): string | undefined {
  const line = stderr.split('\n').find((text) => OUT_OF_MEMORY.test(text))
  if (line !== undefined) return line.trim()
  const heap = V8_HEAP_FAILURE.exec(stderr)
  return heap ? `V8 failed inside its heap: ${heap[1]!.trim()}` : undefined
}
