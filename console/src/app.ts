import { useEffect, useMemo, useState } from 'preact/hooks'
import { ApiError, createApi, describeFailure } from './api'
import { useHeadingFocus } from './hooks'
import { html } from './html'
import { LoginPage, checkKey, refusalMessage } from './login'
import { PAGES } from './pages'
import { href, matchPattern, useHashPath } from './router'
import { storeKey, storedKey } from './session'

type Auth =
  | { state: 'checking' }
  | { state: 'login'; message?: string }
  | { state: 'unreachable'; message: string }
  | { state: 'in'; key: string | undefined }

/**
 * The console's shell: finds out whether the server wants a key (an open server on loopback does not), asks for one
 * if so, then shows the navigation and the page of the hash route.
 */
export function App() {
  // A key from earlier in this tab's session is used at once (no round trip first): if the server refuses it, the
  // page's first request brings the sign-in back with the reason.
  const [auth, setAuth] = useState<Auth>(() => (storedKey() ? { state: 'in', key: storedKey() } : { state: 'checking' }))
  const connect = (key: string | undefined) => {
    checkKey(key).then(
      () => setAuth({ state: 'in', key }),
      (error) => {
        if (error instanceof ApiError && error.status === 401) {
          storeKey(undefined)
          setAuth({ state: 'login', ...(key ? { message: refusalMessage(error) } : {}) })
        } else setAuth({ state: 'unreachable', message: describeFailure(error) })
      },
    )
  }
  useEffect(() => {
    if (auth.state === 'checking') connect(undefined)
  }, [])

  if (auth.state === 'checking') return html`<main id="main" class="centered"><p role="status">Connecting to execgate…</p></main>`
  if (auth.state === 'unreachable') {
    return html`<main id="main" class="centered"><div class="error-message" role="alert">
      <strong>The console cannot reach the server:</strong> ${auth.message}</div><button type="button" onClick=${() => {
        setAuth({ state: 'checking' })
        connect(storedKey())
      }}>Try again</button></main>`
  }
  if (auth.state === 'login') {
    return html`<${LoginPage} message=${auth.message} onSignedIn=${(key: string) => {
      storeKey(key)
      setAuth({ state: 'in', key })
    }} />`
  }
  return html`<${Shell} authKey=${auth.key} onSignOut=${(message?: string) => {
    storeKey(undefined)
    setAuth({ state: 'login', ...(message ? { message } : {}) })
  }} />`
}

function Shell({ authKey, onSignOut }: { authKey: string | undefined; onSignOut: (message?: string) => void }) {
  const path = useHashPath()
  // One client for the session; a 401 on any call (a revoked key) signs out with the server's reason.
  const api = useMemo(() => createApi(authKey, (error) => onSignOut(refusalMessage(error))), [authKey])
  const found = PAGES.map((page) => ({ page, params: matchPattern(page.path, path) })).find((item) => item.params)
  useEffect(() => {
    if (!found) location.replace(href('run'))
  }, [found])
  useEffect(() => {
    if (found) document.title = `${found.page.title} · execgate console`
  }, [found?.page])
  useHeadingFocus(path)
  const current = found?.page.parent ?? found?.page.path
  const Page = found?.page.component

  return html`
    <a class="skip-link" href="#main" onClick=${(event: Event) => {
      event.preventDefault()
      document.getElementById('main')?.focus()
    }}>Skip to content</a>
    <header class="top-bar">
      <span class="brand">execgate <span class="muted">console</span></span>
      <nav aria-label="Console pages">
        <ul>
          ${PAGES.filter((page) => !page.parent).map(
            (page) => html`<li>
            <a href=${href(page.path)} aria-current=${page.path === current ? 'page' : undefined}>${page.title}</a></li>`,
          )}
        </ul>
      </nav>
      <div class="session">
        <span class="muted">${authKey ? 'Signed in with an API key' : 'Open server (no API keys)'}</span>
        ${authKey ? html`<button type="button" onClick=${() => onSignOut()}>Sign out</button>` : null}
      </div>
    </header>
    <main id="main" tabindex="-1">${Page && found ? html`<${Page} key=${path} api=${api} params=${found.params} />` : null}</main>
  `
}
