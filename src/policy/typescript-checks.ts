import type * as TS from 'typescript'
import type { SecurityPolicy, ValidationIssue } from '../core'
import { loadTypeScript, parseTypeScript } from '../runtime/languages/typescript'

/**
 * The same checks as javascript-checks.ts, on TypeScript's own syntax tree (acorn cannot parse type
 * annotations).
 */

export function checkTypeScript(code: string, policy: Pick<SecurityPolicy, 'allowedImports'>): ValidationIssue[] {
  const ts = loadTypeScript()
  const { source, syntax } = parseTypeScript(code)
  const issues: ValidationIssue[] = [...syntax]
  const allowed = new Set(policy.allowedImports)
  const at = (node: TS.Node) => {
    const { line, character } = source.getLineAndCharacterOfPosition(node.getStart(source))
    return { line: line + 1, column: character + 1 }
  }
  const add = (code: string, message: string, node: TS.Node) => issues.push({ severity: 'error', code, message, ...at(node) })
  const checkSpecifier = (specifier: TS.Expression | undefined, node: TS.Node, how: string) => {
    if (!specifier || !ts.isStringLiteralLike(specifier)) {
      add('import_not_allowed', `${how} of a computed module name is not allowed`, node)
      return
    }
    const name = specifier.text
      .replace(/^node:/, '')
      .split('/')
      .slice(0, specifier.text.startsWith('@') ? 2 : 1)
      .join('/')
    if (!allowed.has(name))
      add(
        'import_not_allowed',
        `${how} of "${specifier.text}" is not allowed by the policy (allowed: ${[...allowed].join(', ') || 'none'})`,
        node,
      )
  }

  const visit = (node: TS.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) {
      if (node.moduleSpecifier) checkSpecifier(node.moduleSpecifier, node, 'import')
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      checkSpecifier(node.moduleReference.expression, node, 'import')
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      checkSpecifier(node.arguments[0], node, 'dynamic import()')
    } else if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
      const callee = node.expression
      // Only bare `require(...)` and direct `eval(...)` load or run code; `obj.require(...)` is just a method.
      const name = ts.isIdentifier(callee)
        ? callee.text
        : ts.isPropertyAccessExpression(callee) && callee.expression.getText(source) === 'globalThis'
          ? callee.name.text
          : undefined
      if (name === 'require' && ts.isCallExpression(node) && ts.isIdentifier(callee)) checkSpecifier(node.arguments[0], node, 'require')
      else if (name === 'eval' && ts.isCallExpression(node))
        add('forbidden_call', 'eval() is not allowed: it runs code the policy has not checked', node)
      else if (name === 'Function')
        add('forbidden_call', 'the Function constructor is not allowed: it runs code the policy has not checked', node)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return issues
}
