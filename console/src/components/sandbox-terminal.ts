import { useEffect, useRef, useState } from 'preact/hooks'
import type { ApiClient } from '../api'
import type { ExecutionResult } from '../api-types'
import { formatMs } from '../format'
import { html } from '../html'
import { Badge, ErrorMessage } from './feedback'

type Chunk = { stream: 'stdout' | 'stderr'; text: string }
interface Exec {
  key: number
  command: string
  chunks: Chunk[]
  result?: ExecutionResult
  error?: unknown
}

/** Commands typed in each sandbox, for the arrows, kept for this tab's life (like the key). */
const histories = new Map<string, string[]>()

/**
 * The exit code, where the result says it: 0 for `ok`; a program's non-zero exit is an `error` whose message names it
 * ("exited with code 2"). The ExecutionResult has no field of its own for it.
 */
export function exitCodeOf(result: ExecutionResult): string {
  if (result.status === 'ok') return '0'
  const named = /exited with code (\d+)/.exec(result.error?.message ?? result.message ?? '')
  return named ? named[1]! : '—'
}

/**
 * A terminal-like exec box: a command line with its history on the up and down arrows, and each exec's output as it
 * streams (POST /v1/sandboxes/:id/exec with Accept: text/event-stream), then its status, exit code and duration.
 */
export function SandboxTerminal({ api, sandboxId, onExecuted }: { api: ApiClient; sandboxId: string; onExecuted: () => void }) {
  const [execs, setExecs] = useState<Exec[]>([])
  const [command, setCommand] = useState('')
  const [running, setRunning] = useState<AbortController>()
  const position = useRef<number | undefined>(undefined)
  const typed = useRef('')
  const log = useRef<HTMLDivElement>(null)
  const input = useRef<HTMLInputElement>(null)
  const history = histories.get(sandboxId) ?? []
  useEffect(() => {
    if (log.current) log.current.scrollTop = log.current.scrollHeight
  }, [execs])
  useEffect(() => () => running?.abort(), [running])

  const update = (key: number, change: (exec: Exec) => Exec) =>
    setExecs((before) => before.map((exec) => (exec.key === key ? change(exec) : exec)))
  const run = async () => {
    const text = command.trim()
    if (!text || running) return
    histories.set(sandboxId, [...history.filter((item) => item !== text), text].slice(-100))
    position.current = undefined
    setCommand('')
    const key = Date.now()
    setExecs((before) => [...before, { key, command: text, chunks: [] }])
    const controller = new AbortController()
    setRunning(controller)
    try {
      await api.stream(
        'POST',
        `/v1/sandboxes/${encodeURIComponent(sandboxId)}/exec`,
        (event) => {
          const data = JSON.parse(event.data) as { chunk?: string } & ExecutionResult
          if (event.event === 'result') update(key, (exec) => ({ ...exec, result: data }))
          else if (event.event === 'stdout' || event.event === 'stderr')
            update(key, (exec) => ({
              ...exec,
              chunks: [...exec.chunks, { stream: event.event as Chunk['stream'], text: data.chunk ?? '' }],
            }))
        },
        { body: { command: text, lane: 'interactive' }, signal: controller.signal },
      )
    } catch (failure) {
      update(key, (exec) => ({
        ...exec,
        error: (failure as Error).name === 'AbortError' ? new Error('stopped: the exec was cancelled when the stream closed') : failure,
      }))
    } finally {
      setRunning(undefined)
      onExecuted()
      input.current?.focus()
    }
  }

  // Up: the command before; down: the one after, then back to what was being typed.
  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key !== 'ArrowUp' && event.key !== 'ArrowDown') return
    if (history.length === 0) return
    event.preventDefault()
    if (position.current === undefined) {
      if (event.key === 'ArrowDown') return
      typed.current = command
      position.current = history.length
    }
    const next = position.current + (event.key === 'ArrowUp' ? -1 : 1)
    if (next < 0) return
    if (next >= history.length) {
      position.current = undefined
      return setCommand(typed.current)
    }
    position.current = next
    setCommand(history[next]!)
  }

  return html`
    <div class="terminal">
      <div class="terminal-log" ref=${log} role="log" aria-live="polite" aria-label="Execs and their output"
        aria-busy=${running ? 'true' : 'false'} data-testid="terminal-log" tabindex="0">
        ${
          execs.length === 0
            ? html`<p class="muted">No exec yet. Each exec starts a fresh shell in /workspace: files persist,${' '}
          <code>cd</code> and variables do not.</p>`
            : null
        }
        ${execs.map(
          (exec) => html`<div class="exec" data-testid="exec" data-status=${exec.result?.status ?? (exec.error ? 'failed' : 'running')}>
          <div class="exec-command"><span aria-hidden="true">$ </span><span class="visually-hidden">Command: </span>${exec.command}</div>
          ${
            exec.chunks.length
              ? html`<pre class="exec-output">
            ${exec.chunks.map((chunk) => html`<span class=${chunk.stream}>${chunk.text}</span>`)}</pre>`
              : null
          }
          ${
            exec.result
              ? html`<div class="exec-status"><${Badge} value=${exec.result.status}
                /> <span data-testid="exit-code">exit ${exitCodeOf(exec.result)}</span> · ${formatMs(exec.result.durationMs)}
                ${
                  exec.result.status !== 'ok' && (exec.result.message || exec.result.error)
                    ? html` · <span class="reason">
                ${exec.result.error?.message ?? exec.result.message}</span>`
                    : null
                }</div>`
              : exec.error
                ? html`<${ErrorMessage} error=${exec.error} context="Exec failed" />`
                : html`<div class="exec-status muted">running…</div>`
          }
        </div>`,
        )}
      </div>
      <form class="terminal-input" onSubmit=${(event: Event) => {
        event.preventDefault()
        void run()
      }}>
        <label for="sandbox-command">Command</label>
        <span class="prompt" aria-hidden="true">$</span>
        <input id="sandbox-command" ref=${input} value=${command} autocomplete="off" spellcheck=${false} autocapitalize="off"
          aria-describedby="sandbox-command-help"
          onInput=${(event: Event) => {
            setCommand((event.currentTarget as HTMLInputElement).value)
            position.current = undefined
          }} onKeyDown=${onKeyDown} />
        <button type="submit" class="primary" disabled=${!!running}>${running ? 'Running…' : 'Run'}</button>
        ${running ? html`<button type="button" onClick=${() => running.abort()}>Stop</button>` : null}
      </form>
      <p class="hint" id="sandbox-command-help">Enter runs the command; the up and down arrows go through the commands you ran here.</p>
    </div>
  `
}
