import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'

/**
 * What ships is what is tested: the package is packed as `npm publish` would pack it, installed from the tarball
 * into a fresh project without the network, and the library example runs there with plain `node`, importing the
 * package by name. The project sits in the system's temp directory, outside this repository, so nothing of the
 * repository (its node_modules, its sources) can stand in for what the tarball lacks.
 */

const run = promisify(execFile)
const ROOT = path.resolve(__dirname, '..', '..')
const EXAMPLE = path.join(ROOT, 'examples', 'library', 'quickstart.mjs')
const INSTALL_TIMEOUT_MS = 240_000

interface LockEntry {
  version?: string
  resolved?: string
  integrity?: string
  dev?: boolean
  link?: boolean
  [key: string]: unknown
}

/**
 * A lockfile for a project that depends on the tarball alone: the repository's lock entries its runtime needs (the
 * dev-only ones dropped), each with its address on the configured registry (the cache's key). `npm install
 * --offline` then takes every package from the npm cache the repository's own install filled, by address and
 * integrity; without a lock it would first ask for the registry's metadata of every range, which the cache does not
 * always hold (ENOTCACHED).
 */
function projectLock(tarballName: string, tarball: Buffer, registry: string): object {
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    version: string
    dependencies: Record<string, string>
    bin: Record<string, string>
  }
  const repositoryLock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, LockEntry>
  }
  const packages: Record<string, LockEntry> = {
    '': { name: 'execgate-pack-check', dependencies: { execgate: `file:${tarballName}` } },
    'node_modules/execgate': {
      version: manifest.version,
      resolved: `file:${tarballName}`,
      integrity: `sha512-${createHash('sha512').update(tarball).digest('base64')}`,
      dependencies: manifest.dependencies,
      bin: manifest.bin,
    },
  }
  for (const [location, entry] of Object.entries(repositoryLock.packages)) {
    if (!location.startsWith('node_modules/') || entry.dev || entry.link) continue
    const name = location.slice(location.lastIndexOf('node_modules/') + 'node_modules/'.length)
    packages[location] = { ...entry, resolved: entry.resolved ?? `${registry}${name}/-/${name.split('/').pop()}-${entry.version}.tgz` }
  }
  return { name: 'execgate-pack-check', lockfileVersion: 3, requires: true, packages }
}

