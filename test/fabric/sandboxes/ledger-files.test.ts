import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../../../src'

/**
 * Sandbox files in from and out to the artifact ledger, against the real stores (ledger.sqlite and a blob folder in a
 * temp dataDir) on the native shell and bubblewrap: a file saved by one sandbox starts another; a tenant reads only
 * artifacts its own records name, exactly as GET /v1/artifacts/:sha256 decides.
 */

const CSV = 'region,sales\nnorth,3\nsouth,5\n'
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')
const UNKNOWN = 'f'.repeat(64)

let execgate: Execgate
let dataDir: string
let processRoot: string

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-sandbox-ledger-'))
  // Its own root: the process backend opens it to the sandbox uids, which a 0700 temp folder above would not let in.
  processRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-sandbox-ledger-process-'))
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['shell', 'process'] },
      adapters: { process: { persistentDir: processRoot } },
      fabric: { dataDir },
      readiness: { enabled: false },
      log: { level: 'silent' },
    },
  })
}, 60_000)

afterAll(async () => {
  await execgate.dispose()
  for (const folder of [dataDir, processRoot]) fs.rmSync(folder, { recursive: true, force: true })
})

test('round trip: an exec writes a file, saveArtifact stores it, a second sandbox starts with it by sha256 and reads it', async () => {
  const first = await execgate.sandboxes.start({ adapter: 'shell' }, { tenant: 'acme' })
  const wrote = await first.exec(`printf '${CSV.replace(/\n/g, '\\n')}' > report.csv`)
  expect(wrote.status).toBe('ok')
  const saved = await first.saveArtifact('./report.csv')
  expect(saved).toEqual({ path: 'report.csv', sha256: sha256(CSV), size: CSV.length, mediaType: 'text/csv' })
  // The blob folder of the config in force (the test setup's EXECGATE_FABRIC_DATA_DIR takes precedence over overrides).
  expect(fs.existsSync(path.join(execgate.config.fabric.dataDir, 'blobs', saved.sha256.slice(0, 2), saved.sha256))).toBe(true)
  await first.stop()

  // The ledger serves it to the tenant, and its lineage names the sandbox that generated it.
  const artifact = await execgate.ledger.artifact(saved.sha256, { tenant: 'acme' })
  expect(artifact.content.toString()).toBe(CSV)
  const lineage = await execgate.ledger.lineage(saved.sha256, { tenant: 'acme' })
  expect(lineage.ancestors.activities).toEqual([expect.objectContaining({ kind: 'sandbox_file', sandboxId: first.id, adapter: 'shell' })])
  expect(lineage.ancestors.relations).toEqual([
    expect.objectContaining({ relation: 'wasGeneratedBy', entity: saved.sha256, role: 'output' }),
  ])
  const prov = await execgate.ledger.export('prov-json', { tenant: 'acme' })
  expect(prov.activity[`sandbox:${first.id}`]).toMatchObject({ 'execgate:sandboxId': first.id })
  expect((await execgate.ledger.verify({ tenant: 'acme' })).ok).toBe(true)

  // A second sandbox, on another backend, starts with it; writeFile and an exec's files take a digest too.
  const second = await execgate.sandboxes.start(
    { adapter: 'process', files: [{ path: 'in/data.csv', sha256: `sha256:${saved.sha256.toUpperCase()}` }] },
    { tenant: 'acme' },
  )
  try {
    await second.writeFile('copy.csv', { sha256: saved.sha256 })
    const read = await second.exec({
      command:
        `total=0; while IFS=, read -r region sales; do [ "$region" = region ] || total=$((total + ` +
        `sales)); done < in/data.csv; echo $total; cmp in/data.csv copy.csv && cmp copy.csv ` +
        `late.csv && echo same`,
      files: [{ path: 'late.csv', sha256: saved.sha256 }],
    })
    expect(read).toMatchObject({ status: 'ok', stdout: '8\nsame\n', stderr: '' })
  } finally {
    await second.stop()
  }
}, 60_000)

