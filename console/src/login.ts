import { useRef, useState } from 'preact/hooks'
import { ApiError, createApi, describeFailure } from './api'
import { html } from './html'

/** Checks a key against a cheap authenticated route; resolves when the server accepts it. */
export async function checkKey(key: string | undefined): Promise<void> {
  await createApi(key).get('/v1/languages')
}

/** What a refused key means, in words: never a blank page. */
export function refusalMessage(error: unknown): string {
  if (error instanceof ApiError && error.status === 401)
    return (
      `This server did not accept the API key: ${describeFailure(error)}. ` +
      'Check the key (a tenant=key pair of server.apiKeys or EXECGATE_API_KEYS gives it) and try again.'
    )
  return describeFailure(error)
}

/** The one place the key is typed in; it is then kept for this tab's session only. */
export function LoginPage({ message, onSignedIn }: { message?: string; onSignedIn: (key: string) => void }) {
  const [key, setKey] = useState('')
  const [problem, setProblem] = useState(message)
  const [checking, setChecking] = useState(false)
  const input = useRef<HTMLInputElement>(null)
  const submit = async (event: Event) => {
    event.preventDefault()
    const typed = key.trim()
    if (!typed) {
      setProblem('Enter an API key.')
      return input.current?.focus()
    }
    setChecking(true)
    try {
      await checkKey(typed)
      onSignedIn(typed)
    } catch (error) {
      setProblem(refusalMessage(error))
      input.current?.select()
    } finally {
      setChecking(false)
    }
  }
  return html`
    <main id="main" class="login" tabindex="-1">
      <form class="login-card" onSubmit=${submit} aria-describedby="login-help">
        <h1 id="page-title">execgate console</h1>
        <p id="login-help">Sign in with an API key of this server. The key stays in this browser tab for this session only${' '}
          (sessionStorage) and goes to the server as <code>Authorization: Bearer</code>.</p>
        <div class="field">
          <label for="api-key">API key</label>
          <input id="api-key" ref=${input} type="password" autocomplete="off" spellcheck=${false} value=${key}
            aria-invalid=${problem ? 'true' : undefined} aria-describedby=${problem ? 'login-problem' : undefined}
            onInput=${(event: Event) => setKey((event.currentTarget as HTMLInputElement).value)} />
        </div>
        ${problem ? html`<div id="login-problem" class="error-message" role="alert">${problem}</div>` : null}
        <button type="submit" class="primary" disabled=${checking}>${checking ? 'Checking…' : 'Sign in'}</button>
      </form>
    </main>
  `
}
