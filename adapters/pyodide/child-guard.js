'use strict'
/**
 * What keeps one run of a warm pyodide process from reaching the next (docs/adapters/pyodide.md#isolation-between-runs).
 *
 * A run either stays inside WebAssembly, or the process is replaced after it:
 * - Inside WebAssembly, everything the run can change is the interpreter's linear memory: modules, functions and their
 *   code, import hooks, the random generator, caches, the allocator, even bytes written through ctypes. That memory is
 *   put back after each run, byte for byte, to what it was when the process became ready (`memorySnapshot`).
 * - Everything else lives in this process's JavaScript: pyodide's bridge (`import js`, `run_js`, proxies), timers, the
 *   in-memory filesystem, dynamically loaded libraries. Memory cannot put those back, so any way out of WebAssembly
 *   that could change them marks the run (`watchImports`), and a marked run's process serves no one after it.
 *
 * The mark is deny-by-default: WebAssembly reaches JavaScript only through its imports, and each import is either
 * on the short list below (read-only file access, clocks, randomness, the conversions of a run's own arguments and
 * answer, the interpreter's call trampoline) or marks the run when called during it. Plain JavaScript, loaded by
 * child.js before pyodide, so the built-ins it keeps are the ones from before any code ran.
 */

/** Imports a run may call without marking itself: none can change state outside linear memory that outlives the run. */
const HARMLESS = new Set([
  // Reads and metadata of the in-memory filesystem (an open for writing is checked separately, below).
  'fd_read',
  'fd_pread',
  'fd_seek',
  'fd_tell',
  'fd_close',
  'fd_fdstat_get',
  'fd_sync',
  'fd_write', // only streams open before the run can be written: stdout, stderr, the host channel
  '__syscall_getcwd',
  '__syscall_stat64',
  '__syscall_lstat64',
  '__syscall_fstat64',
  '__syscall_newfstatat',
  '__syscall_getdents64',
  '__syscall_readlinkat',
  '__syscall_faccessat',
  '__syscall_poll',
  '__syscall_statfs64',
  '__syscall_fstatfs64',
  '__syscall_fadvise64',
  // Clocks, time zones, randomness, the environment (a copy in linear memory), the heap's size.
  'clock_time_get',
  'clock_res_get',
  'random_get',
  'environ_get',
  'environ_sizes_get',
  'emscripten_get_now',
  'emscripten_date_now',
  '_emscripten_get_now_is_monotonic',
  'emscripten_get_now_res',
  '_tzset_js',
  '_localtime_js',
  '_gmtime_js',
  '_mktime_js',
  '_timegm_js',
  'emscripten_get_heap_max',
  // Growth is allowed; a process whose memory grew is replaced after the run (`memorySnapshot`).
  'emscripten_resize_heap',
  // Ends the process: nothing to carry over.
  'proc_exit',
  '_abort_js',
  'abort',
  // The interpreter calls C functions through this trampoline (a WebAssembly function table lookup).
  '_PyEM_TrampolineCall_JS',
  'can_run_sync_js',
  '_emscripten_throw_longjmp',
  'emscripten_stack_get_current',
  // The conversions of the run's own arguments (strings, numbers, booleans) and of its answer (a string).
  'JsvArray_Get',
  'js2python_js',
  '_python2js_ascii',
  '_python2js_ucs1',
  '_python2js_ucs2',
  '_python2js_ucs4',
  'JsvError_Check',
  'JsvNoValue_Check',
  'JsvNum_fromInt',
  'JsvNum_fromDouble',
  'JsvUTF8ToString',
])

/**
 * Imports whose effect depends on a request code: the codes that only read pass, any other marks the run. fcntl's
 * F_SETFL ORs any flags into the stream (O_RDWR included: a file opened to read becomes writable) and F_DUPFD makes a
 * stream; ioctl's setters change a terminal's state in JavaScript.
 */
const READ_ONLY_REQUESTS = new Map([
  ['__syscall_fcntl64', new Set([1, 2, 3, 12, 13, 14])], // F_GETFD, F_SETFD (close-on-exec, a no-op here), F_GETFL, locks
  ['__syscall_ioctl', new Set([0x5401, 0x5413, 0x540f])], // TCGETS, TIOCGWINSZ, TIOCGPGRP
])

// musl's open flags: any of these asks to change a file (or make one).
const O_WRITE = 1 | 2 // O_WRONLY, O_RDWR
const O_CHANGE = 0o100 | 0o1000 | 0o2000 | 0o20000000 // O_CREAT, O_TRUNC, O_APPEND, O_TMPFILE's bit

/**
 * Wraps the imports of the next WebAssembly module instantiated (pyodide's), so that any import outside HARMLESS marks
 * the run in progress. Returns the watch: `begin()` before a run, `end()` after it, `touched` between.
 */
