import { useEffect, useRef, useState } from 'preact/hooks'
import type { ExecgateStatus, ExecutionRequest, ExecutionResult, Language, Task, ValidationReport } from '../api-types'
import { CodeEditor, focusAt, type EditorFinding } from '../components/code-editor'
import { ErrorMessage } from '../components/feedback'
import { ResultView } from '../components/result-view'
import { ProducedArtifacts } from '../components/run-record'
import { html } from '../html'
import { navigate } from '../router'
import type { PageProps } from '../pages'

const SAMPLES: Record<Language, string> = {
  javascript: "const prices = [12.5, 7.25, 3]\nconsole.log('items:', prices.length)\nprices.reduce((sum, price) => sum + price, 0)",
  typescript:
    "const prices: number[] = [12.5, 7.25, 3]\nconsole.log('items:', prices.length)\nprices.reduce((sum, price) => sum + price, 0)",
  python: "prices = [12.5, 7.25, 3]\nprint('items:', len(prices))\nround(sum(prices) * 1.08, 2)",
  bash: 'for item in tea cake scone; do\n  echo "item: $item"\ndone',
}

/** The page's form, kept while the user visits other pages (for this tab's life only, like the key). */
const draft: { language?: Language; code: Partial<Record<Language, string>>; adapter: string; timeoutMs: string; memoryMb: string } = {
  code: {},
  adapter: '',
  timeoutMs: '',
  memoryMb: '',
}

type Chunk = { stream: 'stdout' | 'stderr'; text: string }

