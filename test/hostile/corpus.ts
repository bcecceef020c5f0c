import fs from 'node:fs'
import path from 'node:path'

/** One payload of a hostile corpus; the fields and `expect` keys are described in this folder's README. */
export interface HostileCase {
  id: string
  language: 'javascript' | 'python' | 'bash'
  category: string
  code: string
  source: string
  backends: string[]
  expect: HostileExpect
  /**
   * What the case needs beyond HOSTILE_POLICY to reach the sandbox (README, "The policy every case runs under"): the
   * imports its payload makes and the workspace access its `open()` needs. Nothing else can be widened.
   */
  policy?: { allowedImports?: string[]; filesystem?: 'read_only' | 'sandboxed' }
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

/** Every `expect` key the runner checks, so a corpus naming another (a typo) is caught; the type keeps it complete. */
const CHECKED_EXPECT_KEYS: Record<keyof HostileExpect, true> = {
  status: true,
  statusIn: true,
  contains: true,
  notContains: true,
  maxWallMs: true,
  maxOutputBytes: true,
  hostFileAbsent: true,
  hostSurvives: true,
  nextRunOk: true,
  noUnhandledRejectionInHost: true,
  noLeftoverHandles: true,
  noLateOutput: true,
  noLeftoverProcesses: true,
  hostUnchanged: true,
  crossRunIsolation: true,
  hostDoesNotFollowWorkspaceSymlinks: true,
}
export const EXPECT_KEYS = Object.keys(CHECKED_EXPECT_KEYS) as ReadonlyArray<keyof HostileExpect>

const REPOSITORY_ROOT = path.resolve(__dirname, '..', '..')
/** The corpus the project carries; every suite runs it. */
export const PROJECT_CORPUS_FILE = path.join(__dirname, 'cases.json')
/** The project's bash cases (the shell tiers), kept apart from the JavaScript and Python corpus. */
export const BASH_CORPUS_FILE = path.join(__dirname, 'bash-cases.json')
/**
 * An optional extra corpus: `EXECGATE_HOSTILE_EXTRA_CORPUS` names its cases.json. Unset, the one conventional place
 * beside the checkout is looked at (a team's working copy may keep one there; a lone clone has none and runs the
 * project corpus alone). Nothing further up is looked at, so a clone behaves the same wherever it sits.
 */
export const EXTRA_CORPUS_FILE = process.env.EXECGATE_HOSTILE_EXTRA_CORPUS
  ? path.resolve(process.env.EXECGATE_HOSTILE_EXTRA_CORPUS)
  : path.resolve(REPOSITORY_ROOT, '..', 'shared', 'hostile', 'cases.json')

export const EXTRA_CORPUS_LABEL = 'extra corpus beside the repository'

export interface HostileCorpus {
  /** How test names call it. */
  label: string
  cases: HostileCase[]
}

function readCorpus(file: string): HostileCase[] {
  return JSON.parse(fs.readFileSync(file, 'utf8')) as HostileCase[]
}

let extraCorpusAbsenceReported = false

export interface CorpusFiles {
  project: string
  extra: string
  /** The project's bash cases, read beside `project` when given. */
  bash?: string
}

/**
 * The project's corpus, then the extra corpus's cases that are not already in it (same id, code and expectations):
 * an identical case would only run twice. Without the extra corpus, one line says so, once per test file.
 */
export function hostileCorpora(
  language?: HostileCase['language'],
  files: CorpusFiles = { project: PROJECT_CORPUS_FILE, extra: EXTRA_CORPUS_FILE, bash: BASH_CORPUS_FILE },
): HostileCorpus[] {
  const ofLanguage = (cases: HostileCase[]) => (language ? cases.filter((item) => item.language === language) : cases)
  const project = [...readCorpus(files.project), ...(files.bash ? readCorpus(files.bash) : [])]
  const corpora: HostileCorpus[] = [{ label: 'project corpus', cases: ofLanguage(project) }]
  if (!fs.existsSync(files.extra)) {
    if (!extraCorpusAbsenceReported) process.stdout.write(`hostile: no extra corpus at ${files.extra}; running the project corpus only\n`)
    extraCorpusAbsenceReported = true
    return corpora
  }
  const known = new Set(project.map(caseFingerprint))
  corpora.push({
    label: EXTRA_CORPUS_LABEL,
    cases: ofLanguage(readCorpus(files.extra)).filter((item) => !known.has(caseFingerprint(item))),
  })
  return corpora
}

function caseFingerprint(item: HostileCase): string {
  return JSON.stringify([item.id, item.language, item.code, item.expect])
}

/** Every case of every corpus present (see `hostileCorpora`). */
export function loadHostileCases(language?: HostileCase['language']): HostileCase[] {
  return hostileCorpora(language).flatMap((corpus) => corpus.cases)
}
