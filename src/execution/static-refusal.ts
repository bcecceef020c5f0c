import {
  ExecgateError,
  createResult,
  errorResult,
  type AdapterRegistry,
  type ExecutionRequest,
  type ExecutionResult,
  type SecurityPolicy,
} from '../core'
import { staticCheck } from '../policy'
import { describeImportRefusal } from './import-refusal'

const SERVICE = 'execgate'

/** Step 3: imports, forbidden calls and syntax, refused before anything runs (an import refusal says what would allow it). */
export function staticRefusal(
  request: ExecutionRequest,
  policy: SecurityPolicy,
  profiles: Readonly<Record<string, SecurityPolicy>>,
  registry: AdapterRegistry,
): ExecutionResult | undefined {
  const issues = staticCheck(request.language, request.code, policy).filter((item) => item.severity === 'error')
  if (issues.length > 0) {
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
    return errorResult(
      'policy_violation',
      SERVICE,
      new ExecgateError('EXECGATE_POLICY_VIOLATION', { detail: `${first.message}${where}` }),
      {
        error: { type: 'PolicyViolation', message: first.message, line: first.line, column: first.column },
      },
    )
  }
  return undefined
}