function watchImports() {
  const watch = { watching: false, touched: false, first: undefined }
  const mark = (name) => {
    if (!watch.watching || watch.touched) return
    watch.touched = true
    watch.first = name
  }
  const wrapped = new Map()
  const wrap = (name, fn) => {
    if (wrapped.has(fn)) return wrapped.get(fn)
    let guard
    if (name === '__syscall_openat') {
      guard = function (dirfd, pathPtr, flags, varargs) {
        if (watch.watching && ((flags & O_WRITE) !== 0 || (flags & O_CHANGE) !== 0)) mark(name)
        return fn.call(this, dirfd, pathPtr, flags, varargs)
      }
    } else if (READ_ONLY_REQUESTS.has(name)) {
      const reads = READ_ONLY_REQUESTS.get(name)
      guard = function (fd, request, ...rest) {
        if (watch.watching && !reads.has(request)) mark(name)
        return fn.call(this, fd, request, ...rest)
      }
    } else if (HARMLESS.has(name) || name.startsWith('invoke_')) {
      // invoke_*: setjmp/longjmp and C++ exceptions, a call into the function table through JavaScript's try.
      guard = fn
    } else {
      guard = function (...args) {
        if (watch.watching) mark(name)
        return fn.apply(this, args)
      }
    }
    // Emscripten reads a library function's signature from it when it puts the function in a table.
    if (guard !== fn && fn.sig !== undefined) guard.sig = fn.sig
    wrapped.set(fn, guard)
    return guard
  }
  // Every module's imports, pyodide's and any library it links in later, through a view that hands WebAssembly the
  // guarded function (a library's import table is itself a Proxy that resolves names on demand).
  const guarded = (imports) => {
    if (!imports || typeof imports !== 'object') return imports
    const view = {}
    for (const namespace of Object.keys(imports)) {
      const table = imports[namespace]
      view[namespace] =
        table && typeof table === 'object'
          ? new Proxy(table, {
              get(target, key, receiver) {
                const value = Reflect.get(target, key, receiver)
                return typeof value === 'function' && typeof key === 'string' ? wrap(key, value) : value
              },
            })
          : table
    }
    return view
  }
  const instantiate = WebAssembly.instantiate
  WebAssembly.instantiate = function (source, imports, ...rest) {
    return instantiate.call(this, source, guarded(imports), ...rest)
  }
  WebAssembly.Instance = new Proxy(WebAssembly.Instance, {
    construct(Target, [module, imports], newTarget) {
      return Reflect.construct(Target, [module, guarded(imports)], newTarget)
    },
  })
  watch.begin = () => {
    watch.touched = false
    watch.first = undefined
    watch.watching = true
  }
  watch.end = () => {
    watch.watching = false
    return watch.touched
  }
  return watch
}

const BLOCK = 64 * 1024
/** Runs between two comparisons of the whole memory while the kernel reports the writes: a check on the kernel. */
const AUDIT_EVERY = 256

/**
 * The kernel's account of the pages a run wrote (write-watch.c), loaded before any run, or the reason it is not used.
 * Loading it needs Node's --allow-addons, which the pool passes only with the file's path; once it is loaded, no
 * other addon can be: `process.dlopen`, which every way of loading one ends in, refuses for the process's life.
 */
function loadWriteWatch(file) {
  let loaded
  try {
    if (!file) return { why: 'it is not built for this platform' }
    loaded = { writeWatch: require(file) }
  } catch (error) {
    loaded = { why: `it did not load (${error && error.message})` }
  }
  Object.defineProperty(process, 'dlopen', {
    value() {
      throw new Error('native addons are not available in the sandbox')
    },
    writable: false,
    configurable: false,
  })
  return loaded
}

/** Puts back each 64 KiB block that differs from the copy; answers how many did. */
function compareAndCopyBack(live, saved) {
  let changed = 0
  for (let offset = 0; offset < live.length; offset += BLOCK) {
    const end = offset + BLOCK
    if (live.compare(saved, offset, end, offset, end) !== 0) {
      saved.copy(live, offset, offset, end)
      changed++
    }
  }
  return changed
}

/**
 * The interpreter's linear memory as it is now, and `restore()`, which puts it back. With the kernel's write reports
 * (`loaded.writeWatch`) it copies back the 4 KiB pages written (~0.2 ms for a trivial run); without, it compares the
 * whole memory in 64 KiB blocks and copies back those that differ (~3 ms for ~30 MB). The reports are proved once
 * here before they are trusted, and every AUDIT_EVERY runs the whole memory is compared as well: a difference the
 * reports missed replaces the process. `restore()` answers false when the process must be replaced instead: the
 * memory grew (the grown part would keep the run's bytes), the kernel could not report, or the audit found a miss.
 */
function memorySnapshot(memory, loaded = {}) {
  const length = memory.buffer.byteLength
  const saved = Buffer.from(new Uint8Array(memory.buffer))
  const writeWatch = loaded.writeWatch
  let why = loaded.why
  if (writeWatch) {
    try {
      writeWatch.watch(memory.buffer, saved)
      const bytes = new Uint8Array(memory.buffer)
      bytes[length - 1] ^= 0xff
      const proved = writeWatch.restore() === 1 && bytes[length - 1] === saved[length - 1] && writeWatch.restore() === 0
      if (!proved) why = 'its self-test failed'
    } catch (error) {
      why = `the kernel refused (${error && error.message})`
    }
    // A failed proof may have left its changed byte: the first run must find the memory as saved.
    if (why) new Uint8Array(memory.buffer)[length - 1] = saved[length - 1]
  }
  const mode = writeWatch && !why ? 'write-watch' : 'compare'
  let runs = 0
  return {
    mode,
    why,
    restore() {
      const buffer = memory.buffer
      if (buffer.byteLength !== length) return false
      const live = Buffer.from(buffer, 0, length)
      if (mode === 'compare') {
        compareAndCopyBack(live, saved)
        return true
      }
      if (writeWatch.restore(true) < 0) return false
      return ++runs % AUDIT_EVERY !== 0 || compareAndCopyBack(live, saved) === 0
    },
  }
}

module.exports = { watchImports, loadWriteWatch, memorySnapshot }
