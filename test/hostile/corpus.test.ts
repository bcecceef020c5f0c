import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { BASH_CORPUS_FILE, EXPECT_KEYS, PROJECT_CORPUS_FILE, type HostileCase } from './corpus'
import { HOSTILE_POLICY, casePolicy, staticRefusals } from './case-policy'

const CATEGORIES = [
  'escape',
  'filesystem',
  'infinite-loop',
  'async',
  'memory-bomb',
  'prototype-pollution',
  'recursion',
  'network',
  'fork-bomb',
  'output-flood',
  'resource-leak',
  'encoding',
  'timing',
]
const CASE_KEYS = ['id', 'language', 'category', 'code', 'expect', 'policy', 'source', 'backends']
const project = JSON.parse(fs.readFileSync(PROJECT_CORPUS_FILE, 'utf8')) as HostileCase[]

describe('the project hostile corpus (test/hostile/cases.json)', () => {
  test('holds both languages and every category', () => {
    expect(project.filter((item) => item.language === 'javascript').length).toBeGreaterThan(50)
    expect(project.filter((item) => item.language === 'python').length).toBeGreaterThan(50)
    expect([...new Set(project.map((item) => item.category))].sort()).toEqual([...CATEGORIES].sort())
  })

  test('every case is well formed: a unique id named for its language, a source, code, known expect keys', () => {
    const problems: string[] = []
    const seen = new Set<string>()
    for (const item of project) {
      if (seen.has(item.id)) problems.push(`${item.id}: id used twice`)
      seen.add(item.id)
      if (!item.id.startsWith(item.language === 'javascript' ? 'js-' : 'py-'))
        problems.push(`${item.id}: id does not start with its language's prefix`)
      if (!CATEGORIES.includes(item.category)) problems.push(`${item.id}: unknown category ${item.category}`)
      if (typeof item.source !== 'string' || item.source.length < 20) problems.push(`${item.id}: no source a reader can look up`)
      if (typeof item.code !== 'string' || !item.code.trim()) problems.push(`${item.id}: no code`)
      if (!Array.isArray(item.backends) || item.backends.length === 0) problems.push(`${item.id}: no backends`)
      for (const key of Object.keys(item).filter((key) => !CASE_KEYS.includes(key))) problems.push(`${item.id}: unknown field ${key}`)
      for (const key of Object.keys(item.expect))
        if (!(EXPECT_KEYS as readonly string[]).includes(key)) problems.push(`${item.id}: unknown expect key ${key}`)
      // A status alone proves nothing was contained; every case also checks an effect or the host's health.
      if (!Object.keys(item.expect).some((key) => key !== 'status' && key !== 'statusIn')) problems.push(`${item.id}: checks only a status`)
    }
    expect(problems).toEqual([])
  })

  test('the bash cases (test/hostile/bash-cases.json) are well formed too: bash- ids, a source, code, known expect keys', () => {
    const bash = JSON.parse(fs.readFileSync(BASH_CORPUS_FILE, 'utf8')) as HostileCase[]
    expect(bash.length).toBeGreaterThan(15)
    const problems: string[] = []
    const ids = new Set(project.map((item) => item.id))
    for (const item of bash) {
      if (ids.has(item.id)) problems.push(`${item.id}: id used twice`)
      ids.add(item.id)
      if (item.language !== 'bash' || !item.id.startsWith('bash-')) problems.push(`${item.id}: not a bash case with a bash- id`)
      if (typeof item.source !== 'string' || item.source.length < 20) problems.push(`${item.id}: no source a reader can look up`)
      if (typeof item.code !== 'string' || !item.code.trim()) problems.push(`${item.id}: no code`)
      for (const key of Object.keys(item.expect))
        if (!(EXPECT_KEYS as readonly string[]).includes(key)) problems.push(`${item.id}: unknown expect key ${key}`)
      if (!Object.keys(item.expect).some((key) => key !== 'status' && key !== 'statusIn')) problems.push(`${item.id}: checks only a status`)
    }
    expect(problems).toEqual([])
  })
})

