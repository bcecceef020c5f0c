import { ACME, GLOBEX, screenshots, startConsole, type ConsoleFixture } from './harness'
// Functions passed to page.evaluate run in the browser; the project's type library has no DOM, so their globals are declared here.
declare const document: any

/**
 * The Run page draws a run's rich outputs: a chart as an image the browser decodes, a table as a table with its row
 * count. Headless Chromium against a real server; real Python with the data stack on the process tier, under the
 * shipped `data` profile for the tenant.
 */
let fixture: ConsoleFixture
beforeAll(async () => {
  fixture = await startConsole({
    overrides: { server: { apiKeys: [`acme=${ACME}`, `globex=${GLOBEX}`], tenants: { acme: { profile: 'data' } } } },
  })
}, 90_000)
afterAll(() => fixture?.close())
afterEach(() => fixture?.closePages())

test('a chart is drawn as an image and a DataFrame as a table, in the order the code made them', async () => {
  const page = await fixture.open({ key: ACME, path: 'run' })
  await page.locator('#run-language option').first().waitFor({ state: 'attached' })
  await page.selectOption('#run-language', 'python')
  await page.selectOption('#run-adapter', 'process')
  await page.fill(
    '#run-code',
    [
      'import pandas as pd',
      'import matplotlib.pyplot as plt',
      "sales = pd.DataFrame({'region': ['north', 'south', 'north'], 'revenue': [10.5, 20, 5]})",
      "sales.groupby('region').revenue.sum().plot(kind='bar', title='Revenue by region')",
      'plt.show()',
      "sales.groupby('region', as_index=False).revenue.sum()",
    ].join('\n'),
  )
  await page.click('button[type=submit]')
  await page.locator('.result[data-status=ok]').waitFor({ timeout: 60_000 })
  const outputs = page.locator('[data-testid=run-outputs]')
  await outputs.locator('img').waitFor()
  // Decoded by the browser at the figure's size: a real PNG, drawn.
  const drawn = await page.evaluate(() => {
    const image = document.querySelector('[data-testid=run-outputs] img')
    return { complete: image.complete, width: image.naturalWidth, height: image.naturalHeight }
  })
  expect(drawn).toEqual({ complete: true, width: 640, height: 480 })
  expect(await outputs.locator('figure').evaluateAll((figures) => figures.map((figure: any) => figure.className))).toEqual([
    'output-image',
    'output-table',
  ])
  expect(await outputs.locator('table th').allTextContents()).toEqual(['region', 'revenue'])
  expect(await outputs.locator('table tbody tr').evaluateAll((rows) => rows.map((row: any) => row.textContent))).toEqual([
    'north15.5',
    'south20',
  ])
  expect(await outputs.locator('.output-table figcaption').textContent()).toBe('Output 2: 2 rows')
  await screenshots(page, 'run-outputs')
  expect(fixture.problems).toEqual([])
}, 120_000)
