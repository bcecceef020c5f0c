import * as walk from 'acorn-walk'
import type { SecurityPolicy, ValidationIssue } from '../core'
import { parseJavaScript, type JavaScriptNode as Node } from '../runtime/languages/javascript'

/**
 * Static checks for JavaScript with a real parser. They give an early, precise error (line and column) for code
 * the policy forbids; they are not the boundary — the sandbox is (see docs/architecture.md, defense in depth).
 */

function moduleName(specifier: string): string {
  // 'lodash/fp' → 'lodash'; '@scope/pkg/x' → '@scope/pkg'; 'node:fs' → 'fs'
  const bare = specifier.replace(/^node:/, '')
  const parts = bare.split('/')
  return bare.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!
}

function issue(code: string, message: string, node: Node): ValidationIssue {
  const loc = node.loc?.start
  return { severity: 'error', code, message, line: loc?.line, column: loc === undefined ? undefined : loc.column + 1 }
}

function isStringLiteral(node: Node | undefined): node is Node & { value: string } {
  return node?.type === 'Literal' && typeof node.value === 'string'
}

/** Import, require, eval and Function-constructor findings for JavaScript source. */
export function checkJavaScript(code: string, policy: Pick<SecurityPolicy, 'allowedImports'>): ValidationIssue[] {
  const { program, syntax } = parseJavaScript(code)
  if (!program) return syntax ? [syntax] : []
  const issues: ValidationIssue[] = []
  const allowed = new Set(policy.allowedImports)
  const checkSpecifier = (specifier: string, node: Node, how: string) => {
    const name = moduleName(specifier)
    if (!allowed.has(name)) {
      issues.push(
        issue(
          'import_not_allowed',
          `${how} of "${specifier}" is not allowed by the policy (allowed: ${[...allowed].join(', ') || 'none'})`,
          node,
        ),
      )
    }
  }
  walk.full(program, (raw) => {
    const node = raw as Node
    switch (node.type) {
      case 'ImportDeclaration':
      case 'ExportAllDeclaration':
      case 'ExportNamedDeclaration':
        if (isStringLiteral(node.source)) checkSpecifier(node.source.value, node, 'import')
        break
      case 'ImportExpression':
        if (isStringLiteral(node.source)) checkSpecifier(node.source.value, node, 'dynamic import()')
        else issues.push(issue('import_not_allowed', 'dynamic import() of a computed module name is not allowed', node))
        break
      case 'CallExpression':
      case 'NewExpression': {
        const callee = node.callee as Node
        // Only bare `require(...)` and direct `eval(...)` load or run code; `obj.require(...)` is just a method.
        const name = callee.type === 'Identifier' ? callee.name : undefined
        const globalName =
          callee.type === 'MemberExpression' && !callee.computed && callee.object?.name === 'globalThis' ? callee.property.name : undefined
        if (name === 'require' && node.type === 'CallExpression') {
          const first = node.arguments[0] as Node | undefined
          if (isStringLiteral(first)) checkSpecifier(first.value, node, 'require')
          else issues.push(issue('import_not_allowed', 'require() of a computed module name is not allowed', node))
        } else if ((name ?? globalName) === 'eval' && node.type === 'CallExpression') {
          issues.push(issue('forbidden_call', 'eval() is not allowed: it runs code the policy has not checked', node))
        } else if ((name ?? globalName) === 'Function') {
          issues.push(issue('forbidden_call', 'the Function constructor is not allowed: it runs code the policy has not checked', node))
        }
        break
      }
    }
  })
  return issues
}
