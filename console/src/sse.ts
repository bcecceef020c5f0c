/** One Server-Sent Event. */
export interface ServerEvent {
  event: string
  data: string
  id?: string
}

/**
 * Reads a text/event-stream body with fetch's ReadableStream: EventSource cannot POST (the Run page streams
 * POST /v1/executions) nor send the Authorization header, so the console parses the stream itself, following the
 * HTML standard's rules (fields `event`, `data` joined by newlines, `id`; `:` comments; a blank line dispatches).
 */
export async function readEventStream(body: ReadableStream<Uint8Array>, onEvent: (event: ServerEvent) => void): Promise<void> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  let event = ''
  let data: string[] = []
  let id: string | undefined
  const dispatch = () => {
    if (data.length > 0) onEvent({ event: event || 'message', data: data.join('\n'), ...(id !== undefined ? { id } : {}) })
    event = ''
    data = []
  }
  const line = (text: string) => {
    if (text === '') return dispatch()
    if (text.startsWith(':')) return
    const colon = text.indexOf(':')
    const field = colon === -1 ? text : text.slice(0, colon)
    const value = colon === -1 ? '' : text.slice(colon + 1).replace(/^ /, '')
    if (field === 'event') event = value
    else if (field === 'data') data.push(value)
    else if (field === 'id') id = value
  }
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    buffer += decoder.decode(value, { stream: true })
    let end: number
    while ((end = buffer.search(/\r\n|\r|\n/)) !== -1) {
      line(buffer.slice(0, end))
      buffer = buffer.slice(end + (buffer.startsWith('\r\n', end) ? 2 : 1))
    }
  }
  if (buffer) line(buffer)
  dispatch()
}
