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

async function run(module: QuickJSWASMModule, job: RunJob): Promise<void> {
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
  const quickjsRun = takePreparedRun(module).start(
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
  const result = { type: 'result', id: job.id, status: outcome.status, value: outcome.value, error: outcome.error, wallMs } as const
  if (outcome.status === 'ok') {
    // Answer first, free after: freeing a runtime costs time the caller need not wait for.
    send({ ...result, healthy: true })
    if (!quickjsRun.dispose()) process.exit(1) // the pool replaces a worker that exits
  } else {
    // After OOM, interrupts or stack overflows QuickJS may refuse to free the runtime: then the module is suspect
    // and the adapter must replace this worker before anyone else uses it.
    send({ ...result, healthy: quickjsRun.dispose() })
  }
  setImmediate(() => prepareNextRun(module))
}

let prepared: QuickJsRun | undefined
function prepareNextRun(module: QuickJSWASMModule): void {
  prepared ??= new QuickJsRun(module)
}
function takePreparedRun(module: QuickJSWASMModule): QuickJsRun {
  const run = prepared ?? new QuickJsRun(module)
  prepared = undefined
  return run
}

async function main(): Promise<void> {
  const module = await loadModule()
  prepareNextRun(module)
  port.on('message', (message: ToWorker) => {
    if (message.type === 'hostResult') {
      const pending = pendingHostCalls.get(message.callId)
      pendingHostCalls.delete(message.callId)
      if (!pending) return
      if (message.ok) pending.resolve(message.value)
      else pending.reject(Object.assign(new Error(message.error?.message ?? 'host call failed'), { code: message.error?.code }))
      return
    }
    run(module, message).catch((error) => {
      send({ type: 'result', id: message.id, status: 'internal_error', error: { type: 'InternalError', message: String(error?.message ?? error) }, healthy: false, wallMs: 0 })
    })
  })
  send({ type: 'ready' })
}

main().catch((error) => {
  // The adapter sees the worker exit and reports the module as unavailable.
  throw error
})
