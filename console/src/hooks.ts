import { useCallback, useEffect, useRef, useState } from 'preact/hooks'

export interface Polled<T> {
  data: T | undefined
  error: unknown
  /** Loads now (after an action), without waiting for the next tick. */
  refresh: () => void
}

/**
 * Loads at once, then every `intervalMs` while the tab is visible (a hidden tab asks nothing of the server); one
 * request at a time. The last good data stays on screen when a later load fails, with the error beside it.
 */
export function usePolling<T>(load: (signal: AbortSignal) => Promise<T>, intervalMs: number, deps: readonly unknown[]): Polled<T> {
  const [data, setData] = useState<T | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const loadRef = useRef(load)
  loadRef.current = load
  const tick = useRef<() => void>(() => undefined)

  useEffect(() => {
    const controller = new AbortController()
    let timer: ReturnType<typeof setTimeout> | undefined
    let inFlight = false
    let again = false
    setData(undefined)
    setError(undefined)
    const run = async () => {
      clearTimeout(timer)
      if (inFlight) {
        again = true
        return
      }
      inFlight = true
      try {
        const value = await loadRef.current(controller.signal)
        if (controller.signal.aborted) return
        setData(value)
        setError(undefined)
      } catch (failure) {
        if (controller.signal.aborted) return
        setError(failure)
      } finally {
        inFlight = false
      }
      if (again) {
        again = false
        return void run()
      }
      if (document.visibilityState === 'visible') timer = setTimeout(run, intervalMs)
    }
    const onVisibility = () => {
      if (document.visibilityState === 'visible' && !inFlight) void run()
    }
    tick.current = () => void run()
    document.addEventListener('visibilitychange', onVisibility)
    void run()
    return () => {
      controller.abort()
      clearTimeout(timer)
      document.removeEventListener('visibilitychange', onVisibility)
    }
  }, deps)

  const refresh = useCallback(() => tick.current(), [])
  return { data, error, refresh }
}

/** Focuses the page's heading when the page changes, so a screen reader announces where the user is now. */
export function useHeadingFocus(path: string): void {
  const first = useRef(true)
  useEffect(() => {
    if (first.current) {
      // The first page of a visit keeps the browser's own focus: Tab starts at the skip link.
      first.current = false
      return
    }
    document.getElementById('page-title')?.focus()
  }, [path])
}
