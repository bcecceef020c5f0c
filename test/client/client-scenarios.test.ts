import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { ExecgateClient, isExecgateClientError, type ExecutionEvent, type TaskStreamEvent } from '../../src/client'
import {
  ACME_KEY,
  METERED_KEY,
  METERED_RATE,
  startDrainingServer,
  startServeProcess,
  type DrainingServer,
  type ServeProcess,
} from './serve-harness'
import scenarios from './scenarios.json'

/**
 * The client scenario suite against a real `execgate serve` (the built CLI) on loopback; clients/python runs the same
 * scenarios (scenarios.json). Every call goes through `execgate/client` as a user's code makes it.
 */

let server: ServeProcess
let draining: DrainingServer
let client: ExecgateClient
const busy = (ms: number) => `const started = Date.now(); while (Date.now() - started < ${ms}) {}; 'done'`

beforeAll(async () => {
  ;[server, draining] = await Promise.all([startServeProcess(), startDrainingServer()])
  client = new ExecgateClient({ url: server.url, apiKey: ACME_KEY })
}, 90_000)

afterAll(async () => {
  await Promise.all([server?.stop(), draining?.stop()])
}, 30_000)

/** A fetch that records each answer's status, to see the retries the client made. */
function recordingFetch(statuses: number[]): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init)
    statuses.push(response.status)
    return response
  }
}

