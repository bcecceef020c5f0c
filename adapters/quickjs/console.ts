import type { QuickJSContext, QuickJSHandle } from 'quickjs-emscripten'

/**
 * `console` inside a QuickJS run: `log`, `info` and `debug` write to stdout, `warn` and `error` to stderr. A string
 * longer than twice the output cap leaves the VM as its two ends only (all the output capture keeps), so
 * `console.log('A'.repeat(1e8))` copies 128 KiB, not 100 MB, into the worker and the host.
 */

/**
 * Receives one console call: `render` reads its arguments out of the VM (not called for a run already stopped).
 * Returns false once the output cap is passed: the call then throws.
 */
export type ConsoleWrite = (stream: 'stdout' | 'stderr', render: () => { text: string; omitted: number }) => boolean

/**
 * Installs the global `console` in a fresh context. One native function per stream, shared by that stream's methods:
 * a native costs ~2 µs to make (a host reference and a QuickJS function object) in every fresh context, and three
 * more cost a back-to-back run ~5 µs of its worker's time for a difference (`console.info.name` is `log`) no code
 * needs.
 * `outputBytes` is read per call (the run's cap is known only when it starts).
 */
export function installConsole(vm: QuickJSContext, outputBytes: () => number, write: ConsoleWrite): void {
  const consoleObject = vm.newObject()
  for (const [stream, methods] of [
    ['stdout', ['log', 'info', 'debug']],
    ['stderr', ['warn', 'error']],
  ] as const) {
    // Past the output cap the call throws at once: a flood loop would otherwise spin (allocating its strings) until
    // the next interrupt check, hundreds of ms on a busy machine, and meet the deadline before the cap.
    const fn = vm.newFunction(methods[0], (...args) => {
      const render = () => {
        const keep = outputBytes()
        let omitted = 0
        const texts = args.map((arg) => {
          const formatted = format(vm, arg, keep)
          omitted += formatted.omitted
          return formatted.text
        })
        return { text: texts.join(' ') + '\n', omitted }
      }
      if (!write(stream, render)) return { error: vm.newError('output passed the limit') }
    })
    for (const method of methods) vm.setProp(consoleObject, method, fn)
    fn.dispose()
  }
  vm.setProp(vm.global, 'console', consoleObject)
  consoleObject.dispose()
}

function format(vm: QuickJSContext, handle: QuickJSHandle, keep: number): { text: string; omitted: number } {
  const type = vm.typeof(handle)
  if (type === 'string') return boundedString(vm, handle, keep)
  if (type === 'function') return { text: '[Function]', omitted: 0 }
  const dumped = vm.dump(handle)
  if (dumped && typeof dumped === 'object' && typeof dumped.name === 'string' && typeof dumped.message === 'string') {
    return { text: `${dumped.name}: ${dumped.message}`, omitted: 0 }
  }
  return { text: typeof dumped === 'string' && type !== 'object' ? dumped : (JSON.stringify(dumped) ?? String(dumped)), omitted: 0 }
}

/** A string read out of the VM whole only when it is short; of a longer one only its two ends. */
function boundedString(vm: QuickJSContext, handle: QuickJSHandle, keep: number): { text: string; omitted: number } {
  const lengthHandle = vm.getProp(handle, 'length')
  const length = vm.getNumber(lengthHandle)
  lengthHandle.dispose()
  if (!keep || length <= 2 * keep) return { text: vm.getString(handle), omitted: 0 }
  const slice = vm.getProp(handle, 'slice')
  const part = (from: number, to: number) => {
    const [start, end] = [vm.newNumber(from), vm.newNumber(to)]
    const result = vm.callFunction(slice, handle, start, end)
    start.dispose()
    end.dispose()
    if (result.error) return (result.error.dispose(), '')
    const text = vm.getString(result.value)
    result.value.dispose()
    return text
  }
  const text = part(0, keep) + part(length - keep, length)
  slice.dispose()
  // Counted as one byte a code unit: exact for ASCII, the usual flood; a close estimate otherwise.
  return { text, omitted: length - 2 * keep }
}
