import type { Page } from 'playwright-core'
import { FakeConverse } from '../fakes/converse-server'
import { ACME, GLOBEX, screenshots, startConsole, undocumentedRequests, type ConsoleFixture } from './harness'
// Functions passed to page.evaluate run in the browser; the project's type library has no DOM, so their globals are declared here.
declare const document: any, window: any, performance: any

/**
 * The console's Plans pages in headless Chromium, against a real server with API keys, the embedded plan store, real
 * steps on quickjs and the process adapter, and the reflector configured as Bedrock Converse, spoken to by the real
 * SDK client at a local server with scripted replies (as test/fabric/plans/plans.test.ts does).
 */

process.env.AWS_ACCESS_KEY_ID ??= 'AKIDEXECGATETEST'
process.env.AWS_SECRET_ACCESS_KEY ??= 'execgate-test-secret'

const replies: ConstructorParameters<typeof FakeConverse>[0] = []
const converse = new FakeConverse(replies)
let fixture: ConsoleFixture
beforeAll(async () => {
  const endpoint = await converse.listen()
  fixture = await startConsole({
    overrides: { fabric: { plans: { reflector: { modelId: 'anthropic.claude-3-5-haiku-20241022-v1:0', endpoint } } } },
  })
}, 90_000)
afterAll(async () => {
  await fixture?.close()
  await converse.close()
})
afterEach(() => fixture?.closePages())

const busy = (ms: number) => `const t0 = Date.now(); while (Date.now() - t0 < ${ms}) {}`
const planState = (page: Page, state: string) => page.locator(`.plan-state .badge[data-value=${state}]`).waitFor()
const node = (page: Page, step: string, state: string) =>
  page.locator(`[data-testid=plan-graph] g[data-node="${step}"][data-state=${state}]`)

/** Types a plan into the Submit page's editor and submits it. */
async function submitPlan(page: Page, plan: unknown): Promise<void> {
  await page.click('a:text-is("Submit a plan")')
  await page.locator('#plan-json').waitFor()
  await page.fill('#plan-json', typeof plan === 'string' ? plan : JSON.stringify(plan, null, 2))
  await page.click('button:text-is("Submit plan")')
}

