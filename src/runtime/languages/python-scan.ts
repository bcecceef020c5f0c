import { LruCache } from '../lru-cache'

/**
 * A Python tokenizer-level scanner: strings, f-strings, comments, line continuations and brackets are tokenized
 * like CPython does, so an `import` inside a string or a comment is never mistaken for one, and identifiers are
 * NFKC-normalised as Python does (`__ｉｍｐｏｒｔ__` is `__import__`). It finds imports, calls by name, and the
 * constructs monty cannot run. It is the policy's early check and routing's escalation test, not a boundary.
 */

export interface PythonLocation {
  name: string
  line: number
  column: number
}

/** Shared between callers through a cache: read-only. */
export interface PythonScan {
  readonly imports: readonly PythonLocation[]
  /** Calls of a bare name, e.g. `open(...)`, `eval(...)`. */
  readonly calls: readonly PythonLocation[]
  /** Constructs monty does not support (class definitions, generators, match, …), described in words. */
  readonly unsupported: readonly string[]
  /** Names read as attributes, e.g. `format` in `"{}".format(x)`, once each. */
  readonly attributes: readonly string[]
  /** Whether a string literal is followed by `%` (printf-style formatting, `"%d" % n`). */
  readonly percentFormatting: boolean
  /** The format specs of f-string replacement fields, e.g. `,.2f` in `f"{total:,.2f}"`. */
  readonly formatSpecs: readonly string[]
}

interface Token {
  kind: 'name' | 'op' | 'string' | 'number' | 'newline'
  text: string
  line: number
  column: number
}

