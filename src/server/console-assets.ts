import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { gzipSync } from 'node:zlib'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ExecgateError } from '../core'

/**
 * The web console's files (docs/console.md), served from the package: `npm run build` bundles console/ into
 * dist/console (scripts/build-console.mjs), and this serves that folder at /console/. No CDN and no other server:
 * the console works offline. The files are static and hold no data, so they need no key; the data comes from /v1 with
 * the key the user types in.
 */

// Compiled, this file is dist/src/server/console-assets.js and the bundle dist/console; run from the sources (ts-node,
// Jest), it is src/server/console-assets.ts and the bundle is still the build's, in dist/console.
export const CONSOLE_DIR = path.resolve(__dirname, '..', '..', ...(__filename.endsWith('.ts') ? ['dist', 'console'] : ['console']))

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
}

// Everything from the console's own origin and nothing else: no inline script, no third-party host, no framing.
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src " +
  "'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

interface Asset {
  body: Buffer
  gzipped: Buffer
  type: string
  etag: string
  /** Bundles carry a content hash in their names (console-<hash>.js): cached for good; index.html revalidates. */
  immutable: boolean
}

/** Reads the folder once: a small, fixed set of files, each kept with its gzip. */
function loadAssets(dir: string): Map<string, Asset> | undefined {
  if (!fs.existsSync(path.join(dir, 'index.html'))) return undefined
  const assets = new Map<string, Asset>()
  for (const name of fs.readdirSync(dir)) {
    const type = CONTENT_TYPES[path.extname(name)]
    if (!type) continue
    const body = fs.readFileSync(path.join(dir, name))
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`
    assets.set(name, { body, gzipped: gzipSync(body), type, etag, immutable: /-[A-Z0-9]{8,}\.(js|css)$/.test(name) })
  }
  return assets
}

function send(request: FastifyRequest, reply: FastifyReply, asset: Asset): FastifyReply {
  reply
    .header('content-type', asset.type)
    .header('etag', asset.etag)
    .header('x-content-type-options', 'nosniff')
    .header('vary', 'accept-encoding')
  reply.header('cache-control', asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
  if (asset.type.startsWith('text/html'))
    reply.header('content-security-policy', CONTENT_SECURITY_POLICY).header('referrer-policy', 'no-referrer')
  if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send()
  if (/\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''))) return reply.header('content-encoding', 'gzip').send(asset.gzipped)
  return reply.send(asset.body)
}

export function registerConsoleAssets(app: FastifyInstance, dir = CONSOLE_DIR): void {
  let assets: Map<string, Asset> | undefined
  const load = () => (assets ??= loadAssets(dir))
  const notBuilt = () =>
    new ExecgateError('EXECGATE_NOT_FOUND', {
      detail: 'the console is not built: run npm run build (it bundles console/ into dist/console)',
    })

  // Relative asset and API addresses in index.html resolve against /console/, so the bare path redirects there.
  app.get('/console', async (_request, reply) => reply.redirect('console/', 302))
  app.get('/console/', async (request, reply) => {
    const index = load()?.get('index.html')
    if (!index) throw notBuilt()
    return send(request, reply, index)
  })
  app.get('/console/:file', async (request, reply) => {
    const built = load()
    if (!built) throw notBuilt()
    const file = (request.params as { file: string }).file
    const asset = built.get(file)
    if (!asset) throw new ExecgateError('EXECGATE_NOT_FOUND', { detail: `no console file "${file}"` })
    return send(request, reply, asset)
  })
}
