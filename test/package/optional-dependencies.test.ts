import { execFile } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { OPTIONAL_BACKENDS, installCommand, isExecgateError, requireOptional, type OptionalBackend } from '../../src/core'

/**
 * AWS (Lambda, Bedrock, S3), Redis/BullMQ and Docker are optional peer dependencies: a user who enables none of them
 * installs none of them. Each is imported only when enabled and answers with the exact `npm install …` line when it
 * is missing. The absent package is made absent in a child process (test/package/hide-packages.js makes Node's
 * resolver answer as it does for an uninstalled package); test/package/pack.test.ts checks the same in a project
 * that really lacks them.
 */

const ROOT = path.resolve(__dirname, '..', '..')
const run = promisify(execFile)
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>
  devDependencies: Record<string, string>
  peerDependencies: Record<string, string>
  peerDependenciesMeta: Record<string, { optional?: boolean }>
}
const optionalPackages = [...new Set(Object.values(OPTIONAL_BACKENDS).flatMap((backend) => backend.packages))].sort()

test('every optional backend package is an optional peer (and a dev dependency, for the tests), never a dependency', () => {
  // Other optional peers (the agent frameworks execgate/tools adapts to) are the user's own; every peer is optional.
  expect(Object.keys(manifest.peerDependencies)).toEqual(expect.arrayContaining(optionalPackages))
  expect(Object.keys(manifest.peerDependencies).filter((name) => manifest.peerDependenciesMeta[name]?.optional !== true)).toEqual([])
  for (const name of optionalPackages) {
    expect({
      name,
      optional: manifest.peerDependenciesMeta[name]?.optional,
      dev: Boolean(manifest.devDependencies[name]),
      dependency: Boolean(manifest.dependencies[name]),
    }).toEqual({ name, optional: true, dev: true, dependency: false })
  }
})

