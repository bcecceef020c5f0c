import { createExecgate, type Execgate } from '../../src'
import type { CodeExecutionAdapter } from '../../src/core'

/**
 * What a routing test file builds its execgates with: silent, no readiness schedule unless it asks (the checks run
 * when a test says), and every one disposed after the file's tests. Called once at the top of the file.
 */
export function disposableExecgates(): (overrides: object, adapters?: CodeExecutionAdapter[]) => Promise<Execgate> {
  const open: Execgate[] = []
  afterAll(async () => {
    await Promise.all(open.map((execgate) => execgate.dispose()))
  })
  return async (overrides, adapters) => {
    const execgate = await createExecgate({
      overrides: { log: { level: 'silent' }, readiness: { enabled: false }, ...overrides },
      adapters,
    })
    open.push(execgate)
    return execgate
  }
}
