import fs from 'node:fs'
import type { Page } from 'playwright-core'
import { ACME, GLOBEX, screenshots, startConsole, undocumentedRequests, type ConsoleFixture } from './harness'
// Functions passed to page.evaluate run in the browser; the project's type library has no DOM, so their globals are declared here.
declare const document: any, location: any

/**
 * The console's Sandboxes pages in headless Chromium, against a real server with API keys and real sandboxes: the
 * native shell (just-bash, in memory) and the process backend (bubblewrap, output streamed).
 */

let fixture: ConsoleFixture
beforeAll(async () => {
  fixture = await startConsole({ overrides: { execution: { enabled: ['quickjs', 'shell', 'process'] } } })
}, 90_000)
afterAll(() => fixture?.close())
afterEach(() => fixture?.closePages())

const execs = (page: Page) => page.locator('[data-testid=exec]')
const idOf = (page: Page) => decodeURIComponent(new URL(page.url()).hash.replace('#/sandboxes/', ''))

/** Types a command and runs it with Enter; resolves with the exec's entry once its result is in. */
async function exec(page: Page, command: string) {
  const before = await execs(page).count()
  await page.fill('#sandbox-command', command)
  await page.press('#sandbox-command', 'Enter')
  const entry = execs(page).nth(before)
  await entry.locator('.exec-status .badge').waitFor()
  return entry
}

