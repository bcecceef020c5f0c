import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { DEFAULT_POLICY } from '../../src/policy'
import {
  DirectoryLayer,
  MemoryWorkspace,
  OverlayWorkspace,
  RunHostFunctions,
  checkHostFunctionDefinition,
  globMatcher,
  normalizeWorkspacePath,
  standardHostFunctions,
  type HostFunctionDefinition,
} from '../../src/workspace'
import type { SecurityPolicy } from '../../src/core'

const sandboxed: SecurityPolicy = { ...DEFAULT_POLICY, filesystem: 'sandboxed' }

describe('workspace paths', () => {
  test.each([
    ['a.txt', 'a.txt'],
    ['./dir//b.csv', 'dir/b.csv'],
    ['/workspace/notes/x.md', 'notes/x.md'],
    ['dir/./c', 'dir/c'],
  ])('%s is %s', (given, expected) => expect(normalizeWorkspacePath(given)).toBe(expected))

  test.each([
    ['../etc/passwd', '".." may not appear'],
    ['a/../../b', '".." may not appear'],
    ['/etc/passwd', 'absolute paths must be inside /workspace'],
    ['/workspace/../etc/passwd', '".." may not appear'],
    ['notes.txt\0/../../etc/passwd', 'NUL'],
    ['..\\..\\etc\\passwd', '"\\" is not allowed'],
    ['file:///etc/passwd', 'URLs are not workspace paths'],
    ['', 'empty'],
    ['/workspace', 'the workspace root'],
  ])('%j is refused: %s', (given, reason) => {
    expect(() => normalizeWorkspacePath(given)).toThrow(
      expect.objectContaining({ code: 'EXECGATE_WORKSPACE_PATH', message: expect.stringContaining(reason) }),
    )
  })

  test('a non-string path names its type', () => {
    expect(() => normalizeWorkspacePath(42)).toThrow('workspace path number refused: a path must be a string')
  })
})

describe('globs', () => {
  const paths = ['a.csv', 'data/b.csv', 'data/2024/c.csv', 'data/notes.md', 'x/y/z.json']
  test.each([
    ['*.csv', ['a.csv', 'data/2024/c.csv', 'data/b.csv']],
    ['data/*.csv', ['data/b.csv']],
    ['data/**/*.csv', ['data/2024/c.csv', 'data/b.csv']],
    ['**/*.{md,json}', ['data/notes.md', 'x/y/z.json']],
    ['data/[bc].csv', ['data/b.csv']],
    ['data/[!b].csv', []],
    ['?.csv', ['a.csv', 'data/2024/c.csv', 'data/b.csv']],
    ['/workspace/?.csv', ['a.csv']],
    [undefined, paths],
  ])('%s', (glob, expected) => {
    expect(paths.filter(globMatcher(glob)).sort()).toEqual([...expected].sort())
  })

  test('a pathological pattern is matched without backtracking', () => {
    // As a backtracking RegExp this is exponential in the number of stars; here it finishes at once.
    const matches = globMatcher('*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b')
    expect(matches('a'.repeat(200))).toBe(false)
    expect(matches(`${'a'.repeat(20)}b`)).toBe(true)
  })
})

