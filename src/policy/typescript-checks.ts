import type { SecurityPolicy, ValidationIssue } from '../core'
import { stripTypeScript } from '../runtime/languages/typescript'
import { checkJavaScript } from './javascript-checks'

/**
 * The same checks as javascript-checks.ts, on the JavaScript the TypeScript becomes (its types removed, every line
 * where it was, imports kept even when no name uses them). They judge what runs: a run is this JavaScript.
 */
export function checkTypeScript(code: string, policy: Pick<SecurityPolicy, 'allowedImports'>): ValidationIssue[] {
  const { javascript, syntax } = stripTypeScript(code, { keepUnusedImports: true })
  return javascript === undefined ? syntax : checkJavaScript(javascript, policy)
}
