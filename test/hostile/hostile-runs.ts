import fs from 'node:fs'
import path from 'node:path'

/** One `describeHostileCases` call found in a test file: which adapter meets the corpus of which language. */
export interface HostileRun {
  adapter: string
  language: string
  file: string
}

/**
 * The hostile runs the test files declare, read from their source: every `describeHostileCases({ adapter: '…', … })`
 * call, with its `language: '…'`, or `language` taken from the `for (const language of ['…', …] as const)` loop
 * around it. Read, not run, so the registry test can say which adapter × language has none without running them.
 */
export function declaredHostileRuns(testRoot: string): HostileRun[] {
  const runs: HostileRun[] = []
  const files = fs
    .readdirSync(testRoot, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.test.ts'))
  for (const entry of files) {
    const file = path.join(entry.parentPath, entry.name)
    runs.push(...hostileRunsIn(fs.readFileSync(file, 'utf8'), path.relative(testRoot, file)))
  }
  return runs
}

export function hostileRunsIn(source: string, file: string): HostileRun[] {
  const runs: HostileRun[] = []
  for (const call of source.matchAll(/describeHostileCases\(\{/g)) {
    const body = source.slice(call.index, closingBrace(source, call.index + call[0].length - 1))
    const adapter = /\badapter: '([\w-]+)'/.exec(body)?.[1]
    if (!adapter) continue
    const literal = /\blanguage: '(\w+)'/.exec(body)?.[1]
    const loops = [...source.slice(0, call.index).matchAll(/for \(const language of \[([^\]]+)\]/g)]
    const languages = literal ? [literal] : [...(loops.at(-1)?.[1] ?? '').matchAll(/'(\w+)'/g)].map((match) => match[1]!)
    for (const language of languages) runs.push({ adapter, language, file })
  }
  return runs
}

function closingBrace(source: string, open: number): number {
  let depth = 0
  for (let index = open; index < source.length; index++) {
    if (source[index] === '{') depth++
    else if (source[index] === '}' && --depth === 0) return index + 1
  }
  return source.length
}
