import { useState } from 'preact/hooks'
import { html } from '../html'
import type { PageProps } from '../pages'
import { navigate } from '../router'

const SHA256 = /^[0-9a-f]{64}$/

/** Artifacts: open one by its SHA-256, or a run's provenance by its run id (both as the Run page's results give them). */
export function ArtifactsPage(_props: PageProps) {
  const [digest, setDigest] = useState('')
  const [runId, setRunId] = useState('')
  const [problem, setProblem] = useState<{ field: 'digest' | 'run'; message: string }>()
  const openArtifact = (event: Event) => {
    event.preventDefault()
    const typed = digest
      .trim()
      .toLowerCase()
      .replace(/^sha256:/, '')
    if (!SHA256.test(typed))
      return setProblem({
        field: 'digest',
        message: 'A SHA-256 is 64 hexadecimal characters (0-9, a-f), with or without a sha256: prefix.',
      })
    navigate(`artifacts/${typed}`)
  }
  const openRun = (event: Event) => {
    event.preventDefault()
    const typed = runId.trim()
    if (!typed) return setProblem({ field: 'run', message: 'Enter a run id (the runId of a result).' })
    navigate(`runs/${typed}`)
  }
  return html`
    <h1 id="page-title" tabindex="-1">Artifacts</h1>
    <p class="lede">Every run is recorded in the artifact ledger: its code, inputs, files, value and long output are kept as${' '}
      artifacts, addressed by their SHA-256, and linked to the runs that used and generated them. A run's result links to its${' '}
      provenance and to what it produced; or paste a digest or a run id here.</p>
    <form class="controls lookup" onSubmit=${openArtifact} aria-label="Open an artifact">
      <div class="field grow">
        <label for="artifact-digest">Artifact SHA-256</label>
        <input id="artifact-digest" value=${digest} spellcheck=${false} autocomplete="off" placeholder="64 hexadecimal characters"
          aria-invalid=${problem?.field === 'digest' ? 'true' : undefined}
          aria-describedby=${problem?.field === 'digest' ? 'lookup-problem' : undefined}
          onInput=${(event: Event) => setDigest((event.currentTarget as HTMLInputElement).value)} />
      </div>
      <button type="submit" class="primary">Open artifact</button>
    </form>
    <form class="controls lookup" onSubmit=${openRun} aria-label="Open a run's provenance">
      <div class="field grow">
        <label for="run-id">Run id</label>
        <input id="run-id" value=${runId} spellcheck=${false} autocomplete="off"
          aria-invalid=${problem?.field === 'run' ? 'true' : undefined}
          aria-describedby=${problem?.field === 'run' ? 'lookup-problem' : undefined}
          onInput=${(event: Event) => setRunId((event.currentTarget as HTMLInputElement).value)} />
      </div>
      <button type="submit">Open run</button>
    </form>
    ${problem ? html`<div id="lookup-problem" class="error-message" role="alert">${problem.message}</div>` : null}
  `
}
