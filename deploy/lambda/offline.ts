import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'

/** This folder in the repository (where serverless.yml is), from the sources or from dist/. */
function functionDir(): string {
  for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'deploy/lambda/serverless.yml')
    if (fs.existsSync(candidate)) return path.dirname(candidate)
  }
  throw new Error('deploy/lambda/serverless.yml not found above ' + __dirname)
}

async function freePort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as net.AddressInfo).port
  await new Promise((resolve) => server.close(resolve))
  return port
}

/**
 * A development helper (tests and `npm run bench lambda`): serverless framework v3 with serverless-offline 13,
 * running the shipped handler (the compiled dist/deploy/lambda/handler.js; `npm test` builds first) and
 * serving the real Lambda Invoke API on a free loopback port. Both are devDependencies; nothing is downloaded.
 */
export class ServerlessOffline {
  private child?: ChildProcess
  endpoint = ''
  log = ''

  constructor(private readonly functionTimeoutSeconds = 30) {}

  async start(): Promise<string> {
    const lambdaPort = await freePort()
    const httpPort = await freePort()
    this.child = spawn(process.execPath, [require.resolve('serverless/bin/serverless.js'), 'offline', 'start'], {
      cwd: functionDir(),
      env: {
        ...process.env,
        SLS_TELEMETRY_DISABLED: '1',
        SLS_NOTIFICATIONS_MODE: 'off',
        EXECGATE_LAMBDA_PORT: String(lambdaPort),
        EXECGATE_LAMBDA_HTTP_PORT: String(httpPort),
        EXECGATE_LAMBDA_TIMEOUT_SECONDS: String(this.functionTimeoutSeconds),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    })
    const child = this.child
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`serverless offline did not start within 60 s:\n${this.log}`)), 60_000)
      const onData = (chunk: Buffer) => {
        this.log += chunk
        if (/listening on http:\/\/localhost:\d+/.test(this.log) && this.log.includes('execgate-dev-execute')) {
          clearTimeout(timer)
          resolve()
        }
      }
      child.stdout!.on('data', onData)
      child.stderr!.on('data', onData)
      child.on('exit', (code) => {
        clearTimeout(timer)
        reject(new Error(`serverless offline exited with ${code}:\n${this.log}`))
      })
    })
    this.endpoint = `http://127.0.0.1:${lambdaPort}`
    return this.endpoint
  }

  async stop(): Promise<void> {
    const child = this.child
    if (!child || child.exitCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    try {
      process.kill(-child.pid!, 'SIGTERM')
    } catch {
      // already gone
    }
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))])
    try {
      process.kill(-child.pid!, 'SIGKILL')
    } catch {
      // gone
    }
  }
}
