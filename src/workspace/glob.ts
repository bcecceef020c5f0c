/**
 * Glob patterns over workspace paths: `*` and `?` within a segment, `**` for any number of segments, `[abc]` and
 * `[!abc]` classes, `{a,b}` alternatives. Matched by dynamic programming rather than a RegExp: sandboxed code
 * chooses the pattern, and a backtracking regex (`*a*a*a*a*b`) would let it stall the host's event loop.
 */

const MAX_GLOB_LENGTH = 256
const MAX_ALTERNATIVES = 64

type Token = { kind: 'star' } | { kind: 'one' } | { kind: 'char'; char: string } | { kind: 'class'; chars: string; negate: boolean }

/** `{a,b}` expanded into separate patterns (innermost first), at most 64 of them. */
function expandBraces(glob: string): string[] {
  const open = glob.lastIndexOf('{')
  const close = open === -1 ? -1 : glob.indexOf('}', open)
  if (open === -1 || close === -1) return [glob]
  const head = glob.slice(0, open)
  const tail = glob.slice(close + 1)
  const expanded: string[] = []
  for (const choice of glob.slice(open + 1, close).split(',')) {
    for (const pattern of expandBraces(head + choice + tail)) {
      if (expanded.length >= MAX_ALTERNATIVES) return expanded
      expanded.push(pattern)
    }
  }
  return expanded
}

function tokenize(segment: string): Token[] {
  const tokens: Token[] = []
  for (let index = 0; index < segment.length; index++) {
    const char = segment[index]!
    if (char === '*') {
      if (tokens.at(-1)?.kind !== 'star') tokens.push({ kind: 'star' })
    } else if (char === '?') tokens.push({ kind: 'one' })
    else if (char === '[' && segment.indexOf(']', index + 2) !== -1) {
      const end = segment.indexOf(']', index + 2)
      const body = segment.slice(index + 1, end)
      tokens.push({ kind: 'class', chars: body.replace(/^!/, ''), negate: body.startsWith('!') })
      index = end
    } else tokens.push({ kind: 'char', char })
  }
  return tokens
}

function classHas(chars: string, char: string): boolean {
  for (let index = 0; index < chars.length; index++) {
    if (chars[index + 1] === '-' && index + 2 < chars.length) {
      if (char >= chars[index]! && char <= chars[index + 2]!) return true
      index += 2
    } else if (chars[index] === char) return true
  }
  return false
}

/** One path segment against one pattern segment: O(pattern × text). */
function matchSegment(tokens: readonly Token[], text: string): boolean {
  let row = new Array<boolean>(text.length + 1).fill(false)
  row[0] = true
  for (const token of tokens) {
    const next = new Array<boolean>(text.length + 1).fill(false)
    if (token.kind === 'star') {
      let reachable = false
      for (let position = 0; position <= text.length; position++) next[position] = reachable ||= row[position]!
    } else {
      for (let position = 1; position <= text.length; position++) {
        if (!row[position - 1]) continue
        const char = text[position - 1]!
        next[position] =
          token.kind === 'one' || (token.kind === 'char' ? token.char === char : classHas(token.chars, char) !== token.negate)
      }
    }
    row = next
  }
  return row[text.length]!
}

function compile(glob: string): (path: string) => boolean {
  const segments = glob
    .split('/')
    .filter((segment) => segment !== '' && segment !== '.')
    .map((segment) => (segment === '**' ? null : tokenize(segment)))
  return (path) => {
    const parts = path.split('/')
    // reach[j]: the pattern's first i segments can match the path's first j parts.
    let reach = new Array<boolean>(parts.length + 1).fill(false)
    reach[0] = true
    for (const segment of segments) {
      const next = new Array<boolean>(parts.length + 1).fill(false)
      if (segment === null) {
        let reachable = false
        for (let position = 0; position <= parts.length; position++) next[position] = reachable ||= reach[position]!
      } else {
        for (let position = 1; position <= parts.length; position++)
          next[position] = reach[position - 1]! && matchSegment(segment, parts[position - 1]!)
      }
      reach = next
    }
    return reach[parts.length]!
  }
}

/**
 * A matcher for a glob; an absent or empty glob matches every path. A pattern without `/` matches file names at
 * any depth (`*.csv` finds `data/a.csv`), as users of `find -name` expect.
 */
export function globMatcher(glob: string | undefined): (path: string) => boolean {
  if (glob === undefined || glob === '' || glob === '**' || glob === '**/*') return () => true
  if (glob.length > MAX_GLOB_LENGTH) throw new RangeError(`a glob is at most ${MAX_GLOB_LENGTH} characters`)
  const relative = glob.replace(/^\/workspace\//, '').replace(/^\.\//, '')
  const rooted = glob.includes('/') ? relative : `**/${relative}`
  const matchers = expandBraces(rooted).map(compile)
  return (path) => matchers.some((matches) => matches(path))
}
