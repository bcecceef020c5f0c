import type { Page } from 'playwright-core'
import { createLogger } from '../../src/observability/logger'
import { buildServer } from '../../src/server/app'
import { ACME, screenshots, startConsole, undocumentedRequests, type ConsoleFixture } from './harness'
// Functions passed to page.evaluate run in the browser; the project's type library has no DOM, so their globals are declared here.
declare const document: any, sessionStorage: any, localStorage: any, getComputedStyle: any

/** The console's sign-in and Run page in headless Chromium, against a real server with API keys. */

let fixture: ConsoleFixture
beforeAll(async () => {
  fixture = await startConsole()
}, 90_000)
afterAll(() => fixture?.close())
afterEach(() => fixture?.closePages())

const outputOf = (page: Page) => page.locator('[data-testid=run-output]').textContent()

/** The Run page, once its languages and adapters have loaded (before, Run is disabled). */
async function openRun(): Promise<Page> {
  const page = await fixture.open({ key: ACME, path: 'run' })
  await page.locator('#run-language option').first().waitFor({ state: 'attached' })
  return page
}

/** What the focused element is called: its label, else its text. */
const focusedName = (page: Page) =>
  page.evaluate(() => {
    const element = document.activeElement
    return String(element.labels?.[0]?.textContent ?? element.textContent ?? '').trim()
  })

describe('signing in', () => {
  test('a wrong key shows a clear message, never a blank page; a right one opens the Run page', async () => {
    const page = await fixture.open()
    await page.fill('#api-key', 'wrong-key-0123456789abcdef')
    await page.click('button[type=submit]')
    const alert = page.locator('#login-problem[role=alert]')
    await alert.waitFor()
    expect(await alert.textContent()).toMatch(/did not accept the API key: \[execgate\] the API key is not valid \(EXECGATE_UNAUTHORIZED\)/)
    expect(await page.getAttribute('#api-key', 'aria-invalid')).toBe('true')
    await screenshots(page, 'login')
    await page.fill('#api-key', ACME)
    await page.click('button[type=submit]')
    await page.locator('h1#page-title', { hasText: 'Run' }).waitFor()
    // Kept for the tab's session only: sessionStorage, never localStorage or a cookie.
    expect(await page.evaluate(() => [sessionStorage.getItem('execgate.apiKey'), localStorage.length, document.cookie])).toEqual([
      ACME,
      0,
      '',
    ])
  })

  test('a stored key the server no longer accepts returns to the sign-in with the reason', async () => {
    const page = await fixture.open({ key: 'revoked-key-0123456789abcdef' })
    const alert = page.locator('#login-problem[role=alert]')
    await alert.waitFor()
    expect(await alert.textContent()).toContain('the API key is not valid')
    expect(await page.evaluate(() => sessionStorage.getItem('execgate.apiKey'))).toBeNull()
  })

  test('first render: the sign-in form, and the Run page with its data (measured, not asserted)', async () => {
    // Each sample is a fresh browser context (no cache): navigation start to the page usable, by the page's own clock.
    const timing = async (key: string | undefined, selector: string) => {
      const samples: { usable: number; fromRequest: number }[] = []
      for (let sample = 0; sample < 5; sample++) {
        const page = await fixture.open({ key })
        await page.locator(selector).first().waitFor({ state: 'attached' })
        // fromRequest leaves out the browser's own start of a navigation (a new renderer process for a new context).
        samples.push(
          await page.evaluate(() => ({
            usable: Math.round(performance.now()),
            fromRequest: Math.round(performance.now() - (performance as any).getEntriesByType('navigation')[0].requestStart),
          })),
        )
      }
      const median = (values: number[]) => values.sort((a, b) => a - b)[2]
      return (
        `${samples.map((item) => item.usable).join(', ')} ms (median ` +
        `${median(samples.map((item) => item.usable))}; from the request for the page: median ` +
        `${median(samples.map((item) => item.fromRequest))})`
      )
    }
    const login = await timing(undefined, '#api-key')
    const run = await timing(ACME, '#run-language option')
    console.log(
      `[console] first render, 5 cold loads each, navigation start to usable: sign-in form ` +
        `${login}; Run page with its languages and adapters loaded ${run}`,
    )
    expect(run).toContain('median')
  })

  test('an open server (no API keys, loopback only) needs no sign-in', async () => {
    const { app } = buildServer({ execgate: fixture.execgate, logger: createLogger('silent'), tenants: new Map(), bodyLimitBytes: 1 << 20 })
    await app.listen({ host: '127.0.0.1', port: 0 })
    const context = await fixture.browser.newContext()
    try {
      const page = await context.newPage()
      await page.goto(`http://127.0.0.1:${(app.server.address() as { port: number }).port}/console`)
      await page.locator('text=Open server (no API keys)').waitFor()
      expect(await page.locator('#api-key').count()).toBe(0)
    } finally {
      await context.close()
      await app.close()
    }
  })
})

