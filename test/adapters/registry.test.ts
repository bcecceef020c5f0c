import fs from 'node:fs'
import path from 'node:path'
import { ADAPTERS, ADAPTER_OPTION_SCHEMAS } from '../../adapters/registry'
import { CONFIG_SCHEMA, environmentName } from '../../src/config/schema'
import { LANGUAGES } from '../../src/core'
import { declaredHostileRuns, hostileRunsIn } from '../hostile/hostile-runs'

const root = path.join(__dirname, '..', '..')

describe('adapter registry', () => {
  const folders = fs
    .readdirSync(path.join(root, 'adapters'), { withFileTypes: true })
    // adapters/shared/ holds what several adapters use (DESIGN.md, layers); it is not an adapter.
    .filter((entry) => entry.isDirectory() && entry.name !== 'shared')
    .map((entry) => entry.name)

  test('every folder under adapters/ is registered', () => {
    expect(folders.filter((name) => name !== 'shared' && !ADAPTERS[name])).toEqual([])
  })

  test('every adapter is documented in docs/adapters/', () => {
    expect(Object.keys(ADAPTERS).filter((name) => !fs.existsSync(path.join(root, 'docs', 'adapters', `${name}.md`)))).toEqual([])
  })

  test('every adapter has a conformance test file calling describeAdapterContract', () => {
    const missing = Object.keys(ADAPTERS).filter((name) => {
      const file = path.join(root, 'test', 'adapters', `${name}.test.ts`)
      // Prettier may put the name on the next line: `describeAdapterContract(\n  'pyodide',`.
      return !fs.existsSync(file) || !new RegExp(`describeAdapterContract\\(\\s*'${name}'`).test(fs.readFileSync(file, 'utf8'))
    })
    expect(missing).toEqual([])
  })

  test('declared languages are known languages', () => {
    for (const definition of Object.values(ADAPTERS)) for (const language of definition.languages) expect(LANGUAGES).toContain(language)
  })

  /** Every relative import in a TypeScript file, static or dynamic (`import(...)`, `require(...)`), resolved to a path. */
  function relativeImports(file: string): string[] {
    const text = fs.readFileSync(file, 'utf8')
    const specifiers = [...text.matchAll(/(?:from\s+|import\s*\(\s*|require\s*\(\s*|import\s+)'(\.{1,2}\/[^']+)'/g)].map(
      (match) => match[1],
    )
    return specifiers.map((specifier) => path.resolve(path.dirname(file), specifier))
  }

  function sourceFiles(folder: string): string[] {
    return fs
      .readdirSync(folder, { withFileTypes: true, recursive: true })
      .filter((entry) => entry.isFile() && /\.(ts|js)$/.test(entry.name))
      .map((entry) => path.join(entry.parentPath, entry.name))
  }

  test('no adapter folder imports another adapter folder (what they share lives in adapters/shared)', () => {
    const adaptersRoot = path.join(root, 'adapters')
    const crossings: string[] = []
    for (const name of folders.filter((folder) => folder !== 'shared')) {
      for (const file of sourceFiles(path.join(adaptersRoot, name))) {
        for (const target of relativeImports(file)) {
          const relative = path.relative(adaptersRoot, target)
          if (relative.startsWith('..')) continue
          const owner = relative.split(path.sep)[0]
          if (owner !== name && owner !== 'shared') crossings.push(`${path.relative(root, file)} -> adapters/${relative}`)
        }
      }
    }
    expect(crossings).toEqual([])
  })

  test('adapters/shared imports no adapter folder', () => {
    const adaptersRoot = path.join(root, 'adapters')
    const upward = sourceFiles(path.join(adaptersRoot, 'shared'))
      .flatMap((file) => relativeImports(file).map((target) => path.relative(adaptersRoot, target)))
      .filter((relative) => !relative.startsWith('..') && relative.split(path.sep)[0] !== 'shared')
    expect(upward).toEqual([])
  })

  test("every adapter's options live in its own folder, and the config composes exactly those", () => {
    for (const name of Object.keys(ADAPTER_OPTION_SCHEMAS)) {
      const file = path.join(root, 'adapters', name, 'options.ts')
      expect(fs.existsSync(file)).toBe(true)
      expect(fs.readFileSync(path.join(root, 'adapters', 'option-schemas.ts'), 'utf8')).toContain(`from './${name}/options'`)
    }
    // Every adapter with settings has an options.ts, and every options.ts is composed (none is forgotten).
    const withOptionsFile = folders.filter((name) => fs.existsSync(path.join(root, 'adapters', name, 'options.ts')))
    expect(withOptionsFile.sort()).toEqual(Object.keys(ADAPTER_OPTION_SCHEMAS).sort())
    expect(CONFIG_SCHEMA.adapters).toBe(ADAPTER_OPTION_SCHEMAS)
    // No other module declares adapter options: src/config holds no per-adapter files any more.
    expect(fs.existsSync(path.join(root, 'src', 'config', 'adapter-options'))).toBe(false)
  })

  test("each option's env var is the one derived from its key, and each has a doc and a default", () => {
    for (const [name, schema] of Object.entries(ADAPTER_OPTION_SCHEMAS)) {
      for (const [key, leaf] of Object.entries(schema as Record<string, { doc: string; env: string; default: unknown }>)) {
        expect(leaf.env).toBe(environmentName(['adapters', name, key]))
        expect(leaf.doc.length).toBeGreaterThan(0)
        expect(leaf.default).not.toBeUndefined()
      }
    }
  })

  test('an adapter built with no options takes the schema defaults (each written once, in options.ts)', async () => {
    const { withOptionDefaults } = await import('../../adapters/shared/option-schema')
    expect(withOptionDefaults(ADAPTER_OPTION_SCHEMAS.quickjs, { workers: 5, killGraceMs: undefined })).toEqual({
      maxStackKiB: 256,
      workers: 5,
      killGraceMs: 50,
      maxMemoryMiB: 256,
      recycleAboveMiB: 128,
    })
    expect(withOptionDefaults(ADAPTER_OPTION_SCHEMAS.process, {}).pythonPath).toBe('/usr/bin/python3')
  })
})

describe('the hostile corpus reaches every adapter', () => {
  // The placeholder runs nothing: every request answers not_implemented, so no payload can do anything there.
  const RUNS_NO_CODE = new Set(['placeholder'])

  test('every adapter has a hostile run (describeHostileCases) for every language it runs', () => {
    const runs = declaredHostileRuns(path.join(root, 'test'))
    const missing = Object.values(ADAPTERS)
      .filter((definition) => !RUNS_NO_CODE.has(definition.name))
      .flatMap((definition) => definition.languages.map((language) => `${definition.name} × ${language}`))
      .filter((pair) => !runs.some((run) => `${run.adapter} × ${run.language}` === pair))
    expect(missing).toEqual([])
  })

  test('the declared runs are read from the calls as written: a literal language, or the loop around the call', () => {
    const source = [
      "describeHostileCases({ adapter: 'quickjs', language: 'javascript', hostFunctions: true, target: () => ({}) })",
      "for (const language of ['python', 'bash'] as const) {",
      "  describeHostileCases({ adapter: 'process', language, notApplicable: { a: 'b' } })",
      '}',
    ].join('\n')
    expect(hostileRunsIn(source, 'x.test.ts').map((run) => `${run.adapter} × ${run.language}`)).toEqual([
      'quickjs × javascript',
      'process × python',
      'process × bash',
    ])
  })
})
