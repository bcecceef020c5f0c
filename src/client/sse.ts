/** One Server-Sent Event as the server wrote it: its `event:` name, `id:` and the `data:` lines joined. */
export interface SseMessage {
  event: string
  data: string
  id?: string
}

/**
 * Reads a `text/event-stream` body into messages (the WHATWG parsing rules: `\n`, `\r\n` or `\r` line ends, comment
 * lines, multi-line data). Works on any platform's ReadableStream, so it runs in Node, Deno, Bun and browsers alike.
 */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  let event = ''
  let data: string[] = []
  let id: string | undefined
  try {
    for (;;) {
      const { done, value } = await reader.read()
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true })
      let lineEnd: number
      while ((lineEnd = buffer.search(/\r\n|\r|\n/)) !== -1) {
        // A lone \r at the end may be the first half of \r\n: wait for the next chunk.
        if (buffer[lineEnd] === '\r' && lineEnd === buffer.length - 1 && !done) break
        const line = buffer.slice(0, lineEnd)
        buffer = buffer.slice(lineEnd + (buffer.startsWith('\r\n', lineEnd) ? 2 : 1))
        if (line === '') {
          if (data.length > 0) yield { event: event || 'message', data: data.join('\n'), ...(id !== undefined ? { id } : {}) }
          event = ''
          data = []
          continue
        }
        if (line.startsWith(':')) continue
        const colon = line.indexOf(':')
        const field = colon === -1 ? line : line.slice(0, colon)
        const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '')
        if (field === 'event') event = value
        else if (field === 'data') data.push(value)
        else if (field === 'id') id = value
      }
      if (done) break
    }
  } finally {
    // Leaving the loop early (break, return, an error) cancels the response, so the server sees the caller go.
    await reader.cancel().catch(() => undefined)
  }
}
