import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/**
 * The process tier's only way out (docs/network.md). The sandbox keeps its own network namespace with nothing but
 * loopback; the egress gateway's proxy socket for this run is bound in, and a small forwarder started by the
 * launcher before the program listens on the sandbox's 127.0.0.1:3128 and carries each connection to that socket.
 * HTTP(S)_PROXY point there (Python's urllib, curl, pip honour them); for Node, a preload makes `fetch` and the
 * global dispatcher go through the proxy (Node 20's own fetch ignores the proxy variables).
 */
export const EGRESS_PATHS = {
  socket: '/run/execgate/egress.sock',
  forwarder: '/run/execgate/egress-forwarder.py',
  nodePreload: '/run/execgate/egress-fetch.js',
  undici: '/run/execgate/undici',
} as const

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

export interface EgressBridgeFiles {
  forwarder: string
  nodePreload: string
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
  let undici: string | undefined
  try {
    undici = path.dirname(require.resolve('undici/package.json'))
  } catch {
    // Node's fetch then ignores the proxy; Python, curl and anything that reads HTTP(S)_PROXY still work.
  }
  return { forwarder, nodePreload, ...(undici ? { undici } : {}) }
}

/** bwrap arguments that give a run its way out through the gateway: the socket, the forwarder, the variables. */
export function egressBridgeArgs(files: EgressBridgeFiles, socketPath: string, python: string, language: string): string[] {
  const proxyVariables = ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy'].flatMap((name) => ['--setenv', name, EGRESS_PROXY_URL])
  const node =
    language === 'javascript' && files.undici
      ? [
          '--ro-bind',
          files.undici,
          EGRESS_PATHS.undici,
          '--ro-bind',
          files.nodePreload,
          EGRESS_PATHS.nodePreload,
          '--setenv',
          'NODE_OPTIONS',
          `--require=${EGRESS_PATHS.nodePreload}`,
        ]
      : []
  return [
    '--ro-bind',
    socketPath,
    EGRESS_PATHS.socket,
    '--ro-bind',
    files.forwarder,
    EGRESS_PATHS.forwarder,
    '--setenv',
    'EXECGATE_EGRESS_FORWARDER',
    python,
    ...proxyVariables,
    '--setenv',
    'NO_PROXY',
    '',
    ...node,
  ]
}

/** The launcher's line that starts the forwarder (it returns once the port listens), before the program. */
export const START_FORWARDER = `if [ -n "$EXECGATE_EGRESS_FORWARDER" ]; then "$EXECGATE_EGRESS_FORWARDER" -I -S ${EGRESS_PATHS.forwarder} || exit 124; fi; unset EXECGATE_EGRESS_FORWARDER`
