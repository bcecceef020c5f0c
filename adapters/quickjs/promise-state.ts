import type { QuickJSContext, QuickJSHandle } from 'quickjs-emscripten'

// getPromiseState hands out a new handle for a settled promise's value: it must be freed, or QuickJS leaks.

/** Whether a promise handle is still pending. */
export function isPending(vm: QuickJSContext, promise: QuickJSHandle): boolean {
  const state = vm.getPromiseState(promise)
  if (state.type === 'fulfilled' && state.value !== promise && state.value.alive) state.value.dispose()
  if (state.type === 'rejected' && state.error.alive) state.error.dispose()
  return state.type === 'pending'
}

/** Whether a handle is a promise (QuickJS answers a non-promise as fulfilled with `notAPromise`). */
export function isPromise(vm: QuickJSContext, handle: QuickJSHandle): boolean {
  const state = vm.getPromiseState(handle)
  if (state.type === 'fulfilled' && state.notAPromise) {
    if (state.value !== handle && state.value.alive) state.value.dispose()
    return false
  }
  if (state.type === 'fulfilled' && state.value !== handle && state.value.alive) state.value.dispose()
  if (state.type === 'rejected' && state.error.alive) state.error.dispose()
  return true
}