describe('memory and overlay workspaces', () => {
  test('size limits hold per file, in total and in count', async () => {
    const workspace = new MemoryWorkspace({ maxFileBytes: 10, maxTotalBytes: 15, maxFiles: 2 })
    await expect(workspace.write('big', Buffer.alloc(11))).rejects.toMatchObject({
      code: 'EXECGATE_WORKSPACE_LIMIT',
      message: expect.stringContaining('limited to 10 bytes'),
    })
    await workspace.write('a', Buffer.alloc(10))
    await expect(workspace.write('b', Buffer.alloc(6))).rejects.toMatchObject({
      message: expect.stringContaining('bring the workspace to 16 bytes'),
    })
    await workspace.write('b', Buffer.alloc(5))
    await expect(workspace.write('c', Buffer.alloc(0))).rejects.toMatchObject({ message: expect.stringContaining('limit of 2 files') })
    await workspace.write('a', Buffer.alloc(1))
    expect(workspace.size).toBe(6)
  })

  test('a file cannot shadow a directory, nor a directory a file', async () => {
    const workspace = new MemoryWorkspace()
    await workspace.write('dir/a', Buffer.from('x'))
    await expect(workspace.write('dir', Buffer.from('y'))).rejects.toMatchObject({ code: 'EXECGATE_WORKSPACE_PATH' })
    await expect(workspace.write('dir/a/b', Buffer.from('y'))).rejects.toMatchObject({
      message: expect.stringContaining('dir/a is a file'),
    })
  })

  describe('over a host directory', () => {
    let root: string
    let outside: string
    beforeAll(() => {
      root = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-stable-'))
      outside = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-outside-'))
      fs.mkdirSync(path.join(root, 'data'))
      fs.writeFileSync(path.join(root, 'data', 'prices.csv'), 'item,price\ntea,3.50\n')
      fs.writeFileSync(path.join(root, 'readme.md'), 'stable readme')
      fs.writeFileSync(path.join(outside, 'secret.txt'), 'SECRET-OUTSIDE')
      fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(root, 'leak.txt'))
      fs.symlinkSync(outside, path.join(root, 'leakdir'))
      fs.symlinkSync('data/prices.csv', path.join(root, 'inside-link.csv'))
      fs.writeFileSync(path.join(root, 'huge.bin'), Buffer.alloc(2048))
    })
    afterAll(() => {
      fs.rmSync(root, { recursive: true, force: true })
      fs.rmSync(outside, { recursive: true, force: true })
    })

    test('reads fall through the overlay to the stable layer; writes land only in the overlay', async () => {
      const overlay = new MemoryWorkspace()
      const workspace = new OverlayWorkspace(new DirectoryLayer(root, 1024), overlay)
      expect((await workspace.read('readme.md'))?.toString()).toBe('stable readme')
      await workspace.write('readme.md', Buffer.from('overlay readme'))
      await workspace.write('out/total.txt', Buffer.from('3.50'))
      expect((await workspace.read('readme.md'))?.toString()).toBe('overlay readme')
      expect(fs.readFileSync(path.join(root, 'readme.md'), 'utf8')).toBe('stable readme')
      expect(fs.existsSync(path.join(root, 'out'))).toBe(false)
      expect(
        workspace
          .changes()
          .map((change) => change.path)
          .sort(),
      ).toEqual(['out/total.txt', 'readme.md'])
      expect((await workspace.list()).map((entry) => entry.path)).toEqual([
        'data/prices.csv',
        'huge.bin',
        'inside-link.csv',
        'out/total.txt',
        'readme.md',
      ])
    })

    test('links that leave the root are refused on read and left out of listings; links inside work', async () => {
      const layer = new DirectoryLayer(root, 1024)
      await expect(layer.read('leak.txt')).rejects.toMatchObject({
        code: 'EXECGATE_WORKSPACE_PATH',
        message: expect.stringContaining('leads outside the workspace'),
      })
      await expect(layer.read('leakdir/secret.txt')).rejects.toMatchObject({ code: 'EXECGATE_WORKSPACE_PATH' })
      expect((await layer.read('inside-link.csv'))?.toString()).toContain('tea,3.50')
      const listed = (await layer.list()).map((entry) => entry.path)
      expect(listed).not.toContain('leak.txt')
      expect(listed.some((entry) => entry.startsWith('leakdir'))).toBe(false)
    })

    test('a stable file over the per-file limit is refused', async () => {
      await expect(new DirectoryLayer(root, 1024).read('huge.bin')).rejects.toMatchObject({ code: 'EXECGATE_WORKSPACE_LIMIT' })
    })
  })
})

