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
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }))
}