const scenario: Record<string, () => Promise<void>> = {
  async execute() {
    const result = await client.execute({ language: 'javascript', code: '6 * 7' })
    expect(result).toMatchObject({ status: 'ok', value: 42, adapter: 'quickjs' })
    expect(result.runId).toEqual(expect.any(String))
    const python = await client.execute({ language: 'python', code: 'sum([1, 2, 3])' })
    expect(python).toMatchObject({ status: 'ok', value: 6 })
  },

  async execute_error() {
    const raised = await client.execute({ language: 'python', code: '1 / 0' })
    expect(raised.status).toBe('error')
    expect(raised.error?.type).toBe('ZeroDivisionError')
    // A request the server refuses is a result too (execute never throws), with the registry's code.
    const invalid = await client.execute({ language: 'cobol' as never, code: '1' })
    expect(invalid).toMatchObject({ status: 'invalid_request', error: { code: 'EXECGATE_REQUEST_INVALID' } })
  },

  async stream() {
    const events: ExecutionEvent[] = []
    for await (const event of client.stream({ language: 'javascript', code: 'console.log("one"); console.log("two"); 3' }))
      events.push(event)
    const last = events.at(-1)!
    expect(last.type).toBe('result')
    expect(last.type === 'result' && last.result).toMatchObject({ status: 'ok', value: 3, stdout: 'one\ntwo\n' })
    expect(
      events
        .slice(0, -1)
        .map((event) => (event.type === 'stdout' || event.type === 'stderr' ? event.chunk : ''))
        .join(''),
    ).toBe('one\ntwo\n')
    // The same with a callback: execute streams when given onOutput.
    const chunks: string[] = []
    const result = await client.execute(
      { language: 'javascript', code: 'console.log("hi"); 1' },
      { onOutput: (_stream, chunk) => chunks.push(chunk) },
    )
    expect(result).toMatchObject({ status: 'ok', value: 1 })
    expect(chunks.join('')).toBe('hi\n')
  },

  async task() {
    const task = await client.tasks.submit(
      { request: { language: 'javascript', code: '21 * 2' }, intentId: 'client-scenario' },
      { idempotencyKey: `client-${Date.now()}` },
    )
    expect(task.state).toBe('PENDING')
    const seen: TaskStreamEvent[] = []
    for await (const event of client.tasks.events(task.id)) seen.push(event)
    expect(seen.filter((event) => event.type === 'transition').map((event) => event.type === 'transition' && event.event.to)).toEqual(
      expect.arrayContaining(['PENDING', 'RUNNING', 'COMPLETED']),
    )
    const done = await client.tasks.wait(task.id)
    expect(done).toMatchObject({ state: 'COMPLETED', result: { status: 'ok', value: 42 } })
    const listed = await client.tasks.list({ intentId: 'client-scenario' })
    expect(listed.tasks.map((item) => item.id)).toContain(task.id)
    await expect(client.tasks.get('no-such-task')).resolves.toBeUndefined()
  },

  async uploads() {
    // Unique bytes per run, so "first upload" is really the first.
    const csv = `region,amount\nnorth,${Date.now() % 1000}\nsouth,5\n`
    const methods: string[] = []
    const recording = new ExecgateClient({
      url: server.url,
      apiKey: ACME_KEY,
      fetch: async (input, init) => (methods.push(init?.method ?? 'GET'), fetch(input, init)),
    })
    const first = await recording.uploads.put(csv)
    expect(first).toMatchObject({ bytes: csv.length, reused: false, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) })
    expect(methods).toEqual(['GET', 'PUT'])
    // The same bytes again, as a Blob (what Node's fs.openAsBlob gives): asked by digest, never sent.
    methods.length = 0
    const again = await recording.uploads.put(new Blob([csv]))
    expect(again).toMatchObject({ sha256: first.sha256, reused: true })
    expect(methods).toEqual(['GET'])
    const result = await client.execute({
      language: 'javascript',
      code: '(await read_file("data/sales.csv")).trim().split("\\n").length - 1',
      files: [client.uploads.reference('data/sales.csv', first)],
    })
    expect(result).toMatchObject({ status: 'ok', value: 2 })
    expect((await client.uploads.list()).files.map((file) => file.sha256)).toContain(first.sha256)
    expect(await client.uploads.get(first.sha256)).toMatchObject({ sha256: first.sha256, bytes: csv.length })
    await expect(client.uploads.put('other bytes', { sha256: 'f'.repeat(64) })).rejects.toMatchObject({
      code: 'EXECGATE_FILE_DIGEST_MISMATCH',
    })
    expect(await client.uploads.delete(first.sha256)).toBe(true)
    expect(await client.uploads.delete(first.sha256)).toBe(false)
    expect(await client.uploads.get(first.sha256)).toBeUndefined()
    const gone = await client.execute({ language: 'javascript', code: '1', files: [{ path: 'a.csv', sha256: first.sha256 }] })
    expect(gone).toMatchObject({ status: 'invalid_request', error: { code: 'EXECGATE_FILE_NOT_FOUND' } })
  },

  async plan() {
    const plan = await client.plans.run({
      goal: 'the average order value',
      steps: [
        { id: 'orders', language: 'python', code: '[120.5, 80.0, 42.25, 310.0]' },
        {
          id: 'average',
          language: 'javascript',
          dependsOn: ['orders'],
          code: 'const o = JSON.parse(await read_file("steps/orders/value.json")); o.reduce((a, b) => a + b, 0) / o.length',
        },
      ],
    })
    expect(plan.state).toBe('RUNNING')
    const events = []
    for await (const event of client.plans.events(plan.id)) events.push(event)
    expect(events.at(-1)).toMatchObject({ type: 'plan', to: 'COMPLETED' })
    expect(
      events
        .filter((event) => event.type === 'step' && event.to === 'COMPLETED')
        .map((event) => event.type === 'step' && event.stepId)
        .sort(),
    ).toEqual(['average', 'orders'])
    const done = await client.plans.wait(plan.id)
    expect(done.state).toBe('COMPLETED')
    expect(done.steps.find((step) => step.id === 'average')?.result).toMatchObject({ status: 'ok', value: 138.1875 })
    // The plan's signed receipt covers its steps' runs, signed by the key the server publishes.
    const receipt = await client.ledger.planReceipt(plan.id)
    expect(Buffer.from(receipt.payload, 'base64').toString()).toContain(plan.id)
    expect(receipt.signatures[0]!.keyid).toBe((await client.ledger.publicKey()).keyid)
  },

  async sandbox() {
    const sandbox = await client.sandboxes.start({ adapter: 'shell' })
    try {
      expect(sandbox.info()).toMatchObject({ adapter: 'shell', tenant: 'acme' })
      await sandbox.writeFile('data/in.csv', 'a,b\n1,2\n')
      const result = await sandbox.exec('cat data/in.csv | wc -l > count.txt && cat count.txt')
      expect(result).toMatchObject({ status: 'ok', stdout: expect.stringMatching(/^\s*2\s*$/) })
      expect((await sandbox.readText('count.txt')).trim()).toBe('2')
      expect((await sandbox.listFiles()).map((file) => file.path).sort()).toEqual(['count.txt', 'data/in.csv'])
      const chunks: string[] = []
      const streamed = await sandbox.exec({ command: 'echo streamed' }, { onOutput: (_stream, chunk) => chunks.push(chunk) })
      expect(streamed.status).toBe('ok')
      expect(chunks.join('')).toBe('streamed\n')
      expect(await sandbox.deleteFile('count.txt')).toBe(true)
      expect(await sandbox.deleteFile('count.txt')).toBe(false)
      expect((await client.sandboxes.list()).map((info) => info.id)).toContain(sandbox.id)
    } finally {
      await sandbox.stop()
    }
    expect(await client.sandboxes.get(sandbox.id)).toBeUndefined()
    // A stopped sandbox's exec is a result, not a throw.
    expect(await sandbox.exec('echo gone')).toMatchObject({ status: 'invalid_request', error: { code: 'EXECGATE_NOT_FOUND' } })
  },

  async ledger() {
    const sandbox = await client.sandboxes.start({ adapter: 'shell' })
    try {
      await sandbox.exec('mkdir -p out && echo "total 42" > out/summary.txt')
      const saved = await sandbox.saveArtifact('out/summary.txt')
      expect(saved).toMatchObject({ path: 'out/summary.txt', size: 9, mediaType: 'text/plain' })
      expect(await client.files.text(saved.sha256)).toBe('total 42\n')
      const lineage = await client.ledger.lineage(saved.sha256)
      expect(lineage.ancestors.activities).toEqual([expect.objectContaining({ kind: 'sandbox_file', sandboxId: sandbox.id })])
      // A snapshot of the workspace, into the ledger; a new sandbox started from it holds the same files.
      const snapshot = await sandbox.snapshot()
      expect(snapshot).toMatchObject({ sandboxId: sandbox.id, reason: 'requested', id: expect.stringMatching(/^[0-9a-f]{64}$/) })
      const restored = await client.sandboxes.start({ adapter: 'shell', from: snapshot.id })
      try {
        expect(await restored.readText('out/summary.txt')).toBe('total 42\n')
      } finally {
        await restored.stop()
      }
    } finally {
      await sandbox.stop()
    }
    const run = await client.execute({ language: 'javascript', code: '2 + 2' })
    const record = await client.ledger.record(run.runId!)
    expect(record).toMatchObject({ seq: expect.any(Number), hash: expect.any(String) })
    const prov = await client.ledger.provenance(run.runId!)
    expect(JSON.stringify(prov)).toContain(run.runId!)
    expect(await client.ledger.verify()).toMatchObject({ ok: true })
    const exported = await client.ledger.export('openlineage', { limit: 5 })
    expect(Array.isArray(exported)).toBe(true)
    // The run's signed receipt: a DSSE envelope whose Statement names the run, signed by the key the server publishes.
    const receipt = await client.ledger.receipt(run.runId!)
    expect(receipt.payloadType).toBe('application/vnd.in-toto+json')
    expect(Buffer.from(receipt.payload, 'base64').toString()).toContain(run.runId!)
    const key = await client.ledger.publicKey()
    expect(receipt.signatures[0]!.keyid).toBe(key.keyid)
    await expect(client.ledger.receipt('no-such-run')).rejects.toMatchObject({ code: 'EXECGATE_NOT_FOUND', status: 404 })
  },

  async errors_by_code() {
    const stranger = new ExecgateClient({ url: server.url, apiKey: 'not-a-key-0123456789' })
    expect(await stranger.execute({ language: 'javascript', code: '1' })).toMatchObject({
      status: 'invalid_request',
      error: { code: 'EXECGATE_UNAUTHORIZED' },
    })
    const unauthorized = await stranger.tasks.list().catch((error: unknown) => error)
    expect(unauthorized).toMatchObject({
      name: 'ExecgateClientError',
      code: 'EXECGATE_UNAUTHORIZED',
      status: 401,
      fault: 'client',
      retryable: false,
    })
    const missing = await client.tasks.cancel('no-such-task').catch((error: unknown) => error)
    expect(isExecgateClientError(missing, 'EXECGATE_NOT_FOUND')).toBe(true)
    expect(missing).toMatchObject({ status: 404, message: expect.stringContaining('no-such-task') })
    const nowhere = new ExecgateClient({ url: 'http://127.0.0.1:9', retry: { maxAttempts: 1 } })
    expect(await nowhere.execute({ language: 'javascript', code: '1' })).toMatchObject({
      status: 'unavailable',
      error: { code: 'EXECGATE_SERVER_UNREACHABLE' },
    })
    await expect(nowhere.languages()).rejects.toMatchObject({ code: 'EXECGATE_SERVER_UNREACHABLE', retryable: true, status: 0 })
  },

  async retry_429() {
    // Tenant `metered` has 60 requests a minute: spend them without retrying, until the server says 429.
    const impatient = new ExecgateClient({ url: server.url, apiKey: METERED_KEY, retry: { maxAttempts: 1 } })
    let refused: unknown
    for (let i = 0; i <= METERED_RATE && !refused; i++)
      refused = await impatient.languages().then(
        () => undefined,
        (error: unknown) => error,
      )
    expect(refused).toMatchObject({
      code: 'EXECGATE_RATE_LIMITED',
      status: 429,
      retryable: true,
      retryAfterMs: expect.any(Number),
      attempts: 1,
    })
    // The same tenant with the default budget: the client waits out Retry-After and the run goes through.
    const statuses: number[] = []
    const patient = new ExecgateClient({ url: server.url, apiKey: METERED_KEY, fetch: recordingFetch(statuses) })
    const result = await patient.execute({ language: 'javascript', code: '40 + 2' })
    expect(result).toMatchObject({ status: 'ok', value: 42 })
    expect(statuses[0]).toBe(429)
    expect(statuses.at(-1)).toBe(200)
  },

  async retry_503() {
    const statuses: number[] = []
    const drained = new ExecgateClient({
      url: draining.url,
      apiKey: ACME_KEY,
      fetch: recordingFetch(statuses),
      retry: { maxAttempts: 3, fallbackDelayMs: 50 },
    })
    const result = await drained.execute({ language: 'javascript', code: '1' })
    expect(result).toMatchObject({ status: 'unavailable', error: { code: 'EXECGATE_SHUTTING_DOWN' } })
    expect(statuses).toEqual([503, 503, 503])
    await expect(drained.tasks.submit({ request: { language: 'javascript', code: '1' } })).rejects.toMatchObject({
      code: 'EXECGATE_SHUTTING_DOWN',
      status: 503,
      attempts: 3,
      retryable: true,
    })
  },

  async retry_budget() {
    // A Retry-After longer than what is left of the budget ends the call at once, with the wait the server asked for.
    const drainedMetered = new ExecgateClient({ url: server.url, apiKey: METERED_KEY, retry: { maxAttempts: 1 } })
    for (let i = 0; i <= METERED_RATE; i++)
      if (
        await drainedMetered.languages().then(
          () => false,
          () => true,
        )
      )
        break
    const statuses: number[] = []
    const hurried = new ExecgateClient({ url: server.url, apiKey: METERED_KEY, fetch: recordingFetch(statuses), retry: { budgetMs: 100 } })
    const error = await hurried.languages().catch((caught: unknown) => caught)
    expect(error).toMatchObject({ code: 'EXECGATE_RATE_LIMITED', attempts: 1 })
    expect(statuses).toEqual([429])
  },

  async cancel() {
    const controller = new AbortController()
    const pending = client.execute({ language: 'javascript', code: busy(3000), timeoutMs: 5000 }, { signal: controller.signal })
    setTimeout(() => controller.abort(new Error('the caller hung up')), 200)
    expect(await pending).toMatchObject({
      status: 'cancelled',
      error: { code: 'EXECGATE_REQUEST_CANCELLED', message: expect.stringContaining('the caller hung up') },
    })
    // Cancelling during a retry's wait ends the call without waiting it out.
    const waiting = new AbortController()
    const drained = new ExecgateClient({ url: draining.url, apiKey: ACME_KEY, retry: { fallbackDelayMs: 60_000, budgetMs: 600_000 } })
    const call = drained.tasks.submit({ request: { language: 'javascript', code: '1' } }, { signal: waiting.signal })
    setTimeout(() => waiting.abort(), 100)
    await expect(call).rejects.toMatchObject({ code: 'EXECGATE_REQUEST_CANCELLED', attempts: 1 })
  },
}

