import { DEFAULT_POLICY, checkPython } from '../../src/policy'
import { scanPython } from '../../src/runtime'

const issues = (code: string, policy = DEFAULT_POLICY) =>
  checkPython(code, policy).map((issue) => [issue.code, issue.line, issue.column, issue.message])

describe('Python static checks', () => {
  test('allowed imports pass; others are refused with line and column', () => {
    expect(issues('import math\nfrom json import dumps\nimport datetime as dt')).toEqual([])
    expect(issues('x = 1\nimport os.path as p, math')).toEqual([['import_not_allowed', 2, 8, expect.stringContaining('"os.path"')]])
    expect(issues('from subprocess import run')[0]?.[0]).toBe('import_not_allowed')
    expect(issues('if True: import socket')[0]?.[0]).toBe('import_not_allowed')
    expect(issues('from . import sibling')).toEqual([])
  })

  test('imports inside strings and comments are not imports', () => {
    expect(issues('s = "import os"\n# import subprocess\nt = """\nimport sys\n"""\nu = f"{1} import socket"')).toEqual([])
  })

  test('eval, exec, compile and __import__ are refused, including full-width spellings', () => {
    expect(issues("eval('1')")[0]?.[0]).toBe('forbidden_call')
    expect(issues("exec('x = 1')")[0]?.[0]).toBe('forbidden_call')
    expect(issues("__ｉｍｐｏｒｔ__('os')")[0]?.[0]).toBe('forbidden_call')
    expect(issues("obj.eval('1')")).toEqual([])
  })

  test('open is refused only when the policy grants no filesystem', () => {
    expect(issues("open('a.txt')")[0]?.[0]).toBe('forbidden_call')
    expect(issues("open('a.txt')", { ...DEFAULT_POLICY, filesystem: 'read_only' })).toEqual([])
  })

  test('finds the constructs monty cannot run, and only real ones', () => {
    expect(scanPython('class A:\n    pass').unsupported).toEqual(['class definitions'])
    expect(scanPython('def g():\n    yield 1').unsupported).toEqual(['generators (yield)'])
    expect(scanPython('match point:\n    case (0, 0):\n        pass').unsupported).toEqual(['pattern matching (match statements)'])
    expect(scanPython('match = 3\nmatch.bit_length()\ntype = 5').unsupported).toEqual([])
    expect(scanPython('s = "class A: pass"  # yield').unsupported).toEqual([])
  })

  test('the same code is scanned once and the scan it shares cannot be changed by a reader', () => {
    const code = 'import json\nprint(json.dumps([1]))'
    const first = scanPython(code)
    expect(scanPython(code)).toBe(first)
    expect(Object.isFrozen(first) && Object.isFrozen(first.imports)).toBe(true)
    expect(() => (first.imports as unknown[]).push({ name: 'os' })).toThrow(TypeError)
    expect(scanPython(code).imports.map((item) => item.name)).toEqual(['json'])
  })
})
