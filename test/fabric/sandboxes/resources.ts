import fs from 'node:fs'
import path from 'node:path'
import Docker from 'dockerode'
import { processesOf } from '../../../adapters/process/uid-pool'

/** What a sandbox holds outside this process, looked up from the host: the tests' proof that a sandbox is gone. */

export const PODMAN_SOCKET = process.env.EXECGATE_PODMAN_SOCKET ?? '/run/execgate-podman/podman.sock'

/** Sandbox containers (by the io.execgate.sandbox label), as `id → sandbox id`. */
export async function sandboxContainers(): Promise<Map<string, string>> {
  const found = await new Docker({ socketPath: PODMAN_SOCKET }).listContainers({ all: true, filters: { label: ['io.execgate.sandbox'] } })
  return new Map(found.map((item) => [item.Id, item.Labels['io.execgate.sandbox']!]))
}

/** Sandbox ids that still have a container. */
export async function containersOf(ids: readonly string[]): Promise<string[]> {
  const live = new Set((await sandboxContainers()).values())
  return ids.filter((id) => live.has(id))
}

/** Folders under a process sandboxes' root. */
export function foldersUnder(root: string): string[] {
  try {
    return fs.readdirSync(root)
  } catch {
    return []
  }
}

/** Mount points under a folder (a crashed sandbox's tmpfs would be one). */
export function mountsUnder(root: string): string[] {
  return fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((point) => point.startsWith(root + path.sep))
}

/** The uid a process sandbox's folder records (its owner file's third line), when it has one. */
export function uidOf(folder: string): number | undefined {
  try {
    return Number(fs.readFileSync(path.join(folder, 'owner'), 'utf8').split('\n')[2]) || undefined
  } catch {
    return undefined
  }
}

/** Live processes of any of these uids. */
export function processesOfUids(uids: readonly number[]): number[] {
  return uids.flatMap((uid) => processesOf(uid))
}

export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<boolean> {
  const end = Date.now() + timeoutMs
  while (Date.now() < end) {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return check()
}
