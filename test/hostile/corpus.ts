import fs from 'node:fs'
import path from 'node:path'

/** One payload of a hostile corpus; the fields and `expect` keys are described in this folder's README. */
export interface HostileCase {
  id: string
  language: 'javascript' | 'python'
  category: string
  code: string
  source: string
  backends: string[]
  expect: HostileExpect
}

export interface HostileExpect {
  status?: string
  statusIn?: string[]
  contains?: string[]
  notContains?: string[]
  maxWallMs?: number
  hostFileAbsent?: string
  hostSurvives?: boolean
  nextRunOk?: boolean
  noUnhandledRejectionInHost?: boolean
  noLeftoverHandles?: boolean
  noLateOutput?: string
  noLeftoverProcesses?: boolean
  hostUnchanged?: boolean
  crossRunIsolation?: boolean
  hostDoesNotFollowWorkspaceSymlinks?: boolean
  maxOutputBytes?: number
}

const REPOSITORY_ROOT = path.resolve(__dirname, '..', '..')
/** The corpus the project carries; every suite runs it. */
export const PROJECT_CORPUS_FILE = path.join(__dirname, 'cases.json')
/**
 * An extra corpus a checkout may have beside it (a team's shared folder next to the repository). Only that one
 * place is looked at: a clone must behave the same wherever it sits, whatever lies further up.
 */
export const EXTRA_CORPUS_FILE = path.resolve(REPOSITORY_ROOT, '..', 'shared', 'hostile', 'cases.json')

export interface HostileCorpus {
  /** How test names call it. */
  label: string
  cases: HostileCase[]
}

function readCorpus(file: string): HostileCase[] {
  return JSON.parse(fs.readFileSync(file, 'utf8')) as HostileCase[]
}

let extraCorpusAbsenceReported = false

/**
 * The project's corpus, then the extra corpus's cases that are not already in it (same id, code and expectations):
 * an identical case would only run twice. Without the extra corpus, one line says so, once per test file.
 */
export function hostileCorpora(language?: HostileCase['language']): HostileCorpus[] {
  const ofLanguage = (cases: HostileCase[]) => (language ? cases.filter((item) => item.language === language) : cases)
  const project = readCorpus(PROJECT_CORPUS_FILE)
  const corpora: HostileCorpus[] = [{ label: 'project corpus', cases: ofLanguage(project) }]
  if (!fs.existsSync(EXTRA_CORPUS_FILE)) {
    if (!extraCorpusAbsenceReported) process.stdout.write(`hostile: no extra corpus at ${EXTRA_CORPUS_FILE}; running the project corpus only\n`)
    extraCorpusAbsenceReported = true
    return corpora
  }
  const known = new Set(project.map(caseFingerprint))
  corpora.push({ label: 'extra corpus ../shared/hostile', cases: ofLanguage(readCorpus(EXTRA_CORPUS_FILE)).filter((item) => !known.has(caseFingerprint(item))) })
  return corpora
}

function caseFingerprint(item: HostileCase): string {
  return JSON.stringify([item.id, item.language, item.code, item.expect])
}

/** Every case of every corpus present (see `hostileCorpora`). */
export function loadHostileCases(language?: HostileCase['language']): HostileCase[] {
  return hostileCorpora(language).flatMap((corpus) => corpus.cases)
}
