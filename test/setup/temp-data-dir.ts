import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/**
 * Every test file gets a temp `fabric.dataDir` unless it chose one: `createExecgate` records runs in the artifact
 * ledger by default, and the default `.execgate` is relative to the working directory, so a test that does not care
 * where its runs are recorded would otherwise write the ledger's database and blobs into the checkout. Tests that
 * pass their own `env` (or set EXECGATE_FABRIC_DATA_DIR) keep theirs; children spawned with `process.env` inherit it.
 */
if (process.env.EXECGATE_FABRIC_DATA_DIR === undefined) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-test-data-'))
  process.env.EXECGATE_FABRIC_DATA_DIR = dataDir
  // Jest runs this hook before the file's own afterAll (hooks run in declaration order), so a ledger the file has not
  // closed yet may still be writing blobs while the folder goes (ENOTEMPTY, seen in CI even after 10 retries): removing
  // a temp folder is not what the file tests, so what cannot go now goes when the process exits.
  afterAll(() => {
    try {
      fs.rmSync(dataDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 })
    } catch {
      process.once('exit', () => {
        try {
          fs.rmSync(dataDir, { recursive: true, force: true })
        } catch {
          // left in the temp folder: the OS's temp clean-up takes it
        }
      })
    }
  })
}
