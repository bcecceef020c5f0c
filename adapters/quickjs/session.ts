import * as acorn from 'acorn'

/**
 * What a quickjs session keeps between calls: top-level variables that hold JSON values, and top-level functions
 * (by their source, so without closures). Each call still runs in a fresh runtime; the state crosses as JSON and
 * is restored inside the VM, so nothing of one call's heap, and nothing of the host, reaches the next.
 */
export type SessionEntry = { v: string } | { f: string }
export type SessionState = Record<string, SessionEntry>

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/
const RESERVED_PREFIX = '__execgate'
const GLOBAL_NAMES = new Set(['globalThis', 'self'])

function patternNames(node: acorn.Pattern | null | undefined, into: Set<string>): void {
  if (!node) return
  if (node.type === 'Identifier') into.add(node.name)
  else if (node.type === 'ObjectPattern')
    for (const property of node.properties) patternNames(property.type === 'RestElement' ? property.argument : property.value, into)
  else if (node.type === 'ArrayPattern') for (const element of node.elements) patternNames(element, into)
  else if (node.type === 'RestElement') patternNames(node.argument, into)
  else if (node.type === 'AssignmentPattern') patternNames(node.left, into)
}

/** The global a top-level assignment sets: `x = …`, `globalThis.x = …` or `globalThis['x'] = …` (also `this.` and `self.`). */
function assignedGlobal(left: acorn.Pattern | acorn.MemberExpression): string | undefined {
  if (left.type === 'Identifier') return left.name
  if (left.type !== 'MemberExpression') return undefined
  const target = left.object
  const isGlobal = target.type === 'ThisExpression' || (target.type === 'Identifier' && GLOBAL_NAMES.has(target.name))
  if (!isGlobal) return undefined
  if (!left.computed && left.property.type === 'Identifier') return left.property.name
  if (left.computed && left.property.type === 'Literal' && typeof left.property.value === 'string') return left.property.value
  return undefined
}

/** Names the script declares (or assigns) at top level; unparsable code declares nothing. */
export function topLevelNames(script: string): string[] {
  let program: acorn.Program
  try {
    program = acorn.parse(script, { ecmaVersion: 'latest', sourceType: 'script', allowAwaitOutsideFunction: true })
  } catch {
    return []
  }
  const names = new Set<string>()
  for (const statement of program.body) {
    if (statement.type === 'VariableDeclaration') for (const declaration of statement.declarations) patternNames(declaration.id, names)
    else if ((statement.type === 'FunctionDeclaration' || statement.type === 'ClassDeclaration') && statement.id)
      names.add(statement.id.name)
    else if (statement.type === 'ExpressionStatement' && statement.expression.type === 'AssignmentExpression') {
      const name = assignedGlobal(statement.expression.left)
      if (name) names.add(name)
    }
  }
  return [...names].filter((name) => IDENTIFIER.test(name) && !name.startsWith(RESERVED_PREFIX))
}

/** One script per entry, so a function whose source no longer parses (a method) is skipped alone. */
export function restoreScripts(state: SessionState): string[] {
  return Object.entries(state)
    .filter(([name]) => IDENTIFIER.test(name) && !name.startsWith(RESERVED_PREFIX))
    .map(([name, entry]) =>
      'f' in entry
        ? `globalThis[${JSON.stringify(name)}] = (${entry.f}\n);`
        : `globalThis[${JSON.stringify(name)}] = JSON.parse(${JSON.stringify(entry.v)});`,
    )
}

/** A script, evaluated in the run's global scope after the code, whose value is the state as JSON. */
export function captureScript(names: readonly string[]): string {
  const body = names
    .filter((name) => IDENTIFIER.test(name) && !name.startsWith(RESERVED_PREFIX))
    .map(
      (name) =>
        `try { const __execgate_v = ${name}; if (typeof __execgate_v === 'function') ` +
        `__execgate_out[${JSON.stringify(name)}] = { f: ` +
        `Function.prototype.toString.call(__execgate_v) }; ` +
        (`else if (__execgate_v !== undefined) { const __execgate_j = ` +
          `JSON.stringify(__execgate_v); if (__execgate_j !== undefined) ` +
          `__execgate_out[${JSON.stringify(name)}] = { v: __execgate_j } } } catch (__execgate_e) {}`),
    )
    .join('\n')
  return `(() => { const __execgate_out = {};\n${body}\nreturn JSON.stringify(__execgate_out) })()`
}
