import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { ContainerModule } from 'inversify'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { createExecgate, type Execgate } from '../../src'
import { serve, type RunningServer } from '../../src/server/serve'
// Functions passed to page.evaluate run in the browser; the project's type library has no DOM, so their globals are declared here.
declare const sessionStorage: any

/**
 * The console's end-to-end fixture: a real execgate served by `serve` on a loopback port with API keys, and Debian's
 * chromium (scripts/setup/chromium.sh) driven headless by playwright-core. Every page records the requests it makes
 * and its errors, so each test file can check that the console used only the documented public routes of its own
 * server (nothing from the internet) and raised no script error or CSP violation.
 */

export const ACME = 'acme-key-0123456789abcdef'
export const GLOBEX = 'globex-key-0123456789abcdef'
export const CHROMIUM = '/usr/bin/chromium'
const ROOT = path.resolve(__dirname, '..', '..')
// The suite takes every screenshot on every run; they land in docs/console/ only with `npm run screenshots`, so an
// ordinary test run leaves the working tree as it was (the PNGs hold timestamps and would always differ).
export const SCREENSHOTS = process.env.EXECGATE_SCREENSHOTS_DIR
  ? path.resolve(ROOT, process.env.EXECGATE_SCREENSHOTS_DIR)
  : path.join(os.tmpdir(), 'execgate-console-screenshots')

export interface ConsoleFixture {
  execgate: Execgate
  server: RunningServer
  browser: Browser
  /** `METHOD /path` of every request any page made, and every script error or CSP violation. */
  requests: Set<string>
  problems: string[]
  open(options?: { key?: string; path?: string }): Promise<Page>
  /** Closes every page opened so far: a page left open would keep polling the server. */
  closePages(): Promise<void>
  /** The API itself, as the test's own client (to set up what a page then shows). */
  call(method: string, url: string, body?: unknown, key?: string): Promise<any>
  close(): Promise<void>
}

/** The console is served from its build: bundle it now, so the test sees the sources as they are. */
function buildConsole(): void {
  execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build-console.mjs')], { cwd: ROOT, stdio: 'pipe' })
}

export async function startConsole(
  options: { modules?: ContainerModule[]; overrides?: Record<string, unknown> } = {},
): Promise<ConsoleFixture> {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run scripts/setup/chromium.sh`)
  buildConsole()
  fs.mkdirSync(SCREENSHOTS, { recursive: true })
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-console-'))
  const execgate = await createExecgate({
    modules: options.modules,
    overrides: {
      execution: { enabled: ['quickjs', 'monty', 'process'] },
      readiness: { enabled: false, unhealthyAfter: 1 },
      log: { level: 'silent' },
      server: { apiKeys: [`acme=${ACME}`, `globex=${GLOBEX}`] },
      ...options.overrides,
      // The store stays in the test's own folder whatever else a test sets under fabric (a plan reflector).
      fabric: { ...(options.overrides?.fabric as object | undefined), dataDir },
    },
  })
  const server = await serve(execgate, { port: 0 }, false)
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-gpu',
    ],
  })
  const contexts: BrowserContext[] = []
  const requests = new Set<string>()
  const problems: string[] = []
  const closePages = async () => {
    for (const context of contexts.splice(0)) await context.close().catch(() => undefined)
  }
  return {
    execgate,
    server,
    browser,
    requests,
    problems,
    async open({ key, path: route = '' } = {}) {
      const context = await browser.newContext({
        viewport: { width: 1280, height: 800 },
        colorScheme: 'light',
        locale: 'en-GB',
        timezoneId: 'UTC',
      })
      contexts.push(context)
      // A key the user typed earlier in this tab's session.
      if (key) await context.addInitScript((value) => sessionStorage.setItem('execgate.apiKey', value), key)
      const page = await context.newPage()
      page.setDefaultTimeout(15_000)
      page.on('request', (request) => {
        const url = new URL(request.url())
        requests.add(url.origin === new URL(server.url).origin ? `${request.method()} ${url.pathname}` : `OTHER ORIGIN ${request.url()}`)
      })
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
      // Refused requests (401, 404, 409) are logged by the browser as "Failed to load resource": the tests cause them.
      page.on(
        'console',
        (message) =>
          message.type() === 'error' &&
          !message.text().startsWith('Failed to load resource') &&
          problems.push(`console: ${message.text()}`),
      )
      await page.goto(`${server.url}/console/${route ? `#/${route}` : ''}`)
      return page
    },
    closePages,
    async call(method, url, body, key = ACME) {
      const response = await fetch(server.url + url, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
      return response.json()
    },
    async close() {
      await closePages()
      await browser.close()
      await server.shutdown()
      fs.rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** The page in the light and the dark scheme, into docs/console/<name>-light.png and -dark.png (docs/console.md shows them). */
export async function screenshots(page: Page, name: string): Promise<void> {
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme })
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-${colorScheme}.png`), fullPage: true })
  }
  await page.emulateMedia({ colorScheme: 'light' })
}

/**
 * The issue's rule, checked on what the browser really asked for: every request went to the server's own origin, to
 * the console's files or to a route of the OpenAPI document (so also in docs/api.md), never to a private route. A
 * sandbox file's `{path}` is documented as a workspace path that may contain `/`.
 */
export async function undocumentedRequests(fixture: ConsoleFixture): Promise<string[]> {
  const document = (await (await fetch(`${fixture.server.url}/docs/json`)).json()) as { paths: Record<string, Record<string, unknown>> }
  const routes = Object.entries(document.paths).flatMap(([template, methods]) =>
    Object.keys(methods).map(
      (method) => new RegExp(`^${method.toUpperCase()} ${template.replace(/\{path\}$/, '.+').replace(/\{[^}]+\}/g, '[^/]+')}$`),
    ),
  )
  return [...fixture.requests].filter(
    (request) => !/^GET \/console\/[\w.-]*$/.test(request) && !routes.some((route) => route.test(request)),
  )
}
