import { parentPort, workerData } from 'node:worker_threads'
import { isFatalHostError, pythonExceptionFor, describeError } from '../../src/core'
import { WorkerJobChannel, cancelRequested, settleHostCall } from '../../src/runtime'
import { MontyDisplay } from './display'
import { mapMontyError } from './map-error'
import type { MontyJob, MontyParseJob, ToWorker } from './protocol'
import { toJsonValue } from './to-json'

/**
 * A monty worker: a child process (the adapter's pool), or a thread. monty runs synchronously; in a worker, a long
 * run never holds the host's event loop, and the adapter can kill a run that must stop (a cancellation, a process
 * past its memory bound) without waiting for monty's own limits. In a process, what monty's Rust allocator keeps
 * leaves with the process, never with the host.
 */

type MontyModule = typeof import('@pydantic/monty')

interface Port {
  postMessage(message: unknown): void
  on(event: 'message', listener: (message: ToWorker) => void): unknown
}
const port: Port = parentPort ?? { postMessage: (message) => process.send!(message), on: (event, listener) => process.on(event, listener) }
// A child process shares no memory with the host: it is stopped by being killed, so its cancel flag stays clear.
const flags = parentPort ? new Int32Array(workerData.flags as SharedArrayBuffer) : new Int32Array(1)
const pendingHostCalls = new Map<number, { resolve: (value: unknown) => void; reject: (error: unknown) => void }>()
// The package is ESM; Node 20.19+ loads it through require.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- synchronous load in the worker (ESM package, loaded through require)
const monty = require('@pydantic/monty') as MontyModule

/** Thrown from the print callback to stop a run whose output passed the cap. */
const OUTPUT_CAP = new Error('execgate: output limit reached')

async function runWithHostFunctions(
  program: InstanceType<MontyModule['Monty']>,
  job: MontyJob,
  channel: WorkerJobChannel,
  printCallback: (stream: string, text: string) => void,
  display: MontyDisplay | undefined,
) {
  // display() is answered here, in the worker, unless the caller gave a host function of that name.
  const localDisplay = display && !job.hostFunctions.includes('display') ? display : undefined
  const names = new Set([...job.hostFunctions, ...(localDisplay ? ['display'] : [])])
  const deadline = Date.now() + job.limits.maxDurationSecs * 1000
  let progress: unknown = program.start({ limits: job.limits, printCallback })
  for (;;) {
    if (progress instanceof monty.MontyComplete) return progress.output
    if (Date.now() > deadline || cancelRequested(flags))
      throw Object.assign(new Error('time limit exceeded'), {
        exception: { typeName: 'TimeoutError', message: 'time limit exceeded while waiting on host functions' },
      })
    if (progress instanceof monty.MontyNameLookup) {
      // Resolving the name to a stand-in function makes monty call back here through a snapshot.
      progress = names.has(progress.variableName) ? progress.resume({ value: () => undefined }) : progress.resume()
      continue
    }
    const snapshot = progress as InstanceType<MontyModule['MontySnapshot']>
    if (localDisplay && snapshot.functionName === 'display') {
      try {
        const kwargs = toJsonValue(snapshot.kwargs ?? {}) as Record<string, unknown>
        localDisplay.show(
          (snapshot.args as unknown[]).map((arg) => toJsonValue(arg)),
          kwargs,
        )
        progress = snapshot.resume({ returnValue: null })
      } catch (error) {
        progress = snapshot.resume({ exception: { type: 'TypeError', message: describeError(error) } })
      }
      continue
    }
    try {
      const args = (snapshot.args as unknown[]).map((arg) => toJsonValue(arg))
      progress = snapshot.resume({ returnValue: await channel.callHost(snapshot.functionName, args) })
    } catch (error) {
      if (isFatalHostError(error)) throw error
      progress = snapshot.resume({ exception: { type: pythonExceptionFor(error), message: describeError(error) } })
    }
  }
}

async function run(job: MontyJob): Promise<void> {
  const channel = new WorkerJobChannel(port, job.id, job.outputBytes, pendingHostCalls)
  // A process that grew past its bound asks to be replaced: memory monty freed may stay with the process.
  const retireIfGrown = () => (!parentPort && process.memoryUsage().rss > job.recycleAboveBytes ? { retire: true } : {})
  const printCallback = (stream: string, text: string) => {
    if (!channel.write(stream === 'stderr' ? 'stderr' : 'stdout', text)) throw OUTPUT_CAP
  }
  const display = job.display && new MontyDisplay(job.display, (item) => channel.display(item))
  // Items the worker left out for the limits, whatever the run's end.
  const omitted = () => (display?.omitted ? { outputsOmitted: display.omitted } : {})
  const retire = () => ({ ...omitted(), ...retireIfGrown() })
  try {
    const program = new monty.Monty(job.code, { scriptName: 'main.py' })
    const value =
      job.hostFunctions.length > 0 || display
        ? await runWithHostFunctions(program, job, channel, printCallback, display)
        : program.run({ limits: job.limits, printCallback })
    channel.finish({ status: 'ok', value: toJsonValue(value), hostCalls: channel.hostCalls, ...retire() })
  } catch (error) {
    if (channel.outputExceeded) {
      channel.finish({
        status: 'output_limit',
        error: { type: 'OutputLimit', message: 'output passed the limit; the run was stopped' },
        hostCalls: channel.hostCalls,
        ...retire(),
      })
    } else if (isFatalHostError(error)) {
      channel.finish({
        status: 'policy_violation',
        error: { type: 'PolicyViolation', code: error.code, message: error.message },
        hostCalls: channel.hostCalls,
        ...retire(),
      })
    } else {
      channel.finish({ ...mapMontyError(error), hostCalls: channel.hostCalls, ...retire() })
    }
  }
}

function parse(job: MontyParseJob): void {
  try {
    new monty.Monty(job.code, { scriptName: 'main.py' })
    port.postMessage({ type: 'result', id: job.id, status: 'ok' })
  } catch (error) {
    port.postMessage({ type: 'result', id: job.id, ...mapMontyError(error) })
  }
}

port.on('message', (message: ToWorker) => {
  if (message.type === 'hostResult') return settleHostCall(pendingHostCalls, message)
  if (message.type === 'parse') return parse(message)
  run(message).catch((error) =>
    port.postMessage({
      type: 'result',
      id: message.id,
      status: 'internal_error',
      error: { type: 'InternalError', message: describeError(error) },
    }),
  )
})
port.postMessage({ type: 'ready' })
