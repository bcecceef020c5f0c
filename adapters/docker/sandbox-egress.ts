import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { EgressAccess } from '../../src/core'
import { EGRESS_PATHS, START_FORWARDER, type EgressBridgeFiles } from '../shared/egress-bridge'
import { containerEgressEnvironment } from './container-egress'

/** Where the folder is bound in the sandbox's container: EGRESS_PATHS all live there. */
const MOUNT_POINT = path.posix.dirname(EGRESS_PATHS.socket)

/**
 * A persistent docker sandbox's way out (docs/network.md). A container's binds are fixed when it is made, but each
 * exec has its own egress run (its own rules, caps and record), so the container gets a host folder bound read-only
 * at /run/execgate holding the forwarder and Node's preload, and each exec with network asks the gateway to listen
 * at `egress.sock` inside it. The launcher starts the forwarder for that exec and kills it with the exec's other
 * processes at the end; the gateway removes the socket when the exec's run ends, so an exec without network (or
 * anything left between execs) finds nothing to connect to.
 */
export class SandboxEgressFolder {
  private trustCopied = false

  private constructor(readonly directory: string) {}

  /** Made once per sandbox whose policy allows any network (an exec may only tighten it). */
  static create(files: EgressBridgeFiles): SandboxEgressFolder {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-docker-sandbox-egress-'))
    // The container's users are not the server's: they read the files and connect to the socket, nothing more.
    fs.chmodSync(directory, 0o755)
    fs.copyFileSync(files.forwarder, path.join(directory, path.posix.basename(EGRESS_PATHS.forwarder)))
    fs.copyFileSync(files.nodeCorePreload, path.join(directory, path.posix.basename(EGRESS_PATHS.nodePreload)))
    return new SandboxEgressFolder(directory)
  }

  /** The container's bind: read-only (a socket is still connectable on a read-only mount). */
  get bind(): string {
    return `${this.directory}:${MOUNT_POINT}:ro`
  }

  /** Starts the exec's proxy socket in the folder; what the exec's launcher and environment need to use it. */
  async forExec(access: EgressAccess): Promise<{ env: string[]; startLine: string }> {
    const endpoint = await access.endpoint({ socketPath: path.join(this.directory, path.posix.basename(EGRESS_PATHS.socket)) })
    if (endpoint.caBundlePath && !this.trustCopied) {
      // The gateway's CA is made on first need and lives as long as the server: copied once, when it first exists.
      fs.copyFileSync(endpoint.caBundlePath, path.join(this.directory, path.posix.basename(EGRESS_PATHS.caBundle)))
      this.trustCopied = true
    }
    return { env: containerEgressEnvironment({ trustBundle: this.trustCopied, nodePreload: true }), startLine: START_FORWARDER }
  }

  remove(): void {
    fs.rmSync(this.directory, { recursive: true, force: true })
  }
}
