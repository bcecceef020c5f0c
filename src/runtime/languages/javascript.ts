import * as acorn from 'acorn'
import type { ValidationIssue } from '../../core'

/** A node of acorn's syntax tree, with the fields each node type has. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type JavaScriptNode = acorn.Node & Record<string, any>

/**
 * JavaScript's syntax tree, or its syntax error as a validation issue (line and column). The policy's static checks
 * walk the tree; an adapter's `validate` needs only the error.
 */
export function parseJavaScript(code: string): { program?: JavaScriptNode; syntax?: ValidationIssue } {
  const options: acorn.Options = {
    ecmaVersion: 'latest',
    sourceType: 'module',
    locations: true,
    allowAwaitOutsideFunction: true,
    allowReturnOutsideFunction: true,
    allowHashBang: true,
  }
  try {
    return { program: acorn.parse(code, options) as JavaScriptNode }
  } catch (moduleError) {
    // Sloppy-mode scripts (`with`, octal literals) are not modules; try them as scripts before giving up.
    try {
      return { program: acorn.parse(code, { ...options, sourceType: 'script' }) as JavaScriptNode }
    } catch {
      const error = moduleError as SyntaxError & { loc?: { line: number; column: number } }
      return {
        syntax: {
          severity: 'error',
          code: 'syntax',
          message: `SyntaxError: ${error.message.replace(/ \(\d+:\d+\)$/, '')}`,
          line: error.loc?.line,
          column: error.loc === undefined ? undefined : error.loc.column + 1,
        },
      }
    }
  }
}
