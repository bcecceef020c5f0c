import fs from 'node:fs'
import path from 'node:path'

/** One program of the differential corpus: its id (unique across files), the file it is in, and its source. */
export interface PythonCase {
  id: string
  file: string
  code: string
}

const CASES_DIR = path.join(__dirname, 'cases')
const CASE_MARKER = /^# case: ([a-z0-9-]+)$/

/**
 * Reads every `cases/*.py`: each file holds many short programs, each starting at a `# case: <id>` line, so a
 * topic's cases sit together and read as ordinary Python.
 */
export function loadPythonCorpus(): PythonCase[] {
  const cases: PythonCase[] = []
  const seen = new Set<string>()
  for (const file of fs
    .readdirSync(CASES_DIR)
    .filter((name) => name.endsWith('.py'))
    .sort()) {
    let current: { id: string; lines: string[] } | undefined
    const flush = () => {
      if (!current) return
      if (seen.has(current.id)) throw new Error(`python-diff corpus: case id ${current.id} is used twice (${file})`)
      seen.add(current.id)
      cases.push({ id: current.id, file, code: current.lines.join('\n').trim() + '\n' })
    }
    for (const line of fs.readFileSync(path.join(CASES_DIR, file), 'utf8').split('\n')) {
      const marker = CASE_MARKER.exec(line)
      if (marker) {
        flush()
        current = { id: marker[1]!, lines: [] }
      } else if (current) {
        current.lines.push(line)
      }
    }
    flush()
  }
  return cases
}
