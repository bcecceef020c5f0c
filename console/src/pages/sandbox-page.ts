import { useEffect, useState } from 'preact/hooks'
import type { SandboxInfo, SandboxSnapshot } from '../api-types-fabric'
import { ErrorMessage, Loading } from '../components/feedback'
import { SandboxFiles } from '../components/sandbox-files'
import { SandboxTerminal } from '../components/sandbox-terminal'
import { formatDateTime, formatMs } from '../format'
import { html } from '../html'
import type { PageProps } from '../pages'
import { href, navigate } from '../router'

/** One sandbox: what it is, a terminal-like exec box, its files, Snapshot (and fork from it), and Stop. */
export function SandboxPage({ api, params }: PageProps) {
  const id = params.id!
  const path = `/v1/sandboxes/${encodeURIComponent(id)}`
  const [info, setInfo] = useState<SandboxInfo>()
  const [error, setError] = useState<unknown>()
  const [execsDone, setExecsDone] = useState(0)
  const [stopping, setStopping] = useState(false)
  useEffect(() => {
    api.get<SandboxInfo>(path).then((found) => (setInfo(found), setError(undefined)), setError)
  }, [api, path, execsDone])

  const [snapshotting, setSnapshotting] = useState(false)
  const snapshot = async () => {
    setSnapshotting(true)
    setError(undefined)
    try {
      const taken = await api.post<SandboxSnapshot>(`${path}/snapshots`, {})
      setInfo((current) => (current ? { ...current, lastSnapshot: taken } : current))
    } catch (failure) {
      setError(failure)
    } finally {
      setSnapshotting(false)
    }
  }
  const fork = async (from: string) => {
    setError(undefined)
    try {
      const started = await api.post<SandboxInfo>('/v1/sandboxes', { adapter: info?.adapter, from })
      navigate(`sandboxes/${started.id}`)
    } catch (failure) {
      setError(failure)
    }
  }

  const stop = async () => {
    setStopping(true)
    setError(undefined)
    try {
      await api.delete(path)
      navigate('sandboxes')
    } catch (failure) {
      setError(failure)
      setStopping(false)
    }
  }

  const heading = html`<p><a href=${href('sandboxes')}>← All sandboxes</a></p>
    <h1 id="page-title" tabindex="-1">Sandbox <code>${id}</code></h1>`
  if (!info) return html`${heading}${error ? html`<${ErrorMessage} error=${error} />` : html`<${Loading} what="the sandbox" />`}`
  const policy = info.policy as { wallTimeMs?: number; memoryMb?: number; filesystem?: string; network?: string }
  return html`
    ${heading}
    <div class="actions"><button type="button" onClick=${snapshot} disabled=${snapshotting} data-testid="sandbox-snapshot">
      ${snapshotting ? 'Taking a snapshot…' : 'Snapshot'}</button> <button type="button" onClick=${stop} disabled=${stopping}>
      ${stopping ? 'Stopping…' : 'Stop sandbox'}</button></div>
    <${ErrorMessage} error=${error} />
    <dl class="facts">
      <div><dt>Backend</dt><dd data-testid="sandbox-adapter">${info.adapter}</dd></div>
      <div><dt>Languages</dt><dd>${info.languages.join(', ')}</dd></div>
      <div><dt>Execs</dt><dd>${info.execs}</dd></div>
      <div><dt>Started</dt><dd>${formatDateTime(info.createdAt)}</dd></div>
      <div><dt>Stops if idle at</dt><dd>${formatDateTime(info.expiresAt)}${' '}
        <span class="muted">(idle timeout ${
          info.idleTimeoutMs >= 60_000 ? `${Math.round(info.idleTimeoutMs / 60_000)} min` : formatMs(info.idleTimeoutMs)
        })</span></dd></div>
      ${
        info.lastSnapshot
          ? html`<div><dt>Last snapshot</dt><dd data-testid="sandbox-last-snapshot">
        <a href=${href(`artifacts/${info.lastSnapshot.id}`)} title=${info.lastSnapshot.id}>
        <code>${info.lastSnapshot.id.slice(0, 12)}</code></a>${' '}
        <span class="muted">(${info.lastSnapshot.files} files, ${formatDateTime(info.lastSnapshot.createdAt)})</span>${' '}
        <button type="button" onClick=${() => fork(info.lastSnapshot!.id)}>Start from snapshot</button></dd></div>`
          : null
      }
      <div><dt>Each exec at most</dt><dd>${[
        policy.wallTimeMs !== undefined && formatMs(policy.wallTimeMs),
        policy.memoryMb !== undefined && `${policy.memoryMb} MiB`,
        policy.filesystem && `files ${policy.filesystem}`,
        policy.network && `network ${policy.network}`,
      ]
        .filter(Boolean)
        .join(', ')}</dd></div>
    </dl>
    <section class="panel" aria-labelledby="terminal-title">
      <h2 id="terminal-title">Exec</h2>
      <${SandboxTerminal} api=${api} sandboxId=${id} onExecuted=${() => setExecsDone((value) => value + 1)} />
    </section>
    <section class="panel" aria-labelledby="files-title">
      <h2 id="files-title">Files</h2>
      <${SandboxFiles} api=${api} sandboxId=${id} version=${execsDone} />
    </section>
  `
}
