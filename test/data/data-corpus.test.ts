import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { DockerAdapter } from '../../adapters/docker'
import { createExecgate, type Execgate, type ExecutionResult, type RequestFile } from '../../src'
import { generateDatasets, PRELUDE } from './corpus/datasets'
import { QUESTIONS, sameAnswer, type DataQuestion } from './corpus/questions'

/**
 * Issue 25: the data-task corpus (test/data/corpus: 46 questions over CSV files generated from a fixed seed, answers
 * computed in TypeScript) run through the service under the shipped `data` profile, on the process tier (one run per
 * question on the warm path with the files inline, and once with the files uploaded and bound in) and on the docker
 * tier through podman (uploads bound in, questions in batches so the tier's container start is paid a few times).
 */

const SOCKET = process.env.EXECGATE_PODMAN_SOCKET ?? '/run/execgate-podman/podman.sock'
const data = generateDatasets()
const inline: RequestFile[] = Object.entries(data.csv).map(([name, content]) => ({ path: name, content }))

/** The run's answers, by question id, from one batch run (every question's expression in one dict). */
function batchCode(questions: readonly DataQuestion[]): string {
  return `${PRELUDE}\n{\n${questions.map((question) => `  ${JSON.stringify(question.id)}: (${question.code}),`).join('\n')}\n}`
}

function wrongAnswers(result: ExecutionResult, questions: readonly DataQuestion[]): string[] {
  if (result.status !== 'ok') return [`the run ended ${result.status}: ${result.message ?? ''} ${result.stderr}`]
  const answers = result.value as Record<string, unknown>
  return questions
    .filter((question) => !sameAnswer(answers[question.id], question.answer(data)))
    .map((question) => `${question.id}: ${JSON.stringify(answers[question.id])} ≠ ${JSON.stringify(question.answer(data))}`)
}

async function upload(execgate: Execgate): Promise<RequestFile[]> {
  return Promise.all(
    Object.entries(data.csv).map(async ([name, content]) => ({
      path: name,
      sha256: (await execgate.uploads.put('local', Readable.from([Buffer.from(content)]))).sha256,
    })),
  )
}

test('the corpus is what the issue asks: at least 40 questions of every kind, with distinct answers', () => {
  expect(QUESTIONS.length).toBeGreaterThanOrEqual(40)
  expect(new Set(QUESTIONS.map((question) => question.id)).size).toBe(QUESTIONS.length)
  for (const kind of ['aggregate', 'groupby', 'join', 'date', 'statistics'])
    expect(QUESTIONS.filter((question) => question.kind === kind).length).toBeGreaterThanOrEqual(5)
  // The data is generated, not stored: the same seed gives the same bytes.
  expect(generateDatasets().csv).toEqual(data.csv)
})

describe('on the process tier', () => {
  let execgate: Execgate
  let dataDir: string
  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-corpus-'))
    execgate = await createExecgate({
      warm: false,
      overrides: {
        execution: { enabled: ['placeholder', 'quickjs', 'monty', 'process'] },
        readiness: { enabled: false },
        log: { level: 'silent' },
        fabric: { dataDir, ledger: { enabled: false }, files: { dir: path.join(dataDir, 'uploads') } },
      },
    })
  }, 60_000)
  afterAll(async () => {
    await execgate.dispose()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  test.each(QUESTIONS.map((question) => [question.id, question] as const))(
    '%s',
    async (_id, question) => {
      const result = await execgate.execute(
        { language: 'python', code: `${PRELUDE}\n${question.code}`, files: inline },
        { profile: 'data' },
      )
      expect(result.stderr).toBe('')
      expect({ status: result.status, adapter: result.adapter, message: result.message }).toMatchObject({
        status: 'ok',
        adapter: 'process',
      })
      if (!sameAnswer(result.value, question.answer(data)))
        throw new Error(`${question.question}: answered ${JSON.stringify(result.value)}, expected ${JSON.stringify(question.answer(data))}`)
    },
    60_000,
  )

  test('every question again in one run, with the files uploaded and bound in read-only', async () => {
    const files = await upload(execgate)
    const result = await execgate.execute({ language: 'python', code: batchCode(QUESTIONS), files }, { profile: 'data' })
    expect(result.adapter).toBe('process')
    expect(wrongAnswers(result, QUESTIONS)).toEqual([])
  }, 120_000)
})

describe('on the docker tier (podman)', () => {
  let execgate: Execgate
  let dataDir: string
  beforeAll(async () => {
    const availability = await new DockerAdapter({ socketPath: SOCKET }).checkAvailability()
    if (availability.status !== 'available')
      throw new Error(`the docker adapter's engine is not ready (run scripts/setup/podman.sh): ${availability.reason}`)
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-corpus-docker-'))
    execgate = await createExecgate({
      warm: false,
      overrides: {
        execution: { enabled: ['placeholder', 'docker'] },
        adapters: { docker: { socketPath: SOCKET } },
        readiness: { enabled: false },
        log: { level: 'silent' },
        fabric: { dataDir, ledger: { enabled: false }, files: { dir: path.join(dataDir, 'uploads') } },
      },
    })
  }, 120_000)
  afterAll(async () => {
    await execgate?.dispose()
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
  })

  const BATCHES = 3
  const batches = Array.from({ length: BATCHES }, (_, index) => QUESTIONS.filter((_question, at) => at % BATCHES === index))
  test.each(batches.map((batch, index) => [index + 1, batch] as const))(
    'batch %i of the corpus, the files uploaded and bound in read-only',
    async (_index, batch) => {
      const files = await upload(execgate)
      const result = await execgate.execute({ language: 'python', code: batchCode(batch), files }, { profile: 'data' })
      expect(result.adapter).toBe('docker')
      expect(wrongAnswers(result, batch)).toEqual([])
    },
    180_000,
  )
})
