import type { Page } from 'playwright-core'
import { ACME, GLOBEX, screenshots, startConsole, undocumentedRequests, type ConsoleFixture } from './harness'
// Functions passed to page.evaluate run in the browser; the project's type library has no DOM, so their globals are declared here.
declare const document: any

/** The console's Tasks pages in headless Chromium, against a real server with API keys and the embedded task store. */

let fixture: ConsoleFixture
beforeAll(async () => {
  // Long enough for a task to be caught running, suspended and resumed before its time limit.
  fixture = await startConsole({ overrides: { security: { defaultPolicy: { wallTimeMs: 60_000 } } } })
}, 90_000)
afterAll(() => fixture?.close())
afterEach(() => fixture?.closePages())

/** Submits the Run page's code as a task and lands on the task's page; returns its id. */
async function submitFromRunPage(page: Page, setUp: (page: Page) => Promise<void>): Promise<string> {
  await page.locator('#run-language option').first().waitFor({ state: 'attached' })
  await setUp(page)
  await page.click('button:text-is("Submit as task")')
  await page.waitForURL(/#\/tasks\/[^/]+$/)
  return decodeURIComponent(new URL(page.url()).hash.replace('#/tasks/', ''))
}

const stateOf = (page: Page) => page.getAttribute('.task-state .badge', 'data-value')
const waitForState = (page: Page, state: string) => page.locator(`.task-state .badge[data-value=${state}]`).waitFor()
const logOf = async (page: Page) =>
  (await page.locator('[data-testid=action-log] li').allInnerTexts()).map((text) => text.replace(/\s+/g, ' '))

test('a task submitted from the Run page completes, with its action log, and shows in the list under each filter', async () => {
  const page = await fixture.open({ key: ACME, path: 'run' })
  const id = await submitFromRunPage(page, async () => {
    await page.selectOption('#run-language', 'javascript')
    await page.fill('#run-code', 'console.log("from a task")\n6 * 7')
  })
  await waitForState(page, 'COMPLETED')
  await page.locator('.result[data-status=ok]').waitFor()
  expect(await page.locator('.result-value pre').textContent()).toBe('42')
  expect(
    await page.locator('[data-testid=action-log] li').evaluateAll((items) => items.map((item) => item.getAttribute('data-to'))),
  ).toEqual(['PENDING', 'SPAWNING', 'RUNNING', 'COMPLETED'])
  await screenshots(page, 'task')

  const tagged = await fixture.call('POST', '/v1/tasks', {
    request: { language: 'python', code: 'sum(range(10))' },
    intentId: 'console-intent',
  })
  const foreign = await fixture.call(
    'POST',
    '/v1/tasks',
    { request: { language: 'javascript', code: '1' }, intentId: 'console-intent' },
    GLOBEX,
  )
  await page.click('nav a:text-is("Tasks")')
  await page.locator(`tr[data-task="${id}"][data-state=COMPLETED]`).waitFor()
  await page.locator(`tr[data-task="${tagged.id}"][data-state=COMPLETED]`).waitFor()
  const listed = () =>
    page.locator('[data-testid=task-table] tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-task')))
  // Newest first, and never another tenant's.
  expect(await listed()).toEqual([tagged.id, id])
  await screenshots(page, 'tasks')

  await page.fill('#task-intent', 'console-intent')
  await page.click('button:text-is("Filter")')
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=task-table] tbody tr').length === 1)
  expect(await listed()).toEqual([tagged.id])
  await page.fill('#task-intent', '')
  await page.click('button:text-is("Filter")')
  await page.selectOption('#task-state', 'FAILED')
  await page.locator('[data-testid=no-tasks]').waitFor()
  expect(await page.locator('[data-testid=no-tasks]').textContent()).toBe('No task matches these filters.')
  await page.selectOption('#task-state', 'COMPLETED')
  await page.locator('[data-testid=task-table]').waitFor()
  expect(await listed()).toEqual([tagged.id, id])

  // Another tenant's task answers exactly like a missing one.
  const other = await fixture.open({ key: ACME, path: `tasks/${foreign.id}` })
  const alert = other.locator('.error-message[role=alert]')
  await alert.waitFor()
  expect(await alert.innerText()).toContain(`no task "${foreign.id}" for tenant acme (EXECGATE_NOT_FOUND)`)
})

test('a running task is suspended, resumed and cancelled from its page, its log and output updating live', async () => {
  const page = await fixture.open({ key: ACME, path: 'run' })
  const id = await submitFromRunPage(page, async () => {
    await page.selectOption('#run-language', 'bash')
    await page.selectOption('#run-adapter', 'process')
    await page.fill('#run-code', 'echo "started"; sleep 30; echo "never"')
  })
  await waitForState(page, 'RUNNING')
  await page.locator('pre.output .stdout', { hasText: 'started' }).waitFor()
  const button = (name: string) => page.locator(`.actions button:text-is("${name}")`)
  expect([await button('Resume').isDisabled(), await button('Suspend').isDisabled(), await button('Cancel task').isDisabled()]).toEqual([
    true,
    false,
    false,
  ])

  await button('Suspend').click()
  await waitForState(page, 'SUSPENDED')
  await page.locator('[data-testid=action-log] li[data-to=SUSPENDED]').waitFor()
  expect((await logOf(page)).at(-1)).toContain('suspended by the caller')
  expect(await button('Resume').isDisabled()).toBe(false)

  await button('Resume').click()
  await page.locator('[data-testid=action-log] li[data-to=RUNNING] >> nth=1').waitFor()
  expect((await logOf(page)).at(-1)).toMatch(/→ RUNNING.*attempt 2/)

  await button('Cancel task').click()
  await waitForState(page, 'TERMINATED')
  await page.locator('[data-testid=action-log] li[data-to=TERMINATED]').waitFor()
  expect((await logOf(page)).at(-1)).toContain('cancelled by the caller')
  expect(await page.locator('.actions button:disabled').count()).toBe(3)
  expect(await stateOf(page)).toBe('TERMINATED')
  expect((await fixture.call('GET', `/v1/tasks/${id}`)).state).toBe('TERMINATED')

  // A second cancel (from a tab that had not heard of the first: its buttons still enabled) is refused by the server
  // (409), and the page says why in the server's words.
  const stale = await fixture.open({ key: ACME, path: `tasks/${id}` })
  await stale.locator('.task-state .badge').waitFor()
  await stale.evaluate(() => document.querySelectorAll('.actions button').forEach((item: any) => (item.disabled = false)))
  await stale.click('.actions button:text-is("Cancel task")')
  await stale.locator('.error-message[role=alert]').waitFor()
  expect(await stale.locator('.error-message[role=alert]').innerText()).toMatch(
    /task .* is TERMINATED and cannot be .*\(EXECGATE_TASK_CONFLICT\)/,
  )
})

test('the pages asked only for documented public routes of their own server, with no script error', async () => {
  expect(await undocumentedRequests(fixture)).toEqual([])
  const used = [
    /^POST \/v1\/tasks$/,
    /^GET \/v1\/tasks$/,
    /^GET \/v1\/tasks\/[^/]+\/events$/,
    /^DELETE \/v1\/tasks\/[^/]+$/,
    /^POST \/v1\/tasks\/[^/]+\/(suspend|resume)$/,
  ]
  expect(used.filter((route) => ![...fixture.requests].some((request) => route.test(request)))).toEqual([])
  expect(fixture.problems).toEqual([])
})
