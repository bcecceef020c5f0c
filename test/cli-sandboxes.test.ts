import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../src'
import { serve, type RunningServer } from '../src/server/serve'

/** `execgate sandbox …`, the real built CLI: against a server on loopback, and with --local in its own process. */
const root = path.join(__dirname, '..')
const bin = path.join(root, 'bin', 'execgate.js')
const KEY = 'cli-key-0123456789abcdef'
let work: string
let execgate: Execgate
let server: RunningServer

/** Runs the CLI without blocking this process, which serves the HTTP API it talks to. */
function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd: work,
      env: { PATH: process.env.PATH ?? '', EXECGATE_LOG_LEVEL: 'silent', ...env },
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

beforeAll(async () => {
  if (!fs.existsSync(path.join(root, 'dist', 'src', 'cli', 'sandboxes.js')))
    throw new Error('dist/ is missing: run `npm run build` (npm test does)')
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-cli-sandboxes-'))
  fs.writeFileSync(path.join(work, 'data.csv'), 'date,item\n2026-01-01,tea\n2025-01-01,coffee\n2026-02-01,tea\n')
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['shell'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      server: { apiKeys: [`cli=${KEY}`] },
    },
  })
  server = await serve(execgate, { port: 0 }, false)
}, 60_000)

afterAll(async () => {
  await server.shutdown()
  fs.rmSync(work, { recursive: true, force: true })
})

test('start, cp in, exec, cp out, list and stop against a server', async () => {
  const remote = ['--url', server.url]
  const env = { EXECGATE_API_KEY: KEY }
  const started = await cli(['sandbox', 'start', ...remote], env)
  expect(started).toMatchObject({ code: 0, stderr: '' })
  const id = started.stdout.trim()
  expect(id).toMatch(/^sb-[0-9a-f]+$/)
  expect((await cli(['sandbox', 'cp', './data.csv', `${id}:in/data.csv`, ...remote], env)).code).toBe(0)
  const counted = await cli(
    ['sandbox', 'exec', id, 'grep 2026 in/data.csv | cut -d, -f2 | sort | uniq -c > counts.txt; cat counts.txt', ...remote],
    env,
  )
  expect(counted).toMatchObject({ code: 0 })
  expect(counted.stdout).toMatch(/^\s+2 tea\n$/)
  expect((await cli(['sandbox', 'cp', `${id}:counts.txt`, './counts.txt', ...remote], env)).code).toBe(0)
  expect(fs.readFileSync(path.join(work, 'counts.txt'), 'utf8')).toMatch(/2 tea/)
  const failed = await cli(['sandbox', 'exec', id, 'cat missing.txt', ...remote], env)
  expect(failed.code).toBe(1)
  expect(failed.stderr).toContain('missing.txt')
  expect((await cli(['sandbox', 'list', ...remote], env)).stdout).toContain(id)
  expect((await cli(['sandbox', 'stop', id, ...remote], env)).stdout).toBe(`stopped ${id}\n`)
  const gone = await cli(['sandbox', 'exec', id, 'true', ...remote], env)
  expect(gone.code).toBe(1)
  expect(gone.stderr).toMatch(/no sandbox "sb-[0-9a-f]+" for tenant cli \(HTTP 404/)
  // Without the key the server refuses, and the CLI says so.
  expect((await cli(['sandbox', 'list', ...remote])).stderr).toContain('HTTP 401')
}, 60_000)

test('without a server, only exec --local runs: commands in turn in one sandbox, files in and out', async () => {
  const refused = await cli(['sandbox', 'start'])
  expect(refused.code).toBe(2)
  expect(refused.stderr).toContain('give --url of an `execgate serve`')
  const local = await cli(
    [
      'sandbox',
      'exec',
      '--local',
      '--adapter',
      'shell',
      '--in',
      './data.csv',
      '--out',
      'report.txt:./report.txt',
      'grep -c tea data.csv > report.txt',
      'cd /; echo more >> workspace/report.txt',
      'pwd; cat report.txt',
    ],
    { EXECGATE_EXECUTION_ENABLED: 'shell' },
  )
  expect(local).toMatchObject({ code: 0, stdout: '/workspace\n2\nmore\n' })
  expect(fs.readFileSync(path.join(work, 'report.txt'), 'utf8')).toBe('2\nmore\n')
}, 60_000)
