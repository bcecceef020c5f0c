import { createExecgate, type Execgate } from '../../src'
import { CodeExecutionHandler } from '../../src/agents/handler'

/**
 * The voice and chat handler with a run that makes a chart and a table: voice says in words what was made and
 * speaks the table's numbers; chat shows the chart inline and the table as Markdown. Real Python with the data stack
 * on the process tier (python runs under the shipped `data` profile here); the code is given, so no model is needed.
 */
const CODE = [
  'import pandas as pd',
  'import matplotlib.pyplot as plt',
  "sales = pd.DataFrame({'region': ['north', 'south', 'east', 'north'], 'revenue': [1200.5, 980, 450.25, 300]})",
  "totals = sales.groupby('region').revenue.sum().sort_values(ascending=False)",
  "totals.plot(kind='bar')",
  'totals',
].join('\n')

let execgate: Execgate
beforeAll(async () => {
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['process'] },
      security: { languageProfiles: { python: 'data' } },
      readiness: { enabled: false },
      log: { level: 'silent' },
    },
  })
}, 60_000)
afterAll(() => execgate?.dispose(), 30_000)

test('voice says that a chart and a table were made and speaks the totals', async () => {
  const handler = new CodeExecutionHandler(execgate, undefined, undefined, { voiceBudgetMs: 60_000 })
  const response = await handler.handleComputationRequest({ description: 'revenue by region, as a chart', code: CODE, channel: 'voice' })
  expect({ outcome: response.outcome, message: response.result?.message }).toEqual({ outcome: 'ok', message: undefined })
  expect(response.text).toBe('I made a chart and a table. revenue: north 1,500.5, south 980, east 450.25.')
}, 120_000)

test('chat shows the chart inline and the table as Markdown', async () => {
  const handler = new CodeExecutionHandler(execgate)
  const response = await handler.handleComputationRequest({ description: 'revenue by region, as a chart', code: CODE, channel: 'chat' })
  expect(response.outcome).toBe('ok')
  expect(response.text).toContain('Made a chart (PNG), a table (region, revenue; 3 rows).')
  expect(response.text).toContain('| region | revenue |\n| --- | --- |\n| north | 1500.5 |\n| south | 980 |\n| east | 450.25 |')
  expect(response.text).toMatch(/!\[chart 1\]\(data:image\/png;base64,iVBORw0KGgo[A-Za-z0-9+/=]+\)/)
}, 120_000)
