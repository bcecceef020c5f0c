import type { SecurityPolicy, ValidationIssue } from '../core'
import { scanPython } from '../runtime/languages/python-scan'

/** Calls that run unchecked code or reach around the import allow-list, refused whatever the policy. */
const ALWAYS_FORBIDDEN = new Map([
  ['eval', 'eval() runs code the policy has not checked'],
  ['exec', 'exec() runs code the policy has not checked'],
  ['compile', 'compile() builds code the policy has not checked'],
  ['__import__', '__import__() imports around the policy'],
  ['breakpoint', 'breakpoint() opens a debugger'],
])

/**
 * The policy's static check for Python: imports outside the allow-list, `eval`/`exec`/`compile`/`__import__`,
 * and `open` when the policy grants no filesystem, each with line and column.
 */
export function checkPython(code: string, policy: Pick<SecurityPolicy, 'allowedImports' | 'filesystem'>): ValidationIssue[] {
  const scan = scanPython(code)
  const allowed = new Set(policy.allowedImports)
  const issues: ValidationIssue[] = []
  for (const { name, line, column } of scan.imports) {
    const top = name.split('.')[0]!
    if (!allowed.has(top)) {
      issues.push({
        severity: 'error',
        code: 'import_not_allowed',
        message: `import of "${name}" is not allowed by the policy (allowed: ${[...allowed].join(', ') || 'none'})`,
        line,
        column,
      })
    }
  }
  for (const { name, line, column } of scan.calls) {
    const reason =
      ALWAYS_FORBIDDEN.get(name) ??
      (name === 'open' && policy.filesystem === 'none' ? 'open() needs filesystem access, which the policy does not grant' : undefined)
    if (reason) issues.push({ severity: 'error', code: 'forbidden_call', message: `${name}() is not allowed: ${reason}`, line, column })
  }
  return issues
}
