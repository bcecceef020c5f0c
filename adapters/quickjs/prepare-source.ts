import * as acorn from 'acorn'
import { loadTypeScript } from '../../src/policy'

/**
 * Turns a request's code into a QuickJS global script whose completion value is the run's value. TypeScript
 * is transpiled first. Code with top-level `await` becomes an async function returning its last expression,
 * because a QuickJS module's completion value is its exports, not the last expression.
 */

export interface PreparedSource {
  script: string
  /** True when the script evaluates to a promise that carries the value. */
  async: boolean
}

export function transpileTypeScript(code: string): string {
  const ts = loadTypeScript()
  return ts.transpileModule(code, {
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, removeComments: false, sourceMap: false },
    reportDiagnostics: false,
  }).outputText
}

function wrapTopLevelAwait(code: string): PreparedSource | undefined {
  let program: acorn.Program
  try {
    program = acorn.parse(code, { ecmaVersion: 'latest', sourceType: 'module', allowAwaitOutsideFunction: true, allowReturnOutsideFunction: true })
  } catch {
    return undefined // let QuickJS report the syntax error with its own position
  }
  let hasTopLevelAwait = false
  const scan = (node: acorn.Node | null | undefined, depth: number): void => {
    if (!node || hasTopLevelAwait) return
    if (/Function/.test(node.type)) return // awaits inside functions are their own
    if (node.type === 'AwaitExpression' || (node.type === 'ForOfStatement' && (node as acorn.ForOfStatement).await)) {
      hasTopLevelAwait = true
      return
    }
    for (const value of Object.values(node)) {
      if (Array.isArray(value)) value.forEach((child) => child && typeof child.type === 'string' && scan(child, depth + 1))
      else if (value && typeof value === 'object' && typeof (value as acorn.Node).type === 'string') scan(value as acorn.Node, depth + 1)
    }
  }
  program.body.forEach((statement) => scan(statement, 0))
  if (!hasTopLevelAwait) return undefined
  const last = program.body[program.body.length - 1]
  let body = code
  if (last?.type === 'ExpressionStatement') {
    body = `${code.slice(0, last.start)}return (${code.slice(last.expression.start, last.expression.end)});${code.slice(last.end)}`
  }
  // Same first line, so QuickJS's line numbers still match the caller's code.
  return { script: `(async () => {${body}\n})()`, async: true }
}

export function prepareSource(code: string, language: 'javascript' | 'typescript'): PreparedSource {
  const javascript = language === 'typescript' ? transpileTypeScript(code) : code
  if (!javascript.includes('await')) return { script: javascript, async: false }
  return wrapTopLevelAwait(javascript) ?? { script: javascript, async: false }
}
