import { ExecgateError } from '../core/errors'

/** The directory sandboxed code sees the workspace at, on backends with real files (process, docker). */
export const WORKSPACE_ROOT = '/workspace'
const MAX_PATH_LENGTH = 1024

function refuse(path: unknown, reason: string): never {
  throw new ExecgateError('EXECGATE_WORKSPACE_PATH', {
    path: typeof path === 'string' ? JSON.stringify(path).slice(0, 200) : typeof path,
    reason,
  })
}

/**
 * A workspace path in its one canonical form (`dir/file.txt`), or an `EXECGATE_WORKSPACE_PATH` error saying why not.
 * `..` is refused outright rather than resolved: code that climbs is either confused or probing, and either way a
 * clear refusal beats a path that silently lands somewhere else. `/workspace/x` is accepted as `x`.
 */
export function normalizeWorkspacePath(path: unknown): string {
  if (typeof path !== 'string') refuse(path, 'a path must be a string')
  if (path.length === 0) refuse(path, 'the path is empty')
  if (path.length > MAX_PATH_LENGTH) refuse(path, `paths are at most ${MAX_PATH_LENGTH} characters`)
  if (path.includes('\0')) refuse(path, 'paths may not contain NUL bytes')
  if (path.includes('\\')) refuse(path, 'use "/" between path segments; "\\" is not allowed')
  if (/^[a-z][a-z0-9+.-]*:/i.test(path)) refuse(path, 'URLs are not workspace paths')
  let relative = path
  if (relative.startsWith('/')) {
    if (relative !== WORKSPACE_ROOT && !relative.startsWith(`${WORKSPACE_ROOT}/`))
      refuse(path, `absolute paths must be inside ${WORKSPACE_ROOT}`)
    relative = relative.slice(WORKSPACE_ROOT.length)
  }
  const segments = relative.split('/').filter((segment) => segment !== '' && segment !== '.')
  if (segments.includes('..')) refuse(path, '".." may not appear in a workspace path')
  if (segments.length === 0) refuse(path, 'the path names the workspace root, not a file')
  return segments.join('/')
}
