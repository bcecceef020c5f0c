import fs from 'node:fs'
import path from 'node:path'
import { ADAPTERS } from '../../adapters/registry'
import { LANGUAGES } from '../../src/core'

const root = path.join(__dirname, '..', '..')

describe('adapter registry', () => {
  const folders = fs
    .readdirSync(path.join(root, 'adapters'), { withFileTypes: true })
    // adapters/shared/ holds what several adapters use (DESIGN.md, layers); it is not an adapter.
    .filter((entry) => entry.isDirectory() && entry.name !== 'shared')
    .map((entry) => entry.name)

  test('every folder under adapters/ is registered', () => {
    expect(folders.filter((name) => !ADAPTERS[name])).toEqual([])
  })

  test('every adapter is documented in docs/adapters/', () => {
    expect(Object.keys(ADAPTERS).filter((name) => !fs.existsSync(path.join(root, 'docs', 'adapters', `${name}.md`)))).toEqual([])
  })

  test('every adapter has a conformance test file calling describeAdapterContract', () => {
    const missing = Object.keys(ADAPTERS).filter((name) => {
      const file = path.join(root, 'test', 'adapters', `${name}.test.ts`)
      return !fs.existsSync(file) || !fs.readFileSync(file, 'utf8').includes(`describeAdapterContract('${name}'`)
    })
    expect(missing).toEqual([])
  })

  test('declared languages are known languages', () => {
    for (const definition of Object.values(ADAPTERS)) for (const language of definition.languages) expect(LANGUAGES).toContain(language)
  })
})
