import { performance } from 'node:perf_hooks'
import { parentPort, workerData } from 'node:worker_threads'
import type { QuickJSWASMModule } from 'quickjs-emscripten'
import type { OutputStream } from '../../src/core'
import { FLAG_CANCEL, type FromWorker, type RunJob, type ToWorker } from './protocol'
import { QuickJsRun } from './run'

/**
 * A QuickJS worker thread. Runs one job at a time in a fresh QuickJS runtime. It lives in a worker so that the
 * main thread can kill it when a native loop (a huge `join`, a regex) never reaches the interrupt handler.
 */

// Output is sent in batches: one message per console.log would dominate small floods.
const FLUSH_BYTES = 1024

const port = parentPort!
const flags = new Int32Array(workerData.flags as SharedArrayBuffer)
const pendingHostCalls = new Map<number, { resolve: (value: unknown) => void; reject: (error: unknown) => void }>()
let nextCallId = 0

function send(message: FromWorker): void {
  port.postMessage(message)
}

async function loadModule(): Promise<QuickJSWASMModule> {
  const { newQuickJSWASMModuleFromVariant, newVariant, RELEASE_SYNC } = await import('quickjs-emscripten')
  // QuickJS's own assertion messages would otherwise land on the host's stderr; the adapter reports the failure.
  const variant = newVariant(RELEASE_SYNC, { emscriptenModule: { printErr: () => undefined, print: () => undefined } as never })
  return newQuickJSWASMModuleFromVariant(variant)
}

async function run(job: RunJob): Promise<void> {
  const started = performance.now()
  let batch: [OutputStream, string][] = []
  let batchBytes = 0
  let written = 0
  const flush = () => {
    if (batch.length === 0) return
    send({ type: 'output', id: job.id, chunks: batch })
    batch = []
    batchBytes = 0
  }
  const names = new Set(job.hostFunctions.map((fn) => fn.name))
  const quickjsRun = (await takePreparedRun()).start(
    { memoryBytes: job.memoryBytes, stackBytes: job.stackBytes, deadline: started + job.remainingMs, timeoutMs: job.timeoutMs },
    {
      write(stream, text) {
        batch.push([stream, text])
        const size = Buffer.byteLength(text)
        batchBytes += size
        written += size
        if (batchBytes >= FLUSH_BYTES) flush()
        return written <= job.outputBytes
      },
      cancelled: () => Atomics.load(flags, FLAG_CANCEL) === 1,
      hostFunctionNames: [...names],
      callHost(name, args) {
        flush()
        const callId = ++nextCallId
        send({ type: 'hostCall', id: job.id, callId, name, args })
        return new Promise((resolve, reject) => pendingHostCalls.set(callId, { resolve, reject }))
      },
    },
  )
  let outcome
  try {
    outcome = await quickjsRun.execute(job.source)
  } finally {
    flush()
  }
  const wallMs = performance.now() - started
  // Answer first, free after: freeing a runtime costs time the caller need not wait for.
  send({ type: 'result', id: job.id, status: outcome.status, value: outcome.value, error: outcome.error, wallMs })
  if (!quickjsRun.dispose()) {
    // After OOM QuickJS may refuse to free a runtime (its allocator's assertions): the module is suspect, so the
    // next job waits for a fresh one instead of reusing it.
    modulePromise = loadModule()
    prepared = undefined
  }
  setImmediate(() => void prepareNextRun())
}

let modulePromise: Promise<QuickJSWASMModule>
let prepared: QuickJsRun | undefined

async function prepareNextRun(): Promise<void> {
  const module = await modulePromise
  prepared ??= new QuickJsRun(module)
}

async function takePreparedRun(): Promise<QuickJsRun> {
  const run = prepared ?? new QuickJsRun(await modulePromise)
  prepared = undefined
  return run
}

async function main(): Promise<void> {
  modulePromise = loadModule()
  await prepareNextRun()
  port.on('message', (message: ToWorker) => {
    if (message.type === 'hostResult') {
      const pending = pendingHostCalls.get(message.callId)
      pendingHostCalls.delete(message.callId)
      if (!pending) return
      if (message.ok) pending.resolve(message.value)
      else pending.reject(Object.assign(new Error(message.error?.message ?? 'host call failed'), { code: message.error?.code }))
      return
    }
    run(message).catch((error) => {
      // Thrown from the WebAssembly module itself, not the user's code: answer, then start from a fresh module.
      modulePromise = loadModule()
      prepared = undefined
      send({ type: 'result', id: message.id, status: 'internal_error', error: { type: 'InternalError', message: String(error?.message ?? error) }, wallMs: 0 })
    })
  })
  send({ type: 'ready' })
}

main().catch((error) => {
  // The adapter sees the worker exit and reports the module as unavailable.
  throw error
})
