import { type Language, type SecurityPolicy, type ValidationIssue, type ValidationReport } from '../core'
import { LruCache } from '../runtime'
import { checkJavaScript } from './javascript-checks'
import { checkPython } from './python-checks'
import { checkTypeScript } from './typescript-checks'

/**
 * The policy fields a static check may read. Findings are cached by exactly these: a checker that needs another field
 * must be given it here, which puts it in the cache key too.
 */
type CheckedPolicy = Pick<SecurityPolicy, 'allowedImports' | 'filesystem'>

/** A language's static policy check: parse, then report imports and calls the policy forbids. */
export type StaticChecker = (code: string, policy: CheckedPolicy) => ValidationIssue[]

/**
 * Checkers by language. A language without one (bash) is left to its adapter's sandbox. Python's checker scans
 * tokens, not a full grammar: syntax errors are the interpreter's to report.
 */
const CHECKERS: Partial<Record<Language, StaticChecker>> = {
  javascript: checkJavaScript,
  typescript: checkTypeScript,
  python: checkPython,
}

// Findings depend only on the language, the code and the checked policy fields: code sent again is parsed once.
const findings = new LruCache<readonly ValidationIssue[]>(256)
/** Frozen lists of allowed imports (the configured policies') as the cache key reads them: joined once each. */
const joinedImports = new WeakMap<readonly string[], string>()

export function staticCheck(language: Language, code: string, policy: SecurityPolicy): ValidationIssue[] {
  // Copies: callers may add to what they are given.
  return staticFindings(language, code, policy).map((issue) => ({ ...issue }))
}

/** What staticCheck finds, as cached: to read, not to change (the request path's refusal reads it on every run). */
export function staticFindings(language: Language, code: string, policy: SecurityPolicy): readonly Readonly<ValidationIssue>[] {
  const checker = CHECKERS[language]
  if (!checker) return NO_FINDINGS
  const checked: CheckedPolicy = { allowedImports: policy.allowedImports, filesystem: policy.filesystem }
  const list = checked.allowedImports
  // Only a frozen list: a caller's own array could change between two requests and must be read each time.
  let imports = joinedImports.get(list)
  if (imports === undefined) {
    imports = list.join(',')
    if (Object.isFrozen(list)) joinedImports.set(list, imports)
  }
  const key = `${language}\0${imports}\0${checked.filesystem}\0${code}`
  return findings.get(key, () => checker(code, checked))
}

const NO_FINDINGS: readonly ValidationIssue[] = Object.freeze([])

export function staticValidationReport(language: Language, code: string, policy: SecurityPolicy): ValidationReport {
  const issues = staticCheck(language, code, policy)
  return {
    valid: !issues.some((item) => item.severity === 'error'),
    language,
    validator: 'policy',
    issues,
    implemented: CHECKERS[language] !== undefined,
  }
}