describe('run host functions', () => {
  const echo: HostFunctionDefinition = {
    name: 'price_of',
    description: 'price_of(item, quantity) -> number',
    parameters: { type: 'array', items: [{ type: 'string' }, { type: 'integer', minimum: 1 }], minItems: 2, maxItems: 2 },
    handler: ([item, quantity]) => (item === 'tea' ? 3.5 : 1) * (quantity as number),
  }

  test('arguments are checked against the schema, naming the argument', async () => {
    const host = new RunHostFunctions([echo], { policy: sandboxed, workspace: new MemoryWorkspace() })
    await expect(host.call('price_of', ['tea', 2])).resolves.toBe(7)
    await expect(host.call('price_of', ['tea', 0])).rejects.toMatchObject({
      code: 'EXECGATE_HOST_CALL_ARGS',
      message: '[execgate] price_of: argument 2 must be >= 1',
    })
    await expect(host.call('price_of', ['tea'])).rejects.toMatchObject({ message: '[execgate] price_of: needs at least 2 argument(s)' })
    await expect(host.call('nope', [])).rejects.toMatchObject({ code: 'EXECGATE_HOST_CALL_UNKNOWN' })
    expect(host.records.map((record) => [record.name, record.ok])).toEqual([
      ['price_of', true],
      ['price_of', false],
      ['price_of', false],
      ['nope', false],
    ])
  })

  test('the call count budget ends with EXECGATE_HOST_CALL_BUDGET', async () => {
    const host = new RunHostFunctions([echo], {
      policy: { ...sandboxed, hostCalls: { maxCount: 2, maxTotalMs: 1000 } },
      workspace: new MemoryWorkspace(),
    })
    await host.call('price_of', ['a', 1])
    await host.call('price_of', ['a', 1])
    await expect(host.call('price_of', ['a', 1])).rejects.toMatchObject({
      code: 'EXECGATE_HOST_CALL_BUDGET',
      message: expect.stringContaining('allows 2 host calls'),
    })
  })

  test('the time budget stops a slow call when the budget runs out, and its signal aborts', async () => {
    let aborted = false
    const slow: HostFunctionDefinition = {
      name: 'slow',
      description: 'never answers',
      parameters: { type: 'array', maxItems: 0 },
      handler: (_args, call) => new Promise((resolve) => call.signal.addEventListener('abort', () => resolve((aborted = true)))),
    }
    const host = new RunHostFunctions([slow], {
      policy: { ...sandboxed, hostCalls: { maxCount: 10, maxTotalMs: 50 } },
      workspace: new MemoryWorkspace(),
    })
    await expect(host.call('slow', [])).rejects.toMatchObject({
      code: 'EXECGATE_HOST_CALL_BUDGET',
      message: expect.stringContaining('50 ms'),
    })
    expect(aborted).toBe(true)
    await expect(host.call('slow', [])).rejects.toMatchObject({ code: 'EXECGATE_HOST_CALL_BUDGET' })
  })

  test('the policy filesystem decides: none refuses reads, read_only refuses writes', async () => {
    const workspace = new MemoryWorkspace()
    await workspace.write('a.txt', Buffer.from('hello'))
    const none = new RunHostFunctions(standardHostFunctions(), { policy: { ...sandboxed, filesystem: 'none' }, workspace })
    await expect(none.call('read_file', ['a.txt'])).rejects.toMatchObject({
      code: 'EXECGATE_HOST_CALL_DENIED',
      message: expect.stringContaining('"none"'),
    })
    await expect(none.call('submit_result', [1])).resolves.toBeNull()
    const readOnly = new RunHostFunctions(standardHostFunctions(), { policy: { ...sandboxed, filesystem: 'read_only' }, workspace })
    await expect(readOnly.call('read_file', ['a.txt'])).resolves.toBe('hello')
    await expect(readOnly.call('write_file', ['b.txt', 'x'])).rejects.toMatchObject({
      code: 'EXECGATE_HOST_CALL_DENIED',
      message: expect.stringContaining('writes need "sandboxed"'),
    })
    expect(await workspace.read('b.txt')).toBeUndefined()
  })

  test('search_content takes text literally and returns structured matches', async () => {
    const workspace = new MemoryWorkspace()
    await workspace.write('logs/a.log', Buffer.from('ok\nERROR (a+)+ disk\nok\n'))
    await workspace.write('logs/b.txt', Buffer.from('ERROR (a+)+ elsewhere'))
    const host = new RunHostFunctions(standardHostFunctions(), { policy: sandboxed, workspace })
    await expect(host.call('search_content', ['(a+)+', '*.log'])).resolves.toEqual([
      { path: 'logs/a.log', line: 2, text: 'ERROR (a+)+ disk' },
    ])
  })

  test('definitions are checked before use', () => {
    expect(() => checkHostFunctionDefinition({ ...echo, name: 'bad name' })).toThrow(
      'host function "bad name" cannot be registered: name must be an identifier',
    )
    expect(() => checkHostFunctionDefinition({ ...echo, parameters: { type: 'nonsense' } })).toThrow(
      'parameters is not a valid JSON schema',
    )
    expect(() => checkHostFunctionDefinition({ ...echo, handler: undefined as never })).toThrow('handler must be a function')
  })
})
