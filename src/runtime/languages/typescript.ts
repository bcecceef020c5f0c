import type * as Sucrase from 'sucrase'
import type { ValidationIssue } from '../../core'

/**
 * TypeScript to JavaScript by removing the types, with sucrase (~1 MB: TypeScript's own compiler is 23 MB of
 * install, and execgate never type-checks). Sucrase keeps every line where it was, so the policy's checks, which run
 * on the stripped JavaScript, report the line a finding is on; a column can move left where types were removed
 * before it on the same line. Enums, parameter properties and `import x = require()` are compiled; a namespace
 * holding values is not supported by sucrase (its body is dropped, so its names are undefined when the code runs,
 * and the checks see what runs). Loaded on first use: most requests are not TypeScript.
 */

let sucrase: typeof Sucrase | undefined
function loadSucrase(): typeof Sucrase {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded synchronously on the first TypeScript request
  sucrase ??= require('sucrase') as typeof Sucrase
  return sucrase
}

export interface StrippedTypeScript {
  /** The JavaScript, lines where they were in the TypeScript; undefined on a syntax error. */
  javascript?: string
  syntax: ValidationIssue[]
}

/**
 * The code without its types. `keepUnusedImports` keeps an import whose names are never used (TypeScript elides
 * those): the policy's checks must see every import the code names; a run drops them as TypeScript would.
 */
export function stripTypeScript(code: string, { keepUnusedImports = false } = {}): StrippedTypeScript {
  try {
    const { code: javascript } = loadSucrase().transform(code, {
      transforms: ['typescript'],
      disableESTransforms: true,
      keepUnusedImports,
    })
    return { javascript, syntax: [] }
  } catch (error) {
    return { syntax: [syntaxIssue(code, error)] }
  }
}

/** The run's JavaScript (imports no name uses are dropped, as TypeScript's own transpiler does). */
export function transpileTypeScript(code: string): string {
  const { javascript, syntax } = stripTypeScript(code)
  if (javascript === undefined) throw new SyntaxError(syntax[0]?.message.replace(/^SyntaxError: /, '') ?? 'invalid TypeScript')
  return javascript
}

/** TypeScript's syntax errors as validation issues (line and column). */
export function parseTypeScript(code: string): { syntax: ValidationIssue[] } {
  return { syntax: stripTypeScript(code).syntax }
}

/** Sucrase's error carries the offending offset (`pos`); its message ends in "(line:column)". */
function syntaxIssue(code: string, error: unknown): ValidationIssue {
  const { message, pos } = error as { message?: string; pos?: unknown }
  const text = String(message ?? error).replace(/ \(\d+:\d+\)$/, '')
  const issue: ValidationIssue = { severity: 'error', code: 'syntax', message: `SyntaxError: ${text}` }
  if (typeof pos === 'number') {
    const before = code.slice(0, pos)
    issue.line = before.split('\n').length
    issue.column = pos - before.lastIndexOf('\n')
  }
  return issue
}
