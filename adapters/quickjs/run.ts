import { performance } from 'node:perf_hooks'
import type { QuickJSContext, QuickJSDeferredPromise, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from 'quickjs-emscripten'
import { describeError, isFatalHostError, type ExecutionErrorInfo, type ExecutionStatus, type OutputStream } from '../../src/core'
import { mapQuickJsError, SCRIPT_NAME, type StopReason } from './map-error'
import type { PreparedSource } from './prepare-source'
import { QuickJsDisplay, type DisplayLimits } from './display'
import { installConsole } from './console'
import { isPending, isPromise } from './promise-state'
import { PristineRuntime, hostRefsCopyable, type PristineOptions } from './snapshot'

export interface RunLimits {
  memoryBytes: number
  stackBytes: number
  deadline: number
  timeoutMs: number
  /** The output cap: of a longer string only the ends are read out of the VM. */
  outputBytes?: number
  /** What `display()` may add (docs/data.md#rich-outputs); without it every item is left out. */
  outputs?: DisplayLimits
}

export interface RunOutcome {
  status: ExecutionStatus
  value?: unknown
  error?: ExecutionErrorInfo
}

type Stop = Exclude<StopReason, undefined> | 'policy'

/** QuickJS's JS_EVAL_FLAG_ASYNC: top-level await in a global script; the result is a promise of `{ value }`. */
const JS_EVAL_FLAG_ASYNC = 1 << 7

/** What a run needs from whoever hosts it (the worker thread): output, cancellation and host calls. */
export interface RunHost {
  /** Records output; returns false once the output cap is passed. */
  write(stream: OutputStream, text: string, omittedBytes?: number): boolean
  cancelled(): boolean
  hostFunctionNames: readonly string[]
  /** Calls a host function; rejects with an error carrying the registry `code` when refused. */
  callHost(name: string, args: unknown[]): Promise<unknown>
  /** True when the worker's WebAssembly memory is at its ceiling: QuickJS may then throw `null` for want of memory. */
  memoryExhausted?(): boolean
  /** Receives each `display()` item the run keeps, when the code makes it. */
  display?(item: unknown): void
}

/**
 * One run in a fresh QuickJS runtime: nothing survives into the next run, and an OOM or a stack overflow is
 * contained in a runtime that is thrown away, or whose memory is put back to the prepared copy (`reset`). The
 * interrupt handler enforces the deadline, cancellation and the output cap while the code runs.
 */
export class QuickJsRun {
  private readonly runtime: QuickJSRuntime
  private readonly vm: QuickJSContext
  private stop: Stop | undefined
  private policyMessage = ''
  private readonly deferreds = new Set<QuickJSDeferredPromise>()
  private pendingHostCalls = 0
  private wakeUp: (() => void) | undefined
  private limits!: RunLimits
  private host!: RunHost
  private readonly display: QuickJsDisplay
  /**
   * The VM's own JSON.stringify, taken before any code runs: code that replaces it (`JSON.stringify = () => 'x'`)
   * would otherwise hand the worker text that is not JSON for its value.
   */
  private readonly stringify: QuickJSHandle
  /** The prepared state this object's runtime goes back to after each run; undefined: one object a run. */
  private readonly pristine: PristineRuntime | undefined
  /** A call into the module threw (a trap): its state outside memory (the stack pointer) may be off. */
  private trapped = false

  /**
   * Creates the runtime and context with console installed. The worker prepares the next run this way while it
   * is idle, so a request only pays for evaluating its code; each run still gets a runtime no code has touched.
   * With `pristine`, the prepared memory is copied so `reset` can put it back after a run.
   */
  constructor(module: QuickJSWASMModule, pristine?: PristineOptions) {
    this.runtime = module.newRuntime()
    // Set once, before any copy: quickjs-emscripten enables the native handler only when none was set before.
    this.runtime.setInterruptHandler(() => this.shouldInterrupt())
    this.vm = this.runtime.newContext()
    const json = this.vm.getProp(this.vm.global, 'JSON')
    this.stringify = this.vm.getProp(json, 'stringify')
    json.dispose()
    installConsole(
      this.vm,
      () => this.limits.outputBytes ?? 0,
      (stream, render) => {
        if (!this.stop) {
          const { text, omitted } = render()
          if (!this.host.write(stream, text, omitted)) this.stop = 'output'
        }
        return this.stop !== 'output'
      },
    )
    this.display = new QuickJsDisplay(
      () => this.limits?.outputs,
      (item) => this.host.display?.(item),
    )
    this.display.install(this.vm, this.stringify)
    this.pristine =
      pristine && hostRefsCopyable(this.runtime) ? new PristineRuntime(pristine.memory, pristine.layout, this.runtime, this.vm) : undefined
  }

  /** Whether `reset` can make this object fresh again for the next run. */
  get reusable(): boolean {
    return this.pristine !== undefined
  }

  /**
   * Puts the runtime back to its prepared memory and forgets the run (its handles point into memory the copy
   * replaced: they are dropped, never freed). False when the module must be replaced instead.
   */
  reset(): boolean {
    if (!this.pristine || this.trapped) return false
    const restored = this.pristine.restore()
    this.stop = undefined
    this.policyMessage = ''
    this.deferreds.clear()
    this.pendingHostCalls = 0
    this.wakeUp = undefined
    this.display.reset()
    return restored
  }

  /** `display()` items left out for the policy's output limits. */
  get outputsOmitted(): number {
    return this.display.omitted
  }

  /** Applies this run's limits and host functions; must be called once, before `execute`. */
  start(limits: RunLimits, host: RunHost): this {
    this.limits = limits
    this.host = host
    this.runtime.setMemoryLimit(limits.memoryBytes)
    this.runtime.setMaxStackSize(limits.stackBytes)
    this.installHostFunctions()
    return this
  }

  private shouldInterrupt(): boolean {
    if (this.stop) return true
    if (!this.host) return false // preparing: no code runs
    if (this.host.cancelled()) this.stop = 'cancelled'
    else if (performance.now() > this.limits.deadline) this.stop = 'deadline'
    return this.stop !== undefined
  }

  /** Host functions become async globals; arguments and results cross as JSON, never as host objects. */
  private installHostFunctions(): void {
    for (const name of this.host.hostFunctionNames) {
      const fn = this.vm.newFunction(name, (...argHandles) => {
        const deferred = this.vm.newPromise()
        let args: unknown[]
        try {
          args = argHandles.map((arg) => this.exactJson(arg))
        } catch (error) {
          const errorHandle = this.vm.newError(`${name}: the arguments are not JSON values (${describeError(error)})`)
          deferred.reject(errorHandle)
          errorHandle.dispose()
          return deferred.handle
        }
        this.deferreds.add(deferred)
        this.pendingHostCalls++
        this.host.callHost(name, args).then(
          (value) => this.settleHostCall(deferred, undefined, value),
          (error) => this.settleHostCall(deferred, error),
        )
        return deferred.handle
      })
      this.vm.setProp(this.vm.global, name, fn)
      fn.dispose()
    }
  }

  private settleHostCall(deferred: QuickJSDeferredPromise, error: unknown, value?: unknown): void {
    // A call of a run already over: after a reset its promise is in memory that was replaced.
    if (!this.deferreds.has(deferred)) return
    this.pendingHostCalls--
    if (deferred.alive) {
      if (error !== undefined) {
        if (isFatalHostError(error)) {
          this.stop = 'policy'
          this.policyMessage = describeError(error)
        }
        const errorHandle = this.vm.newError(describeError(error))
        deferred.reject(errorHandle)
        errorHandle.dispose()
      } else {
        const valueHandle = this.fromJson(value)
        deferred.resolve(valueHandle)
        valueHandle.dispose()
      }
    }
    this.wakeUp?.()
  }

  private fromJson(value: unknown): QuickJSHandle {
    if (value === undefined) return this.vm.undefined
    const result = this.vm.evalCode(`(${JSON.stringify(value)})`, 'host-value.js')
    return 'value' in result && result.value ? result.value : this.vm.undefined
  }

  /** Runs jobs and waits for host calls until the promise settles, the deadline passes or nothing is left. */
  private async settle(promise: QuickJSHandle | undefined): Promise<void> {
    for (;;) {
      // Nothing queued and no host call out (a plain `1 + 1`): the loop below would run no job and return; asking
      // first spares the job call's out-pointer, allocated and freed in the module's memory each time.
      if (this.pendingHostCalls === 0 && !this.runtime.hasPendingJob()) return
      const jobs = this.runtime.executePendingJobs()
      if (jobs.error) {
        jobs.error.dispose()
        if (this.stop) return
      }
      if (this.stop) return
      const pending = promise !== undefined && isPending(this.vm, promise)
      if (this.pendingHostCalls === 0 && !this.runtime.hasPendingJob()) return
      if (!pending && this.pendingHostCalls === 0) continue
      const remaining = this.limits.deadline - performance.now()
      if (remaining <= 0) {
        this.stop = 'deadline'
        return
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining)
        this.wakeUp = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      this.wakeUp = undefined
    }
  }

  /** Restores a session's state before the code runs; an entry that no longer evaluates is skipped. */
  restore(scripts: readonly string[]): void {
    for (const script of scripts) {
      const result = this.vm.evalCode(script, 'session-restore.js', { type: 'global' })
      if (result.error) result.error.dispose()
      else result.value.dispose()
    }
  }

  /** The session's state after a successful run, as JSON, within a short time of its own; undefined if it fails. */
  capture(script: string, budgetMs: number): string | undefined {
    this.limits = { ...this.limits, deadline: performance.now() + budgetMs }
    this.stop = undefined
    const result = this.vm.evalCode(script, 'session-capture.js', { type: 'global' })
    if (result.error) {
      result.error.dispose()
      return undefined
    }
    const text = this.vm.typeof(result.value) === 'string' ? this.vm.getString(result.value) : undefined
    result.value.dispose()
    return text
  }

  async execute(source: PreparedSource): Promise<RunOutcome> {
    const evaluated = this.vm.evalCode(source.script, SCRIPT_NAME, source.async ? JS_EVAL_FLAG_ASYNC : { type: 'global' })
    if (evaluated.error) return this.failure(evaluated.error)
    let handle: QuickJSHandle | undefined = evaluated.value
    try {
      if (source.async) {
        const settled = await this.awaitPromise(handle)
        handle = undefined
        if ('failure' in settled) return settled.failure
        handle = this.vm.getProp(settled.value, 'value')
        settled.value.dispose()
      }
      // Read once: each `typeof` copies a C string out of the module and frees it.
      let type: string | undefined = this.vm.typeof(handle)
      if (type === 'object' && isPromise(this.vm, handle)) {
        const settled = await this.awaitPromise(handle)
        handle = undefined
        if ('failure' in settled) return settled.failure
        handle = settled.value
        type = undefined
      } else {
        await this.settle(undefined) // promise jobs and host calls started by the code still run to the end
        if (this.stop) return this.failure(undefined)
      }
      return this.toValue(handle, type)
    } finally {
      if (handle?.alive) handle.dispose()
    }
  }

  /** Settles a promise handle (consuming it): its fulfilled value, or the run's failure. */
  private async awaitPromise(promise: QuickJSHandle): Promise<{ value: QuickJSHandle } | { failure: RunOutcome }> {
    try {
      await this.settle(promise)
      if (this.stop) return { failure: this.failure(undefined) }
      const state = this.vm.getPromiseState(promise)
      if (state.type === 'pending') {
        return {
          failure: {
            status: 'error',
            error: { type: 'Error', message: 'the promise never settled (execgate has no timers or I/O that could settle it)' },
          },
        }
      }
      if (state.type === 'rejected') return { failure: this.failure(state.error) }
      return { value: state.value === promise ? promise.dup() : state.value }
    } finally {
      promise.dispose()
    }
  }

  /**
   * A value through the VM's own JSON.stringify: strings keep NUL characters (quickjs-emscripten's getString and
   * dump stop at the first NUL, which would silently cut a host-call argument short).
   */
  private exactJson(handle: QuickJSHandle): unknown {
    if (this.vm.typeof(handle) === 'undefined') return undefined
    const result = this.vm.callFunction(this.stringify, this.vm.undefined, handle)
    if (result.error) {
      const message = this.vm.dump(result.error)
      result.error.dispose()
      throw new Error(typeof message === 'object' && message ? String((message as { message?: unknown }).message) : String(message))
    }
    const text = this.vm.typeof(result.value) === 'string' ? this.vm.getString(result.value) : undefined
    result.value.dispose()
    return text === undefined ? undefined : JSON.parse(text)
  }

  /** The value as JSON, serialised inside the VM so a hostile getter runs under the VM's own limits. */
  private toValue(handle: QuickJSHandle, known?: string): RunOutcome {
    const type = known ?? this.vm.typeof(handle)
    if (type === 'undefined' || type === 'function' || type === 'symbol') return { status: 'ok' }
    if (type === 'string') return { status: 'ok', value: this.exactJson(handle) }
    if (type === 'number') return { status: 'ok', value: this.vm.getNumber(handle) }
    if (type === 'boolean') return { status: 'ok', value: this.vm.dump(handle) }
    if (type === 'bigint') return { status: 'ok', value: this.vm.getBigInt(handle).toString() }
    const result = this.vm.callFunction(this.stringify, this.vm.undefined, handle)
    if (result.error) return this.failure(result.error)
    const text = this.vm.typeof(result.value) === 'string' ? this.vm.getString(result.value) : undefined
    result.value.dispose()
    if (this.stop) return this.failure(undefined)
    return { status: 'ok', value: text === undefined ? undefined : JSON.parse(text) }
  }

  private failure(errorHandle: QuickJSHandle | undefined): RunOutcome {
    let dumped: unknown
    if (errorHandle) {
      try {
        dumped = this.vm.dump(errorHandle)
      } catch {
        this.trapped = true
        dumped = { name: 'Error', message: 'the error could not be read' }
      }
      errorHandle.dispose()
    }
    if (this.stop === 'policy') return { status: 'policy_violation', error: { type: 'PolicyViolation', message: this.policyMessage } }
    // At its malloc limit (or the linear memory's ceiling) QuickJS may fail to allocate the exception and throw `null`,
    // or fail to dump the one it has (an empty string): with no room left, any exception that is not an object is that.
    if ((dumped === null || typeof dumped !== 'object') && !this.stop && (this.mallocLimitReached() || this.host.memoryExhausted?.()))
      dumped = { name: 'InternalError', message: 'out of memory' }
    return mapQuickJsError(dumped, this.stop, this.limits.timeoutMs)
  }

  /**
   * Whether the runtime has no room left: a 1 MiB allocation in the same context fails. (QuickJS's usage dump and
   * `computeMemoryUsage` are not usable here: the first is missing from this build, the second allocates.)
   */
  private mallocLimitReached(): boolean {
    try {
      const probe = this.vm.evalCode('new ArrayBuffer(1048576)')
      if (probe.error) {
        probe.error.dispose()
        return !this.stop
      }
      probe.value.dispose()
      return false
    } catch {
      this.trapped = true
      return true
    }
  }

  /** Releases the context and runtime. Returns false if QuickJS refused, in which case the module is suspect. */
  dispose(): boolean {
    try {
      for (const deferred of this.deferreds) if (deferred.alive) deferred.dispose()
      if (this.stringify.alive) this.stringify.dispose()
      this.display.dispose()
      this.vm.dispose()
      this.runtime.dispose()
      return true
    } catch {
      return false
    }
  }
}
