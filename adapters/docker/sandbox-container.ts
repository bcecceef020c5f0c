import type Docker from 'dockerode'
import { ExecgateError, describeError, type SandboxOpenOptions } from '../../src/core'
import { currentOwner, formatOwner, ownerMayBeAlive, parseOwner } from '../shared/sandbox-owner'
import type { DockerOptions } from './options'
import { KEEPER } from './sandbox-launcher'
import { removeUploadFolders } from './sandbox-uploads'

/** Every sandbox container carries this label (its sandbox id), and the owner label: `host/pid:start`. */
export const SANDBOX_LABEL = 'io.execgate.sandbox'
export const OWNER_LABEL = 'io.execgate.sandbox.owner'

/** The tmpfs option that gives the workspace to the sandbox's user: Docker passes `uid=`/`gid=` to mount, podman wants `U`. */
const OWNERSHIP_OPTIONS = (uid: string, gid: string) => [`uid=${uid},gid=${gid}`, 'U']

/**
 * Creates and starts a sandbox's container: no network, read-only root, a size-capped tmpfs workspace owned by the
 * sandbox's user, `binds` bound in. When it cannot, `onFailure` runs (the caller's folders removed) and it throws.
 */
export async function startSandboxContainer(
  docker: Docker,
  settings: DockerOptions,
  options: SandboxOpenOptions,
  binds: string[],
  onFailure: () => void,
): Promise<Docker.Container> {
  const { policy } = options
  const [uid, gid] = settings.user.split(':') as [string, string]
  // The cgroup holds the whole sandbox: an exec's memory (each exec's own cap is its RLIMIT_DATA), the tmpfs
  // workspace and /tmp (tmpfs pages count against it), and the keeper.
  const memory = (policy.memoryMb + settings.workspaceMb + 16 + 32) * 2 ** 20
  const spec = (ownership: string): Docker.ContainerCreateOptions => ({
    Image: settings.sandboxImage,
    Entrypoint: [],
    Cmd: ['/bin/bash', '--noprofile', '--norc', '-c', KEEPER],
    OpenStdin: true,
    StdinOnce: false,
    Env: ['PATH=/usr/bin:/bin', 'HOME=/workspace', 'LANG=C.UTF-8', 'TMPDIR=/tmp', 'MPLBACKEND=Agg', 'MPLCONFIGDIR=/tmp/matplotlib'],
    User: settings.user,
    WorkingDir: '/workspace',
    NetworkDisabled: true,
    Tty: false,
    Labels: { [SANDBOX_LABEL]: options.id, [OWNER_LABEL]: formatOwner(currentOwner()) },
    HostConfig: {
      NetworkMode: 'none',
      Memory: memory,
      MemorySwap: memory,
      // The code's processes (node's threads count), the keeper, the launcher, and a kill exec.
      PidsLimit: policy.maxProcesses + 24,
      ReadonlyRootfs: true,
      Binds: binds,
      Tmpfs: { '/workspace': `rw,size=${settings.workspaceMb}m,mode=0750,${ownership}`, '/tmp': 'rw,size=16m,mode=1777' },
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Ulimits: [
        { Name: 'nofile', Soft: 256, Hard: 256 },
        { Name: 'nproc', Soft: 4096, Hard: 4096 },
        { Name: 'fsize', Soft: settings.workspaceMb * 2 ** 20, Hard: settings.workspaceMb * 2 ** 20 },
        { Name: 'core', Soft: 0, Hard: 0 },
      ],
      AutoRemove: false,
    },
  })
  let container: Docker.Container | undefined
  let lastError: unknown
  for (const ownership of OWNERSHIP_OPTIONS(uid, gid)) {
    try {
      container = await docker.createContainer(spec(ownership))
      break
    } catch (error) {
      lastError = error
      if (!/mount option/i.test(describeError(error))) break
    }
  }
  if (!container) {
    onFailure()
    throw new ExecgateError(
      'EXECGATE_ADAPTER_UNAVAILABLE',
      { name: 'docker', detail: `the sandbox container could not be created: ${engineMessage(lastError)}` },
      { cause: lastError, source: 'docker' },
    )
  }
  try {
    await container.start()
  } catch (error) {
    await container.remove({ force: true }).catch(() => undefined)
    onFailure()
    throw new ExecgateError(
      'EXECGATE_ADAPTER_UNAVAILABLE',
      { name: 'docker', detail: `the sandbox container did not start: ${engineMessage(error)}` },
      { cause: error, source: 'docker' },
    )
  }
  return container
}

export function engineMessage(error: unknown): string {
  return (error as { json?: { message?: string } })?.json?.message ?? describeError(error)
}

/** Removes sandbox containers whose owner (by label) is a process of this host that is no longer running. */
export async function sweepSandboxContainers(docker: Docker): Promise<number> {
  const found = await docker.listContainers({ all: true, filters: { label: [SANDBOX_LABEL] } })
  let removed = 0
  for (const item of found) {
    const owner = parseOwner(item.Labels?.[OWNER_LABEL] ?? '')
    if (owner && ownerMayBeAlive(owner)) continue
    try {
      await docker.getContainer(item.Id).remove({ force: true })
      removeUploadFolders(item.Mounts)
      removed++
    } catch {
      // removed meanwhile, or the engine refused: the next sweep tries again
    }
  }
  return removed
}
