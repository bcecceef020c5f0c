import { ContainerModule } from 'inversify'
import type { Page } from 'playwright-core'
import { QuickJsAdapter } from '../../adapters/quickjs'
import { adapterToken, type Availability } from '../../src'
import { ACME, GLOBEX, screenshots, startConsole, undocumentedRequests, type ConsoleFixture } from './harness'

/** The console's Adapters and Activity pages in headless Chromium, against a real server with API keys. */

/** The real QuickJS, whose availability check the test can fail (as a backend going away would). */
class SwitchableQuickJs extends QuickJsAdapter {
  static down = false
  override async checkAvailability(): Promise<Availability> {
    if (SwitchableQuickJs.down)
      return { status: 'unavailable', reason: 'taken down by the console test', checkedAt: new Date().toISOString() }
    return super.checkAvailability()
  }
}

let fixture: ConsoleFixture
beforeAll(async () => {
  const replaceQuickJs = new ContainerModule(({ rebindSync }) => {
    rebindSync(adapterToken('quickjs')).to(SwitchableQuickJs).inSingletonScope()
  })
  // execution.adapter pins unpinned runs to quickjs while it is available: its going down switches the active adapter.
  fixture = await startConsole({
    modules: [replaceQuickJs],
    overrides: { execution: { enabled: ['quickjs', 'monty', 'process'], adapter: 'quickjs' } },
  })
  await fixture.execgate.checkNow()
}, 90_000)
afterAll(() => fixture?.close())
afterEach(() => fixture?.closePages())

let afterUp: (() => Promise<unknown>) | undefined
afterEach(async () => {
  await afterUp?.()
  afterUp = undefined
})

/** The text as it reads on screen (innerText: blocks apart), on one line. */
const textOf = async (page: Page, selector: string) => (await page.locator(selector).first().innerText()).replace(/\s+/g, ' ').trim()

describe('the Adapters page', () => {
  test("shows each adapter's health, breaker, slots and queues per lane, and the enforcement table", async () => {
    const page = await fixture.open({ key: ACME, path: 'adapters' })
    await page.locator('[data-testid=enforcement-table] tbody tr').first().waitFor()
    expect(await textOf(page, '[data-testid=active-adapter]')).toBe('quickjs')
    for (const name of ['quickjs', 'monty', 'process']) {
      expect(await page.getAttribute(`tr[data-adapter=${name}] td.health`, 'data-state')).toBe('available')
    }
    expect(await textOf(page, 'tr[data-adapter=quickjs]')).toMatch(
      /closed interactive 0, batch 0 2 slots, 1 kept for interactive interactive 0, batch 0$/,
    )
    // Each cell says what the server's own explanation says, limit by limit.
    for (const name of ['quickjs', 'process']) {
      const rows = fixture.execgate.explainPolicy(name).rows
      const cells = await page.locator(`[data-testid=enforcement-table] td[data-adapter=${name}] .badge`).allTextContents()
      expect(cells).toEqual(rows.map((row) => row.enforcement))
    }
    expect(await page.locator('[data-testid=enforcement-table] tbody th').allTextContents()).toEqual(
      fixture.execgate.explainPolicy('quickjs').rows.map((row) => row.limit),
    )
  })

  test('shows an adapter going down and coming back, live, with the reasons on the readiness timeline', async () => {
    const page = await fixture.open({ key: ACME, path: 'adapters' })
    await page.locator('tr[data-adapter=quickjs] td.health[data-state=available]').waitFor()
    // Every node of the fabric from the registry: with the embedded store, this one, with its heartbeat.
    const self = (await fixture.call('GET', '/v1/adapters')).node as string
    await page.locator(`[data-testid=node-table] tr[data-node="${self}"]`).waitFor()
    expect(await textOf(page, `[data-testid=node-table] tr[data-node="${self}"] th`)).toContain('(this node)')
    SwitchableQuickJs.down = true
    // Up again whatever happens here: the Activity tests run on quickjs.
    afterUp = () => ((SwitchableQuickJs.down = false), fixture.execgate.checkNow())
    await fixture.execgate.checkNow()
    // The page polls: the change shows without a reload.
    await page.locator('tr[data-adapter=quickjs] td.health[data-state=unavailable]').waitFor()
    expect(await textOf(page, 'tr[data-adapter=quickjs] td.health')).toContain('unavailable taken down by the console test')
    expect(await textOf(page, '[data-testid=active-adapter]')).toBe('auto (cheapest available)')
    await page.locator('[data-testid=timeline] li.timeline-switch').first().waitFor()
    const timeline = (await page.locator('[data-testid=timeline] li').allInnerTexts()).map((text) => text.replace(/\s+/g, ' '))
    expect(timeline[0]).toMatch(
      /Active adapter quickjs → auto.*quickjs is unavailable \(taken down by the console test\); routing to the cheapest available adapter/,
    )
    expect(timeline[1]).toMatch(/quickjs available → unavailable.*taken down by the console test/)
    await screenshots(page, 'adapters')

    SwitchableQuickJs.down = false
    await fixture.execgate.checkNow()
    await page.locator('tr[data-adapter=quickjs] td.health[data-state=available]').waitFor()
    await page.locator('[data-testid=active-adapter]', { hasText: /^quickjs$/ }).waitFor()
    expect(await textOf(page, '[data-testid=timeline] li')).toMatch(
      /Active adapter auto → quickjs.*execution.adapter quickjs is available again/,
    )
  })
})

