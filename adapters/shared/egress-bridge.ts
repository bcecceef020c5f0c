import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/**
 * The OS sandboxes' only way out (docs/network.md), shared by the process and docker tiers. The sandbox has nothing
 * but loopback; the egress gateway's proxy socket for this run is bound in, and a small forwarder started before the
 * program listens on the sandbox's 127.0.0.1:3128 and carries each connection to that socket. HTTP(S)_PROXY point
 * there (Python's urllib, curl, pip honour them); for Node, a preload makes `fetch` and the global dispatcher go
 * through the proxy (Node's own fetch ignores the proxy variables).
 */
export const EGRESS_PATHS = {
  socket: '/run/execgate/egress.sock',
  forwarder: '/run/execgate/egress-forwarder.py',
  nodePreload: '/run/execgate/egress-fetch.js',
  undici: '/run/execgate/undici',
  /** The system's CAs and the gateway's (TLS re-termination for secret hosts): the sandbox's trust store. */
  caBundle: '/run/execgate/ca-bundle.pem',
} as const

/** Variables that make OpenSSL (Python's ssl, curl), requests and Node trust the bundle at EGRESS_PATHS.caBundle. */
export const TRUST_VARIABLES = ['SSL_CERT_FILE', 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE', 'NODE_EXTRA_CA_CERTS'] as const

export const EGRESS_PROXY_URL = 'http://127.0.0.1:3128'

/**
 * The forwarder: binds before it forks, so the launcher goes on only once the port listens; one thread and a
 * selector, so it costs one process of the run's `maxProcesses`, whatever the number of connections.
 */
const FORWARDER = `
import os, socket, selectors
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(('127.0.0.1', 3128))
listener.listen(128)
if os.fork():
    os._exit(0)
null = os.open('/dev/null', os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
selector = selectors.DefaultSelector()
selector.register(listener, selectors.EVENT_READ)
peers = {}
open_ends = {}
def close(sock):
    other = peers.pop(sock, None)
    for s in (sock, other):
        if s is None:
            continue
        peers.pop(s, None)
        open_ends.pop(s, None)
        try:
            selector.unregister(s)
        except Exception:
            pass
        s.close()
while True:
    for key, _ in selector.select():
        sock = key.fileobj
        if sock is listener:
            try:
                client, _ = listener.accept()
            except OSError:
                continue
            # Small writes (a request's head, then its body) go at once, not after the peer's delayed ACK.
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            upstream = socket.socket(socket.AF_UNIX)
            try:
                upstream.connect('${EGRESS_PATHS.socket}')
            except OSError:
                client.close()
                upstream.close()
                continue
            peers[client] = upstream
            peers[upstream] = client
            for s in (client, upstream):
                open_ends[s] = True
                selector.register(s, selectors.EVENT_READ)
            continue
        try:
            data = sock.recv(65536)
        except OSError:
            data = b''
        other = peers.get(sock)
        if other is None:
            continue
        if data:
            try:
                other.sendall(data)
            except OSError:
                close(sock)
            continue
        # End of one direction: pass the half-close on; close both once both directions are done.
        open_ends[sock] = False
        selector.unregister(sock)
        try:
            other.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        if not open_ends.get(other, False):
            close(sock)
`

/** Makes Node's global fetch (and anything on undici's global dispatcher) use the proxy variables. */
const NODE_PRELOAD = `
'use strict'
// The runner removes \`process\` from the globals before the code runs, and undici reads it lazily (llhttp, timers):
// its own modules get it as a module-scoped variable instead, out of the code's reach.
const Module = require('module')
const compile = Module.prototype._compile
Object.defineProperty(Module, '__execgateProcess', { value: process })
Module.prototype._compile = function (content, filename) {
  if (filename.startsWith('${EGRESS_PATHS.undici}/')) content = 'var process = module.constructor.__execgateProcess;' + content
  return compile.call(this, content, filename)
}
const undici = require('${EGRESS_PATHS.undici}')
// Not EnvHttpProxyAgent: it reads the environment at each request. proxyTunnel false: plain http:// goes as a
// proxied request the gateway can see (methods, secrets); https:// by CONNECT.
undici.setGlobalDispatcher(new undici.ProxyAgent({ uri: '${EGRESS_PROXY_URL}', proxyTunnel: false }))
for (const name of ['fetch', 'Headers', 'Request', 'Response', 'FormData']) globalThis[name] = undici[name]
`

/**
 * The same for Node 18 (the docker image's), which the undici package no longer supports: Node's bundled undici is
 * reached through its global dispatcher (set by the first fetch) and steered. Plain http:// goes to the forwarder as
 * a request in absolute form, which the gateway reads (methods, secrets); https:// through a CONNECT tunnel, with TLS
 * to the origin inside it. A refused CONNECT fails the fetch with the gateway's words as the cause.
 */
const NODE_CORE_PRELOAD = `
'use strict'
if (typeof fetch === 'function') {
  const net = require('net')
  const tls = require('tls')
  const key = Symbol.for('undici.globalDispatcher.1')
  fetch('data:,').catch(() => undefined)
  const Agent = globalThis[key].constructor
  const tunnel = (options, done) => {
    let answered = false
    const callback = (error, socket) => {
      if (answered) return
      answered = true
      done(error, socket)
    }
    const socket = net.connect(3128, '127.0.0.1')
    const port = options.port || 443
    const authority = (options.hostname.includes(':') ? '[' + options.hostname + ']' : options.hostname) + ':' + port
    let head = Buffer.alloc(0)
    const onData = (chunk) => {
      head = Buffer.concat([head, chunk])
      if (head.indexOf('\\r\\n\\r\\n') === -1) return
      socket.removeListener('data', onData)
      if (!/^HTTP\\/1\\.[01] 200/.test(head.toString('latin1'))) {
        socket.on('data', (more) => void (head = Buffer.concat([head, more])))
        socket.once('close', () => {
          const text = head.toString('utf8')
          const body = text.slice(text.indexOf('\\r\\n\\r\\n') + 4).trim()
          callback(new Error('the egress gateway refused CONNECT ' + authority + ': ' + (body || text.split('\\r\\n')[0])))
        })
        return
      }
      const servername = options.servername || (net.isIP(options.hostname) ? undefined : options.hostname)
      const secure = tls.connect({ socket, servername, ALPNProtocols: ['http/1.1'] })
      secure.once('secureConnect', () => callback(null, secure))
      secure.once('error', (error) => callback(error))
    }
    socket.on('data', onData)
    socket.once('error', (error) => callback(error))
    socket.once('connect', () => socket.write('CONNECT ' + authority + ' HTTP/1.1\\r\\nhost: ' + authority + '\\r\\n\\r\\n'))
  }
  // Both with a connect function of their own: undici's default connector reads the global \`global\`, which the
  // runner removes before the code runs.
  const tunnelled = new Agent({ connect: tunnel })
  const toForwarder = (_options, done) => {
    const socket = net.connect(3128, '127.0.0.1')
    socket.once('connect', () => done(null, socket))
    socket.once('error', (error) => done(error))
  }
  class ThroughGateway extends Agent {
    dispatch(options, handler) {
      const origin = new URL(String(options.origin))
      if (origin.protocol === 'https:') return tunnelled.dispatch(options, handler)
      return super.dispatch({ ...options, path: origin.origin + options.path }, handler)
    }
  }
  globalThis[key] = new ThroughGateway({ connect: toForwarder })
}
`

export interface EgressBridgeFiles {
  forwarder: string
  nodePreload: string
  /** The preload for a Node too old for the undici package (the docker image's Node 18): Node's own undici, steered. */
  nodeCorePreload: string
  /** The undici package folder on the host, bound read-only at EGRESS_PATHS.undici; absent when not installed. */
  undici?: string
}

/** Writes the forwarder and the preload once into a fresh folder the sandbox uids can read. */
export function writeEgressBridgeFiles(): EgressBridgeFiles {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-egress-bridge-'))
  fs.chmodSync(directory, 0o755)
  const forwarder = path.join(directory, 'forwarder.py')
  const nodePreload = path.join(directory, 'egress-fetch.js')
  fs.writeFileSync(forwarder, FORWARDER, { mode: 0o644 })
  fs.writeFileSync(nodePreload, NODE_PRELOAD, { mode: 0o644 })
  const nodeCorePreload = path.join(directory, 'egress-fetch-core.js')
  fs.writeFileSync(nodeCorePreload, NODE_CORE_PRELOAD, { mode: 0o644 })
  let undici: string | undefined
  try {
    undici = path.dirname(require.resolve('undici/package.json'))
  } catch {
    // Node's fetch then ignores the proxy; Python, curl and anything that reads HTTP(S)_PROXY still work.
  }
  return { forwarder, nodePreload, nodeCorePreload, ...(undici ? { undici } : {}) }
}

/** The proxy variables every client library reads, pointing at the forwarder. */
export const PROXY_VARIABLES = ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy'] as const

/** The shell line that starts the forwarder (it returns once the port listens), before the program. */
export const START_FORWARDER =
  `if [ -n "$EXECGATE_EGRESS_FORWARDER" ]; then "$EXECGATE_EGRESS_FORWARDER" -I -S ` +
  `${EGRESS_PATHS.forwarder} || exit 124; fi; unset EXECGATE_EGRESS_FORWARDER`
