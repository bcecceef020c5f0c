import http from 'node:http'
import type net from 'node:net'
import tls from 'node:tls'

/** A plain HTTP request through the gateway's proxy socket (absolute-form URL, as any proxy client sends). */
export function viaProxy(
  socketPath: string,
  url: string,
  options: { method?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const target = new URL(url)
    const request = http.request(
      { socketPath, method: options.method ?? 'GET', path: url, headers: { host: target.host, ...options.headers } },
      (response) => {
        const chunks: Buffer[] = []
        response.on('data', (chunk: Buffer) => chunks.push(chunk))
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString('utf8') }),
        )
        response.on('error', reject)
      },
    )
    request.on('error', reject)
    request.end(options.body)
  })
}

/** CONNECT through the proxy socket: the proxy's answer, and the tunnel when it said 200. */
export function connectVia(socketPath: string, authority: string): Promise<{ status: number; body: string; socket?: net.Socket }> {
  return new Promise((resolve, reject) => {
    const request = http.request({ socketPath, method: 'CONNECT', path: authority, headers: { host: authority } })
    request.on('connect', (response, socket, head: Buffer) => {
      if (response.statusCode === 200) return resolve({ status: 200, body: '', socket })
      const chunks: Buffer[] = [head]
      socket.on('data', (chunk: Buffer) => chunks.push(chunk))
      socket.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }))
      socket.on('error', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }))
    })
    request.on('error', reject)
    request.end()
  })
}

/** An HTTPS request (GET unless told) over a tunnel the proxy opened; the client checks the name against `caPem`. */
export function httpsOverTunnel(
  socket: net.Socket,
  host: string,
  path: string,
  caPem: string,
  options: { method?: string; body?: string } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const secure = tls.connect({ socket, servername: host, ca: caPem })
    secure.on('error', reject)
    const request = http.request(
      { createConnection: () => secure, host, path, method: options.method ?? 'GET', headers: { host, connection: 'close' } },
      (response) => {
        const chunks: Buffer[] = []
        response.on('data', (chunk: Buffer) => chunks.push(chunk))
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }))
      },
    )
    request.on('error', reject)
    request.end(options.body)
  })
}
