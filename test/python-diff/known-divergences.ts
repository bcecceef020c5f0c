import fs from 'node:fs'
import path from 'node:path'

/**
 * What the user gets for a case monty answers differently from CPython: `rerun` — monty answers `error`, so the
 * service runs the code again on pyodide and answers with CPython's result; `differs` — monty answers (ok, or an
 * error CPython does not raise) and that answer stands.
 */
export type DivergenceKind = 'rerun' | 'differs'

export interface KnownDivergence {
  id: string
  kind: DivergenceKind
  why: string
}

const MONTY_DOC = path.join(__dirname, '..', '..', 'docs', 'adapters', 'monty.md')
const START = '<!-- known-divergences:start -->'
const END = '<!-- known-divergences:end -->'

/** The table between the markers in docs/adapters/monty.md: `| case id | kind | why |`, one row per case. */
export function loadKnownDivergences(): Map<string, KnownDivergence> {
  const doc = fs.readFileSync(MONTY_DOC, 'utf8')
  const start = doc.indexOf(START)
  const end = doc.indexOf(END)
  if (start < 0 || end < start) throw new Error(`${MONTY_DOC} has no known-divergences table between ${START} and ${END}`)
  const known = new Map<string, KnownDivergence>()
  for (const line of doc.slice(start + START.length, end).split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim())
    const id = cells[1]?.replace(/`/g, '')
    if (!id || id === 'case' || /^-+$/.test(id)) continue
    const kind = cells[2]
    if (kind !== 'rerun' && kind !== 'differs') throw new Error(`known divergence ${id}: kind must be rerun or differs, was ${kind}`)
    if (known.has(id)) throw new Error(`known divergence ${id} is listed twice`)
    known.set(id, { id, kind, why: cells[3] ?? '' })
  }
  return known
}
