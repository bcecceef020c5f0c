import { useRef, useState } from 'preact/hooks'
import type { Plan } from '../api-types-fabric'
import { CodeEditor, focusAt, type EditorFinding } from '../components/code-editor'
import { ErrorMessage } from '../components/feedback'
import { html } from '../html'
import { jsonErrorOffset } from '../json-position'
import type { PageProps } from '../pages'
import { href, navigate } from '../router'

/** The worked example of docs/plans.md: three steps in three languages, each reading what the one before wrote. */
const SAMPLE = JSON.stringify(
  {
    goal: 'The average order value, and a line saying it',
    steps: [
      {
        id: 'orders',
        description: 'the orders',
        language: 'python',
        code: "import json\norders = [120.5, 80.0, 42.25, 310.0]\nwrite_file('orders.json', json.dumps(orders))\nlen(orders)",
      },
      {
        id: 'average',
        description: 'the mean order value',
        language: 'javascript',
        dependsOn: ['orders'],
        code:
          "const orders = JSON.parse(await read_file('steps/orders/files/orders.json'))\n" +
          'Math.round(orders.reduce((a, b) => a + b, 0) / orders.length * 100) / 100',
      },
      {
        id: 'report',
        description: 'one line for people',
        language: 'bash',
        dependsOn: ['orders', 'average'],
        code: 'echo "$(cat steps/orders/value.json) orders, average $(cat steps/average/value.json)"',
      },
    ],
  },
  null,
  2,
)

/** The draft, kept while the user visits other pages (for this tab's life only). */
const draft = { text: SAMPLE }

/** Where the text stops being JSON, as a line and column, with the browser's own words for what is wrong. */
function syntaxFinding(text: string, error: Error): EditorFinding {
  const before = text.slice(0, jsonErrorOffset(text) ?? text.length).split('\n')
  return { line: before.length, column: before[before.length - 1]!.length + 1, message: error.message, severity: 'error' }
}

/** Submit a plan: its JSON document (docs/plans.md) in an editor, checked as JSON here and as a plan by the server. */
export function PlanSubmitPage({ api }: PageProps) {
  const [text, setText] = useState(draft.text)
  const [finding, setFinding] = useState<EditorFinding>()
  const [error, setError] = useState<unknown>()
  const [sending, setSending] = useState(false)
  const textarea = useRef<HTMLTextAreaElement>(null)
  draft.text = text

  const submit = async () => {
    setError(undefined)
    setFinding(undefined)
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch (failure) {
      const found = syntaxFinding(text, failure as Error)
      setFinding(found)
      setError(new Error(`the text is not JSON (line ${found.line}, column ${found.column}): ${(failure as Error).message}`))
      if (textarea.current) focusAt(textarea.current, found.line, found.column)
      return
    }
    setSending(true)
    try {
      // The server checks the plan (fields, ids, dependencies, cycles, the policy's static checks) and says why not.
      const plan = await api.post<Plan>('/v1/plans', body)
      draft.text = SAMPLE
      navigate(`plans/${plan.id}`)
    } catch (failure) {
      setError(failure)
    } finally {
      setSending(false)
    }
  }

  return html`
    <p><a href=${href('plans')}>← All plans</a></p>
    <h1 id="page-title" tabindex="-1">Submit a plan</h1>
    <p class="lede">The plan as JSON: <code>goal</code>, <code>steps</code> (each with <code>id</code>, <code>language</code>,${' '}
      <code>code</code> and optional <code>dependsOn</code>, <code>description</code>, <code>limits</code>),${' '}
      <code>maxRevisions</code>, <code>priority</code>, <code>lane</code>. A step reads what a step it depends on produced under${' '}
      <code>${'steps/<id>/'}</code>. The server checks the plan and answers why it refuses one.</p>
    <form onSubmit=${(event: Event) => {
      event.preventDefault()
      void submit()
    }}>
      <${CodeEditor} id="plan-json" label="Plan (JSON)" value=${text} onChange=${(value: string) => {
        setText(value)
        setFinding(undefined)
      }} indent="  " findings=${finding ? [finding] : []} onRun=${submit} runVerb="submits" textareaRef=${textarea} />
      <div class="actions">
        <button type="submit" class="primary" disabled=${sending}>${sending ? 'Submitting…' : 'Submit plan'}</button>
        <button type="button" onClick=${() => {
          setText(SAMPLE)
          setFinding(undefined)
          setError(undefined)
        }}>Reset to the example</button>
      </div>
    </form>
    <${ErrorMessage} error=${error} context="Not submitted" />
  `
}
