import type { ExecutionResult, Output } from '../core'

/**
 * The SSE stream's `output` events for one run: each rich output is sent as the code makes it, from adapters whose
 * runner reports them while it runs (`onRichOutput`), and whatever the result holds that was not sent yet (adapters
 * that report them at the end) goes out just before the `result` event. An event's `index` is the item's place in
 * the result's `outputs`.
 */
export function outputEvents(send: (event: string, data: unknown) => void): {
  onRichOutput: (output: Output, index: number) => void
  rest: (result: ExecutionResult) => void
} {
  let sent = 0
  return {
    onRichOutput: (output, index) => {
      send('output', { index, output })
      sent = Math.max(sent, index + 1)
    },
    rest: (result) => result.outputs?.slice(sent).forEach((output, offset) => send('output', { index: sent + offset, output })),
  }
}
