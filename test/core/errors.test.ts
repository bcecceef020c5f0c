import fs from 'node:fs'
import path from 'node:path'
import { ERROR_CODES, ExecgateError, isExecgateError } from '../../src/core'

const root = path.join(__dirname, '..', '..')

function sourceFiles(directory: string): string[] {
  return fs.readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name)
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(full)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [full] : []
  })
}

describe('error code registry', () => {
  const codes = Object.keys(ERROR_CODES)

  test('every code is used somewhere outside the registry', () => {
    const sources = [...sourceFiles(path.join(root, 'src')), ...sourceFiles(path.join(root, 'adapters'))]
      .filter((file) => !file.endsWith(path.join('core', 'errors.ts')))
      .map((file) => fs.readFileSync(file, 'utf8'))
      .join('\n')
    expect(codes.filter((code) => !sources.includes(`'${code}'`))).toEqual([])
  })

  test('every code is listed in docs/errors.md', () => {
    const doc = fs.readFileSync(path.join(root, 'docs', 'errors.md'), 'utf8')
    expect(codes.filter((code) => !doc.includes(code))).toEqual([])
  })

  test('errors carry code, fault, retryable and a prefixed message, and keep their cause', () => {
    const cause = new Error('root cause')
    const error = new ExecgateError('EXECGATE_ADAPTER_UNAVAILABLE', { name: 'lambda', detail: 'throttled' }, { cause, source: 'lambda' })
    expect(error).toMatchObject({ code: 'EXECGATE_ADAPTER_UNAVAILABLE', fault: 'backend', retryable: true })
    expect(error.message).toBe('[execgate] [lambda] adapter lambda is unavailable: throttled')
    expect(error.cause).toBe(cause)
    expect(isExecgateError({ code: 'EXECGATE_ADAPTER_UNAVAILABLE' }, 'EXECGATE_ADAPTER_UNAVAILABLE')).toBe(true)
    expect(isExecgateError({ code: 'ENOENT' })).toBe(false)
  })
})
