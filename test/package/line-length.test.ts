import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

/**
 * Lines <= 140 columns in the code files eslint does not read (its max-len rule covers .ts/.tsx): the Python client,
 * the examples and the plain JavaScript children and scripts. Files still over are listed, each to leave once fixed
 * (embedded Python in child.js, a long data table in a python-diff case).
 */
const NOT_YET = new Set([
  'adapters/pyodide/child.js',
  'adapters/shell/child.js',
  'scripts/build-console.mjs',
  'test/python-diff/cases/agent-formulas.py',
])

test('no .py, .js, .mjs or .cjs line in the repository is over 140 characters', () => {
  const root = path.resolve(__dirname, '..', '..')
  const files = execFileSync('git', ['ls-files', '*.py', '*.js', '*.mjs', '*.cjs'], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .filter((file) => file && !NOT_YET.has(file))
  expect(files.length).toBeGreaterThan(10)
  const long = files.flatMap((file) =>
    fs
      .readFileSync(path.join(root, file), 'utf8')
      .split('\n')
      .flatMap((line, index) => (line.length > 140 ? [`${file}:${index + 1}: ${line.length}`] : [])),
  )
  expect(long).toEqual([])
})
