import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { loadConfig } from '../../src/config/load'
import { CONFIG_SCHEMA, environmentName } from '../../src/config/schema'
import { createExecgate } from '../../src'
import { configurationMarkdown } from '../../src/config/describe-config'

function leaves(schema: object, prefix: string[] = []): string[][] {
  return Object.entries(schema).flatMap(([key, node]) =>
    typeof node === 'object' && node !== null && 'default' in node ? [[...prefix, key]] : leaves(node as object, [...prefix, key]),
  )
}

describe('configuration', () => {
  test('defaults follow the placeholder design', () => {
    const config = loadConfig({ env: {} })
    expect(config.security.defaultPolicy).toMatchObject({
      wallTimeMs: 5000,
      memoryMb: 128,
      outputBytes: 65536,
      network: 'none',
      filesystem: 'none',
      allowedImports: ['math', 'json', 'datetime'],
    })
    expect(config.execution.adapter).toBe('auto')
  })

  test('every key has an environment variable named after it', () => {
    expect(environmentName(['execution', 'adapter'])).toBe('EXECGATE_EXECUTION_ADAPTER')
    expect(environmentName(['security', 'defaultPolicy', 'wallTimeMs'])).toBe('EXECGATE_SECURITY_DEFAULT_POLICY_WALL_TIME_MS')
    const config = loadConfig({
      env: { EXECGATE_SECURITY_DEFAULT_POLICY_MEMORY_MB: '64', EXECGATE_SECURITY_DEFAULT_POLICY_ALLOWED_IMPORTS: 'math,re' },
    })
    expect(config.security.defaultPolicy.memoryMb).toBe(64)
    expect(config.security.defaultPolicy.allowedImports).toEqual(['math', 're'])
  })

  test('docs/configuration.md is generated from the schema and up to date (npm run docs:config)', () => {
    const doc = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'configuration.md'), 'utf8')
    expect(doc).toBe(configurationMarkdown())
    for (const key of leaves(CONFIG_SCHEMA)) expect(doc).toContain(environmentName(key))
  })

  test('is frozen', () => {
    const config = loadConfig({ env: {} }) as { execution: { adapter: string } }
    expect(() => {
      config.execution.adapter = 'placeholder'
    }).toThrow(TypeError)
  })

  test('an invalid value stops start-up naming the key, the value and what is allowed', () => {
    expect(() => loadConfig({ env: { EXECGATE_SECURITY_DEFAULT_POLICY_MEMORY_MB: '-5' } })).toThrow(
      /security\.defaultPolicy\.memoryMb: must be a positive integer: value was -5/,
    )
    expect(() => loadConfig({ env: { EXECGATE_SECURITY_DEFAULT_POLICY_FILESYSTEM: 'everything' } })).toThrow(
      /security\.defaultPolicy\.filesystem.*none.*read_only.*sandboxed/,
    )
    // Above 10 a starved writer hands its queue back too late (docs/ledger.md, "The writer's priority").
    expect(() => loadConfig({ env: { EXECGATE_FABRIC_LEDGER_WRITER_NICE: '19' } })).toThrow(
      /fabric\.ledger\.writerNice: must be an integer from 0 to 10 \(a Linux nice value\): value was 19/,
    )
    expect(loadConfig({ env: { EXECGATE_FABRIC_LEDGER_WRITER_NICE: '0' } }).fabric.ledger.writerNice).toBe(0)
  })

  test('an unknown key is refused', () => {
    expect(() => loadConfig({ env: {}, overrides: { execution: { adaptr: 'x' } } as never })).toThrow(/adaptr/)
  })

  test('reads --config files and NODE_ENV files, later sources winning', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-config-'))
    fs.writeFileSync(path.join(dir, 'default.json'), JSON.stringify({ execution: { graceMs: 10 } }))
    fs.writeFileSync(path.join(dir, 'staging.json'), JSON.stringify({ execution: { graceMs: 20 } }))
    const extra = path.join(dir, 'extra.json')
    fs.writeFileSync(extra, JSON.stringify({ security: { defaultPolicy: { memoryMb: 77 } } }))
    const config = loadConfig({ configDir: dir, env: { NODE_ENV: 'staging' }, file: extra })
    expect(config.execution.graceMs).toBe(20)
    expect(config.security.defaultPolicy.memoryMb).toBe(77)
    expect(() => loadConfig({ configDir: dir, env: {}, file: path.join(dir, 'missing.json') })).toThrow(/cannot read config file/)
    fs.writeFileSync(extra, '{ not json')
    expect(() => loadConfig({ configDir: dir, env: {}, file: extra })).toThrow(/not valid JSON/)
  })

  test('switching execution.adapter through the environment changes the adapter with no code change', async () => {
    for (const [adapter, status] of [
      ['placeholder', 'not_implemented'],
      ['quickjs', 'ok'],
    ] as const) {
      const execgate = await createExecgate({
        env: {
          EXECGATE_FABRIC_DATA_DIR: process.env.EXECGATE_FABRIC_DATA_DIR,
          EXECGATE_EXECUTION_ADAPTER: adapter,
          EXECGATE_EXECUTION_ENABLED: 'placeholder,quickjs',
          EXECGATE_LOG_LEVEL: 'silent',
        },
      })
      try {
        const result = await execgate.execute({ language: 'javascript', code: '1 + 1' })
        expect({ adapter: result.adapter, status: result.status }).toEqual({ adapter, status })
      } finally {
        await execgate.dispose()
      }
    }
  })

  test('an unknown adapter name in config stops start-up with the allowed names', async () => {
    await expect(createExecgate({ env: { EXECGATE_EXECUTION_ENABLED: 'quickjs,nope', EXECGATE_LOG_LEVEL: 'silent' } })).rejects.toThrow(
      /execution\.enabled: unknown adapter "nope"; known adapters: .*quickjs/,
    )
  })
})