/** Run: edit code, run it with its output streamed live, see the result; validate it with findings at their line. */
export function RunPage({ api }: PageProps) {
  const [languages, setLanguages] = useState<Language[]>([])
  const [status, setStatus] = useState<ExecgateStatus>()
  const [language, setLanguage] = useState<Language | undefined>(draft.language)
  const [code, setCode] = useState('')
  const [adapter, setAdapter] = useState(draft.adapter)
  const [timeoutMs, setTimeoutMs] = useState(draft.timeoutMs)
  const [memoryMb, setMemoryMb] = useState(draft.memoryMb)
  const [chunks, setChunks] = useState<Chunk[]>([])
  const [result, setResult] = useState<ExecutionResult>()
  const [report, setReport] = useState<ValidationReport>()
  const [running, setRunning] = useState<AbortController>()
  const [error, setError] = useState<unknown>()
  const textarea = useRef<HTMLTextAreaElement>(null)

  useEffect(() => {
    Promise.all([api.get<{ languages: Language[] }>('/v1/languages'), api.get<ExecgateStatus>('/v1/adapters')]).then(
      ([found, adapters]) => {
        setLanguages(found.languages)
        setStatus(adapters)
        const chosen = language && found.languages.includes(language) ? language : found.languages[0]
        setLanguage(chosen)
        if (chosen) setCode(draft.code[chosen] ?? SAMPLES[chosen])
      },
      setError,
    )
  }, [api])
  useEffect(() => () => running?.abort(), [running])
  Object.assign(draft, { language, adapter, timeoutMs, memoryMb })
  if (language) draft.code[language] = code

  const changeLanguage = (next: Language) => {
    setLanguage(next)
    setCode(draft.code[next] ?? SAMPLES[next])
    setReport(undefined)
    if (adapter && !status?.adapters.find((item) => item.name === adapter)?.languages.includes(next)) setAdapter('')
  }

  // A person is waiting at the console for a run: it asks for the interactive lane (a tenant's fixed lane still wins).
  // A task is durable background work: the task's own lane (batch) applies.
  const request = (lane?: 'interactive'): ExecutionRequest => ({
    language: language!,
    code,
    ...(lane ? { lane } : {}),
    ...(adapter ? { adapter } : {}),
    ...(timeoutMs ? { timeoutMs: Number(timeoutMs) } : {}),
    ...(memoryMb ? { memoryMb: Number(memoryMb) } : {}),
  })

  const run = async () => {
    if (!language || running) return
    const controller = new AbortController()
    setRunning(controller)
    setChunks([])
    setResult(undefined)
    setError(undefined)
    try {
      await api.stream(
        'POST',
        '/v1/executions',
        (event) => {
          const data = JSON.parse(event.data) as { chunk?: string } & ExecutionResult
          if (event.event === 'result') setResult(data)
          else if (event.event === 'stdout' || event.event === 'stderr')
            setChunks((before) => [...before, { stream: event.event as Chunk['stream'], text: data.chunk ?? '' }])
        },
        { body: request('interactive'), signal: controller.signal },
      )
    } catch (failure) {
      setError((failure as Error).name === 'AbortError' ? new Error('stopped: the run was cancelled when the stream closed') : failure)
    } finally {
      setRunning(undefined)
    }
  }

  const validate = async () => {
    if (!language) return
    setError(undefined)
    try {
      setReport(await api.post<ValidationReport>('/v1/validate', { language, code, ...(adapter ? { adapter } : {}) }))
    } catch (failure) {
      setError(failure)
    }
  }

  const submitTask = async () => {
    if (!language) return
    setError(undefined)
    try {
      const task = await api.post<Task>('/v1/tasks', { request: request() })
      navigate(`tasks/${task.id}`)
    } catch (failure) {
      setError(failure)
    }
  }

  const findings: EditorFinding[] = (report?.issues ?? [])
    .filter((issue) => issue.line !== undefined)
    .map((issue) => ({ line: issue.line!, column: issue.column, message: issue.message, severity: issue.severity }))
  const adapterChoices = status?.adapters.filter((item) => !language || item.languages.includes(language)) ?? []

  return html`
    <h1 id="page-title" tabindex="-1">Run</h1>
    <p class="lede">Run code through POST /v1/executions with its output streamed as it is produced; validate it without running it.</p>
    <form class="run-form" onSubmit=${(event: Event) => {
      event.preventDefault()
      void run()
    }}>
      <div class="controls">
        <div class="field">
          <label for="run-language">Language</label>
          <select id="run-language" value=${language}
            onChange=${(event: Event) => changeLanguage((event.currentTarget as HTMLSelectElement).value as Language)}>
            ${languages.map((item) => html`<option value=${item}>${item}</option>`)}
          </select>
        </div>
        <div class="field">
          <label for="run-adapter">Adapter</label>
          <select id="run-adapter" value=${adapter}
            onChange=${(event: Event) => setAdapter((event.currentTarget as HTMLSelectElement).value)}>
            <option value="">automatic (routing chooses)</option>
            ${adapterChoices.map(
              (item) => html`<option value=${item.name}>${item.name}
              ${item.health.state === 'unavailable' ? ' (unavailable)' : ''}</option>`,
            )}
          </select>
        </div>
        <div class="field">
          <label for="run-timeout">Time limit (ms)</label>
          <input id="run-timeout" type="number" step="1" inputmode="numeric" placeholder="policy's" value=${timeoutMs}
            onInput=${(event: Event) => setTimeoutMs((event.currentTarget as HTMLInputElement).value)} />
        </div>
        <div class="field">
          <label for="run-memory">Memory (MiB)</label>
          <input id="run-memory" type="number" step="1" inputmode="numeric" placeholder="policy's" value=${memoryMb}
            onInput=${(event: Event) => setMemoryMb((event.currentTarget as HTMLInputElement).value)} />
        </div>
      </div>
      <${CodeEditor} id="run-code" label="Code" value=${code} onChange=${setCode} indent=${language === 'python' ? '    ' : '  '}
        findings=${findings} onRun=${run} textareaRef=${textarea} />
      <div class="actions">
        <button type="submit" class="primary" disabled=${!language || !!running}>${running ? 'Running…' : 'Run'}</button>
        ${running ? html`<button type="button" onClick=${() => running.abort()}>Stop</button>` : null}
        <button type="button" onClick=${validate} disabled=${!language}>Validate</button>
        <button type="button" onClick=${submitTask} disabled=${!language}>Submit as task</button>
      </div>
    </form>
    <${ErrorMessage} error=${error} />
    ${
      report
        ? html`<${Findings} report=${report}
      onPick=${(line: number, column?: number) => textarea.current && focusAt(textarea.current, line, column)} />`
        : null
    }
    <section aria-labelledby="output-title" class="panel">
      <h2 id="output-title">Output</h2>
      <pre class="output" role="log" aria-live="polite" aria-busy=${running ? 'true' : 'false'} data-testid="run-output">
        ${
          chunks.length === 0
            ? html`<span class="muted">${running ? 'Waiting for output…' : 'Nothing yet.'}</span>`
            : chunks.map((chunk) => html`<span class=${chunk.stream}>${chunk.text}</span>`)
        }</pre>
    </section>
    ${
      result
        ? html`<section aria-labelledby="result-title" class="panel"><h2 id="result-title">Result</h2>
      <${ResultView} result=${result} />${
        result.runId
          ? html`<${ProducedArtifacts} api=${api} runId=${result.runId}
      />`
          : null
      }</section>`
        : null
    }
  `
}

function Findings({ report, onPick }: { report: ValidationReport; onPick: (line: number, column?: number) => void }) {
  return html`
    <section aria-labelledby="findings-title" class="panel findings" data-valid=${String(report.valid)}>
      <h2 id="findings-title">Validation</h2>
      ${
        report.issues.length === 0
          ? html`<p role="status">No findings: ${
              report.implemented
                ? `the code passes ${report.validator}'s checks.`
                : `${report.validator} cannot validate ${report.language}.`
            }</p>`
          : html`<ul role="list">
            ${report.issues.map(
              (issue) => html`<li class=${`finding finding-${issue.severity}`}>
              ${
                issue.line !== undefined
                  ? html`<button type="button" class="link" onClick=${() => onPick(issue.line!, issue.column)}>Line ${issue.line}
                    ${issue.column !== undefined ? `, column ${issue.column}` : ''}</button>`
                  : html`<span>Whole program</span>`
              }
              <span class="finding-severity">${issue.severity}</span> <code>${issue.code}</code> ${issue.message}
            </li>`,
            )}
          </ul>`
      }
    </section>
  `
}
