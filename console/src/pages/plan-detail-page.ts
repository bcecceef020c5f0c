import { useEffect, useRef, useState } from 'preact/hooks'
import type { TaskState } from '../api-types'
import type { Plan, PlanEvent, PlanState, PlanStepView } from '../api-types-fabric'
import { DagGraph, type GraphNode } from '../components/dag-graph'
import { Badge, ErrorMessage, Loading } from '../components/feedback'
import { PlanRevisions, PlanVersions } from '../components/plan-versions'
import { ResultView } from '../components/result-view'
import { formatDateTime } from '../format'
import { html } from '../html'
import { STREAM_WORDS, useLiveStream } from '../live-stream'
import type { PageProps } from '../pages'
import { href } from '../router'
import { FactList } from '../components/fact-list'

/** A step's colour in the graph; its state is written in the node too. */
const STEP_TONES: Record<TaskState, string> = {
  PENDING: 'plain',
  SPAWNING: 'busy',
  RUNNING: 'busy',
  SUSPENDED: 'warn',
  COMPLETED: 'good',
  FAILED: 'bad',
  TERMINATED: 'warn',
}
const ENDED: readonly TaskState[] = ['COMPLETED', 'FAILED', 'TERMINATED', 'SUSPENDED']

type LiveStep = { state: TaskState; reason: string; attempt: number }

/** The plan states each action is offered in (the server answers 409 in any other). */
const CAN: Record<'cancel' | 'suspend' | 'resume', readonly PlanState[]> = {
  cancel: ['RUNNING', 'REVISING', 'SUSPENDED'],
  suspend: ['RUNNING'],
  resume: ['SUSPENDED'],
}

/**
 * One plan: its current version's steps as a graph and a table, their states live from GET /v1/plans/:id/events; its
 * versions and what each revision changed; Cancel (DELETE), Suspend and Resume (POST …/suspend, …/resume).
 */
export function PlanDetailPage({ api, params }: PageProps) {
  const id = params.id!
  const path = `/v1/plans/${encodeURIComponent(id)}`
  const [plan, setPlan] = useState<Plan>()
  const [loadError, setLoadError] = useState<unknown>()
  // The stream's word on each step, by `<version>:<stepId>`: newer than the last GET while a step moves.
  const [live, setLive] = useState<Record<string, LiveStep>>({})
  const [selected, setSelected] = useState<string>()
  const [busy, setBusy] = useState<string>()
  const [actionError, setActionError] = useState<unknown>()
  const reloadTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined)

  const reload = () => api.get<Plan>(path).then((found) => (setPlan(found), setLoadError(undefined)), setLoadError)
  // Events come in bursts (a step's SPAWNING, RUNNING): one GET after the burst brings results and new versions.
  const reloadSoon = () => {
    clearTimeout(reloadTimer.current)
    reloadTimer.current = setTimeout(() => void reload(), 150)
  }
  const stream = useLiveStream(api, `${path}/events`, {
    onEvent(event) {
      const data = JSON.parse(event.data) as PlanEvent
      if (data.type === 'step') {
        setLive((before) => ({
          ...before,
          [`${data.version}:${data.stepId}`]: { state: data.to, reason: data.reason, attempt: data.attempt },
        }))
        if (ENDED.includes(data.to)) reloadSoon()
      } else reloadSoon()
    },
    onEnd: () => void reload(),
    onRefused: setLoadError,
  })
  useEffect(() => {
    void reload()
    return () => clearTimeout(reloadTimer.current)
  }, [path])

  const act = async (label: string, call: () => Promise<Plan>) => {
    setBusy(label)
    setActionError(undefined)
    try {
      setPlan(await call())
    } catch (failure) {
      setActionError(failure)
    } finally {
      setBusy(undefined)
    }
  }

  if (!plan)
    return html`<p><a href=${href('plans')}>← All plans</a></p><h1 id="page-title" tabindex="-1">Plan <code>${id}</code></h1>
      ${loadError ? html`<${ErrorMessage} error=${loadError} />` : html`<${Loading} what="the plan" />`}`

  const steps = plan.steps.map((step) => ({ ...step, ...(live[`${plan.version}:${step.id}`] ?? {}) }))
  const chosen = steps.find((step) => step.id === selected)
  const facts: [string, unknown][] = [
    ['Goal', plan.goal],
    ['Reason', plan.reason],
    ['Version', plan.version],
    ['Revisions', `${plan.revisions.length} of ${plan.maxRevisions} used`],
    ['Lane', `${plan.lane}, priority ${plan.priority}`],
    ['Created', formatDateTime(plan.createdAt)],
    ['Updated', formatDateTime(plan.updatedAt)],
  ]
  return html`
    <p><a href=${href('plans')}>← All plans</a></p>
    <h1 id="page-title" tabindex="-1">Plan <code>${plan.id}</code></h1>
    <p class="plan-state">State <${Badge} value=${plan.state} /> <span class="muted" role="status">${STREAM_WORDS[stream]}</span></p>
    <div class="actions" role="group" aria-label="Plan actions">
      <button type="button" disabled=${!!busy || !CAN.cancel.includes(plan.state)}
        onClick=${() => act('cancel', () => api.delete<Plan>(path))}>${busy === 'cancel' ? 'Cancelling…' : 'Cancel plan'}</button>
      <button type="button" disabled=${!!busy || !CAN.suspend.includes(plan.state)}
        onClick=${() => act('suspend', () => api.post<Plan>(`${path}/suspend`))}>${busy === 'suspend' ? 'Suspending…' : 'Suspend'}</button>
      <button type="button" disabled=${!!busy || !CAN.resume.includes(plan.state)}
        onClick=${() => act('resume', () => api.post<Plan>(`${path}/resume`))}>${busy === 'resume' ? 'Resuming…' : 'Resume'}</button>
    </div>
    <p class="hint">Cancel terminates the plan and its running steps. Suspend holds a running plan (no step starts, running steps are${' '}
      suspended) until Resume; completed steps never run again. A plan also pauses by itself (REVISING) while the reflector revises a${' '}
      failed step.</p>
    <${ErrorMessage} error=${actionError} />
    <${ErrorMessage} error=${loadError} context="Could not refresh" />
    <${FactList} facts=${facts} />
    <section class="panel" aria-labelledby="steps-title">
      <h2 id="steps-title">Steps of version ${plan.version}</h2>
      <${DagGraph} id="plan-graph" title=${`The steps of plan ${plan.id}, version ${plan.version}`} description=${graphDescription(steps)}
        nodes=${steps.map((step): GraphNode => ({
          id: step.id,
          label: step.id,
          detail: `${step.state}${step.reusedFrom ? ` · reused v${step.reusedFrom}` : ''}`,
          tone: STEP_TONES[step.state],
          state: step.state,
          emphasis: step.id === selected,
        }))}
        edges=${steps.flatMap((step) => (step.dependsOn ?? []).map((from) => ({ from, to: step.id })))} onSelect=${setSelected} />
      <${StepTable} steps=${steps} selected=${selected} onSelect=${setSelected} />
    </section>
    ${chosen ? html`<${StepDetail} step=${chosen} />` : null}
    <${PlanVersions} plan=${plan} />
    <${PlanRevisions} plan=${plan} />
  `
}