/** Starts a sandbox from the list page on `backend`; lands on its page. */
async function start(page: Page, backend: string): Promise<string> {
  await page.locator('#sandbox-adapter option[value=shell]').waitFor({ state: 'attached' })
  await page.selectOption('#sandbox-adapter', backend)
  await page.click('button:text-is("Start a sandbox")')
  await page.waitForURL(/#\/sandboxes\/[^/]+$/)
  await page.locator('[data-testid=sandbox-adapter]', { hasText: backend }).waitFor()
  return idOf(page)
}

test('a native-shell sandbox: exec with history, files listed, viewed, uploaded, downloaded and deleted, then stopped', async () => {
  const page = await fixture.open({ key: ACME, path: 'sandboxes' })
  await page.locator('[data-testid=no-sandboxes]').waitFor()
  // Only the backends that can host a sandbox are offered.
  expect(await page.locator('#sandbox-adapter option').evaluateAll((options) => options.map((option: any) => option.value))).toEqual([
    '',
    'shell',
    'process',
  ])
  const id = await start(page, 'shell')

  const first = await exec(page, 'echo hi > a.txt')
  expect([await first.getAttribute('data-status'), await first.locator('[data-testid=exit-code]').textContent()]).toEqual(['ok', 'exit 0'])
  const second = await exec(page, 'cat a.txt')
  expect(await second.locator('.exec-output').textContent()).toBe('hi\n')
  const failed = await exec(page, 'cat missing.txt')
  expect([await failed.getAttribute('data-status'), await failed.locator('[data-testid=exit-code]').textContent()]).toEqual([
    'error',
    'exit 1',
  ])
  expect(await failed.locator('.exec-output .stderr').textContent()).toContain('missing.txt')

  // The arrows go through the history, newest first, and back to what was being typed.
  await page.fill('#sandbox-command', 'ls')
  const command = () => page.inputValue('#sandbox-command')
  const seen: string[] = []
  for (const key of ['ArrowUp', 'ArrowUp', 'ArrowUp', 'ArrowUp', 'ArrowDown', 'ArrowDown', 'ArrowDown']) {
    await page.press('#sandbox-command', key)
    seen.push(await command())
  }
  expect(seen).toEqual(['cat missing.txt', 'cat a.txt', 'echo hi > a.txt', 'echo hi > a.txt', 'cat a.txt', 'cat missing.txt', 'ls'])

  // The file browser lists what the execs wrote, and views it.
  const files = () => page.locator('[data-testid=file-table] tbody tr').evaluateAll((rows) => rows.map((row: any) => row.dataset.file))
  await page.locator('[data-testid=file-table] tr[data-file="a.txt"]').waitFor()
  await page.click('button[aria-label="View a.txt"]')
  expect(await page.locator('[data-testid=file-view] pre').textContent()).toBe('hi\n')

  // Upload, into a folder: the next exec sees it.
  await page.setInputFiles('#upload-file', {
    name: 'notes.md',
    mimeType: 'text/markdown',
    buffer: Buffer.from('# notes\n- total the tea\n'),
  })
  expect(await page.inputValue('#upload-path')).toBe('notes.md')
  await page.fill('#upload-path', 'docs/notes.md')
  await page.click('button:text-is("Upload")')
  await page.locator('[data-testid=file-table] tr[data-file="docs/notes.md"]').waitFor()
  expect(await files()).toEqual(['a.txt', 'docs/notes.md'])
  expect(await (await exec(page, 'grep -c tea docs/notes.md')).locator('.exec-output').textContent()).toBe('1\n')
  await screenshots(page, 'sandbox')

  const [saved] = await Promise.all([page.waitForEvent('download'), page.click('button[aria-label="Download docs/notes.md"]')])
  expect([saved.suggestedFilename(), fs.readFileSync((await saved.path())!, 'utf8')]).toEqual(['notes.md', '# notes\n- total the tea\n'])
  await page.click('button[aria-label="Delete a.txt"]')
  await page.waitForFunction(() => !document.querySelector('[data-testid=file-table] tr[data-file="a.txt"]'))
  expect(await files()).toEqual(['docs/notes.md'])
  expect((await fixture.call('GET', `/v1/sandboxes/${id}/files`)).files).toEqual([{ path: 'docs/notes.md', size: 24 }])

  // Snapshot, then a fork from it: a new sandbox with the same files, opened at once.
  await page.click('[data-testid=sandbox-snapshot]')
  await page.locator('[data-testid=sandbox-last-snapshot]').waitFor()
  const snapshotId = (await fixture.call('GET', `/v1/sandboxes/${id}`)).lastSnapshot.id as string
  expect(await page.locator('[data-testid=sandbox-last-snapshot] a').getAttribute('title')).toBe(snapshotId)
  await page.click('button:text-is("Start from snapshot")')
  await page.waitForURL((url) => url.hash.startsWith('#/sandboxes/') && !url.hash.endsWith(id))
  const forkId = idOf(page)
  expect((await fixture.call('GET', `/v1/sandboxes/${forkId}/files`)).files).toEqual([{ path: 'docs/notes.md', size: 24 }])
  await page.click('button:text-is("Stop sandbox")')
  await page.waitForURL(/#\/sandboxes$/)
  await page.goto(page.url().replace(/#\/sandboxes$/, `#/sandboxes/${encodeURIComponent(id)}`))
  await page.locator('[data-testid=sandbox-adapter]').waitFor()

  await page.click('button:text-is("Stop sandbox")')
  await page.waitForURL(/#\/sandboxes$/)
  await page.locator('[data-testid=no-sandboxes]').waitFor()
  expect((await fixture.call('GET', '/v1/sandboxes')).sandboxes).toEqual([])
})

test("a process sandbox streams an exec's output live; the list shows the tenant's sandboxes and stops one", async () => {
  const page = await fixture.open({ key: ACME, path: 'sandboxes' })
  await start(page, 'process')
  await page.fill('#sandbox-command', 'echo first; sleep 1.5; echo second')
  await page.press('#sandbox-command', 'Enter')
  const entry = execs(page).first()
  await entry.locator('.exec-output', { hasText: 'first' }).waitFor()
  // Seen while the exec still runs: no status yet, and not the second line.
  expect([await entry.getAttribute('data-status'), await entry.locator('.exec-output').textContent()]).toEqual(['running', 'first\n'])
  await entry.locator('.exec-status .badge[data-value=ok]').waitFor()
  expect(await entry.locator('.exec-output').textContent()).toBe('first\nsecond\n')

  const other = await fixture.call('POST', '/v1/sandboxes', { adapter: 'shell' })
  const foreign = await fixture.call('POST', '/v1/sandboxes', { adapter: 'shell' }, GLOBEX)
  await page.click('a:text-is("← All sandboxes")')
  await page.locator(`[data-testid=sandbox-table] tr[data-sandbox="${other.id}"]`).waitFor()
  const listed = () =>
    page.locator('[data-testid=sandbox-table] tbody tr').evaluateAll((rows) => rows.map((row: any) => row.cells[1].textContent))
  expect((await listed()).sort()).toEqual(['process', 'shell'])
  expect(await page.locator(`tr[data-sandbox="${foreign.id}"]`).count()).toBe(0)
  await screenshots(page, 'sandboxes')
  await page.click(`button[aria-label="Stop sandbox ${other.id}"]`)
  await page.waitForFunction((id) => !document.querySelector(`tr[data-sandbox="${id}"]`), other.id)
  expect(await listed()).toEqual(['process'])

  // Another tenant's sandbox answers exactly like a missing one.
  await page.goto(`${fixture.server.url}/console/#/sandboxes/${foreign.id}`)
  await page.locator('.error-message[role=alert]').waitFor()
  expect(await page.locator('.error-message[role=alert]').innerText()).toContain(
    `no sandbox "${foreign.id}" for tenant acme (EXECGATE_NOT_FOUND)`,
  )
})

test('a file saved from a sandbox to the ledger opens as an artifact generated by that sandbox, linked to it', async () => {
  const sandbox = await fixture.call('POST', '/v1/sandboxes', { adapter: 'shell' })
  expect((await fixture.call('POST', `/v1/sandboxes/${sandbox.id}/exec`, { command: 'printf "total,42" > report.csv' })).status).toBe('ok')
  const saved = await fixture.call('POST', `/v1/sandboxes/${sandbox.id}/artifacts`, { path: 'report.csv' })
  const page = await fixture.open({ key: ACME, path: `artifacts/${saved.sha256}` })
  const generatedBy = page.locator('.lede a', { hasText: `sandbox ${sandbox.id.slice(0, 8)}` })
  await generatedBy.waitFor()
  await generatedBy.click()
  await page.waitForFunction((id) => location.hash === `#/sandboxes/${id}`, sandbox.id)
  await page.locator('#sandbox-command').waitFor()
})

test('a wrong key on the Sandboxes pages shows a clear message, never a blank page', async () => {
  for (const path of ['sandboxes', 'sandboxes/0b5c1d9e-0000-4000-8000-000000000000']) {
    const page = await fixture.open({ key: 'wrong-key-0123456789abcdef', path })
    await page.locator('#login-problem[role=alert]').waitFor()
    expect(await page.locator('#login-problem').textContent()).toMatch(
      /did not accept the API key: \[execgate\] the API key is not valid \(EXECGATE_UNAUTHORIZED\)/,
    )
  }
})

test('the pages asked only for documented public routes of their own server, with no script error', async () => {
  expect(await undocumentedRequests(fixture)).toEqual([])
  const used = [
    /^POST \/v1\/sandboxes$/,
    /^GET \/v1\/sandboxes$/,
    /^GET \/v1\/sandboxes\/[^/]+$/,
    /^DELETE \/v1\/sandboxes\/[^/]+$/,
    /^POST \/v1\/sandboxes\/[^/]+\/exec$/,
    /^GET \/v1\/sandboxes\/[^/]+\/files$/,
    /^PUT \/v1\/sandboxes\/[^/]+\/files\/docs\/notes\.md$/,
    /^GET \/v1\/sandboxes\/[^/]+\/files\/a\.txt$/,
    /^DELETE \/v1\/sandboxes\/[^/]+\/files\/a\.txt$/,
  ]
  expect(used.filter((route) => ![...fixture.requests].some((request) => route.test(request)))).toEqual([])
  expect(fixture.problems).toEqual([])
})