const STRING_START = /^(?:[rRbBuUfF]{0,2})("""|'''|"|')/

function tokenize(code: string): Token[] {
  const tokens: Token[] = []
  let line = 1
  let lineStart = 0
  let depth = 0
  let i = 0
  const push = (kind: Token['kind'], text: string, at: number) => tokens.push({ kind, text, line, column: at - lineStart + 1 })
  while (i < code.length) {
    const ch = code[i]!
    if (ch === '\n') {
      if (depth === 0) push('newline', '\n', i)
      i++
      line++
      lineStart = i
      continue
    }
    if (ch === '\\' && code[i + 1] === '\n') {
      i += 2
      line++
      lineStart = i
      continue
    }
    if (ch === ' ' || ch === '\t' || ch === '\r' || ch === '\f') {
      i++
      continue
    }
    if (ch === '#') {
      while (i < code.length && code[i] !== '\n') i++
      continue
    }
    const stringMatch = STRING_START.exec(code.slice(i, i + 5))
    if (stringMatch && (stringMatch[0].length === stringMatch[1]!.length || /[A-Za-z]/.test(ch))) {
      const quote = stringMatch[1]!
      const raw = /[rR]/.test(stringMatch[0].slice(0, -quote.length))
      const start = i
      const startLine = line
      const startColumn = i - lineStart + 1
      i += stringMatch[0].length
      while (i < code.length && !code.startsWith(quote, i)) {
        if (code[i] === '\\' && !raw) i++
        else if (code[i] === '\\' && raw) i++ // a raw string still cannot end on an escaped quote
        if (code[i] === '\n') {
          if (quote.length === 1) break // unterminated: stop at the line's end like CPython
          line++
          lineStart = i + 1
        }
        i++
      }
      i += quote.length
      tokens.push({ kind: 'string', text: code.slice(start, i), line: startLine, column: startColumn })
      continue
    }
    if (/[\p{L}_]/u.test(ch) || ch.charCodeAt(0) > 127) {
      const start = i
      while (i < code.length && (/[\p{L}\p{N}_\p{Mn}\p{Mc}]/u.test(code[i]!) || code.charCodeAt(i) > 127) && !/\s/.test(code[i]!)) i++
      if (i === start) i++
      push('name', code.slice(start, i).normalize('NFKC'), start)
      continue
    }
    if (/[0-9]/.test(ch) || (ch === '.' && /[0-9]/.test(code[i + 1] ?? ''))) {
      const start = i
      while (i < code.length && /[0-9a-zA-Z_.]/.test(code[i]!)) i++
      push('number', code.slice(start, i), start)
      continue
    }
    if ('([{'.includes(ch)) depth++
    if (')]}'.includes(ch)) depth = Math.max(0, depth - 1)
    const two = code.slice(i, i + 2)
    const op = ['**', '//', '->', ':=', '==', '!=', '<=', '>=', '<<', '>>'].includes(two) ? two : ch
    push('op', op, i)
    i += op.length
  }
  push('newline', '\n', i)
  return tokens
}

/** Splits tokens into logical statements (newlines outside brackets, and `;`). */
function statements(tokens: Token[]): Token[][] {
  const out: Token[][] = []
  let current: Token[] = []
  for (const token of tokens) {
    if (token.kind === 'newline' || (token.kind === 'op' && token.text === ';')) {
      if (current.length) out.push(current)
      current = []
    } else {
      current.push(token)
    }
  }
  if (current.length) out.push(current)
  return out
}

function dottedName(tokens: Token[], start: number): { name: string; end: number } {
  let name = ''
  let i = start
  while (i < tokens.length) {
    const token = tokens[i]!
    if (token.kind === 'name' || (token.kind === 'op' && token.text === '.')) {
      if (token.kind === 'name' && name && !name.endsWith('.')) break
      name += token.text
      i++
    } else break
  }
  return { name, end: i }
}

/**
 * One scan per code, shared: the policy's import check and monty's "can I run this" (asked on every routed Python
 * request) read the same scan, and a retry or the same formula again is not rescanned.
 */
const scans = new LruCache<PythonScan>(256)

export function scanPython(code: string): PythonScan {
  return scans.get(code, () => scanUncached(code))
}

function scanUncached(code: string): PythonScan {
  const tokens = tokenize(code)
  const imports: PythonLocation[] = []
  const calls: PythonLocation[] = []
  const unsupported = new Set<string>()
  const attributes = new Set<string>()
  let percentFormatting = false
  const formatSpecs = new Set<string>()
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!
    const next = tokens[i + 1]
    if (token.kind === 'string' && next?.kind === 'op' && next.text === '%') percentFormatting = true
    if (token.kind === 'string' && /^[rRbB]?[fF]/.test(token.text)) for (const spec of fStringFormatSpecs(token.text)) formatSpecs.add(spec)
    if (token.kind !== 'name') continue
    if (tokens[i - 1]?.kind === 'op' && tokens[i - 1]?.text === '.') attributes.add(token.text)
    if (next?.kind === 'op' && next.text === '(' && tokens[i - 1]?.text !== '.' && tokens[i - 1]?.text !== 'def') {
      calls.push({ name: token.text, line: token.line, column: token.column })
    }
    switch (token.text) {
      case 'import': {
        // `import a.b as c, d` — or the tail of `from x import y`, handled below.
        if (
          tokens
            .slice(0, i)
            .reverse()
            .find((t) => t.kind === 'newline' || t.text === ';' || t.text === 'from')?.text === 'from'
        )
          break
        let j = i + 1
        for (;;) {
          const { name, end } = dottedName(tokens, j)
          if (name) imports.push({ name, line: tokens[j]!.line, column: tokens[j]!.column })
          j = end
          if (tokens[j]?.text === 'as') j += 2
          if (tokens[j]?.text !== ',') break
          j++
        }
        break
      }
      case 'from': {
        const { name, end } = dottedName(tokens, i + 1)
        if (tokens[end]?.text === 'import' && name && !name.startsWith('.'))
          imports.push({ name, line: tokens[i + 1]!.line, column: tokens[i + 1]!.column })
        break
      }
      case 'class':
        unsupported.add('class definitions')
        break
      case 'yield':
        unsupported.add('generators (yield)')
        break
      case 'del':
        unsupported.add("the 'del' statement")
        break
      case 'except':
        if (next?.text === '*') unsupported.add('exception groups (except*)')
        break
      case 'async':
        if (next?.text === 'for' || next?.text === 'with') unsupported.add(`async ${next.text}`)
        break
    }
  }
  // Soft keywords only count at the start of a statement: `match x:` and `type X = ...`.
  for (const statement of statements(tokens)) {
    const [first, second, third] = statement
    if (first?.text === 'match' && second && second.text !== '=' && second.text !== '.' && statement[statement.length - 1]?.text === ':') {
      unsupported.add('pattern matching (match statements)')
    }
    if (first?.text === 'type' && second?.kind === 'name' && (third?.text === '=' || third?.text === '[')) unsupported.add('type aliases')
    // monty 0.0.18 parses a decorator and then ignores it: the function runs undecorated (a wrong answer, not an error).
    if (first?.kind === 'op' && first.text === '@') unsupported.add('decorators')
  }
  return Object.freeze({
    imports: Object.freeze(imports),
    calls: Object.freeze(calls),
    unsupported: Object.freeze([...unsupported]),
    attributes: Object.freeze([...attributes]),
    percentFormatting,
    formatSpecs: Object.freeze([...formatSpecs]),
  })
}

/**
 * The format specs of an f-string's top-level replacement fields: what follows the first `:` outside brackets and
 * quotes in each `{…}` (`{{` is a literal brace). Nested fields inside a spec (`{x:{width}}`) are kept as text.
 */
function fStringFormatSpecs(literal: string): string[] {
  const specs: string[] = []
  let i = 0
  while (i < literal.length) {
    if (literal[i] === '{' && literal[i + 1] === '{') {
      i += 2
      continue
    }
    if (literal[i] !== '{') {
      i++
      continue
    }
    let depth = 0
    let quote = ''
    let colon = -1
    let j = i + 1
    for (; j < literal.length; j++) {
      const ch = literal[j]!
      if (quote) {
        if (ch === quote) quote = ''
      } else if (ch === "'" || ch === '"') quote = ch
      else if ('([{'.includes(ch)) depth++
      else if (')]'.includes(ch) || (ch === '}' && depth > 0)) depth--
      else if (ch === '}') break
      else if (ch === ':' && depth === 0 && colon < 0 && literal[j + 1] !== '=') colon = j
    }
    if (colon >= 0) specs.push(literal.slice(colon + 1, j))
    i = j + 1
  }
  return specs
}