describe('execgate/client against a real execgate serve', () => {
  test('implements every scenario of the shared list, and no other', () => {
    expect(Object.keys(scenario).sort()).toEqual([...scenarios.scenarios].sort())
  })
  for (const name of scenarios.scenarios) test(name, () => scenario[name]!(), 60_000)
})

describe('uploads.put of a file on disk (TypeScript only: the Python client takes a path already)', () => {
  test('{ path } and a file: URL are hashed and sent from disk as a Blob, never as bytes read whole', async () => {
    const folder = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'execgate-client-path-'))
    try {
      const file = path.join(folder, 'sales.csv')
      // 3 MiB of unique rows: several read chunks, so a hash of one chunk only would differ.
      const rows = Array.from({ length: 150_000 }, (_, index) => `r${index},${(index * 7919 + Date.now()) % 100_003}`).join('\n')
      await fs.promises.writeFile(file, `region,amount\n${rows}\n`)
      const content = await fs.promises.readFile(file)
      const expected = createHash('sha256').update(content).digest('hex')
      const bodies: unknown[] = []
      const methods: string[] = []
      const recording = new ExecgateClient({
        url: server.url,
        apiKey: ACME_KEY,
        fetch: async (input, init) => (methods.push(init?.method ?? 'GET'), bodies.push(init?.body), fetch(input, init)),
      })
      const first = await recording.uploads.put({ path: file })
      expect(first).toMatchObject({ sha256: expected, bytes: content.length, reused: false })
      expect(methods).toEqual(['GET', 'PUT'])
      // The PUT's body is the file-backed Blob (fetch streams it), not a buffer of the file.
      expect(bodies[1]).toBeInstanceOf(Blob)
      expect((bodies[1] as Blob).size).toBe(content.length)
      methods.length = 0
      expect(await recording.uploads.put(pathToFileURL(file))).toMatchObject({ sha256: expected, reused: true })
      expect(methods).toEqual(['GET'])
      const counted = await client.execute({
        language: 'javascript',
        code: '(await read_file("sales.csv")).trim().split("\\n").length - 1',
        files: [client.uploads.reference('sales.csv', first)],
      })
      expect(counted).toMatchObject({ status: 'ok', value: 150_000 })
      await expect(client.uploads.put({ path: path.join(folder, 'missing.csv') })).rejects.toMatchObject({
        code: 'EXECGATE_REQUEST_INVALID',
        message: expect.stringContaining('missing.csv'),
      })
      expect(await client.uploads.delete(first.sha256)).toBe(true)
    } finally {
      await fs.promises.rm(folder, { recursive: true, force: true })
    }
  }, 60_000)
})
