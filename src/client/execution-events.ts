import type { Output } from '../core'
import type { ExecutionEvent, ExecutionResult } from './client-types'
import { ExecgateClientError } from './client-error'
import type { SseMessage } from './sse'

/** The SSE of an execution or a sandbox exec (`stdout`, `stderr`, an `output` per rich output, then `result`) as typed events. */
export async function* toExecutionEvents(messages: AsyncIterable<SseMessage>): AsyncGenerator<ExecutionEvent> {
  for await (const message of messages) {
    const data = JSON.parse(message.data) as { chunk?: string; index?: number; output?: Output } & ExecutionResult
    if (message.event === 'result') {
      yield { type: 'result', result: data }
      return
    }
    if (message.event === 'stdout' || message.event === 'stderr') yield { type: message.event, chunk: data.chunk ?? '' }
    if (message.event === 'output' && data.output) yield { type: 'output', index: data.index ?? 0, output: data.output }
  }
  throw new ExecgateClientError({
    code: 'EXECGATE_RESPONSE_INVALID',
    message: 'the event stream ended before its result event',
    status: 200,
    attempts: 1,
  })
}

/** Runs the events to their end, handing output to `onOutput`, and answers the result. */
export async function collectExecution(
  events: AsyncIterable<ExecutionEvent>,
  onOutput: (stream: 'stdout' | 'stderr', chunk: string) => void,
): Promise<ExecutionResult> {
  for await (const event of events) {
    if (event.type === 'result') return event.result
    if (event.type === 'stdout' || event.type === 'stderr') onOutput(event.type, event.chunk)
  }
  throw new ExecgateClientError({
    code: 'EXECGATE_RESPONSE_INVALID',
    message: 'the event stream ended before its result event',
    status: 200,
    attempts: 1,
  })
}
