import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { S3Settings } from '../../src/workspace'

/**
 * A real S3-compatible server for tests: s3rver (a dev dependency) on a free loopback port, its objects in a temp
 * folder, spoken to through the real @aws-sdk/client-s3 v3. s3rver checks SigV4 signatures made with its fixed
 * credentials (S3RVER / S3RVER).
 */
export interface S3Server {
  endpoint: string
  /** Settings for a bucket on this server (created by `S3Objects.ensureBucket`, or the ledger at first write). */
  settings(bucket: string, prefix?: string): S3Settings
  stop(): Promise<void>
}

interface S3rverInstance {
  run(): Promise<{ address: string; port: number }>
  close(): Promise<void>
}

export async function startS3Server(): Promise<S3Server> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-s3rver-'))
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const S3rver = require('s3rver') as new (options: Record<string, unknown>) => S3rverInstance
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory })
  const { port } = await server.run()
  const endpoint = `http://127.0.0.1:${port}`
  return {
    endpoint,
    settings: (bucket, prefix = '') => ({
      bucket,
      prefix,
      endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    }),
    async stop() {
      await server.close()
      fs.rmSync(directory, { recursive: true, force: true })
    },
  }
}
