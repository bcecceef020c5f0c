import { useEffect, useRef, useState } from 'preact/hooks'
import { ApiError, type ApiClient } from './api'
import type { ServerEvent } from './sse'

/** After a dropped stream (not its end), how long before it is opened again from the last event seen. */
const RECONNECT_MS = 2000

export type StreamState = 'connecting' | 'live' | 'ended' | 'reconnecting'

export const STREAM_WORDS: Record<StreamState, string> = {
  connecting: 'connecting…',
  live: 'live',
  ended: 'stream ended',
  reconnecting: 'connection lost, reconnecting…',
}

/**
 * Follows a GET text/event-stream route (a plan's events) while the page is open: read with fetch (EventSource cannot
 * send the key), opened again after a dropped connection with `Last-Event-ID` set to the last event's id, so nothing
 * is missed or seen twice. A refusal (4xx) ends it and goes to `onRefused`; the stream's own end calls `onEnd`.
 */
export function useLiveStream(
  api: ApiClient,
  path: string,
  handlers: { onEvent: (event: ServerEvent) => void; onEnd?: () => void; onRefused?: (error: unknown) => void },
): StreamState {
  const [state, setState] = useState<StreamState>('connecting')
  const latest = useRef(handlers)
  latest.current = handlers
  useEffect(() => {
    const controller = new AbortController()
    let lastId: string | undefined
    let retry: ReturnType<typeof setTimeout> | undefined
    const open = async () => {
      setState('live')
      try {
        await api.stream(
          'GET',
          path,
          (event) => {
            if (event.id !== undefined) lastId = event.id
            latest.current.onEvent(event)
          },
          { signal: controller.signal, headers: lastId ? { 'last-event-id': lastId } : {} },
        )
        if (controller.signal.aborted) return
        setState('ended')
        latest.current.onEnd?.()
      } catch (failure) {
        if (controller.signal.aborted) return
        if (failure instanceof ApiError && failure.status >= 400 && failure.status < 500) {
          setState('ended')
          return latest.current.onRefused?.(failure)
        }
        setState('reconnecting')
        retry = setTimeout(open, RECONNECT_MS)
      }
    }
    void open()
    return () => {
      controller.abort()
      clearTimeout(retry)
    }
  }, [api, path])
  return state
}
