import { createExecgate, type Execgate } from '../../src'
import { serve, type RunningServer } from '../../src/server/serve'
import { openApiDocument } from '../../src/server/openapi'

/**
 * Issue 25 part 4: the files a request sends are the caller's data, readable by its code under the default policy
 * (never the host's files); an operator may forbid that, and then such a request is refused before it runs, naming
 * the profile that would allow it. A refused run says where routing would have sent it; GET /v1/policy lists the
 * profiles a caller may ask for.
 */

const ACME = 'acme-key-0123456789abcdef'
const GLOBEX = 'globex-key-0123456789abcdef'
const CSV = 'region,amount\nnorth,10\nsouth,32\n'
const READ_CSV = "sum(int(line.split(',')[1]) for line in open('sales.csv').read().splitlines()[1:])"

const overrides = (requestFiles: 'read' | 'refuse') => ({
  execution: { enabled: ['placeholder', 'quickjs', 'monty', 'process'] },
  readiness: { enabled: false },
  log: { level: 'silent' as const },
  fabric: { ledger: { enabled: false } },
  security: { requestFiles },
})

describe('files a request sends, under the default policy', () => {
  let execgate: Execgate
  beforeAll(async () => {
    execgate = await createExecgate({ warm: false, overrides: overrides('read') })
  }, 60_000)
  afterAll(() => execgate.dispose())

  test('the code reads the files its own request sent (filesystem "none" in the default policy)', async () => {
    expect(execgate.config.security.defaultPolicy.filesystem).toBe('none')
    const result = await execgate.execute({
      language: 'python',
      adapter: 'process',
      code: READ_CSV,
      files: [{ path: 'sales.csv', content: CSV }],
    })
    expect(result).toMatchObject({ status: 'ok', adapter: 'process', value: 42 })
  }, 60_000)

  test("the grant covers the request's workspace only: nothing written comes back, no host file is readable", async () => {
    const write = await execgate.execute({
      language: 'python',
      adapter: 'process',
      code: "open('out.txt', 'w').write('x')",
      files: [{ path: 'sales.csv', content: CSV }],
    })
    // The process tier's workspace is the run's own tmpfs: what the code writes there never leaves the run.
    expect(write.files ?? []).toEqual([])
    const host = await execgate.execute({
      language: 'python',
      adapter: 'process',
      code: "open('/etc/hostname').read()",
      files: [{ path: 'sales.csv', content: CSV }],
    })
    expect(host.status).not.toBe('ok')
  }, 60_000)

  test('a request with no files keeps filesystem "none": open() is refused', async () => {
    const result = await execgate.execute({ language: 'python', adapter: 'process', code: "open('sales.csv').read()" })
    expect(result.status).not.toBe('ok')
  }, 60_000)

  test('a caller that tightens to filesystem "none" is not given the files', async () => {
    const result = await execgate.execute({
      language: 'python',
      adapter: 'process',
      code: READ_CSV,
      files: [{ path: 'sales.csv', content: CSV }],
      policy: { filesystem: 'none' },
    })
    expect(result.status).not.toBe('ok')
  }, 60_000)

  test('a refused import names every refused module and the adapter routing would have used, not execgate alone', async () => {
    const result = await execgate.execute({ language: 'python', code: 'import pandas as pd\nimport scipy\npd.Series([1]).sum()' })
    expect(result).toMatchObject({ status: 'policy_violation', adapter: 'execgate' })
    expect(result.message).toContain('pandas (line 1), scipy (line 2)')
    expect(result.message).toContain('the policy profile "data" allows them')
    expect(result.route?.wouldHaveUsed).toBe('process')
    expect(result.route?.reason).toContain('routing would have used process')
  })
})

describe('an operator who forbids reading request files (security.requestFiles: refuse)', () => {
  let execgate: Execgate
  beforeAll(async () => {
    execgate = await createExecgate({ warm: false, overrides: overrides('refuse') })
  }, 60_000)
  afterAll(() => execgate.dispose())

  test('a request that sends files is refused before it runs, naming the profile that would allow it', async () => {
    const result = await execgate.execute({
      language: 'python',
      code: READ_CSV,
      files: [{ path: 'sales.csv', content: CSV }],
    })
    expect(result).toMatchObject({ status: 'policy_violation', adapter: 'execgate' })
    expect(result.error?.code).toBe('EXECGATE_FILES_NOT_READABLE')
    expect(result.message).toContain('sales.csv')
    expect(result.message).toContain('the policy profile "data" would read them')
    expect(result.usage.wallMs ?? 0).toBe(0)
    expect(result.route?.wouldHaveUsed).toBeTruthy()
  })

  test('the profile it names does read them', async () => {
    const result = await execgate.execute(
      { language: 'python', adapter: 'process', code: READ_CSV, files: [{ path: 'sales.csv', content: CSV }] },
      { profile: 'data' },
    )
    expect(result).toMatchObject({ status: 'ok', value: 42 })
  }, 60_000)
})

describe('GET /v1/policy over HTTP on loopback', () => {
  let execgate: Execgate
  let server: RunningServer
  beforeAll(async () => {
    execgate = await createExecgate({
      warm: false,
      overrides: {
        ...overrides('read'),
        execution: { enabled: ['quickjs'] },
        server: { apiKeys: [`acme=${ACME}`, `globex=${GLOBEX}`], tenants: { acme: { profiles: ['data'] } } },
      },
    })
    server = await serve(execgate, { port: 0 }, false)
  }, 60_000)
  afterAll(() => server.shutdown())

  const get = async (key: string) => {
    const response = await fetch(`${server.url}/v1/policy`, { headers: { authorization: `Bearer ${key}` } })
    return { status: response.status, json: (await response.json()) as any }
  }

  test('a tenant sees its policy and the profiles it may ask for, each in full', async () => {
    const acme = await get(ACME)
    expect(acme.status).toBe(200)
    expect(acme.json.profile).toBeNull()
    expect(acme.json.policy.filesystem).toBe('none')
    expect(acme.json.requestFiles).toBe('read')
    expect(acme.json.profiles.map((item: { name: string }) => item.name)).toEqual(['data'])
    expect(acme.json.profiles[0].policy.allowedImports).toContain('pandas')
    const globex = await get(GLOBEX)
    expect(globex.json.profiles).toEqual([])
  })

  test('the OpenAPI document lists /v1/policy and its schema names every policy field', async () => {
    const document = openApiDocument() as any
    expect(document.paths['/v1/policy'].get).toBeDefined()
    const response = await get(ACME)
    const schema = document.components.schemas.SecurityPolicy
    expect(Object.keys(response.json.policy).sort()).toEqual([...schema.required].sort())
    const served = (await (await fetch(`${server.url}/docs/json`)).json()) as any
    expect(served.components.schemas.CallerPolicy.required).toEqual(['profile', 'policy', 'profiles', 'requestFiles'])
  })
})