describe('the extra corpus beside the repository', () => {
  let directory: string
  beforeEach(() => {
    directory = fs.mkdtempSync(path.join(os.tmpdir(), 'hostile-corpus-'))
  })
  afterEach(() => fs.rmSync(directory, { recursive: true, force: true }))

  // A fresh module each time: the "no extra corpus" line is printed once per loaded runner.
  const freshCorpus = () => {
    let loaded!: typeof import('./corpus')
    jest.isolateModules(() => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- a fresh copy of the module, which import cannot give
      loaded = require('./corpus')
    })
    return loaded
  }

  test('runs its cases that are not ours, and not those identical to ours', () => {
    const ours = project.filter((item) => item.language === 'python')
    const changed = { ...ours[1]!, code: ours[1]!.code + '\n# a variant' }
    const added: HostileCase = { ...ours[0]!, id: 'py-extra-only', code: 'print(1)', source: 'a case only the extra corpus has' }
    const extra = path.join(directory, 'cases.json')
    fs.writeFileSync(extra, JSON.stringify([ours[0], changed, added]))
    const corpora = freshCorpus().hostileCorpora('python', { project: PROJECT_CORPUS_FILE, extra })
    expect(corpora.map((corpus) => corpus.label)).toEqual(['project corpus', 'extra corpus beside the repository'])
    expect(corpora[0]!.cases).toEqual(ours)
    expect(corpora[1]!.cases.map((item) => item.id)).toEqual([changed.id, 'py-extra-only'])
  })

  test('when absent, the project corpus runs alone and one line says so', () => {
    const writes: string[] = []
    const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => (writes.push(String(chunk)), true))
    try {
      const { hostileCorpora } = freshCorpus()
      const files = { project: PROJECT_CORPUS_FILE, extra: path.join(directory, 'absent', 'cases.json') }
      const first = hostileCorpora('javascript', files)
      const second = hostileCorpora('python', files)
      expect(first.map((corpus) => corpus.label)).toEqual(['project corpus'])
      expect(second.map((corpus) => corpus.label)).toEqual(['project corpus'])
      expect(first[0]!.cases.length + second[0]!.cases.length).toBe(project.length)
    } finally {
      spy.mockRestore()
    }
    expect(writes).toEqual([
      `hostile: no extra corpus at ${path.join(directory, 'absent', 'cases.json')}; running the project corpus only\n`,
    ])
  })
})

describe("a case's policy (what it needs to reach the sandbox)", () => {
  const all = [...project, ...(JSON.parse(fs.readFileSync(BASH_CORPUS_FILE, 'utf8')) as HostileCase[])]

  test('widens only imports and workspace access, and the corpus policy alone refuses the case (its refused variant)', () => {
    const problems: string[] = []
    for (const item of all.filter((entry) => entry.policy)) {
      const extra = Object.keys(item.policy!).filter((key) => key !== 'allowedImports' && key !== 'filesystem')
      if (extra.length) problems.push(`${item.id}: widens ${extra.join(', ')}`)
      if (item.policy!.filesystem && !['read_only', 'sandboxed'].includes(item.policy!.filesystem))
        problems.push(`${item.id}: filesystem ${item.policy!.filesystem}`)
      if (!staticRefusals(item, item.language, HOSTILE_POLICY).length)
        problems.push(`${item.id}: HOSTILE_POLICY does not refuse it, so its policy widens nothing it needs`)
      if (staticRefusals(item, item.language, casePolicy(item)).length) problems.push(`${item.id}: still refused under its own policy`)
      const limits = casePolicy(item)
      if (limits.wallTimeMs !== HOSTILE_POLICY.wallTimeMs || limits.memoryMb !== HOSTILE_POLICY.memoryMb || limits.network !== 'none')
        problems.push(`${item.id}: a limit changed`)
    }
    expect(problems).toEqual([])
    expect(all.filter((entry) => entry.policy).length).toBeGreaterThan(10)
  })
})
