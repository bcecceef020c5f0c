import type { Language } from '../../src/core'

/** Per-language programs the conformance suite runs. Each adapter is tested with the languages it declares. */
export interface ContractSnippets {
  /** Prints `hello` and evaluates to (or submits/prints) 42. */
  ok: string
  /** How the ok snippet's 42 shows up: as `value`, or only in stdout. */
  okValue: 'value' | 'stdout'
  /** Raises an error whose message contains `boom`. */
  error: string
  /** Loops forever. */
  infinite: string
  /** Allocates without bound. */
  memoryBomb: string
  /** Prints without bound. */
  outputFlood: string
  /** Prints 200 KiB in one go, then stops. */
  bigOutput: string
  /** Does not parse. */
  syntaxError: string
}

export const SNIPPETS: Partial<Record<Language, ContractSnippets>> = {
  javascript: {
    ok: "console.log('hello'); 6 * 7",
    okValue: 'value',
    error: "throw new Error('boom')",
    infinite: 'while (true) {}',
    memoryBomb: 'const keep = []; while (true) keep.push(new Uint8Array(1 << 20))',
    outputFlood: "while (true) console.log('x'.repeat(1000))",
    bigOutput: "console.log('y'.repeat(200 * 1024))",
    syntaxError: 'let = = 1',
  },
  typescript: {
    ok: "const n: number = 6; console.log('hello'); n * 7",
    okValue: 'value',
    error: "throw new Error('boom')",
    infinite: 'while (true) {}',
    memoryBomb: 'const keep: Uint8Array[] = []; while (true) keep.push(new Uint8Array(1 << 20))',
    outputFlood: "while (true) console.log('x'.repeat(1000))",
    bigOutput: "console.log('y'.repeat(200 * 1024))",
    syntaxError: 'let = = 1',
  },
  python: {
    ok: "print('hello')\n6 * 7",
    okValue: 'value',
    error: "raise ValueError('boom')",
    infinite: 'while True:\n    pass',
    memoryBomb: "keep = []\nwhile True:\n    keep.append('x' * 10_000_000)",
    outputFlood: "while True:\n    print('x' * 1000)",
    bigOutput: "print('y' * (200 * 1024))",
    syntaxError: 'def (:',
  },
  bash: {
    ok: 'echo hello; echo 42',
    okValue: 'stdout',
    error: 'echo boom >&2; exit 3',
    infinite: 'while true; do :; done',
    memoryBomb: 'x=y; while true; do x="$x$x"; done',
    outputFlood: 'yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
    // 40001 six-digit numbers as 240006 y's: no /dev/zero, which a virtual filesystem may not stream.
    bigOutput: "seq 100000 140000 | tr -d '\\n' | tr '0-9' y",
    syntaxError: 'if then fi (',
  },
}
