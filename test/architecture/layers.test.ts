import path from 'node:path'
import ts from 'typescript'
import { ROOT, allSourceFiles, importGraph } from './import-graph'

/**
 * DESIGN.md's layer table, enforced: every file of src/, adapters/ and deploy/ has a layer, and no import runs from a
 * lower layer to a higher one, type-only imports included. Files of one layer may import each other (the cycle test
 * keeps that a tree). The table is also in docs/architecture.md ("Layers").
 */
export const LAYERS: readonly (readonly [prefix: string, layer: number])[] = [
  ['src/core/', 1],
  // The adapters' option declarations are data the configuration composes (an adapter owns its options, in its
  // folder), so they sit with src/config, below the adapters themselves.
  ['adapters/option-schemas.ts', 3],
  ['adapters/shared/option-schema.ts', 3],
  ['adapters/*/options.ts', 3],
  ['src/policy/', 3],
  ['src/readiness/', 3],
  ['src/observability/', 3],
  ['src/workspace/', 3],
  ['src/config/', 3],
  ['src/runtime/', 3],
  ['src/routing/', 4],
  ['adapters/', 4],
  ['src/execution/', 5],
  // The egress gateway's policy engine and proxy, beside the execution service that opens a run's egress.
  ['src/egress/', 5],
  ['src/agents/', 6],
  ['src/fabric/', 6],
  // The HTTP client (execgate/client) speaks the fabric's types (type-only) and nothing of the server; the framework
  // tools (execgate/ai-sdk, …) take an Execgate or an ExecgateClient by shape, importing neither.
  ['src/client/', 6],
  ['src/tools/', 6],
  ['src/app/', 7],
  ['src/index.ts', 7],
  ['src/server/', 8],
  ['src/cli/', 9],
  // Deployments of execgate: they import the library, and nothing imports them.
  ['deploy/', 10],
]

/** What an adapter may see of src/: the contract, the workspace and the runtime machinery, nothing else. */
const ADAPTER_MAY_IMPORT = ['src/core/', 'src/workspace/', 'src/runtime/']

function matches(relative: string, prefix: string): boolean {
  if (!prefix.includes('*')) return prefix.endsWith('/') ? relative.startsWith(prefix) : relative === prefix
  const pattern = new RegExp(
    `^${prefix
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\/]/g, '\\$&'))
      .join('[^/]+')}$`,
  )
  return pattern.test(relative)
}

/** A file's layer: the first row of the table whose prefix it falls under (rows go from narrow to wide). */
export function layerOf(relative: string, table = LAYERS): number | undefined {
  return table.find(([prefix]) => matches(relative, prefix))?.[1]
}

/** Every import that runs up the table, and every adapter import beyond what an adapter may see, named. */
export function upwardImports(graph: ReadonlyMap<string, readonly string[]>, table = LAYERS): string[] {
  const found: string[] = []
  for (const [file, targets] of graph) {
    const from = path.relative(ROOT, file)
    const fromLayer = layerOf(from, table)
    for (const target of targets) {
      const to = path.relative(ROOT, target)
      const toLayer = layerOf(to, table)
      if (fromLayer === undefined || toLayer === undefined) continue
      if (toLayer > fromLayer) found.push(`${from} (${fromLayer}) -> ${to} (${toLayer})`)
      else if (
        fromLayer === layerOf('adapters/x/index.ts', table) &&
        from.startsWith('adapters/') &&
        to.startsWith('src/') &&
        !ADAPTER_MAY_IMPORT.some((allowed) => to.startsWith(allowed))
      ) {
        found.push(`${from} (adapter) -> ${to} (adapters see only ${ADAPTER_MAY_IMPORT.join(', ')})`)
      }
    }
  }
  return found.sort()
}

describe('the layer table', () => {
  const files = allSourceFiles()
  const graph = importGraph(files)

  it('gives every file of src/, adapters/ and deploy/ a layer', () => {
    expect(files.length).toBeGreaterThan(50)
    expect(files.map((file) => path.relative(ROOT, file)).filter((file) => layerOf(file) === undefined)).toEqual([])
  })

  it('has no import running back up, type-only imports included', () => {
    expect(upwardImports(graph)).toEqual([])
  })

  it('catches an upward import (type-only ones too) and an adapter reaching past the runtime', () => {
    const at = (relative: string) => path.join(ROOT, relative)
    const graph = new Map([
      [at('src/core/types.ts'), [at('src/execution/types.ts')]],
      [at('src/routing/router.ts'), [at('src/core/types.ts')]],
      [at('adapters/quickjs/index.ts'), [at('src/policy/index.ts'), at('src/runtime/index.ts')]],
      [at('src/server/app.ts'), [at('deploy/lambda/handler.ts')]],
    ])
    expect(upwardImports(graph)).toEqual([
      'adapters/quickjs/index.ts (adapter) -> src/policy/index.ts (adapters see only src/core/, src/workspace/, src/runtime/)',
      'src/core/types.ts (1) -> src/execution/types.ts (5)',
      'src/server/app.ts (8) -> deploy/lambda/handler.ts (10)',
    ])
    // The graph holds type-only imports and re-exports too: what the pre-processor reads of type-only source.
    const typeOnly = ts.preProcessFile(
      "import type { Execgate } from '../index'\nexport type { Router } from '../routing/router'\n",
      true,
      true,
    )
    expect(typeOnly.importedFiles.map((item) => item.fileName)).toEqual(['../index', '../routing/router'])
    // …and of a real file: src/agents names the ExecutionService's options by type only.
    expect(importGraph([at('src/agents/code-runner.ts')]).get(at('src/agents/code-runner.ts'))).toContain(at('src/execution/types.ts'))
  })

  it('places option declarations with the configuration and adapters above the runtime', () => {
    expect(layerOf('adapters/quickjs/options.ts')).toBe(layerOf('src/config/schema.ts'))
    expect(layerOf('adapters/quickjs/index.ts')).toBeGreaterThan(layerOf('src/runtime/worker-pool.ts')!)
    expect(layerOf('deploy/lambda/handler.ts')).toBeGreaterThan(
      Math.max(...LAYERS.filter(([prefix]) => !prefix.startsWith('deploy/')).map(([, layer]) => layer)),
    )
  })
})