describe('the Run page', () => {
  test('streams a pinned run: a line shows while the program still runs, then the result', async () => {
    const page = await openRun()
    await page.selectOption('#run-language', 'bash')
    await page.selectOption('#run-adapter', 'process')
    await page.fill('#run-code', 'echo "line 1"\nsleep 1.5\necho "line 2"')
    await page.click('button[type=submit]')
    await page.waitForFunction(() => document.querySelector('[data-testid=run-output]')?.textContent?.includes('line 1'))
    // Seen before the program ended: the result (and line 2) come 1.5 s later.
    expect([await page.locator('.result').count(), await outputOf(page)]).toEqual([0, 'line 1\n'])
    await page.locator('.result[data-status=ok]').waitFor()
    expect(await outputOf(page)).toBe('line 1\nline 2\n')
    const facts = await page.locator('.result .facts').textContent()
    expect(facts).toContain('Adapterprocess')
    expect(facts).toContain('interactive lane')
    await screenshots(page, 'run')
  })

  test('validate shows each finding at its line and column, and takes the caret there', async () => {
    const page = await openRun()
    await page.selectOption('#run-language', 'javascript')
    await page.fill('#run-code', "const total = 6 * 7\nconst fs = require('fs')\ntotal")
    await page.click('button:text-is("Validate")')
    const finding = page.locator('.findings li', { hasText: 'import_not_allowed' })
    await finding.waitFor()
    expect(await finding.locator('button').textContent()).toBe('Line 2, column 12')
    expect(await page.getAttribute('.gutter-line[data-line="2"]', 'class')).toContain('has-finding')
    expect(await page.getAttribute('.gutter-line[data-line="1"]', 'class')).not.toContain('has-finding')
    await finding.locator('button').click()
    expect(await page.evaluate(() => document.activeElement.selectionStart)).toBe('const total = 6 * 7\n'.length + 11)
    await screenshots(page, 'run-findings')
    await page.click('button[type=submit]')
    await page.locator('.result[data-status=policy_violation]').waitFor()
  })

  test("every API error shows the server's message", async () => {
    const page = await openRun()
    await page.fill('#run-timeout', '0')
    await page.click('button[type=submit]')
    const alert = page.locator('.error-message[role=alert]')
    await alert.waitFor()
    expect(await alert.textContent()).toMatch(/invalid request: timeoutMs must be >= 1 \(EXECGATE_REQUEST_INVALID\)/)
  })
})

describe('the keyboard', () => {
  test('tabs through the navigation in order, opens a page with Enter, and moves focus to its heading', async () => {
    const page = await openRun()
    const names: string[] = []
    for (let index = 0; index < 14; index++) {
      await page.keyboard.press('Tab')
      names.push(await focusedName(page))
    }
    expect(names).toEqual([
      'Skip to content',
      'Run',
      'Adapters',
      'Activity',
      'Tasks',
      'Plans',
      'Artifacts',
      'Sandboxes',
      'Sign out',
      'Language',
      'Adapter',
      'Time limit (ms)',
      'Memory (MiB)',
      'Code',
    ])
    // Focus is visible: the focused control draws an outline.
    expect(await page.evaluate(() => getComputedStyle(document.activeElement!.closest('.editor')!).outlineStyle)).toBe('solid')
    // In the editor Shift+Tab outdents; Escape first lets it move focus, as the hint under the editor says.
    await page.keyboard.press('Escape')
    for (let index = 0; index < 11; index++) await page.keyboard.press('Shift+Tab')
    expect(await focusedName(page)).toBe('Adapters')
    await page.keyboard.press('Enter')
    await page.waitForFunction(() => document.activeElement?.id === 'page-title')
    expect([new URL(page.url()).hash, await focusedName(page)]).toEqual(['#/adapters', 'Adapters'])
  })

  test('edits and runs code with the keyboard only: Tab indents, Ctrl+Enter runs, Escape then Tab leaves the editor', async () => {
    const page = await openRun()
    for (let index = 0; index < 14; index++) await page.keyboard.press('Tab')
    await page.keyboard.press('Control+A')
    await page.keyboard.press('Delete')
    await page.keyboard.type('for (const word of ["kb", "ok"]) {')
    await page.keyboard.press('Enter') // keeps the indentation and indents after {
    await page.keyboard.type('console.log(word)')
    await page.keyboard.press('Enter')
    await page.keyboard.press('Shift+Tab')
    await page.keyboard.type('}')
    await page.keyboard.press('Enter')
    await page.keyboard.press('Tab')
    await page.keyboard.type('"done"')
    expect(await page.inputValue('#run-code')).toBe('for (const word of ["kb", "ok"]) {\n  console.log(word)\n}\n  "done"')
    await page.keyboard.press('Control+Enter')
    await page.locator('.result[data-status=ok]').waitFor()
    expect(await outputOf(page)).toBe('kb\nok\n')
    await page.keyboard.press('Escape')
    await page.keyboard.press('Tab')
    expect(await focusedName(page)).toBe('Run')
    await page.keyboard.press('Enter')
    await page.locator('.result[data-status=ok]').waitFor()
    expect(await page.locator('.result-value pre').textContent()).toBe('"done"')
  })
})

test('the pages asked only for documented public routes of their own server, with no script error', async () => {
  expect(await undocumentedRequests(fixture)).toEqual([])
  expect([...fixture.requests].filter((request) => request.startsWith('OTHER ORIGIN'))).toEqual([])
  expect(fixture.requests).toContain('POST /v1/executions')
  expect(fixture.problems).toEqual([])
})
