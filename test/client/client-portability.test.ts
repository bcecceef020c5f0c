import fs from 'node:fs'
import path from 'node:path'
import ts from 'typescript'

/**
 * execgate/client runs wherever fetch does (Node 18+, Deno, Bun, browsers): what it imports at run time is its own
 * files and src/core/errors.ts (which imports nothing), never `node:` modules, packages or the server. Type-only
 * imports (the library's shared types) are erased from the JavaScript and are allowed.
 */

const CLIENT = path.join(__dirname, '../../src/client')

function runtimeImports(file: string): string[] {
  const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true)
  const found: string[] = []
  source.forEachChild((node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      const typeOnly = ts.isImportDeclaration(node)
        ? node.importClause?.isTypeOnly ||
          (node.importClause?.namedBindings &&
            ts.isNamedImports(node.importClause.namedBindings) &&
            node.importClause.namedBindings.elements.every((element) => element.isTypeOnly) &&
            !node.importClause.name)
        : node.isTypeOnly
      if (!typeOnly) found.push(node.moduleSpecifier.text)
    }
  })
  if (/\brequire\(|\bimport\(/.test(source.text)) found.push('(require or dynamic import)')
  return found
}

test("the client's run-time imports are its own files and src/core/errors only", () => {
  const files = fs.readdirSync(CLIENT).filter((name) => name.endsWith('.ts'))
  expect(files.length).toBeGreaterThan(8)
  const outside = files.flatMap((name) =>
    runtimeImports(path.join(CLIENT, name))
      .filter((specifier) => !/^\.\/[\w-]+$/.test(specifier) && specifier !== '../core/errors')
      .map((specifier) => `${name}: ${specifier}`),
  )
  expect(outside).toEqual([])
})

test('src/core/errors.ts, the one file of the library the client loads, imports nothing', () => {
  expect(runtimeImports(path.join(__dirname, '../../src/core/errors.ts'))).toEqual([])
})

test('the built client loads in a context without Node: no require beyond its own files and core/errors', () => {
  const dist = path.join(__dirname, '../../dist/src/client')
  if (!fs.existsSync(dist)) throw new Error('dist/ is not built: run `npm run build` (npm test builds first)')
  const required = fs
    .readdirSync(dist)
    .filter((name) => name.endsWith('.js'))
    .flatMap((name) => [...fs.readFileSync(path.join(dist, name), 'utf8').matchAll(/require\("([^"]+)"\)/g)].map((match) => match[1]!))
  expect([...new Set(required)].filter((specifier) => !specifier.startsWith('./') && specifier !== '../core/errors')).toEqual([])
})
