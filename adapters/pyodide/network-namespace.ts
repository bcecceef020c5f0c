import { execFile } from 'node:child_process'
import fs from 'node:fs'

/** How the pyodide child is launched: under bubblewrap in a network namespace of its own, or as a plain Node child. */
export type NetworkWrapper = { file: string; args: readonly string[] }

/**
 * bubblewrap around the Node child: a network namespace with only its own loopback, so even a socket the code opens
 * through pyodide's JavaScript bridge has no route anywhere. The whole filesystem is bound read-only (Node's permission
 * model narrows reads to pyodide's files on top); no pid namespace, so the Node process is bubblewrap's one child and
 * its pid is the host's (the pool measures its memory there). The host-call pipes and the IPC channel are inherited
 * fds and cross unchanged; `--die-with-parent` ends Node when the pool kills bubblewrap.
 */
export function networkNamespaceArgs(): string[] {
  // bwrap sets PWD in its child's environment (after any --unsetenv), which must stay empty: env drops it, then execs
  // Node in the same process (the pid the pool measures is still bubblewrap's one child).
  return ['--ro-bind', '/', '/', '--chdir', '/', '--unshare-net', '--die-with-parent', '--', ENV, '-u', 'PWD']
}

const ENV = '/usr/bin/env'

const probed = new Map<string, Promise<boolean>>()

/**
 * The wrapper where bubblewrap is installed and can make a network namespace here (unprivileged user namespaces may be
 * off), else undefined: then the child's in-process first layer is all there is (docs/network.md). Probed once per
 * binary, by running `node --version` through it (~10 ms of a Node start), asynchronously and only when the pool
 * first starts: building the adapter does no process work and blocks no event loop.
 */
export async function probeNetworkWrapper(bwrapPath: string): Promise<NetworkWrapper | undefined> {
  let works = probed.get(bwrapPath)
  if (!works) {
    works = runsNodeThrough(bwrapPath)
    probed.set(bwrapPath, works)
  }
  return (await works) ? { file: bwrapPath, args: networkNamespaceArgs() } : undefined
}

function runsNodeThrough(bwrapPath: string): Promise<boolean> {
  if (!fs.existsSync(bwrapPath) || !fs.existsSync(ENV)) return Promise.resolve(false)
  return new Promise((resolve) => {
    execFile(
      bwrapPath,
      [...networkNamespaceArgs(), process.execPath, '--version'],
      { env: {}, timeout: 10_000, encoding: 'utf8' },
      (error, stdout) => resolve(!error && stdout.trim() === process.version),
    )
  })
}
