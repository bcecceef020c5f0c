import { LruCache, type Language, type SecurityPolicy, type ValidationIssue, type ValidationReport } from '../core'
import { checkJavaScript } from './javascript-checks'
import { checkPython } from './python-checks'
import { checkTypeScript } from './typescript-checks'

/** A language's static policy check: parse, then report imports and calls the policy forbids. */
export type StaticChecker = (code: string, policy: SecurityPolicy) => ValidationIssue[]

/**
 * Checkers by language. A language without one (bash) is left to its adapter's sandbox. Python's checker scans
 * tokens, not a full grammar: syntax errors are the interpreter's to report.
 */
const CHECKERS: Partial<Record<Language, StaticChecker>> = {
  javascript: checkJavaScript,
  typescript: checkTypeScript,
  python: checkPython,
}

// Findings depend only on the language, the code, the allow-list and filesystem access: code sent again is parsed once.
const findings = new LruCache<readonly ValidationIssue[]>(256)

export function staticCheck(language: Language, code: string, policy: SecurityPolicy): ValidationIssue[] {
  const checker = CHECKERS[language]
  if (!checker) return []
  const key = `${language}\0${policy.allowedImports.join(',')}\0${policy.filesystem}\0${code}`
  // Copies: callers may add to what they are given.
  return findings.get(key, () => checker(code, policy)).map((issue) => ({ ...issue }))
}

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
