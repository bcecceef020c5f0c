import { DEFAULT_POLICY, staticCheck, staticValidationReport } from '../../src/policy'

const codes = (language: 'javascript' | 'typescript', code: string) =>
  staticCheck(language, code, DEFAULT_POLICY).map((issue) => [issue.code, issue.line, issue.column])

describe.each(['javascript', 'typescript'] as const)('static checks for %s', (language) => {
  test('an allowed program has no issues', () => {
    expect(codes(language, 'const x = [1, 2, 3]\nx.reduce((a, b) => a + b, 0)')).toEqual([])
  })

  test('import of a module outside the allow-list, with line and column', () => {
    expect(codes(language, "const a = 1\nimport fs from 'fs'")).toEqual([['import_not_allowed', 2, 1]])
  })

  test('require and dynamic import()', () => {
    expect(codes(language, "const cp = require('child_process')")).toEqual([['import_not_allowed', 1, 12]])
    expect(codes(language, "await import('node:fs')")).toEqual([['import_not_allowed', 1, 7]])
    expect(codes(language, 'const name = "fs"; require(name)')[0]?.[0]).toBe('import_not_allowed')
  })

  test('eval and the Function constructor', () => {
    expect(codes(language, 'eval("1")')).toEqual([['forbidden_call', 1, 1]])
    expect(codes(language, "new Function('return 1')")).toEqual([['forbidden_call', 1, 1]])
    expect(codes(language, "globalThis.Function('return 1')()")[0]?.[0]).toBe('forbidden_call')
  })

  test('an allowed import passes', () => {
    expect(staticCheck(language, "import m from 'math'", { ...DEFAULT_POLICY, allowedImports: ['math'] })).toEqual([])
  })

  test('a method that happens to be called require is not an import', () => {
    expect(codes(language, "const o = { require: (x) => x }; o.require('fs')")).toEqual([])
  })

  test('syntax errors are reported with their position', () => {
    const report = staticValidationReport(language, 'let = = 1', DEFAULT_POLICY)
    expect(report.valid).toBe(false)
    expect(report.issues[0]).toMatchObject({ code: 'syntax', line: 1 })
  })
})

describe('static checks for typescript only', () => {
  test('the TypeScript import forms are checked on the code that runs: import = require, unused imports, enums', () => {
    expect(codes('typescript', "import cp = require('child_process')")).toEqual([['import_not_allowed', 1, 12]])
    // TypeScript drops an import no name uses; the checks keep it, since the code named it.
    expect(codes('typescript', "const n: number = 1\nimport fs from 'fs'")).toEqual([['import_not_allowed', 2, 1]])
    expect(codes('typescript', "enum E { A }\nconst x: E = E.A\neval('1')")).toEqual([['forbidden_call', 3, 1]])
  })

  test('type-only imports load nothing and are not refused', () => {
    expect(codes('typescript', "import type { Stats } from 'fs'\nconst s: Stats | undefined = undefined")).toEqual([])
  })
})
