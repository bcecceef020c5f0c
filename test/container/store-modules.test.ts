import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ContainerModule } from 'inversify'
import { createExecgate, tokens, type Execgate } from '../../src'
import { SQLITE_FILE_NAME, SqliteTaskStore, type TaskStore } from '../../src/fabric/tasks'

/**
 * The fabric's stores are bound in the container (src/app/container-modules.ts, fabricStoresModule): a user's module
 * that rebinds `tokens.TaskStore` is what `execgate.tasks` writes to and reads from. The replacement here is a real
 * SQLite task store in a file of the test's choosing, counting its inserts: the task runs, lands in that file, and
 * the file the config names is never created.
 */

class CountingTaskStore extends SqliteTaskStore {
  inserts = 0
  override insert(...args: Parameters<SqliteTaskStore['insert']>): ReturnType<SqliteTaskStore['insert']> {
    this.inserts++
    return super.insert(...args)
  }

  // A submit with a free slot stores and starts the task in one commit: that is an insert too.
  override insertAndStart(...args: Parameters<SqliteTaskStore['insertAndStart']>): ReturnType<SqliteTaskStore['insertAndStart']> {
    this.inserts++
    return super.insertAndStart(...args)
  }
}

describe("a user's module replacing the task store", () => {
  let dir: string
  let execgate: Execgate | undefined
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-store-module-'))
  })
  afterEach(async () => {
    await execgate?.dispose()
    execgate = undefined
    fs.rmSync(dir, { recursive: true, force: true })
  })

  test('is the store execgate.tasks submits to, runs from and reads', async () => {
    const store = new CountingTaskStore({ file: path.join(dir, 'own', 'tasks-of-my-own.sqlite') })
    const userModule = new ContainerModule(({ rebindSync }) => void rebindSync<TaskStore>(tokens.TaskStore).toConstantValue(store))
    execgate = await createExecgate({
      // Not the test environment's EXECGATE_FABRIC_DATA_DIR, which other files share: this test's own folder.
      env: {},
      warm: false,
      overrides: {
        execution: { enabled: ['quickjs'] },
        readiness: { enabled: false },
        log: { level: 'silent' },
        fabric: { dataDir: path.join(dir, 'configured'), ledger: { enabled: false } },
      },
      modules: [userModule],
    })
    const submitted = await execgate.tasks.submit({ request: { language: 'javascript', code: '6 * 7' } })
    const done = await execgate.tasks.wait(submitted.id, { timeoutMs: 60_000 })
    expect({ state: done.state, value: done.result?.value }).toEqual({ state: 'COMPLETED', value: 42 })
    expect(store.inserts).toBe(1)
    expect((await store.get(submitted.id))?.state).toBe('COMPLETED')
    expect(fs.existsSync(path.join(dir, 'configured', SQLITE_FILE_NAME))).toBe(false)
  }, 90_000)

  test('without one, the store fabric.store names opens at first use, in fabric.dataDir', async () => {
    execgate = await createExecgate({
      // Not the test environment's EXECGATE_FABRIC_DATA_DIR, which other files share: this test's own folder.
      env: {},
      warm: false,
      overrides: {
        execution: { enabled: ['quickjs'] },
        readiness: { enabled: false },
        log: { level: 'silent' },
        fabric: { dataDir: path.join(dir, 'configured'), ledger: { enabled: false } },
      },
    })
    expect(fs.existsSync(path.join(dir, 'configured', SQLITE_FILE_NAME))).toBe(false)
    const submitted = await execgate.tasks.submit({ request: { language: 'javascript', code: '1 + 1' } })
    expect((await execgate.tasks.wait(submitted.id, { timeoutMs: 60_000 })).state).toBe('COMPLETED')
    expect(fs.existsSync(path.join(dir, 'configured', SQLITE_FILE_NAME))).toBe(true)
  }, 90_000)
})