test("tenants: another tenant's artifact answers exactly like an unknown digest, both ways, on every way in", async () => {
  const acme = await execgate.sandboxes.start({ adapter: 'shell' }, { tenant: 'acme' })
  const globex = await execgate.sandboxes.start({ adapter: 'shell' }, { tenant: 'globex' })
  try {
    await acme.writeFile('acme.txt', 'acme only\n')
    await globex.writeFile('globex.txt', 'globex only\n')
    const acmeFile = await acme.saveArtifact('acme.txt')
    const globexFile = await globex.saveArtifact('globex.txt')

    const refusals = async (sandbox: typeof acme, tenant: string, digest: string) => {
      const started = await execgate.sandboxes.start({ files: [{ path: 'x', sha256: digest }] }, { tenant }).then(
        () => undefined,
        (error: Error) => error,
      )
      const written = await sandbox.writeFile('x', { sha256: digest }).then(
        () => undefined,
        (error: Error) => error,
      )
      const executed = await sandbox.exec({ command: 'cat x', files: [{ path: 'x', sha256: digest }] })
      const served = await execgate.ledger.artifact(digest, { tenant }).then(
        () => undefined,
        (error: Error) => error,
      )
      return [started, written, executed.error, served].map((error) => ({
        code: (error as { code?: string } | undefined)?.code,
        message: error?.message.replace(digest, '<digest>'),
      }))
    }
    const foreignToGlobex = await refusals(globex, 'globex', acmeFile.sha256)
    const unknownToGlobex = await refusals(globex, 'globex', UNKNOWN)
    expect(foreignToGlobex).toEqual(unknownToGlobex)
    expect(foreignToGlobex[0]).toEqual({ code: 'EXECGATE_NOT_FOUND', message: '[execgate] no artifact <digest> for tenant globex' })
    expect(new Set(foreignToGlobex.map((refusal) => refusal.code))).toEqual(new Set(['EXECGATE_NOT_FOUND']))
    expect(await refusals(acme, 'acme', globexFile.sha256)).toEqual(await refusals(acme, 'acme', UNKNOWN))
    expect(await globex.listFiles()).toEqual([{ path: 'globex.txt', size: 12 }])

    // The same bytes saved by globex's own sandbox are globex's too.
    await globex.writeFile('mine.txt', 'acme only\n')
    expect((await globex.saveArtifact('mine.txt')).sha256).toBe(acmeFile.sha256)
    await globex.writeFile('x', { sha256: acmeFile.sha256 })
    expect((await globex.readFile('x')).toString()).toBe('acme only\n')
  } finally {
    await Promise.all([acme.stop(), globex.stop()])
  }
}, 60_000)

test('refusals in words: a malformed digest, content and sha256 together, a missing file to save', async () => {
  await expect(execgate.sandboxes.start({ files: [{ path: 'a', sha256: 'not-a-digest' }] }, { tenant: 'acme' })).rejects.toMatchObject({
    code: 'EXECGATE_REQUEST_INVALID',
    message: expect.stringContaining('files[0]'),
  })
  await expect(
    execgate.sandboxes.start({ files: [{ path: 'a', sha256: UNKNOWN, content: 'x' } as never] }, { tenant: 'acme' }),
  ).rejects.toMatchObject({ code: 'EXECGATE_REQUEST_INVALID', message: expect.stringContaining('not both') })
  const sandbox = await execgate.sandboxes.start({ adapter: 'shell' }, { tenant: 'acme' })
  try {
    await expect(sandbox.saveArtifact('missing.txt')).rejects.toMatchObject({ code: 'EXECGATE_WORKSPACE_NOT_FOUND' })
    await expect(sandbox.writeFile('a', { sha256: 42 } as never)).rejects.toMatchObject({ code: 'EXECGATE_REQUEST_INVALID' })
  } finally {
    await sandbox.stop()
  }
})

test(
  'with the ledger off, a digest can only be an upload (EXECGATE_FILE_NOT_FOUND); ' + 'saveArtifact is EXECGATE_LEDGER_DISABLED',
  async () => {
    const off = await createExecgate({
      overrides: {
        execution: { enabled: ['shell'] },
        fabric: { dataDir, ledger: { enabled: false } },
        readiness: { enabled: false },
        log: { level: 'silent' },
      },
    })
    try {
      await expect(off.sandboxes.start({ files: [{ path: 'a', sha256: UNKNOWN }] })).rejects.toMatchObject({
        code: 'EXECGATE_FILE_NOT_FOUND',
        message: expect.stringContaining('upload it first (PUT /v1/files'),
      })
      const sandbox = await off.sandboxes.start()
      await sandbox.writeFile('a.txt', 'a')
      await expect(sandbox.saveArtifact('a.txt')).rejects.toMatchObject({
        code: 'EXECGATE_LEDGER_DISABLED',
        message: expect.stringContaining('fabric.ledger.enabled is false'),
      })
      // Said before the file is looked for: no file could ever be saved.
      await expect(sandbox.saveArtifact('missing.txt')).rejects.toMatchObject({ code: 'EXECGATE_LEDGER_DISABLED' })
      await expect(sandbox.writeFile('b.txt', { sha256: UNKNOWN })).rejects.toMatchObject({ code: 'EXECGATE_FILE_NOT_FOUND' })
      expect(await sandbox.exec({ command: 'cat b.txt', files: [{ path: 'b.txt', sha256: UNKNOWN }] })).toMatchObject({
        status: 'invalid_request',
        error: { code: 'EXECGATE_FILE_NOT_FOUND' },
      })
    } finally {
      await off.dispose()
    }
  },
)
