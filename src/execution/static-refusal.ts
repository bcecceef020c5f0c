import {
  ExecgateError,
  createResult,
  errorResult,
  type AdapterRegistry,
  type ExecutionRequest,
  type ExecutionResult,
  type SecurityPolicy,
} from '../core'
import { staticFindings } from '../policy'
import { describeImportRefusal } from './import-refusal'

const SERVICE = 'execgate'

/** Step 3: imports, forbidden calls and syntax, refused before anything runs (an import refusal says what would allow it). */
export function staticRefusal(
  request: ExecutionRequest,
  policy: SecurityPolicy,
  profiles: Readonly<Record<string, SecurityPolicy>>,
  registry: AdapterRegistry,
): ExecutionResult | undefined {
  // Read as cached: most runs find nothing, and a copy of every finding for each run is only made when one refuses.
  const findings = staticFindings(request.language, request.code, policy)
  if (!findings.some((item) => item.severity === 'error')) return undefined
  const issues = findings.filter((item) => item.severity === 'error').map((item) => ({ ...item }))
  const first = issues[0]!
  const where = first.line ? ` (line ${first.line}, column ${first.column})` : ''
  if (first.code === 'syntax') {
    return createResult('error', SERVICE, {
      message: `${first.message}${where}`,
      error: { type: 'SyntaxError', message: first.message, line: first.line, column: first.column },
    })
  }
  const imports = describeImportRefusal(issues, policy, profiles, registry)
  if (imports) {
    return errorResult('policy_violation', SERVICE, new ExecgateError('EXECGATE_POLICY_VIOLATION', { detail: imports }), {
      error: { type: 'PolicyViolation', message: imports, line: first.line, column: first.column },
    })
  }
  return errorResult('policy_violation', SERVICE, new ExecgateError('EXECGATE_POLICY_VIOLATION', { detail: `${first.message}${where}` }), {
    error: { type: 'PolicyViolation', message: first.message, line: first.line, column: first.column },
  })
}