describe('the Activity page', () => {
  const run = (body: object, key = ACME) => fixture.call('POST', '/v1/executions', body, key)

  test("charts the tenant's runs: rate, statuses, p50/p95 per adapter and lane, and updates live", async () => {
    const runs = [
      ...Array.from({ length: 6 }, (_, index) => ({ language: 'javascript', code: `${index} * 2` })),
      ...Array.from({ length: 3 }, () => ({ language: 'javascript', code: '"voice turn"', lane: 'interactive' })),
      { language: 'javascript', code: "throw new Error('bad input')" },
      { language: 'javascript', code: 'while (true) {}', timeoutMs: 200 },
      ...Array.from({ length: 3 }, (_, index) => ({ language: 'python', code: `${index} + 1`, adapter: 'monty' })),
      { language: 'bash', code: 'echo hi', adapter: 'process' },
    ]
    const statuses: string[] = []
    for (const body of runs) statuses.push((await run(body)).status)
    expect(statuses.filter((status) => status !== 'ok')).toEqual(['error', 'timeout'])
    // Another tenant's runs are not shown.
    for (let index = 0; index < 4; index++) await run({ language: 'javascript', code: '1' }, GLOBEX)

    const page = await fixture.open({ key: ACME, path: 'activity' })
    await page.locator('[data-testid=activity-total]', { hasText: String(runs.length) }).waitFor()
    const rows = await page.$$eval('[data-testid=latency-table] tbody tr', (items) =>
      items.map((row) =>
        [...(row as any).cells]
          .slice(0, 3)
          .map((cell: any) => cell.textContent.trim())
          .join(' '),
      ),
    )
    expect(rows.sort()).toEqual(['monty batch 3', 'process batch 1', 'quickjs batch 8', 'quickjs interactive 3'])
    expect(await page.locator('[data-testid=chart-statuses] rect.fill-ok').count()).toBeGreaterThan(0)
    expect(await page.locator('[data-testid=chart-statuses] rect.fill-error').count()).toBeGreaterThan(0)
    expect(await page.locator('[data-testid=chart-statuses] rect.fill-timeout').count()).toBeGreaterThan(0)
    expect(await page.locator('[data-testid=chart-latency] g.series').count()).toBe(8) // p50 and p95 of 4 series
    expect(await page.getAttribute('[data-testid=chart-statuses]', 'role')).toBe('img')
    expect(await page.locator('#chart-statuses-desc').textContent()).toBe('ok: 13, error: 1, timeout: 1')

    // Live: a new run shows within a refresh, with no reload.
    await run({ language: 'javascript', code: '"one more"' })
    await page.locator('[data-testid=activity-total]', { hasText: String(runs.length + 1) }).waitFor()
    await screenshots(page, 'activity')
  })

  test('GET /v1/activity refuses a bad window, naming the bounds', async () => {
    const response = await fixture.call('GET', '/v1/activity?windowSeconds=5')
    expect(response).toEqual({
      error: {
        code: 'EXECGATE_REQUEST_INVALID',
        message: '[execgate] invalid request: windowSeconds must be a whole number from 10 to 86400',
      },
    })
  })
})

test('the pages asked only for documented public routes of their own server, with no script error', async () => {
  expect(await undocumentedRequests(fixture)).toEqual([])
  expect([...fixture.requests]).toEqual(
    expect.arrayContaining(['GET /v1/adapters', 'GET /v1/readiness/events', 'GET /v1/adapters/quickjs/policy', 'GET /v1/activity']),
  )
  expect(fixture.problems).toEqual([])
})