function graphDescription(steps: readonly PlanStepView[]): string {
  return steps
    .map((step) => `${step.id}: ${step.state}${step.dependsOn?.length ? `, after ${step.dependsOn.join(' and ')}` : ''}`)
    .join('; ')
}

function StepTable({
  steps,
  selected,
  onSelect,
}: {
  steps: readonly (PlanStepView & Partial<LiveStep>)[]
  selected?: string
  onSelect: (id: string) => void
}) {
  return html`
    <div class="table-scroll">
      <table class="data" data-testid="step-table">
        <caption class="visually-hidden">The plan's steps, their states and what they depend on</caption>
        <thead><tr><th scope="col">Step</th><th scope="col">State</th><th scope="col">Depends on</th><th scope="col">Language</th>
          <th scope="col">Attempts</th><th scope="col">Task</th><th scope="col">Run</th><th scope="col">Reason</th></tr></thead>
        <tbody>
          ${steps.map(
            (step) => html`<tr data-step=${step.id} data-state=${step.state} class=${step.id === selected ? 'selected' : undefined}>
            <th scope="row"><button type="button" class="link" aria-pressed=${step.id === selected ? 'true' : 'false'}
              onClick=${() => onSelect(step.id)}>${step.id}</button>
              ${step.reusedFrom ? html` <span class="muted small">reused from v${step.reusedFrom}</span>` : null}</th>
            <td><${Badge} value=${step.state} /></td>
            <td>${step.dependsOn?.length ? step.dependsOn.join(', ') : html`<span class="muted">—</span>`}</td>
            <td>${step.language}</td>
            <td>${step.attempt ?? step.attempts}</td>
            <td><a href=${href(`tasks/${step.taskId}`)} aria-label=${`Task of step ${step.id}`}>task</a></td>
            <td>${
              step.result?.runId
                ? html`<a href=${href(`runs/${step.result.runId}`)}
              aria-label=${`Provenance of step ${step.id}'s run`}>provenance</a>`
                : html`<span class="muted">—</span>`
            }</td>
            <td class="reason">${step.reason}</td>
          </tr>`,
          )}
        </tbody>
      </table>
    </div>
  `
}

function StepDetail({ step }: { step: PlanStepView }) {
  return html`
    <section class="panel" aria-labelledby="step-detail-title" data-testid="step-detail">
      <h2 id="step-detail-title">Step ${step.id} <${Badge} value=${step.state} /></h2>
      ${step.description ? html`<p>${step.description}</p>` : null}
      <h3>Code (${step.language})</h3>
      <pre class="code">${step.code}</pre>
      ${
        step.result
          ? html`<h3>Result</h3><${ResultView} result=${step.result} showOutput=${true}
        />`
          : html`<p class="muted">No result yet.</p>`
      }
    </section>
  `
}
