import { performance } from 'node:perf_hooks'
import { parentPort, workerData } from 'node:worker_threads'
import type { QuickJSWASMModule } from 'quickjs-emscripten'
import { WorkerJobChannel, cancelRequested, settleHostCall } from '../../src/runtime'
import type { RunJob, ToWorker } from './protocol'
import { QuickJsRun } from './run'
import { memoryLayout, type LinearMemory, type PristineOptions } from './snapshot'

/**
 * A QuickJS worker thread. Runs one job at a time in a fresh QuickJS runtime. It lives in a worker so that the
 * main thread can kill it when a native loop (a huge `join`, a regex) never reaches the interrupt handler.
 */

const port = parentPort!
const flags = new Int32Array(workerData.flags as SharedArrayBuffer)
const pendingHostCalls = new Map<number, { resolve: (value: unknown) => void; reject: (error: unknown) => void }>()

const WASM_PAGE_BYTES = 64 * 1024
/** emscripten's INITIAL_MEMORY for this build (16 MiB). */
const INITIAL_PAGES = 256
/** The ceiling the current module was loaded with; a job naming another reloads (config is fixed, so at most once). */
let linearMemoryMaxBytes = 256 * 1024 * 1024
const WasmMemory = (
  globalThis as unknown as { WebAssembly: { Memory: new (descriptor: { initial: number; maximum: number }) => LinearMemory } }
).WebAssembly.Memory
/** Within this of its ceiling, the linear memory counts as exhausted (a failed growth asks for at least a page). */
const EXHAUSTED_MARGIN_BYTES = 4 * 1024 * 1024

/** The current module's WebAssembly memory, handed to emscripten so that its maximum is ours. */
let memory: LinearMemory

/** A loaded module, and how runs get a fresh runtime in it: a copy of a prepared one when its layout allows. */
interface Loaded {
  module: QuickJSWASMModule
  pristine: PristineOptions | undefined
}

async function loadModule(): Promise<Loaded> {
  const { newQuickJSWASMModuleFromVariant, newVariant, RELEASE_SYNC } = await import('quickjs-emscripten')
  // The build grows its memory up to 2 GiB; QuickJS's malloc limit misses some allocation patterns (a filled
  // `new Array(1e6)` in a loop grew to 2 GB under a 64 MiB limit), so the memory itself gets the ceiling.
  memory = new WasmMemory({ initial: INITIAL_PAGES, maximum: Math.max(INITIAL_PAGES, Math.ceil(linearMemoryMaxBytes / WASM_PAGE_BYTES)) })
  // QuickJS's own assertion messages would otherwise land on the host's stderr; the adapter reports the failure.
  const variant = newVariant(RELEASE_SYNC, {
    emscriptenModule: { printErr: () => undefined, print: () => undefined, wasmMemory: memory } as never,
  })
  const module = await newQuickJSWASMModuleFromVariant(variant)
  const layout = memoryLayout(module, memory)
  return { module, pristine: layout && { memory, layout } }
}

/** Drops the module (and the memory it grew): the next run waits for a fresh one. */
function replaceModule(): void {
  modulePromise = loadModule()
  prepared = undefined
}

/** Time a session's state may take to serialise after the run (a hostile getter cannot hold the worker). */
const SESSION_CAPTURE_MS = 200

let modulePromise: Promise<Loaded>
let prepared: QuickJsRun | undefined

function newRun({ module, pristine }: Loaded): QuickJsRun {
  return new QuickJsRun(module, pristine)
}

async function prepareNextRun(): Promise<void> {
  const loaded = await modulePromise
  prepared ??= newRun(loaded)
}

/** The run prepared while idle; one made now when there is none (the first job, or after a module replacement). */
function takePreparedRun(): QuickJsRun | Promise<QuickJsRun> {
  const run = prepared
  prepared = undefined
  // No await when it is ready: the job starts in the turn its message arrived in.
  return run ?? modulePromise.then(newRun)
}

async function run(job: RunJob): Promise<void> {
  const started = performance.now()
  if (job.linearMemoryMaxBytes !== linearMemoryMaxBytes) {
    linearMemoryMaxBytes = job.linearMemoryMaxBytes
    replaceModule()
  }
  const channel = new WorkerJobChannel(port, job.id, job.outputBytes, pendingHostCalls)
  const ready = takePreparedRun()
  const quickjsRun = (ready instanceof QuickJsRun ? ready : await ready).start(
    {
      memoryBytes: job.memoryBytes,
      stackBytes: job.stackBytes,
      deadline: started + job.remainingMs,
      timeoutMs: job.timeoutMs,
      outputBytes: job.outputBytes,
      outputs: { maxOutputs: job.maxOutputs, outputsBytes: job.outputsBytes, tableBytes: job.outputBytes },
    },
    {
      write: (stream, text, omitted) => channel.write(stream, text, omitted),
      cancelled: () => cancelRequested(flags),
      hostFunctionNames: job.hostFunctions,
      callHost: (name, args) => channel.callHost(name, args),
      memoryExhausted: () => memory.buffer.byteLength + EXHAUSTED_MARGIN_BYTES >= linearMemoryMaxBytes,
      display: (item) => channel.display(item),
    },
  )
  if (job.session) quickjsRun.restore(job.session.restore)
  const outcome = await quickjsRun.execute(job.source)
  const session = job.session && outcome.status === 'ok' ? quickjsRun.capture(job.session.capture, SESSION_CAPTURE_MS) : undefined
  // WebAssembly memory never shrinks, and a dropped module's memory was not collected in practice (two workers held
  // 1 GB after four memory bombs): a worker that grew past its bound asks the pool to replace it.
  const retire = memory.buffer.byteLength > job.recycleAboveBytes
  // Answer first, free after: freeing a runtime costs time the caller need not wait for.
  // Not spreads of optional parts: on Node 20 each costs ~0.5 µs (see resultFromJob); absent fields stay undefined.
  channel.finish({
    status: outcome.status,
    value: outcome.value,
    error: outcome.error,
    hostCalls: channel.hostCalls,
    outputsOmitted: quickjsRun.outputsOmitted || undefined,
    session,
    retire: retire || undefined,
  })
  if (retire) return
  if (quickjsRun.reusable) {
    // Its memory put back to the prepared copy: the next run's runtime, fresh, in ~10 µs instead of a free and a build.
    if (quickjsRun.reset()) prepared = quickjsRun
    else replaceModule()
    return
  }
  if (!quickjsRun.dispose()) {
    // After OOM QuickJS may refuse to free a runtime (its allocator's assertions): the module is suspect, so the
    // next job waits for a fresh one instead of reusing it.
    replaceModule()
  }
  // At once, not in setImmediate: a job message already queued was handled before the immediate, so the next run
  // built its context on the request's path (15% of back-to-back runs under load, counted; none this way).
  void prepareNextRun()
}

async function main(): Promise<void> {
  modulePromise = loadModule()
  await prepareNextRun()
  port.on('message', (message: ToWorker) => {
    if (message.type === 'hostResult') return settleHostCall(pendingHostCalls, message)
    run(message).catch((error) => {
      // Thrown from the WebAssembly module itself, not the user's code: answer, then start from a fresh module.
      replaceModule()
      port.postMessage({
        type: 'result',
        id: message.id,
        status: 'internal_error',
        error: { type: 'InternalError', message: String(error?.message ?? error) },
      })
    })
  })
  port.postMessage({ type: 'ready' })
}

void main()
