import { useEffect, useState } from 'preact/hooks'
import type { ExecgateStatus } from '../api-types'
import type { SandboxInfo } from '../api-types-fabric'
import { ErrorMessage, Loading } from '../components/feedback'
import { formatTime, shortId } from '../format'
import { usePolling } from '../hooks'
import { html } from '../html'
import type { PageProps } from '../pages'
import { href, navigate } from '../router'

const REFRESH_MS = 3000

/** Sandboxes: the caller's live sandboxes; start one on a backend of your choice, open one, stop one. */
export function SandboxesPage({ api }: PageProps) {
  const live = usePolling((signal) => api.get<{ sandboxes: SandboxInfo[] }>('/v1/sandboxes', { signal }), REFRESH_MS, [api])
  const [hosts, setHosts] = useState<ExecgateStatus['adapters']>()
  const [adapter, setAdapter] = useState('')
  const [idleMinutes, setIdleMinutes] = useState('')
  const [from, setFrom] = useState('')
  const [busy, setBusy] = useState<string>()
  const [error, setError] = useState<unknown>()
  useEffect(() => {
    // The adapters that can host sandboxes (`sandboxes: true` in GET /v1/adapters).
    api.get<ExecgateStatus>('/v1/adapters').then((status) => setHosts(status.adapters.filter((item) => item.sandboxes)), setError)
  }, [api])

  const start = async (event: Event) => {
    event.preventDefault()
    setBusy('start')
    setError(undefined)
    try {
      const body = {
        ...(adapter ? { adapter } : {}),
        ...(idleMinutes ? { idleTimeoutMs: Math.round(Number(idleMinutes) * 60_000) } : {}),
        ...(from.trim() ? { from: from.trim() } : {}),
      }
      const sandbox = await api.post<SandboxInfo>('/v1/sandboxes', body)
      navigate(`sandboxes/${sandbox.id}`)
    } catch (failure) {
      setError(failure)
    } finally {
      setBusy(undefined)
    }
  }
  const stop = async (id: string) => {
    setBusy(id)
    setError(undefined)
    try {
      await api.delete(`/v1/sandboxes/${encodeURIComponent(id)}`)
      live.refresh()
    } catch (failure) {
      setError(failure)
    } finally {
      setBusy(undefined)
    }
  }

  const sandboxes = live.data?.sandboxes
  return html`
    <h1 id="page-title" tabindex="-1">Sandboxes</h1>
    <p class="lede">Live environments kept across many execs: a workspace of files where each exec runs a shell command. They live in${' '}
      this server's process and end when stopped, after their idle timeout, or with the server. Updates every ${REFRESH_MS / 1000} s.</p>
    <form class="controls" onSubmit=${start} aria-label="Start a sandbox">
      <div class="field">
        <label for="sandbox-adapter">Backend</label>
        <select id="sandbox-adapter" value=${adapter}
          onChange=${(event: Event) => setAdapter((event.currentTarget as HTMLSelectElement).value)}>
          <option value="">automatic (sandboxes.adapter)</option>
          ${(hosts ?? []).map(
            (item) => html`<option value=${item.name}>
            ${item.name} (${item.languages.join(', ')})${item.health.state === 'unavailable' ? ' unavailable' : ''}</option>`,
          )}
        </select>
      </div>
      <div class="field">
        <label for="sandbox-idle">Idle timeout (minutes)</label>
        <input id="sandbox-idle" type="number" min="1" step="1" inputmode="numeric" placeholder="server's" value=${idleMinutes}
          onInput=${(event: Event) => setIdleMinutes((event.currentTarget as HTMLInputElement).value)} />
      </div>
      <div class="field">
        <label for="sandbox-from">From snapshot (optional)</label>
        <input id="sandbox-from" type="text" spellcheck="false" placeholder="a snapshot id" value=${from}
          onInput=${(event: Event) => setFrom((event.currentTarget as HTMLInputElement).value)} />
      </div>
      <button type="submit" class="primary" disabled=${busy === 'start'}>${busy === 'start' ? 'Starting…' : 'Start a sandbox'}</button>
    </form>
    ${
      hosts && hosts.length === 0
        ? html`<p class="notice"
      role="note">No enabled adapter can host sandboxes (shell, process or docker: execution.enabled).</p>`
        : null
    }
    <${ErrorMessage} error=${error} />
    <${ErrorMessage} error=${live.error} context="Could not refresh" />
    ${
      !sandboxes
        ? live.error
          ? null
          : html`<${Loading} what="sandboxes" />`
        : sandboxes.length === 0
          ? html`<p data-testid="no-sandboxes">No live sandbox.</p>`
          : html`<div class="table-scroll">
            <table class="data" data-testid="sandbox-table">
              <caption class="visually-hidden">Your live sandboxes</caption>
              <thead><tr><th scope="col">Sandbox</th><th scope="col">Backend</th><th scope="col">Languages</th><th scope="col">Execs</th>
                <th scope="col">Started</th><th scope="col">Last used</th><th scope="col">Stops if idle at</th><th scope="col">
                <span class="visually-hidden">Actions</span></th></tr></thead>
              <tbody>
                ${sandboxes.map(
                  (sandbox) => html`<tr data-sandbox=${sandbox.id}>
                  <th scope="row"><a href=${href(`sandboxes/${sandbox.id}`)} title=${sandbox.id}
                    aria-label=${`Sandbox ${sandbox.id}`}><code>${shortId(sandbox.id)}</code></a></th>
                  <td>${sandbox.adapter}</td>
                  <td>${sandbox.languages.join(', ')}</td>
                  <td>${sandbox.execs}</td>
                  <td><time datetime=${sandbox.createdAt}>${formatTime(sandbox.createdAt)}</time></td>
                  <td><time datetime=${sandbox.lastUsedAt}>${formatTime(sandbox.lastUsedAt)}</time></td>
                  <td><time datetime=${sandbox.expiresAt}>${formatTime(sandbox.expiresAt)}</time></td>
                  <td><button type="button" disabled=${busy === sandbox.id} onClick=${() => stop(sandbox.id)}
                    aria-label=${`Stop sandbox ${sandbox.id}`}>${busy === sandbox.id ? 'Stopping…' : 'Stop'}</button></td>
                </tr>`,
                )}
              </tbody>
            </table>
          </div>`
    }
  `
}
