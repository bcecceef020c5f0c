import { PerformanceObserver } from 'node:perf_hooks'
import v8 from 'node:v8'

/** The young generation's semi-space `execgate serve` grows to (MiB); V8's default is up to 16. */
export const SERVER_SEMI_SPACE_MIB = 4

/**
 * Holds the main heap's young generation at `capMiB` a semi-space, close to what `--max-semi-space-size=4` does.
 *
 * Under load V8 doubles the new space up to 16 MiB a semi-space and keeps those pages: `execgate serve` stayed ~75 MB
 * above its pre-load RSS 10 s after the load, and with `--max-semi-space-size=4` it came back within seconds
 * (docs/benchmarks.md, HTTP). This cap lowered what stayed (+57/+78/+60 MB against +105/+150/+54 MB, same runs),
 * not all of it. That flag is read once, when the heap is made, so it cannot be set from inside (a re-exec would change the
 * server's pid, and a shebang with `env -S` fails on busybox). The growth factor, though, is
 * read at every growth: after each GC, once the new space has reached the cap, growth is switched off (factor 1),
 * and on again below it. The flag is the process's: a worker thread's young generation stops growing too while the
 * main one is at the cap. An operator's own `--max-semi-space-size` (node's command line or NODE_OPTIONS) wins.
 * Returns a function that stops watching.
 */
export function capYoungGeneration(capMiB = SERVER_SEMI_SPACE_MIB): () => void {
  const flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)]
  if (flags.some((flag) => /^--max[-_]semi[-_]space[-_]size\b/.test(flag))) return () => undefined
  const capBytes = capMiB * 1024 * 1024
  let growing = true
  const check = (): void => {
    const space = v8.getHeapSpaceStatistics().find((entry) => entry.space_name === 'new_space')
    if (!space) return
    // Used + available is the semi-space's capacity less its pages' headers (committed memory counts both semi-spaces,
    // and only when in use); it grows by doubling, so past three quarters of the cap it is at the cap.
    const grow = space.space_used_size + space.space_available_size < capBytes * 0.75
    if (grow === growing) return
    growing = grow
    v8.setFlagsFromString(`--semi-space-growth-factor=${grow ? 2 : 1}`)
  }
  check()
  const observer = new PerformanceObserver(check)
  observer.observe({ entryTypes: ['gc'] })
  return () => observer.disconnect()
}
