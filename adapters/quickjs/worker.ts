import { performance } from 'node:perf_hooks'
import { parentPort, workerData } from 'node:worker_threads'
import type { QuickJSWASMModule } from 'quickjs-emscripten'
import { WorkerJobChannel, cancelRequested, settleHostCall } from '../../src/core'
import type { RunJob, ToWorker } from './protocol'
import { QuickJsRun } from './run'

/**
 * A QuickJS worker thread. Runs one job at a time in a fresh QuickJS runtime. It lives in a worker so that the
 * main thread can kill it when a native loop (a huge `join`, a regex) never reaches the interrupt handler.
 */

const port = parentPort!
const flags = new Int32Array(workerData.flags as SharedArrayBuffer)
const pendingHostCalls = new Map<number, { resolve: (value: unknown) => void; reject: (error: unknown) => void }>()

async function loadModule(): Promise<QuickJSWASMModule> {
  const { newQuickJSWASMModuleFromVariant, newVariant, RELEASE_SYNC } = await import('quickjs-emscripten')
  // QuickJS's own assertion messages would otherwise land on the host's stderr; the adapter reports the failure.
  const variant = newVariant(RELEASE_SYNC, { emscriptenModule: { printErr: () => undefined, print: () => undefined } as never })
  return newQuickJSWASMModuleFromVariant(variant)
}

/** Time a session's state may take to serialise after the run (a hostile getter cannot hold the worker). */
const SESSION_CAPTURE_MS = 200

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

async function run(job: RunJob): Promise<void> {
  const started = performance.now()
  const channel = new WorkerJobChannel(port, job.id, job.outputBytes, pendingHostCalls)
  const quickjsRun = (await takePreparedRun()).start(
    { memoryBytes: job.memoryBytes, stackBytes: job.stackBytes, deadline: started + job.remainingMs, timeoutMs: job.timeoutMs },
    {
      write: (stream, text) => channel.write(stream, text),
      cancelled: () => cancelRequested(flags),
      hostFunctionNames: job.hostFunctions,
      callHost: (name, args) => channel.callHost(name, args),
    },
  )
  if (job.session) quickjsRun.restore(job.session.restore)
  const outcome = await quickjsRun.execute(job.source)
  const session = job.session && outcome.status === 'ok' ? quickjsRun.capture(job.session.capture, SESSION_CAPTURE_MS) : undefined
  // Answer first, free after: freeing a runtime costs time the caller need not wait for.
  channel.finish({ status: outcome.status, value: outcome.value, error: outcome.error, hostCalls: channel.hostCalls, session })
  if (!quickjsRun.dispose()) {
    // After OOM QuickJS may refuse to free a runtime (its allocator's assertions): the module is suspect, so the
    // next job waits for a fresh one instead of reusing it.
    modulePromise = loadModule()
    prepared = undefined
  }
  setImmediate(() => void prepareNextRun())
}

async function main(): Promise<void> {
  modulePromise = loadModule()
  await prepareNextRun()
  port.on('message', (message: ToWorker) => {
    if (message.type === 'hostResult') return settleHostCall(pendingHostCalls, message)
    run(message).catch((error) => {
      // Thrown from the WebAssembly module itself, not the user's code: answer, then start from a fresh module.
      modulePromise = loadModule()
      prepared = undefined
      port.postMessage({ type: 'result', id: message.id, status: 'internal_error', error: { type: 'InternalError', message: String(error?.message ?? error) } })
    })
  })
  port.postMessage({ type: 'ready' })
}

void main()
