import fs from 'node:fs'
import path from 'node:path'
import ts from 'typescript'

/**
 * The import graph of src/, adapters/ and deploy/ as the compiler sees it: TypeScript's own pre-processor lists every
 * import of a file (static, type-only, re-exports, dynamic `import()`, `require`). Used by the cycle and layer tests.
 */
export const ROOT = path.resolve(__dirname, '../..')
export const FOLDERS = ['src', 'adapters', 'deploy']

export function sourceFiles(folder: string): string[] {
  return fs.readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(folder, entry.name)
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(full)
    return /\.(ts|js)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [full] : []
  })
}

/** Every source file of the checked folders. */
export function allSourceFiles(): string[] {
  return FOLDERS.flatMap((folder) => sourceFiles(path.join(ROOT, folder)))
}

/** The file a relative specifier names, as the compiler resolves it (`./x` → x.ts, x/index.ts, x.js). */
export function resolveRelative(from: string, specifier: string): string | undefined {
  const base = path.resolve(path.dirname(from), specifier)
  const candidates = [base, `${base}.ts`, `${base}.js`, path.join(base, 'index.ts'), path.join(base, 'index.js')]
  return candidates.find((candidate) => fs.existsSync(candidate) && fs.statSync(candidate).isFile())
}

export function importGraph(files: readonly string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>()
  for (const file of files) {
    const info = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true)
    const targets = info.importedFiles
      .map((item) => item.fileName)
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => resolveRelative(file, specifier))
      .filter(
        (target): target is string =>
          target !== undefined && FOLDERS.some((folder) => target.startsWith(path.join(ROOT, folder) + path.sep)),
      )
    graph.set(file, [...new Set(targets)])
  }
  return graph
}

/** Every elementary loop found by depth-first search, each named from its first file back to it. */
export function findCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const cycles: string[][] = []
  const state = new Map<string, 'open' | 'done'>()
  const stack: string[] = []
  const visit = (file: string) => {
    state.set(file, 'open')
    stack.push(file)
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') cycles.push([...stack.slice(stack.indexOf(next)), next])
      else if (!state.has(next)) visit(next)
    }
    stack.pop()
    state.set(file, 'done')
  }
  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file)
  return cycles
}