test('a plan submitted as JSON shows its steps as a graph, the first one running, then completed, live', async () => {
  const page = await fixture.open({ key: ACME, path: 'plans' })
  await submitPlan(page, {
    goal: 'double a slow number',
    steps: [
      { id: 'slow', description: 'takes its time', language: 'javascript', code: `${busy(1500)}; 21` },
      { id: 'double', language: 'javascript', dependsOn: ['slow'], code: 'JSON.parse(await read_file("steps/slow/value.json")) * 2' },
    ],
  })
  await page.waitForURL(/#\/plans\/[0-9a-f-]{36}$/)
  // Marks this document: a reload would lose the mark.
  await page.evaluate(() => (window.sameDocument = true))
  await node(page, 'slow', 'RUNNING').waitFor()
  // The dependent waits, in the graph (an edge from slow) and in the table.
  expect(await page.locator('[data-testid=plan-graph] g[data-node=double]').getAttribute('data-state')).toBe('PENDING')
  expect(await page.locator('[data-testid=plan-graph] path.edge[data-from=slow][data-to=double]').count()).toBe(1)
  expect(await page.locator('[data-testid=plan-graph] g[data-node=slow] .node-detail').textContent()).toBe('RUNNING')
  expect(await page.locator('[data-testid=step-table] tr[data-step=slow]').getAttribute('data-state')).toBe('RUNNING')

  await node(page, 'slow', 'COMPLETED').waitFor()
  await node(page, 'double', 'COMPLETED').waitFor()
  await planState(page, 'COMPLETED')
  expect(await page.evaluate(() => window.sameDocument)).toBe(true)
  expect(await page.locator('.plan-state [role=status]').textContent()).toBe('stream ended')
  // The graph is a picture: its description says the same for screen readers, and the table is the way in by keyboard.
  expect(await page.locator('#plan-graph-desc').textContent()).toBe('slow: COMPLETED; double: COMPLETED, after slow')
  await page.locator('[data-testid=step-table] tr[data-step=double] button').focus()
  await page.keyboard.press('Enter')
  await page.locator('[data-testid=step-detail] .result[data-status=ok]').waitFor()
  expect(await page.locator('[data-testid=step-detail] .result-value pre').textContent()).toBe('42')
  expect(await page.locator('.plan-state ~ .actions button:text-is("Cancel plan")').isDisabled()).toBe(true)

  // First render of a plan's page (measured, not asserted): cold loads, navigation start to the graph drawn.
  const planPath = new URL(page.url()).hash.slice(2)
  const samples: number[] = []
  for (let sample = 0; sample < 5; sample++) {
    const cold = await fixture.open({ key: ACME, path: planPath })
    await cold.locator('[data-testid=plan-graph] g.node').first().waitFor({ state: 'attached' })
    samples.push(await cold.evaluate(() => Math.round(performance.now())))
  }
  console.log(
    `[console] first render of a plan's page with its graph, 5 cold loads: ` +
      `${samples.join(', ')} ms (median ${[...samples].sort((a, b) => a - b)[2]})`,
  )
})

test("a revised plan shows its versions, what the revision changed and why, and the reflector's answers", async () => {
  const report = { id: 'report', language: 'bash', dependsOn: ['average'], code: 'echo "average: $(cat steps/average/value.json)"' }
  // The reflector answers with the steps not completed: average fixed, report as it was.
  replies.push(
    JSON.stringify({
      note: 'orders has no sum(): add them up with reduce',
      steps: [
        {
          id: 'average',
          language: 'javascript',
          dependsOn: ['orders'],
          code: 'const o = JSON.parse(await read_file("steps/orders/value.json"))\no.reduce((a, b) => a + b, 0) / o.length',
        },
        report,
      ],
    }),
  )
  const plan = await fixture.call('POST', '/v1/plans', {
    goal: 'the average order value',
    steps: [
      { id: 'orders', language: 'javascript', code: '[120, 80, 40]' },
      {
        id: 'average',
        language: 'javascript',
        dependsOn: ['orders'],
        code: 'const o = JSON.parse(await read_file("steps/orders/value.json"))\no.sum() / o.length',
      },
      report,
    ],
  })
  expect(plan.state).toBe('RUNNING')
  const page = await fixture.open({ key: ACME, path: `plans/${plan.id}` })
  await planState(page, 'COMPLETED')
  const versions = page.locator('[data-testid=plan-versions] > li')
  await page.locator('[data-testid=plan-versions] > li[data-version="2"]').waitFor()
  expect(await versions.count()).toBe(2)
  const second = page.locator('[data-testid=plan-versions] > li[data-version="2"]')
  expect((await second.innerText()).replace(/\s+/g, ' ')).toMatch(
    new RegExp(
      /Version 2 current .*Why: revision 1: step average failed: error: TypeError: .*not a function/.source +
        /.*Reflector's note: orders has no sum\(\): add them up with reduce/.source,
    ),
  )
  const changes = Object.fromEntries(
    await second
      .locator('.changes > div')
      .evaluateAll((items) => items.map((item: any) => [item.dataset.change, item.querySelector('dd').textContent.trim()])),
  )
  expect(changes).toEqual({ added: 'none', removed: 'none', changed: 'average', reused: 'orders' })
  expect(await versions.first().locator('.reason').first().textContent()).toBe('Why: submitted')
  // What the change replaced: the old code beside the new.
  await second.locator('summary').click()
  expect(await second.locator('pre.code.removed').textContent()).toContain('o.sum()')
  expect(await second.locator('pre.code.added').textContent()).toContain('o.reduce(')
  expect(
    await page
      .locator('[data-testid=plan-revisions] tbody tr')
      .evaluateAll((rows) => rows.map((row: any) => row.innerText.replace(/\s+/g, ' ').trim())),
  ).toEqual(['1 average accepted 2 orders has no sum(): add them up with reduce'])
  // The current version's steps: orders kept its run from version 1.
  expect(await page.locator('[data-testid=plan-graph] g[data-node=orders] .node-detail').textContent()).toBe('COMPLETED · reused v1')
  expect(await page.locator('[data-testid=step-table] tbody tr').evaluateAll((rows) => rows.map((row: any) => row.dataset.state))).toEqual([
    'COMPLETED',
    'COMPLETED',
    'COMPLETED',
  ])
  await page.locator('[data-testid=step-table] tr[data-step=report] button').click()
  await page.locator('[data-testid=step-detail] .output .stdout', { hasText: 'average: 80' }).waitFor()
  await screenshots(page, 'plan')
})

test("the list filters by state; a refused plan shows the server's reason; a running plan is cancelled", async () => {
  const page = await fixture.open({ key: ACME, path: 'plans' })
  // Not JSON: said where, before anything is sent.
  await submitPlan(page, '{ "steps": [ }')
  const alert = page.locator('.error-message[role=alert]')
  await alert.waitFor()
  expect(await alert.innerText()).toMatch(/^Not submitted: the text is not JSON \(line 1, column 14\)/)
  expect(await page.getAttribute('.gutter-line[data-line="1"]', 'class')).toContain('has-finding')
  // A plan the server refuses: its own words.
  await page.fill(
    '#plan-json',
    JSON.stringify(
      {
        goal: 'a cycle',
        steps: [
          { id: 'a', language: 'javascript', code: '1', dependsOn: ['b'] },
          { id: 'b', language: 'javascript', code: '1', dependsOn: ['a'] },
        ],
      },
      null,
      2,
    ),
  )
  await page.click('button:text-is("Submit plan")')
  await page.locator('.error-message[role=alert]', { hasText: 'dependency cycle' }).waitFor()
  expect(await alert.innerText()).toMatch(/Not submitted: .*dependency cycle: a -> b -> a.*\(EXECGATE_REQUEST_INVALID\)/)
  await screenshots(page, 'plan-submit')

  await page.fill(
    '#plan-json',
    JSON.stringify({
      goal: 'wait a while',
      steps: [
        { id: 'nap', language: 'bash', code: 'sleep 4; echo woke' },
        { id: 'after', language: 'javascript', dependsOn: ['nap'], code: '1' },
      ],
    }),
  )
  await page.click('button:text-is("Submit plan")')
  await page.waitForURL(/#\/plans\/[0-9a-f-]{36}$/)
  const napping = decodeURIComponent(new URL(page.url()).hash.replace('#/plans/', ''))
  await node(page, 'nap', 'RUNNING').waitFor()
  await page.click('button:text-is("Cancel plan")')
  await planState(page, 'TERMINATED')
  await node(page, 'nap', 'TERMINATED').waitFor()
  expect(await page.locator('button:text-is("Cancel plan")').isDisabled()).toBe(true)

  const foreign = await fixture.call('POST', '/v1/plans', { steps: [{ id: 'x', language: 'javascript', code: '1' }] }, GLOBEX)
  await page.click('a:text-is("← All plans")')
  await page.locator(`tr[data-plan="${napping}"][data-state=TERMINATED]`).waitFor()
  const listed = () => page.locator('[data-testid=plan-table] tbody tr').evaluateAll((rows) => rows.map((row: any) => row.dataset.state))
  // Newest first: this test's plan, then the revised one and the live one of the tests before; never another tenant's.
  expect(await listed()).toEqual(['TERMINATED', 'COMPLETED', 'COMPLETED'])
  expect(await page.locator(`tr[data-plan="${foreign.id}"]`).count()).toBe(0)
  await screenshots(page, 'plans')
  await page.selectOption('#plan-state', 'TERMINATED')
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=plan-table] tbody tr').length === 1)
  expect(await listed()).toEqual(['TERMINATED'])
  await page.selectOption('#plan-state', 'FAILED')
  await page.locator('[data-testid=no-plans]').waitFor()

  // Another tenant's plan answers exactly like a missing one.
  const other = await fixture.open({ key: ACME, path: `plans/${foreign.id}` })
  await other.locator('.error-message[role=alert]').waitFor()
  expect(await other.locator('.error-message[role=alert]').innerText()).toContain(
    `no plan "${foreign.id}" for tenant acme (EXECGATE_NOT_FOUND)`,
  )
})

// After the list's test, which counts the tenant's plans.
test('Suspend holds a running plan (SUSPENDED, its running step suspended); Resume runs it on to COMPLETED', async () => {
  const plan = await fixture.call('POST', '/v1/plans', {
    goal: 'hold on',
    steps: [
      { id: 'slow', language: 'javascript', code: `${busy(1500)}; 21` },
      { id: 'double', language: 'javascript', dependsOn: ['slow'], code: 'JSON.parse(await read_file("steps/slow/value.json")) * 2' },
    ],
  })
  const page = await fixture.open({ key: ACME, path: `plans/${plan.id}` })
  const button = (name: string) => page.locator(`.actions button:text-is("${name}")`)
  await node(page, 'slow', 'RUNNING').waitFor()
  expect(await button('Resume').isDisabled()).toBe(true)
  await button('Suspend').click()
  await planState(page, 'SUSPENDED')
  await node(page, 'slow', 'SUSPENDED').waitFor()
  expect([await button('Suspend').isDisabled(), await button('Resume').isDisabled(), await button('Cancel plan').isDisabled()]).toEqual([
    true,
    false,
    false,
  ])
  await button('Resume').click()
  await planState(page, 'COMPLETED')
  await node(page, 'double', 'COMPLETED').waitFor()
  expect([await button('Suspend').isDisabled(), await button('Resume').isDisabled()]).toEqual([true, true])
})

test('a wrong key on the Plans pages shows a clear message, never a blank page', async () => {
  const refused = async (page: Page) => {
    const alert = page.locator('#login-problem[role=alert]')
    await alert.waitFor()
    expect(await alert.textContent()).toMatch(/did not accept the API key: \[execgate\] the API key is not valid \(EXECGATE_UNAUTHORIZED\)/)
  }
  for (const path of ['plans', 'plans/0b5c1d9e-0000-4000-8000-000000000000'])
    await refused(await fixture.open({ key: 'wrong-key-0123456789abcdef', path }))
  // The Submit page asks nothing of the server until it submits: the refusal comes then.
  const page = await fixture.open({ key: 'wrong-key-0123456789abcdef', path: 'plans/new' })
  await page.click('button:text-is("Submit plan")')
  await refused(page)
})

test('the pages asked only for documented public routes of their own server, with no script error', async () => {
  expect(await undocumentedRequests(fixture)).toEqual([])
  const used = [
    /^POST \/v1\/plans$/,
    /^GET \/v1\/plans$/,
    /^GET \/v1\/plans\/[^/]+$/,
    /^GET \/v1\/plans\/[^/]+\/events$/,
    /^DELETE \/v1\/plans\/[^/]+$/,
    /^POST \/v1\/plans\/[^/]+\/suspend$/,
    /^POST \/v1\/plans\/[^/]+\/resume$/,
  ]
  expect(used.filter((route) => ![...fixture.requests].some((request) => route.test(request)))).toEqual([])
  expect(fixture.problems).toEqual([])
})
