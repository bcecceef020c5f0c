import { createExecgate, type Execgate } from '../../../src'

/**
 * The SandboxManager's own rules, on the native shell (the cheapest real backend): tenants, the per-tenant cap, the
 * sandbox's policy as the ceiling of its execs, which adapters may host one, and idle timeouts' bounds.
 */

let execgate: Execgate

beforeAll(async () => {
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs', 'shell'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      sandboxes: { maxPerTenant: 2, maxIdleTimeoutMs: 60_000 },
      security: { profiles: { tight: { wallTimeMs: 2000, memoryMb: 64 } } },
    },
  })
}, 60_000)

afterAll(() => execgate.dispose())

test("a tenant cannot reach another tenant's sandbox: get, list and stop answer as for a missing one", async () => {
  const acme = await execgate.sandboxes.start({}, { tenant: 'acme' })
  await acme.exec('echo secret > secret.txt')
  expect(execgate.sandboxes.get(acme.id, { tenant: 'globex' })).toBeUndefined()
  expect(execgate.sandboxes.get(acme.id)).toBeUndefined() // the library's own tenant, 'local', is another tenant
  expect(execgate.sandboxes.get('sb-missing', { tenant: 'globex' })).toBeUndefined()
  expect(execgate.sandboxes.list({ tenant: 'globex' })).toEqual([])
  expect(await execgate.sandboxes.stop(acme.id, { tenant: 'globex' })).toBe(false)
  expect(execgate.sandboxes.list({ tenant: 'acme' }).map((info) => info.id)).toEqual([acme.id])
  expect(execgate.sandboxes.get(acme.id, { tenant: 'acme' })).toBe(acme)
  expect((await acme.readFile('secret.txt')).toString()).toBe('secret\n')
  await acme.stop()
  expect(execgate.sandboxes.list({ tenant: 'acme' })).toEqual([])
})

test('the per-tenant cap refuses one more with EXECGATE_SANDBOX_LIMIT; other tenants and a freed place are unaffected', async () => {
  const first = await execgate.sandboxes.start({}, { tenant: 'capped' })
  // Two at once for the last place: exactly one gets it.
  const racing = await Promise.allSettled([
    execgate.sandboxes.start({}, { tenant: 'capped' }),
    execgate.sandboxes.start({}, { tenant: 'capped' }),
  ])
  expect(racing.filter((item) => item.status === 'fulfilled')).toHaveLength(1)
  const refused = racing.find((item) => item.status === 'rejected') as PromiseRejectedResult
  expect(refused.reason).toMatchObject({ code: 'EXECGATE_SANDBOX_LIMIT', retryable: true })
  expect(refused.reason.message).toContain('sandboxes.maxPerTenant')
  const other = await execgate.sandboxes.start({}, { tenant: 'other' })
  await first.stop()
  const again = await execgate.sandboxes.start({}, { tenant: 'capped' })
  await Promise.all([
    again.stop(),
    other.stop(),
    (racing.find((item) => item.status === 'fulfilled') as PromiseFulfilledResult<{ stop(): Promise<void> }>).value.stop(),
  ])
})

test("the sandbox's policy is the caller's profile, tightened at start; every exec may only tighten it further", async () => {
  const sandbox = await execgate.sandboxes.start({ timeoutMs: 1500 }, { tenant: 'acme', profile: 'tight' })
  expect(sandbox.info().policy).toMatchObject({ wallTimeMs: 1500, memoryMb: 64, filesystem: 'sandboxed' })
  const loop = await sandbox.exec('while :; do :; done')
  expect(loop.status).toBe('timeout')
  expect(loop.error?.message).toContain('1500 ms')
  expect(await sandbox.exec({ command: 'echo hi', memoryMb: 128 })).toMatchObject({
    status: 'policy_violation',
    error: { code: 'EXECGATE_POLICY_LOOSENED' },
  })
  expect(await sandbox.exec({ command: 'echo hi', timeoutMs: 1000 })).toMatchObject({ status: 'ok', stdout: 'hi\n' })
  await sandbox.stop()
  await expect(execgate.sandboxes.start({ memoryMb: 4096 }, { tenant: 'acme', profile: 'tight' })).rejects.toMatchObject({
    code: 'EXECGATE_POLICY_LOOSENED',
  })
  await expect(execgate.sandboxes.start({}, { tenant: 'acme', profile: 'nope' })).rejects.toMatchObject({
    code: 'EXECGATE_PROFILE_UNKNOWN',
  })
})

test('only an enabled adapter with the sandboxes capability may host one; auto picks the cheapest that can', async () => {
  await expect(execgate.sandboxes.start({ adapter: 'quickjs' })).rejects.toMatchObject({ code: 'EXECGATE_SANDBOX_UNSUPPORTED' })
  await expect(execgate.sandboxes.start({ adapter: 'docker' })).rejects.toMatchObject({
    code: 'EXECGATE_SANDBOX_UNSUPPORTED',
    message: expect.stringContaining('docker: it is not enabled (execution.enabled); enabled adapters that host sandboxes: shell'),
  })
  await expect(execgate.sandboxes.start({ adapter: 'nonesuch' })).rejects.toMatchObject({ code: 'EXECGATE_ADAPTER_UNKNOWN' })
  const auto = await execgate.sandboxes.start()
  expect(auto.adapter).toBe('shell')
  await auto.stop()
})

test('bad starts and execs are refused naming the field; a stopped sandbox answers EXECGATE_SANDBOX_STOPPED', async () => {
  await expect(execgate.sandboxes.start({ idleTimeoutMs: 120_000 })).rejects.toMatchObject({
    code: 'EXECGATE_REQUEST_INVALID',
    message: expect.stringContaining('sandboxes.maxIdleTimeoutMs'),
  })
  await expect(execgate.sandboxes.start({ files: [{ path: '../up.txt', content: 'x' }] })).rejects.toMatchObject({
    code: 'EXECGATE_REQUEST_INVALID',
    message: expect.stringContaining('files[0]'),
  })
  const sandbox = await execgate.sandboxes.start()
  expect(await sandbox.exec({ command: '' })).toMatchObject({ status: 'invalid_request', error: { code: 'EXECGATE_REQUEST_INVALID' } })
  expect(await sandbox.exec({ language: 'bash' } as never)).toMatchObject({ status: 'invalid_request' })
  expect(await sandbox.exec({ command: 'cat in.txt', files: [{ path: 'in.txt', content: 'given' }] })).toMatchObject({
    status: 'ok',
    stdout: 'given',
  })
  expect(execgate.sandboxes.get(sandbox.id)?.info().execs).toBe(1)
  await sandbox.stop()
  expect(await sandbox.exec('echo late')).toMatchObject({ status: 'invalid_request', error: { code: 'EXECGATE_SANDBOX_STOPPED' } })
  await expect(sandbox.writeFile('a.txt', 'x')).rejects.toMatchObject({ code: 'EXECGATE_SANDBOX_STOPPED' })
})

test('dispose refuses new sandboxes and stops the live ones', async () => {
  const own = await createExecgate({
    overrides: { execution: { enabled: ['shell'] }, readiness: { enabled: false }, log: { level: 'silent' } },
  })
  const sandbox = await own.sandboxes.start()
  await own.dispose()
  expect(own.sandboxes.list()).toEqual([])
  expect((await sandbox.exec('true')).error?.code).toBe('EXECGATE_SANDBOX_STOPPED')
  await expect(own.sandboxes.start()).rejects.toMatchObject({ code: 'EXECGATE_SHUTTING_DOWN' })
})
