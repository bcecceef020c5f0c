import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../../src'
import { startRedisServer, type RedisServer } from '../../bench/redis-server'

/** What a test file's Redis-backed execgate gives its tests, once beforeAll has run. */
export interface RedisExecgate {
  readonly execgate: Execgate
  readonly redisUrl: string
  /** The execgate's data directory (its ledger's SQLite files and blobs). */
  readonly dataDir: string
}

/**
 * A real redis-server on loopback and an execgate (quickjs only, no readiness monitor) keeping its fabric in it, started
 * before the calling file's tests and stopped after them: called once at the top of the file.
 */
export function redisExecgate(name: string): RedisExecgate {
  let redis: RedisServer
  let dataDir: string
  let execgate: Execgate
  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `execgate-${name}-`))
    redis = await startRedisServer()
    execgate = await createExecgate({
      env: {
        EXECGATE_FABRIC_STORE: 'redis',
        EXECGATE_FABRIC_REDIS_URL: redis.url,
        EXECGATE_LOG_LEVEL: 'silent',
        EXECGATE_READINESS_ENABLED: 'false',
        EXECGATE_EXECUTION_ENABLED: 'quickjs',
        EXECGATE_FABRIC_DATA_DIR: dataDir,
      },
    })
  }, 60_000)
  afterAll(async () => {
    await execgate?.dispose()
    await redis?.stop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })
  return {
    get execgate() {
      return execgate
    },
    get redisUrl() {
      return redis.url
    },
    get dataDir() {
      return dataDir
    },
  }
}
