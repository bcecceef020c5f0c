import type * as TS from 'typescript'
import type { ValidationIssue } from '../../core'

/**
 * The TypeScript compiler, loaded on first use: it is large, and most requests are not TypeScript. Adapters
 * transpile with it; the policy's static checks walk its syntax tree.
 */

let typescript: typeof TS | undefined
export function loadTypeScript(): typeof TS {
  typescript ??= require('typescript') as typeof TS
  return typescript
}

/** TypeScript's syntax tree of the code, and its syntax errors as validation issues (line and column). */
export function parseTypeScript(code: string): { source: TS.SourceFile; syntax: ValidationIssue[] } {
  const ts = loadTypeScript()
  const source = ts.createSourceFile('input.ts', code, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS)
  const syntax: ValidationIssue[] = []
  for (const diagnostic of (source as unknown as { parseDiagnostics: TS.Diagnostic[] }).parseDiagnostics ?? []) {
    const position = source.getLineAndCharacterOfPosition(diagnostic.start ?? 0)
    syntax.push({
      severity: 'error',
      code: 'syntax',
      message: `SyntaxError: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`,
      line: position.line + 1,
      column: position.character + 1,
    })
  }
  return { source, syntax }
}
