import type { ExecutionRequest, RequestFile } from '../../core'
import type { Task } from './task-types'

/** Where a dependency's outputs appear in a dependent's workspace: `deps/<taskId>/value.json` and `deps/<taskId>/files/<path>`. */
export const DEPENDENCY_ROOT = 'deps'

/**
 * The dependent's request with its dependencies' outputs added as workspace files: the value each returned, as
 * JSON, and every file it wrote, under `deps/<taskId>/` or the folder the task's `dependencyPaths` gives that
 * dependency. Reading them needs a policy whose filesystem access is `read_only` or more (or the submitter's grant).
 */
export function withDependencyInputs(
  request: ExecutionRequest,
  dependencies: readonly Task[],
  paths: Readonly<Record<string, string>> = {},
): ExecutionRequest {
  if (dependencies.length === 0) return request
  const files: RequestFile[] = [...(request.files ?? [])]
  for (const dependency of dependencies) {
    const base = paths[dependency.id] ?? `${DEPENDENCY_ROOT}/${dependency.id}`
    files.push({ path: `${base}/value.json`, content: JSON.stringify(dependency.result?.value ?? null) })
    for (const file of dependency.outputFiles ?? []) files.push({ ...file, path: `${base}/files/${file.path}` })
  }
  // Named before the spread and set after it (see runInputsFor): a hidden class shared by every such request.
  const withFiles: ExecutionRequest = { files, ...request }
  withFiles.files = files
  return withFiles
}
