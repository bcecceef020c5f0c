import fs from 'node:fs'
import path from 'node:path'
import ts from 'typescript'

/**
 * DESIGN's layering rule, checked: no two files of src/ or adapters/ import each other, directly or around a loop,
 * type-only imports and `export … from` included. TypeScript's own pre-processor lists every import of a file
 * (static, type-only, re-exports, dynamic `import()`, `require`), so the graph is the one the compiler sees.
 */
const ROOT = path.resolve(__dirname, '../..')
const FOLDERS = ['src', 'adapters']

function sourceFiles(folder: string): string[] {
  return fs.readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(folder, entry.name)
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(full)
    return /\.(ts|js)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [full] : []
  })
}

/** The file a relative specifier names, as the compiler resolves it (`./x` → x.ts, x/index.ts, x.js). */
function resolveRelative(from: string, specifier: string): string | undefined {
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
      .filter((target): target is string => target !== undefined && (FOLDERS.some((folder) => target.startsWith(path.join(ROOT, folder) + path.sep))))
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

describe('import graph of src/ and adapters/', () => {
  const files = FOLDERS.flatMap((folder) => sourceFiles(path.join(ROOT, folder)))
  const graph = importGraph(files)

  it('reads the real tree, with its imports', () => {
    // Guards the check itself: an empty graph would have no cycle either.
    expect(files.length).toBeGreaterThan(50)
    expect(graph.get(path.join(ROOT, 'src/app/container.ts'))).toContain(path.join(ROOT, 'src/app/tokens.ts'))
    expect(graph.get(path.join(ROOT, 'src/execution/execution-service.ts'))).toContain(path.join(ROOT, 'src/routing/router.ts'))
  })

  it('has no import cycle, type-only imports included', () => {
    const named = findCycles(graph).map((cycle) => cycle.map((file) => path.relative(ROOT, file)).join(' -> '))
    expect(named).toEqual([])
  })

  it('finds a loop when there is one, and names it', () => {
    const loop = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ])
    expect(findCycles(loop)).toEqual([['a.ts', 'b.ts', 'c.ts', 'a.ts']])
  })

  it('holds src/app/tokens.ts to tokens only: it imports nothing', () => {
    expect(graph.get(path.join(ROOT, 'src/app/tokens.ts'))).toEqual([])
    expect(ts.preProcessFile(fs.readFileSync(path.join(ROOT, 'src/app/tokens.ts'), 'utf8'), true, true).importedFiles).toEqual([])
  })
})
