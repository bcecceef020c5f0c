import fs from 'node:fs'
import path from 'node:path'
import ts from 'typescript'
import { ROOT, allSourceFiles, findCycles, importGraph } from './import-graph'

/**
 * DESIGN's layering rule, checked: no two files of src/, adapters/ or deploy/ import each other, directly or around
 * a loop, type-only imports and `export … from` included (the layer order itself: layers.test.ts).
 */

describe('import graph of src/ and adapters/', () => {
  const files = allSourceFiles()
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