describe('the packed package', () => {
  let workDir: string
  let project: string
  let shipped: string[]

  beforeAll(async () => {
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-pack-'))
    project = path.join(workDir, 'project')
    fs.mkdirSync(project)
    // `npm test` builds before Jest; a lone run of this file builds once here. `--ignore-scripts` keeps `npm pack`
    // from running `prepare` (a second build of the same sources).
    if (!fs.existsSync(path.join(ROOT, 'dist', 'src', 'index.js'))) await run('npm', ['run', 'build'], { cwd: ROOT, timeout: 180_000 })
    const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', project], { cwd: ROOT, timeout: 60_000 })
    const [{ filename }] = JSON.parse(packed.stdout) as Array<{ filename: string }>
    const tarballName = path.basename(filename)
    const tarball = fs.readFileSync(path.join(project, tarballName))
    shipped = (await run('tar', ['-tzf', path.join(project, tarballName)])).stdout
      .split('\n')
      .filter(Boolean)
      .map((entry) => entry.replace(/^package\//, ''))
    fs.writeFileSync(
      path.join(project, 'package.json'),
      JSON.stringify({ name: 'execgate-pack-check', private: true, dependencies: { execgate: `file:${tarballName}` } }),
    )
    const registry = (await run('npm', ['config', 'get', 'registry'], { cwd: ROOT, timeout: 30_000 })).stdout.trim().replace(/\/?$/, '/')
    fs.writeFileSync(path.join(project, 'package-lock.json'), JSON.stringify(projectLock(tarballName, tarball, registry)))
    fs.copyFileSync(EXAMPLE, path.join(project, 'quickstart.mjs'))
    // --offline: from the cache only; a package the cache lacks fails the install instead of being downloaded.
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund'], {
      cwd: project,
      timeout: INSTALL_TIMEOUT_MS,
      maxBuffer: 16 * 1024 * 1024,
    })
  }, INSTALL_TIMEOUT_MS + 120_000)

  afterAll(() => {
    if (workDir) fs.rmSync(workDir, { recursive: true, force: true })
  })

  test('ships the build, the CLI, the config and the README, and nothing of the workshop', () => {
    expect(shipped).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'bin/execgate.js',
        'config/default.json',
        'dist/src/index.js',
        'dist/src/index.d.ts',
        'dist/src/agents/index.js',
        'dist/src/server/index.js',
        'dist/adapters/quickjs/index.js',
        'dist/adapters/pyodide/child.js',
        'dist/adapters/pyodide/child-python.js',
        'dist/adapters/pyodide/child-guard.js',
        'dist/console/index.html',
      ]),
    )
    // The kernel's write reports for pyodide's memory restore, built where the package is packed (Linux here).
    if (process.platform === 'linux') expect(shipped).toContain('dist/adapters/pyodide/write-watch.node')
    // The web console's bundle, named by its content hash.
    expect(shipped.filter((file) => /^dist\/console\/(console|styles)-[A-Z0-9]+\.(js|css)$/.test(file))).toHaveLength(2)
    const workshop = shipped.filter(
      (file) =>
        /^(bench|test|scripts|examples|src|adapters|docs|console)\//.test(file) ||
        /^dist\/(bench|test)\//.test(file) ||
        /(^|\/)(jest\.config\.[jt]s|tsconfig(\.[a-z]+)?\.json)$/.test(file) ||
        (/\.ts$/.test(file) && !/\.d\.ts$/.test(file)) ||
        /\.map$/.test(file),
    )
    expect(workshop).toEqual([])
  })

  test('the library example runs from the installed package with plain node: JavaScript, Python and a voice turn', async () => {
    const { stdout } = await run(process.execPath, ['quickstart.mjs'], { cwd: project, timeout: 60_000 })
    expect(stdout.trim().split('\n')).toEqual([
      'javascript: ok 24.57 (quickjs)',
      'python: ok 33.98 (monty)',
      'voice: ok The answer is 33.98.',
    ])
  }, 90_000)

  test('bash runs on the bundled just-bash and TypeScript is stripped without the compiler, neither installed', async () => {
    const bashCode = 'printf "b\\na\\n" | sort | tr a-z A-Z | paste -sd, -'
    const tsCode = 'enum Size { S = 2 }\nconst twice = (n: number): number => n * 21\ntwice(Size.S)'
    const script = `
      const { createExecgate } = require('execgate')
      ;(async () => {
        const overrides = { execution: { enabled: ['quickjs', 'shell'] }, readiness: { enabled: false }, log: { level: 'silent' } }
        const execgate = await createExecgate({ overrides })
        const bash = await execgate.execute({ language: 'bash', code: ${JSON.stringify(bashCode)} })
        const ts = await execgate.execute({ language: 'typescript', code: ${JSON.stringify(tsCode)} })
        console.log(JSON.stringify([bash.status, bash.stdout, bash.adapter, ts.status, ts.value, ts.adapter]))
        await execgate.dispose()
      })()`
    const { stdout } = await run(process.execPath, ['-e', script], { cwd: project, timeout: 60_000 })
    expect(JSON.parse(stdout)).toEqual(['ok', 'A,B\n', 'shell', 'ok', 42, 'quickjs'])
    const installed = (name: string) => fs.existsSync(path.join(project, 'node_modules', name))
    expect(['just-bash', 'typescript', 'sql.js', '@mixmark-io/domino'].filter(installed)).toEqual([])
  }, 90_000)

  test('the install stays within 120 MB of files (issue 24; docs/benchmarks.md lists each package)', () => {
    const bytes = (dir: string): number =>
      fs
        .readdirSync(dir, { withFileTypes: true })
        .reduce(
          (sum, entry) => sum + (entry.isDirectory() ? bytes(path.join(dir, entry.name)) : fs.lstatSync(path.join(dir, entry.name)).size),
          0,
        )
    expect(bytes(path.join(project, 'node_modules')) / 1e6).toBeLessThanOrEqual(120)
  })

  test('the installed package serves the web console from its own files', async () => {
    const script = `
      const { createExecgate } = require('execgate')
      const { buildServer } = require('execgate/server')
      ;(async () => {
        const execgate = await createExecgate({
          warm: false,
          overrides: { execution: { enabled: ['quickjs'] }, readiness: { enabled: false }, log: { level: 'silent' } },
        })
        const logger = execgate.container.get(require('execgate').tokens.Logger)
        const { app } = buildServer({ execgate, logger, tenants: new Map(), bodyLimitBytes: 1024 })
        await app.listen({ host: '127.0.0.1', port: 0 })
        const base = 'http://127.0.0.1:' + app.server.address().port + '/console/'
        const index = await fetch(base)
        const html = await index.text()
        const bundle = await fetch(base + /src="\\.\\/([^"]+)"/.exec(html)[1])
        console.log(JSON.stringify([index.status, index.headers.get('content-type'), bundle.status, bundle.headers.get('content-type')]))
        await app.close()
        await execgate.dispose()
      })()`
    const { stdout } = await run(process.execPath, ['-e', script], { cwd: project, timeout: 60_000 })
    expect(JSON.parse(stdout)).toEqual([200, 'text/html; charset=utf-8', 200, 'text/javascript; charset=utf-8'])
  }, 90_000)

  test('CommonJS require reaches every entry point, and the internals stay unexported', async () => {
    const script = `
      const adapters = ['bedrock', 'docker', 'lambda', 'monty', 'placeholder', 'process', 'pyodide', 'quickjs', 'shell']
      const entries = [
        'execgate', 'execgate/agents', 'execgate/server', 'execgate/client',
        ...adapters.map((name) => 'execgate/adapters/' + name),
      ]
      const shapes = Object.fromEntries(entries.map((id) => [id, Object.keys(require(id)).sort()]))
      let internal
      try { require('execgate/dist/src/runtime/worker-pool'); internal = 'reachable' } catch (error) { internal = error.code }
      console.log(JSON.stringify({ shapes, internal, version: require('execgate/package.json').version }))`
    const { stdout } = await run(process.execPath, ['-e', script], { cwd: project, timeout: 60_000 })
    const { shapes, internal, version } = JSON.parse(stdout) as { shapes: Record<string, string[]>; internal: string; version: string }
    expect(shapes['execgate']).toEqual(
      expect.arrayContaining(['createExecgate', 'loadConfig', 'ExecgateError', 'EXECUTION_REQUEST_SCHEMA', 'createResult']),
    )
    expect(
      shapes['execgate']!.filter((name) => ['WorkerPool', 'startWorker', 'LruCache', 'SessionStore', 'toWorkspaceFile'].includes(name)),
    ).toEqual([])
    expect(shapes['execgate/agents']).toEqual(
      expect.arrayContaining(['CodeExecutionHandler', 'CodeGenerator', 'RetryStrategy', 'BedrockConverseProvider']),
    )
    expect(shapes['execgate/server']).toEqual(expect.arrayContaining(['serve', 'buildServer', 'createMcpServer', 'serveMcpStdio']))
    // The HTTP client needs none of the frameworks' optional peers (execgate/ai-sdk etc. need theirs).
    expect(shapes['execgate/client']).toEqual(
      expect.arrayContaining(['ExecgateClient', 'ExecgateClientError', 'isExecgateClientError', 'CLIENT_ROUTES']),
    )
    expect(shapes['execgate/adapters/quickjs']).toEqual(expect.arrayContaining(['QuickJsAdapter', 'createQuickJsAdapter']))
    expect(shapes['execgate/adapters/docker']).toEqual(expect.arrayContaining(['DockerAdapter']))
    expect(internal).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED')
    expect(version).toBe(JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version)
  }, 90_000)
})
