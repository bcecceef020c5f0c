import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'

/**
 * Real processes of the built CLI on loopback, for the multi-node tests: `execgate serve` nodes and `execgate worker`
 * processes, each a child started with the environment given (the shared Redis, bucket and reflector), killed with
 * SIGKILL by the test or at the end.
 */

const BIN = path.join(__dirname, '..', '..', 'bin', 'execgate.js')

export interface Node {
  child: ChildProcess
  /** The serve node's base URL; empty for a worker. */
  url: string
  pid: number
  /** Everything it wrote to stderr (for a failing test's message). */
  stderr(): string
}

/** Starts the CLI with `args` and resolves once its stderr has printed a line matching `ready`. */
function start(args: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<Node> {
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] })
  let text = ''
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`execgate ${args.join(' ')} did not start in 60 s: ${text}`)), 60_000)
    child.stderr!.on('data', (data: Buffer) => {
      text += data.toString()
      const match = text.match(ready)
      if (match) {
        clearTimeout(timer)
        resolve({ child, url: match[1] ?? '', pid: child.pid!, stderr: () => text })
      }
    })
    child.once('exit', (code) => (clearTimeout(timer), reject(new Error(`execgate ${args.join(' ')} exited ${code}: ${text}`))))
  })
}

/**
 * The environment every node of a test's cluster shares: quiet, no readiness monitor, quickjs only, the Redis store at
 * `redisUrl` under `prefix`, files in `dataDir`; `extra` adds or overrides (lease, ledger, reflector, keys).
 */
export function redisClusterEnv(
  cluster: { redisUrl: string; prefix: string; dataDir: string },
  extra: Record<string, string> = {},
): NodeJS.ProcessEnv {
  return {
    ...process.env,
    EXECGATE_LOG_LEVEL: 'silent',
    EXECGATE_READINESS_ENABLED: 'false',
    EXECGATE_EXECUTION_ENABLED: 'quickjs',
    EXECGATE_FABRIC_STORE: 'redis',
    EXECGATE_FABRIC_REDIS_URL: cluster.redisUrl,
    EXECGATE_FABRIC_REDIS_PREFIX: cluster.prefix,
    EXECGATE_FABRIC_DATA_DIR: cluster.dataDir,
    ...extra,
  }
}

export const startServe = (env: NodeJS.ProcessEnv) => start(['serve', '--port', '0'], env, /serving on (http:\/\/\S+)/)
export const startWorker = (env: NodeJS.ProcessEnv) => start(['worker'], env, /worker \d+ running tasks/)

/** SIGKILL, and resolves once the process is gone. */
export async function kill(node: Node): Promise<void> {
  if (node.child.exitCode !== null || node.child.signalCode !== null) return
  const exited = new Promise((resolve) => node.child.once('exit', resolve))
  node.child.kill('SIGKILL')
  await exited
}

/** A JSON call to a node; throws with the status and body unless it answered 2xx. */
export async function call<T>(node: Pick<Node, 'url'>, method: string, url: string, body?: unknown): Promise<T> {
  const response = await fetch(`${node.url}${url}`, {
    method,
    headers: body ? { 'content-type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  })
  const text = await response.text()
  if (!response.ok) throw new Error(`${method} ${node.url}${url}: ${response.status} ${text}`)
  return JSON.parse(text) as T
}

/** Reads `read()` until `done` holds, or fails after `timeoutMs` naming `what` and the last value. */
export async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value).slice(0, 400)}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** A server-sent event stream read to its end (or until the node dies): the events' `data` as JSON. */
export async function readEvents<T>(node: Pick<Node, 'url'>, url: string): Promise<T[]> {
  const events: T[] = []
  try {
    const response = await fetch(`${node.url}${url}`)
    const decoder = new TextDecoder()
    let buffered = ''
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffered += decoder.decode(chunk, { stream: true })
      const lines = buffered.split('\n')
      buffered = lines.pop()!
      for (const line of lines) if (line.startsWith('data: ')) events.push(JSON.parse(line.slice(6)) as T)
    }
  } catch {
    // A node killed mid-stream ends its stream here: what arrived is what the test looks at.
  }
  return events
}
