import http from 'node:http'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { createCertificateAuthority } from '../../src/egress/certificates'

/**
 * Real servers on loopback that play the outside world for egress tests: one HTTP, one HTTPS (a certificate for
 * api.example.test and 127.0.0.1 from a CA of the test's own). Each remembers the requests it got, headers included,
 * so a test can tell whether a secret reached it.
 */
export interface LoopbackServers {
  http: { port: number; url: string }
  https: { port: number; url: string }
  /** The CA of the HTTPS server's certificate, for clients that must trust it. */
  caPem: string
  /** Requests the servers got: method, path, headers. */
  seen: { method: string; path: string; headers: http.IncomingHttpHeaders }[]
  close(): Promise<void>
}

/** What `/bytes` answers: bytes 0..255, four times (1,024 bytes). */
export const BINARY_BODY = Buffer.from(Array.from({ length: 1024 }, (_, index) => index % 256))

function handler(seen: LoopbackServers['seen']): http.RequestListener {
  return (request, response) => {
    const url = new URL(request.url ?? '/', 'http://x')
    seen.push({ method: request.method ?? '', path: url.pathname, headers: request.headers })
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      switch (url.pathname) {
        case '/hello':
          return response.writeHead(200, { 'content-type': 'text/plain' }).end('hello from loopback')
        case '/headers':
          return response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(request.headers))
        case '/echo':
          return response.writeHead(200, { 'content-type': 'text/plain' }).end(Buffer.concat(chunks))
        case '/bytes':
          // Every byte value, four times: not UTF-8 (0x80–0xff alone), with NULs and CR/LF, as a binary download is.
          return response.writeHead(200, { 'content-type': 'application/octet-stream' }).end(BINARY_BODY)
        case '/echo-bytes':
          return response.writeHead(200, { 'content-type': 'application/octet-stream' }).end(Buffer.concat(chunks))
        case '/redirect':
          return response
            .writeHead(Number(url.searchParams.get('status') ?? 302), { location: url.searchParams.get('to') ?? '/hello' })
            .end()
        case '/big': {
          const bytes = Number(url.searchParams.get('bytes') ?? 1024)
          return response
            .writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(bytes) })
            .end(Buffer.alloc(bytes, 0x61))
        }
        case '/hang':
          return // never answers: the gateway's connection cap must end it
        default:
          return response.writeHead(404).end('not found')
      }
    })
  }
}

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)))
}

export async function startLoopbackServers(): Promise<LoopbackServers> {
  const seen: LoopbackServers['seen'] = []
  const ca = await createCertificateAuthority('execgate egress test CA')
  const leaf = await ca.issue('api.example.test')
  const plain = http.createServer(handler(seen))
  const secure = https.createServer({ cert: leaf.certificatePem, key: leaf.keyPem }, handler(seen))
  const [httpPort, httpsPort] = await Promise.all([listen(plain), listen(secure)])
  const close = (server: http.Server) =>
    new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  return {
    http: { port: httpPort, url: `http://127.0.0.1:${httpPort}` },
    https: { port: httpsPort, url: `https://api.example.test:${httpsPort}` },
    caPem: ca.certificatePem,
    seen,
    close: async () => {
      await Promise.all([close(plain), close(secure)])
    },
  }
}