test('no source file loads an optional package except through importOptional/requireOptional (type imports are free)', () => {
  const offenders: string[] = []
  const walk = (dir: string): string[] =>
    fs
      .readdirSync(dir, { withFileTypes: true })
      .flatMap((entry) =>
        entry.name === 'node_modules' || entry.name === 'function'
          ? []
          : entry.isDirectory()
            ? walk(path.join(dir, entry.name))
            : entry.name.endsWith('.ts')
              ? [path.join(dir, entry.name)]
              : [],
      )
  for (const file of [...walk(path.join(ROOT, 'src')), ...walk(path.join(ROOT, 'adapters'))]) {
    const text = fs.readFileSync(file, 'utf8')
    for (const name of optionalPackages) {
      const quoted = `'${name}'`
      for (const line of text
        .split('\n')
        .filter((l) => [`from ${quoted}`, `import(${quoted})`, `require(${quoted})`].some((load) => l.includes(load)))) {
        const typeOnly =
          /^\s*import type /.test(line) || /typeof import\(/.test(line) || /^type \w+ = import\(/.test(line) || /^\s*(\/\/|\*)/.test(line)
        const guarded = /(importOptional|requireOptional)\('[\w-]+', \(\) => (import|require)\(/.test(line)
        if (!typeOnly && !guarded) offenders.push(`${path.relative(ROOT, file)}: ${line.trim()}`)
      }
    }
  }
  expect(offenders).toEqual([])
})

test('the install line names every package of the backend', () => {
  expect(installCommand('redis')).toBe('npm install ioredis bullmq')
  expect(installCommand('lambda')).toBe('npm install @aws-sdk/client-lambda')
})

test('a package that is installed but fails to load keeps its own error', () => {
  const broken = Object.assign(new Error("Cannot find module 'some-inner-dependency'"), { code: 'MODULE_NOT_FOUND' })
  expect(() =>
    requireOptional('redis', () => {
      throw broken
    }),
  ).toThrow(broken)
  let thrown: unknown
  try {
    requireOptional('redis', () => {
      throw Object.assign(new Error("Cannot find module 'ioredis'\nRequire stack: …"), { code: 'MODULE_NOT_FOUND' })
    })
  } catch (error) {
    thrown = error
  }
  expect(isExecgateError(thrown, 'EXECGATE_DEPENDENCY_MISSING')).toBe(true)
  expect((thrown as Error).message).toBe(
    '[execgate] the redis fabric store (fabric.store or fabric.ledger.store = redis) needs ' +
      'ioredis, bullmq, which is not installed: run `npm install ioredis bullmq`',
  )
})

/** Runs `script` (CommonJS, TypeScript sources through ts-node) in a child where `hidden` packages are not installed. */
async function withoutPackages(hidden: readonly string[], script: string): Promise<unknown> {
  const { stdout } = await run(
    process.execPath,
    ['-r', 'ts-node/register/transpile-only', '-r', path.join(__dirname, 'hide-packages.js'), '-e', script],
    {
      cwd: ROOT,
      env: { ...process.env, EXECGATE_TEST_HIDE_PACKAGES: hidden.join(','), TS_NODE_TRANSPILE_ONLY: 'true' },
      timeout: 60_000,
    },
  )
  return JSON.parse(stdout.trim().split('\n').pop()!)
}

const packagesOf = (backend: OptionalBackend) => OPTIONAL_BACKENDS[backend].packages

test('config that enables a store whose package is missing stops start-up with the install line', async () => {
  const script = `
    const { loadConfig } = require('./src/config/load')
    const attempt = (overrides) => {
      try {
        loadConfig({ env: {}, overrides })
        return 'started'
      } catch (error) {
        return { code: error.code, message: error.message }
      }
    }
    console.log(JSON.stringify({
      redis: attempt({ fabric: { store: 'redis' } }),
      s3: attempt({ fabric: { ledger: { blobs: 's3' }, s3: { bucket: 'b' } } }),
      embedded: attempt({}),
    }))`
  const outcome = await withoutPackages([...packagesOf('redis'), ...packagesOf('s3')], script)
  expect(outcome).toEqual({
    redis: { code: 'EXECGATE_DEPENDENCY_MISSING', message: expect.stringContaining('run `npm install ioredis bullmq`') },
    s3: { code: 'EXECGATE_DEPENDENCY_MISSING', message: expect.stringContaining('run `npm install @aws-sdk/client-s3`') },
    embedded: 'started',
  })
}, 90_000)

test('an enabled adapter whose SDK is missing answers unavailable with the install line (availability and execute)', async () => {
  const script = `
    const { LambdaAdapter } = require('./adapters/lambda')
    const { BedrockAdapter } = require('./adapters/bedrock')
    const { DockerAdapter } = require('./adapters/docker')
    const { DEFAULT_POLICY } = require('./src/policy')
    ;(async () => {
      const context = { policy: DEFAULT_POLICY, traceId: 't', signal: new AbortController().signal }
      const out = {}
      for (const [name, adapter] of [['lambda', new LambdaAdapter()], ['bedrock', new BedrockAdapter()], ['docker', new DockerAdapter()]]) {
        const availability = await adapter.checkAvailability()
        const result = await adapter.execute({ language: 'python', code: 'print(1)' }, context)
        out[name] = { availability: [availability.status, availability.reason], result: [result.status, result.message] }
        await adapter.dispose()
      }
      console.log(JSON.stringify(out))
    })()`
  const outcome = await withoutPackages([...packagesOf('lambda'), ...packagesOf('bedrock'), ...packagesOf('docker')], script)
  const answer = (backend: OptionalBackend) => expect.stringContaining(`which is not installed: run \`${installCommand(backend)}\``)
  expect(outcome).toEqual({
    lambda: { availability: ['unavailable', answer('lambda')], result: ['unavailable', answer('lambda')] },
    bedrock: { availability: ['unavailable', answer('bedrock')], result: ['unavailable', answer('bedrock')] },
    docker: { availability: ['unavailable', answer('docker')], result: ['unavailable', answer('docker')] },
  })
}, 90_000)
