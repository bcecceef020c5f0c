import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'

/** A real redis-server (Debian's, installed by scripts/setup/redis.sh) on a free loopback port, for a test file or a bench. */
export interface RedisServer {
  url: string
  port: number
  stop(): Promise<void>
}

export function redisServerInstalled(): boolean {
  return spawnSync('redis-server', ['--version']).status === 0
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

async function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    socket.once('connect', () => socket.write('PING\r\n'))
    socket.once('data', (data) => (socket.destroy(), resolve(data.toString().startsWith('+PONG'))))
    socket.once('error', () => resolve(false))
  })
}

/** What installs redis-server on a fresh machine; a test without it fails with this, never skips. */
export const REDIS_INSTALL_COMMAND = 'bash scripts/setup/redis.sh (Debian: sudo apt-get install -y redis-server)'

export async function startRedisServer(): Promise<RedisServer> {
  if (!redisServerInstalled()) throw new Error(`redis-server is not installed: run ${REDIS_INSTALL_COMMAND}`)
  const port = await freePort()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-redis-'))
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  )
  for (let waited = 0; !(await answers(port)); waited += 50) {
    if (waited > 10_000 || child.exitCode !== null) throw new Error(`redis-server did not start on port ${port}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve))
        child.kill('SIGKILL')
        await exited
      }
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}
