import { useEffect, useState } from 'preact/hooks'

/**
 * Hash routes (`#/tasks/<id>`): every page lives at /console/, so the server needs no rewrite rule and a reload or a
 * shared link opens the same page.
 */
export function currentPath(): string {
  return decodeURIComponent(location.hash.replace(/^#\/?/, '')) || ''
}

export function useHashPath(): string {
  const [path, setPath] = useState(currentPath)
  useEffect(() => {
    const update = () => setPath(currentPath())
    addEventListener('hashchange', update)
    return () => removeEventListener('hashchange', update)
  }, [])
  return path
}

export function href(path: string): string {
  return `#/${path.split('/').map(encodeURIComponent).join('/')}`
}

export function navigate(path: string): void {
  location.hash = href(path)
}

/** `tasks/:id` against `tasks/abc` → `{ id: 'abc' }`; undefined when it does not match. */
export function matchPattern(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split('/')
  const have = path.split('/')
  if (want.length !== have.length) return undefined
  const params: Record<string, string> = {}
  for (const [index, part] of want.entries()) {
    if (part.startsWith(':')) params[part.slice(1)] = have[index]!
    else if (part !== have[index]) return undefined
  }
  return params
}
